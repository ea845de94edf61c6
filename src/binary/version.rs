//! Go module versions (`golang.org/x/mod/semver`): `vMAJOR.MINOR.PATCH`, an optional
//! `-prerelease` and `+build`, ordered as semantic versions (a pre-release before its
//! release; the build part ignored). A pseudo-version (`v0.0.0-20210101000000-abcdef123456`)
//! is a pre-release like any other.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A Go module version, validated; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleVersion {
    text: String,
    core: [u64; 3],
    pre: Option<String>,
}

impl ModuleVersion {
    /// Parses `v1.2.3`, `v1.0.0-rc1`, `v0.0.0-20210101000000-abcdef123456`; `None` for
    /// anything else (`(devel)`, `1.2.3`, `v1.2`).
    pub fn parse(s: &str) -> Option<ModuleVersion> {
        let rest = s.strip_prefix('v')?;
        let rest = rest.split_once('+').map_or(rest, |(v, _)| v);
        let (core, pre) = match rest.split_once('-') {
            Some((c, p)) => (c, Some(p)),
            None => (rest, None),
        };
        let mut nums = [0u64; 3];
        let mut parts = core.split('.');
        for slot in &mut nums {
            let part = parts.next()?;
            if part.is_empty() || (part.len() > 1 && part.starts_with('0')) {
                return None;
            }
            *slot = part.parse().ok()?;
        }
        let pre_ok = |p: &str| {
            !p.is_empty()
                && p.split('.').all(|id| {
                    !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                })
        };
        if parts.next().is_some() || pre.is_some_and(|p| !pre_ok(p)) {
            return None;
        }
        Some(ModuleVersion {
            text: s.to_string(),
            core: nums,
            pre: pre.map(str::to_string),
        })
    }

    /// A release (no pre-release part): what a tag of the module names.
    pub fn is_release(&self) -> bool {
        self.pre.is_none()
    }

    /// The major version.
    pub fn major(&self) -> u64 {
        self.core[0]
    }
}

/// Compares pre-release identifiers as semver does: numbers numerically and before words.
fn compare_pre(a: &str, b: &str) -> Ordering {
    let mut x = a.split('.');
    let mut y = b.split('.');
    loop {
        match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) => {
                let order = match (p.parse::<u64>(), q.parse::<u64>()) {
                    (Ok(m), Ok(n)) => m.cmp(&n),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    (Err(_), Err(_)) => p.cmp(q),
                };
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

impl Ord for ModuleVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.core
            .cmp(&other.core)
            .then_with(|| match (&self.pre, &other.pre) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(a), Some(b)) => compare_pre(a, b),
            })
            .then_with(|| self.text.cmp(&other.text))
    }
}

impl PartialOrd for ModuleVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for ModuleVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.text)
    }
}

impl Serialize for ModuleVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for ModuleVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ModuleVersion::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "'{s}' is not a Go module version (expected vMAJOR.MINOR.PATCH, e.g. v1.1.2)"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ordering rows from the semver spec's examples (golang.org/x/mod/semver `Compare`).
    #[test]
    fn order_and_shapes() {
        let sorted = [
            "v0.0.0-20210101000000-abcdef123456",
            "v0.2.2",
            "v1.0.0-alpha",
            "v1.0.0-alpha.1",
            "v1.0.0-beta.2",
            "v1.0.0-rc1",
            "v1.0.0",
            "v1.0.2+build",
            "v1.1.0",
            "v1.10.0",
        ];
        let parsed: Vec<ModuleVersion> = sorted
            .iter()
            .map(|s| ModuleVersion::parse(s).unwrap_or_else(|| panic!("{s}")))
            .collect();
        for w in parsed.windows(2) {
            assert!(w[0] < w[1], "{} < {}", w[0], w[1]);
        }
        for bad in [
            "",
            "(devel)",
            "1.2.3",
            "v1.2",
            "v1.2.3.4",
            "v01.2.3",
            "v1.2.3-",
            "v1.2.3-a..b",
            "v1.x.3",
        ] {
            assert_eq!(ModuleVersion::parse(bad), None, "{bad}");
        }
        assert!(ModuleVersion::parse("v1.2.3").unwrap().is_release());
        assert!(!ModuleVersion::parse("v1.0.0-rc1").unwrap().is_release());
    }
}
