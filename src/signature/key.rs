//! Public keys that verify cosign signatures (`verify --key PUB.pem`): a PEM `PUBLIC KEY`
//! (SubjectPublicKeyInfo, as `cosign generate-key-pair` writes `cosign.pub`) holding an ECDSA
//! P-256, RSA or Ed25519 key, each verified as cosign's `LoadVerifier` does: ECDSA over the
//! SHA-256 of the message (an ASN.1 DER signature), RSA PKCS#1 v1.5 with SHA-256, Ed25519 over
//! the message itself. A key is never printed: only its file and its kind are shown.

use std::path::{Path, PathBuf};

use p256::pkcs8::DecodePublicKey;

use crate::input::InputError;

/// The kinds of key cosign signs with.
#[derive(Clone)]
enum Kind {
    EcdsaP256(p256::ecdsa::VerifyingKey),
    Rsa(Box<rsa::pkcs1v15::VerifyingKey<sha2::Sha256>>),
    Ed25519(ed25519_dalek::VerifyingKey),
}

/// A public key read from a file: verifies signatures; shows only its file and kind.
#[derive(Clone)]
pub struct PublicKey {
    path: PathBuf,
    kind: Kind,
}

impl std::fmt::Debug for PublicKey {
    /// The file and the kind, never the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PublicKey({}, {})",
            self.kind_name(),
            self.path.display()
        )
    }
}

/// The largest key file read: a PEM public key is well under a KiB.
const MAX_KEY_BYTES: u64 = 64 * 1024;

impl PublicKey {
    /// Reads a PEM public key file (ECDSA P-256, RSA or Ed25519); the error names the file
    /// (`--key FILE`), never its content.
    pub fn load(path: &Path) -> Result<PublicKey, InputError> {
        let origin = format!("--key {}", path.display());
        let text = crate::input::read_file(path, MAX_KEY_BYTES).map_err(|e| {
            let err = InputError::new(origin.clone(), e.reason);
            match e.source {
                Some(io) => err.caused_by(io),
                None => err,
            }
        })?;
        PublicKey::parse(&text, path).map_err(|reason| InputError::new(origin, reason))
    }

    /// Parses PEM `text` (read from `path`).
    pub fn parse(text: &str, path: &Path) -> Result<PublicKey, String> {
        let kind = if let Ok(k) = p256::ecdsa::VerifyingKey::from_public_key_pem(text) {
            Kind::EcdsaP256(k)
        } else if let Ok(k) = ed25519_dalek::VerifyingKey::from_public_key_pem(text) {
            Kind::Ed25519(k)
        } else if let Ok(k) = rsa::PublicKey::from_public_key_pem(text) {
            Kind::Rsa(Box::new(rsa::pkcs1v15::VerifyingKey::new(k)))
        } else {
            return Err("not a PEM PUBLIC KEY of a kind cosign signs with \
                        (ECDSA P-256, RSA, Ed25519)"
                .to_string());
        };
        Ok(PublicKey {
            path: path.to_path_buf(),
            kind,
        })
    }

