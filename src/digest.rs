//! Content digests (`sha256:<64 hex>`, `sha512:<128 hex>`): parsing, computing and verifying.
//!
//! Every byte imgcheck judges is checked against the digest that named it, never against a
//! header or a file name alone: a registry or a proxy can serve altered bodies (see
//! `docs/images.md`).

use std::fmt;
use std::str::FromStr;

use sha2::{Digest as _, Sha256, Sha512};

/// A hash algorithm allowed in OCI digests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// `sha256`, the algorithm every registry supports.
    Sha256,
    /// `sha512`, registered by the OCI image spec.
    Sha512,
}

impl Algorithm {
    /// The algorithm's name as it appears before the colon.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha512 => "sha512",
        }
    }

    fn hex_len(self) -> usize {
        match self {
            Algorithm::Sha256 => 64,
            Algorithm::Sha512 => 128,
        }
    }
}

/// A validated digest: a known algorithm and lowercase hex of the right length.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    algorithm: Algorithm,
    hex: String,
}

/// Why a string is not a digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DigestError {
    /// No `algorithm:` prefix.
    #[error("'{0}' is not a digest: expected ALGORITHM:HEX, e.g. sha256:<64 hex digits>")]
    Shape(String),
    /// An algorithm other than sha256/sha512.
    #[error("'{0}' uses an unsupported digest algorithm (sha256 and sha512 are supported)")]
    Algorithm(String),
    /// Wrong length or characters in the hex part.
    #[error("'{0}' has an invalid hex part: {1}")]
    Hex(String, &'static str),
}

impl Digest {
    /// Computes the digest of `bytes` with `algorithm`.
    pub fn compute(algorithm: Algorithm, bytes: &[u8]) -> Digest {
        let mut h = Hasher::new(algorithm);
        h.update(bytes);
        h.finish()
    }

    /// The sha256 digest of `bytes`.
    pub fn sha256(bytes: &[u8]) -> Digest {
        Digest::compute(Algorithm::Sha256, bytes)
    }

    /// True when `bytes` hash to this digest.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        Digest::compute(self.algorithm, bytes) == *self
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The lowercase hex part; safe to use as a file name (validated on parse).
    pub fn hex(&self) -> &str {
        &self.hex
    }

    /// A short form for tables: `sha256:` and the first 12 hex digits.
    pub fn short(&self) -> String {
        format!("{}:{}", self.algorithm.name(), &self.hex[..12])
    }
}

/// Computes a digest over bytes fed in pieces (a streamed blob).
pub struct Hasher {
    state: HashState,
}

enum HashState {
    Sha256(Sha256),
    Sha512(Sha512),
}

impl Hasher {
    /// A hasher for `algorithm`.
    pub fn new(algorithm: Algorithm) -> Hasher {
        let state = match algorithm {
            Algorithm::Sha256 => HashState::Sha256(Sha256::new()),
            Algorithm::Sha512 => HashState::Sha512(Sha512::new()),
        };
        Hasher { state }
    }

    /// Feeds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        match &mut self.state {
            HashState::Sha256(h) => h.update(bytes),
            HashState::Sha512(h) => h.update(bytes),
        }
    }

    /// The digest of everything fed; its hex is written into one buffer of the right size.
    pub fn finish(self) -> Digest {
        let (algorithm, hex) = match self.state {
            HashState::Sha256(h) => (Algorithm::Sha256, lower_hex(&h.finalize())),
            HashState::Sha512(h) => (Algorithm::Sha512, lower_hex(&h.finalize())),
        };
        Digest { algorithm, hex }
    }
}

/// `bytes` as lowercase hex, in one allocation of the exact size.
fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(2 * bytes.len());
    for &b in bytes {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    hex
}

