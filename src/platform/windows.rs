//! Windows versions as containerd reads them, and the builds imgcheck knows by name.

use std::fmt;

use serde::Serialize;

/// Windows Server 2022 (ltsc2022), the first build with a compatibility window.
pub const BUILD_WS2022: u16 = 20348;
/// Windows Server 2025 (ltsc2025).
pub const BUILD_WS2025: u16 = 26100;

/// A Windows version as containerd parses it: `major.minor.build`, revision kept for ordering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct WindowsVersion {
    /// Major version (10 for every current Windows).
    pub major: u8,
    /// Minor version (0).
    pub minor: u8,
    /// Build number, the part that decides compatibility.
    pub build: u16,
    /// Update build revision (UBR); ignored by matching, used by containerd 1.6 ordering.
    pub revision: u32,
}

impl WindowsVersion {
    /// Parses like containerd's `getWindowsOSVersion`: at least three dot-separated fields;
    /// major and minor must fit in 8 bits and build in 16 bits, otherwise `None` (which a
    /// matcher treats as version 0.0.0). A fourth field is the revision; anything after it is
    /// ignored.
    pub fn parse(s: &str) -> Option<WindowsVersion> {
        // One pass over the bytes (the judge reads every entry's os.version).
        let mut fields = s.as_bytes().split(|&b| b == b'.');
        let major = u8::try_from(decimal(fields.next()?)?).ok()?;
        let minor = u8::try_from(decimal(fields.next()?)?).ok()?;
        let build = u16::try_from(decimal(fields.next()?)?).ok()?;
        // The revision is read as Rust reads a `u32` (a leading `+` is allowed).
        let revision = fields
            .next()
            .and_then(|r| std::str::from_utf8(r).ok()?.parse::<u32>().ok())
            .unwrap_or(0);
        Some(WindowsVersion {
            major,
            minor,
            build,
            revision,
        })
    }

    /// Reads `s` as containerd 1.6 and 1.7 do (`getOSVersion`/`GetOsVersion` in their
    /// `platforms/defaults_windows.go`): fewer than three dot-separated fields is 0.0.0; each of
    /// the first three is read by `go_atoi`, its error ignored, and cut to the field's width
    /// (`uint8`, `uint16`): `+17763` is 17763, `83299` is 17763, `17763x` is 0.
    pub fn parse_atoi(s: &str) -> WindowsVersion {
        let fields: Vec<&str> = s.split('.').collect();
        if fields.len() < 3 {
            return WindowsVersion::ZERO;
        }
        // Go's uint8(int) and uint16(int) keep the low bits, as `as` does.
        WindowsVersion {
            major: go_atoi(fields[0]).0 as u8,
            minor: go_atoi(fields[1]).0 as u8,
            build: go_atoi(fields[2]).0 as u16,
            revision: 0,
        }
    }

    /// Is `s` exactly `MAJOR.MINOR.BUILD` or `MAJOR.MINOR.BUILD.REVISION`, digits only, each
    /// field within range? Stricter than [`WindowsVersion::parse`], which (like containerd)
    /// ignores what follows the build.
    pub fn is_well_formed(s: &str) -> bool {
        let mut count = 0;
        for field in s.as_bytes().split(|&b| b == b'.') {
            count += 1;
            if count > 4 || decimal(field).is_none() {
                return false;
            }
        }
        count >= 3 && WindowsVersion::parse(s).is_some()
    }

    /// The version 0.0.0 an unparsable string becomes.
    pub const ZERO: WindowsVersion = WindowsVersion {
        major: 0,
        minor: 0,
        build: 0,
        revision: 0,
    };

    /// A host version `10.0.<build>` (hosts report no revision).
    pub fn host(build: u16) -> WindowsVersion {
        WindowsVersion {
            major: 10,
            minor: 0,
            build,
            revision: 0,
        }
    }
}

impl fmt::Display for WindowsVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.build)
    }
}

/// A field of digits only (at least one) and its value, `None` past `u32`: the first three
/// fields of an `os.version`, as containerd's `strconv.ParseUint` reads them.
fn decimal(field: &[u8]) -> Option<u32> {
    if field.is_empty() {
        return None;
    }
    field.iter().try_fold(0u32, |n, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d <= 9)?;
        n.checked_mul(10)?.checked_add(u32::from(digit))
    })
}

/// Go's `strconv.Atoi` on a 64-bit platform: the value and whether it parsed. An optional `+`
/// or `-`, then decimal digits only; anything else is a syntax error, value 0; a number out of
/// range is an error whose value is clamped to the `int64` bounds.
pub fn go_atoi(s: &str) -> (i64, bool) {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return (0, false);
    }
    let mut n: u64 = 0;
    for b in digits.bytes() {
        if !b.is_ascii_digit() {
            return (0, false);
        }
        // `ParseUint` stops at the first overflow: a later non-digit is not looked at.
        match n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
        {
            Some(next) => n = next,
            None => return (if negative { i64::MIN } else { i64::MAX }, false),
        }
    }
    match (negative, i64::try_from(n)) {
        (false, Ok(v)) => (v, true),
        (false, Err(_)) => (i64::MAX, false),
        (true, _) if n <= i64::MIN.unsigned_abs() => (0i64.wrapping_sub_unsigned(n), true),
        (true, _) => (i64::MIN, false),
    }
}