    /// The file the key was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `ecdsa-p256`, `rsa` or `ed25519`.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            Kind::EcdsaP256(_) => "ecdsa-p256",
            Kind::Rsa(_) => "rsa",
            Kind::Ed25519(_) => "ed25519",
        }
    }

    /// Does `signature` (raw bytes, as cosign encodes them) sign `message` with this key?
    /// A signature of the wrong shape is `false`, never an error.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        use p256::ecdsa::signature::Verifier;
        match &self.kind {
            Kind::EcdsaP256(k) => {
                let Ok(sig) = p256::ecdsa::Signature::from_der(signature) else {
                    return false;
                };
                // Go's crypto/ecdsa writes high-S signatures too; the verifier takes either.
                let low = sig.normalize_s();
                k.verify(message, &sig).is_ok() || k.verify(message, &low).is_ok()
            }
            Kind::Rsa(k) => rsa::pkcs1v15::Signature::try_from(signature)
                .is_ok_and(|sig| k.verify(message, &sig).is_ok()),
            Kind::Ed25519(k) => ed25519_dalek::Signature::from_slice(signature)
                .is_ok_and(|sig| k.verify(message, &sig).is_ok()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::encoding::AsDer;
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::{self as lc, KeyPair as _};
    use base64::Engine as _;

    /// A PEM `PUBLIC KEY` of SubjectPublicKeyInfo `der`.
    fn pem(der: &[u8]) -> String {
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        let lines: Vec<&str> = (0..b64.len())
            .step_by(64)
            .map(|i| &b64[i..(i + 64).min(b64.len())])
            .collect();
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            lines.join("\n")
        )
    }

    fn parse(der: &[u8]) -> PublicKey {
        PublicKey::parse(&pem(der), Path::new("k.pem")).unwrap()
    }

    /// Each kind of key cosign signs with, signed by AWS-LC as cosign's Go signers do (ECDSA
    /// P-256 ASN.1 over SHA-256, RSA PKCS#1 v1.5 SHA-256, Ed25519), verifies its own
    /// signature and no other.
    #[test]
    fn keys_verify_signatures_made_by_another_implementation() {
        let rng = SystemRandom::new();
        let msg = b"{\"critical\":{}}";
        let ec = lc::EcdsaKeyPair::generate(&lc::ECDSA_P256_SHA256_ASN1_SIGNING).unwrap();
        let ec_key = parse(ec.public_key().as_der().unwrap().as_ref());
        let ec_sig = ec.sign(&rng, msg).unwrap();
        let rsa = lc::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let rsa_key = parse(rsa.public_key().as_der().unwrap().as_ref());
        let mut rsa_sig = vec![0; rsa.public_modulus_len()];
        rsa.sign(&lc::RSA_PKCS1_SHA256, &rng, msg, &mut rsa_sig)
            .unwrap();
        let ed = lc::Ed25519KeyPair::generate().unwrap();
        let ed_key = parse(ed.public_key().as_der().unwrap().as_ref());
        let ed_sig = ed.sign(msg);
        let cases = [
            (&ec_key, ec_sig.as_ref(), "ecdsa-p256"),
            (&rsa_key, rsa_sig.as_slice(), "rsa"),
            (&ed_key, ed_sig.as_ref(), "ed25519"),
        ];
        for (key, sig, kind) in cases {
            assert_eq!(key.kind_name(), kind);
            assert!(key.verifies(msg, sig), "{kind}");
            assert!(!key.verifies(b"other", sig), "{kind}");
            for (other, other_sig, _) in cases {
                assert_eq!(
                    key.verifies(msg, other_sig),
                    std::ptr::eq(key, other),
                    "{kind}"
                );
            }
            assert!(!key.verifies(msg, b"\x30\x02garbage"), "{kind}");
            assert!(!key.verifies(msg, &[]), "{kind}");
        }
        let shown = format!("{ec_key:?}");
        assert_eq!(shown, "PublicKey(ecdsa-p256, k.pem)");
    }

    #[test]
    fn what_is_not_a_public_key_is_refused_without_showing_it() {
        let p384 = lc::EcdsaKeyPair::generate(&lc::ECDSA_P384_SHA384_ASN1_SIGNING).unwrap();
        let p384 = pem(p384.public_key().as_der().unwrap().as_ref());
        for text in [
            "",
            "not pem",
            &p384,
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
        ] {
            let err = PublicKey::parse(text, Path::new("k.pem")).unwrap_err();
            assert!(err.contains("ECDSA P-256, RSA, Ed25519"), "{err}");
            assert!(text.is_empty() || !err.contains(text.trim()), "{err}");
        }
        let dir = tempfile::tempdir().unwrap();
        let err = PublicKey::load(&dir.path().join("absent.pem")).unwrap_err();
        assert!(err.to_string().starts_with("--key "), "{err}");
    }
}