/// Checks that `s` is a digest, as [`Digest::from_str`] does (the same errors), and returns
/// its algorithm and hex part, borrowed: a digest that is only checked is never copied.
pub fn check(s: &str) -> Result<(Algorithm, &str), DigestError> {
    let (alg, hex) = s
        .split_once(':')
        .ok_or_else(|| DigestError::Shape(s.to_string()))?;
    let algorithm = match alg {
        "sha256" => Algorithm::Sha256,
        "sha512" => Algorithm::Sha512,
        "" => return Err(DigestError::Shape(s.to_string())),
        _ => return Err(DigestError::Algorithm(s.to_string())),
    };
    if hex.len() != algorithm.hex_len() {
        return Err(DigestError::Hex(
            s.to_string(),
            if algorithm == Algorithm::Sha256 {
                "sha256 needs 64 hex digits"
            } else {
                "sha512 needs 128 hex digits"
            },
        ));
    }
    // Every byte is looked at (no early exit), which the compiler turns into wide compares.
    let lower_hex = hex.bytes().fold(true, |ok, b| {
        ok & (b.is_ascii_digit() | (b'a'..=b'f').contains(&b))
    });
    if !lower_hex {
        return Err(DigestError::Hex(
            s.to_string(),
            "only lowercase hex digits 0-9a-f are allowed",
        ));
    }
    Ok((algorithm, hex))
}

impl FromStr for Digest {
    type Err = DigestError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (algorithm, hex) = check(s)?;
        Ok(Digest {
            algorithm,
            hex: hex.to_string(),
        })
    }
}

/// A digest equals its text form `ALGORITHM:HEX` (what [`fmt::Display`] writes), compared
/// without parsing or copying the text.
impl PartialEq<str> for Digest {
    fn eq(&self, text: &str) -> bool {
        text.strip_prefix(self.algorithm.name())
            .and_then(|rest| rest.strip_prefix(':'))
            .is_some_and(|hex| hex == self.hex)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.algorithm.name())?;
        f.write_str(":")?;
        f.write_str(&self.hex)
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const EMPTY_SHA256: &str =
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn computes_known_digest() {
        assert_eq!(Digest::sha256(b"").to_string(), EMPTY_SHA256);
        assert!(EMPTY_SHA256.parse::<Digest>().unwrap().matches(b""));
        assert!(!EMPTY_SHA256.parse::<Digest>().unwrap().matches(b"x"));
        let d512 = Digest::compute(Algorithm::Sha512, b"abc");
        assert!(d512.to_string().starts_with("sha512:ddaf35a193617aba"));
        assert_eq!(d512.to_string().parse::<Digest>().unwrap(), d512);
    }

    #[test]
    fn rejects_bad_digests() {
        let cases: &[(&str, &str)] = &[
            ("", "not a digest"),
            ("e3b0c442", "not a digest"),
            (":abc", "not a digest"),
            (
                "md5:d41d8cd98f00b204e9800998ecf8427e",
                "unsupported digest algorithm",
            ),
            ("sha256:abc", "64 hex digits"),
            (
                "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
                "lowercase",
            ),
        ];
        let traversal = format!("sha256:../../etc/passwd/{}", "a".repeat(47));
        let cases = cases
            .iter()
            .copied()
            .chain([(traversal.as_str(), "lowercase")]);
        for (input, want) in cases {
            let err = input.parse::<Digest>().unwrap_err().to_string();
            assert!(err.contains(want), "{input}: {err}");
        }
    }

    proptest! {
        #[test]
        fn text_equals_its_digest(bytes in proptest::collection::vec(any::<u8>(), 0..64), other in ".{0,80}") {
            let d = Digest::sha256(&bytes);
            prop_assert!(d == *d.to_string().as_str());
            prop_assert_eq!(d == *other.as_str(), other == d.to_string());
            prop_assert_eq!(check(&other).is_ok(), other.parse::<Digest>().is_ok());
        }

        #[test]
        fn display_parse_roundtrip(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let d = Digest::sha256(&bytes);
            prop_assert_eq!(d.to_string().parse::<Digest>().unwrap(), d.clone());
            prop_assert!(d.matches(&bytes));
        }

        #[test]
        fn pieces_hash_like_the_whole(bytes in proptest::collection::vec(any::<u8>(), 0..300), cut in 0usize..300, sha512 in any::<bool>()) {
            let algorithm = if sha512 { Algorithm::Sha512 } else { Algorithm::Sha256 };
            let cut = cut.min(bytes.len());
            let mut h = Hasher::new(algorithm);
            h.update(&bytes[..cut]);
            h.update(&bytes[cut..]);
            let expected = match algorithm {
                Algorithm::Sha256 => hex::encode(Sha256::digest(&bytes)),
                Algorithm::Sha512 => hex::encode(Sha512::digest(&bytes)),
            };
            prop_assert_eq!(h.finish().hex, expected);
        }

        #[test]
        fn parse_never_panics(s in ".{0,140}") {
            let _ = s.parse::<Digest>();
        }
    }
}