/// containerd 1.6's `revision` (`platforms/defaults_windows.go`): the fourth field of
/// `os.version` read by [`go_atoi`]; 0 when there is none or it does not parse, so `-1` sorts
/// below a version without revision.
pub fn go_revision(s: &str) -> i64 {
    match s.split('.').nth(3).map(go_atoi) {
        Some((v, true)) => v,
        _ => 0,
    }
}

/// The marketing name of a Windows build, if it is one we know.
pub fn build_name(build: u16) -> Option<&'static str> {
    Some(match build {
        17763 => "Windows Server 2019 (ltsc2019, 1809)",
        18362 => "Windows Server 1903 (SAC, out of support)",
        18363 => "Windows Server 1909 (SAC, out of support)",
        19041 => "Windows Server 2004 (SAC, out of support)",
        19042 => "Windows Server 20H2 (SAC, out of support)",
        20348 => "Windows Server 2022 (ltsc2022)",
        22000 => "Windows 11 21H2",
        22621 => "Windows 11 22H2",
        22631 => "Windows 11 23H2",
        25398 => "Windows Server 23H2 (annual channel)",
        26100 => "Windows Server 2025 (ltsc2025) / Windows 11 24H2",
        26200 => "Windows 11 25H2",
        _ => return None,
    })
}

/// The build a release name stands for (`ltsc2022`, `1809`, …, case-insensitive), as
/// `--platform windows/amd64:ltsc2022` accepts it. Names that mean two builds (`21H2`,
/// `23H2`: a Windows 11 and a Windows Server release) are not accepted.
pub fn named_build(name: &str) -> Option<u16> {
    Some(match name.to_ascii_lowercase().as_str() {
        "ltsc2019" | "1809" | "rs5" => 17763,
        "1903" => 18362,
        "1909" => 18363,
        "2004" => 19041,
        "20h2" => 19042,
        "ltsc2022" => BUILD_WS2022,
        "ltsc2025" | "24h2" => BUILD_WS2025,
        "25h2" => 26200,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// containerd's reading as imgcheck wrote it before issue 24 (splitting the string twice):
    /// the model the one-pass [`WindowsVersion::parse`] must agree with.
    fn model(s: &str) -> Option<WindowsVersion> {
        let mut fields = s.split('.');
        let major = fields.next()?.parse::<u8>().ok()?;
        let minor = fields.next()?.parse::<u8>().ok()?;
        let build = fields.next()?.parse::<u16>().ok()?;
        let revision = fields
            .next()
            .and_then(|r| r.parse::<u32>().ok())
            .unwrap_or(0);
        let digits = |f: &str| f.bytes().all(|b| b.is_ascii_digit());
        s.split('.').take(3).all(digits).then_some(WindowsVersion {
            major,
            minor,
            build,
            revision,
        })
    }

    /// The strict form as imgcheck checked it before issue 24, the model of
    /// [`WindowsVersion::is_well_formed`].
    fn well_formed_model(s: &str) -> bool {
        let fields: Vec<&str> = s.split('.').collect();
        (3..=4).contains(&fields.len())
            && fields
                .iter()
                .all(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
            && fields.get(3).is_none_or(|r| r.parse::<u32>().is_ok())
            && model(s).is_some()
    }

    /// Issue 24: the judge checks every Windows entry's os.version; reading it allocates
    /// nothing (the strict check collected its fields into a vector).
    #[test]
    fn reading_an_os_version_allocates_nothing() {
        for v in [
            "10.0.17763.5830",
            "10.0.20348",
            "10.0.17763.5329,",
            "10.0",
            "x",
        ] {
            let ((well_formed, _), n) = crate::engine::allocs::allocations(|| {
                (
                    WindowsVersion::is_well_formed(v),
                    WindowsVersion::parse(v).is_some(),
                )
            });
            assert_eq!(well_formed, well_formed_model(v), "{v}");
            assert_eq!(n, 0, "{n} allocations to read {v}");
        }
    }

    proptest! {
        /// Issue 24: the one-pass reading agrees with the model on versions as lists write
        /// them, near-misses (signs, overflow, empty fields, junk after the build) and noise.
        #[test]
        fn parse_agrees_with_the_model(
            fields in proptest::collection::vec("[+-]?[0-9]{0,6}|0*(255|256|65535|65536|4294967295|4294967296)|[0-9a-z,+ ]{0,4}", 0..6),
            noise in "[0-9.+]{0,16}",
        ) {
            let joined = fields.join(".");
            for s in [&joined, &noise] {
                prop_assert_eq!(WindowsVersion::parse(s), model(s), "{}", s);
                prop_assert_eq!(WindowsVersion::is_well_formed(s), well_formed_model(s), "{}", s);
            }
        }
    }
}
