//! Bounded memos of the pure decisions a batch repeats. A selection ([`select`]) depends only
//! on the runtime profile, the host's platform, the list's format and what the selector reads
//! of each entry (its platform, the config platform of a platform-less one, the zstd mark,
//! whether it is a nested index); whether a pulled image starts ([`runs`]) only on the
//! profile and the two platforms. A batch judges the same few list shapes against the same
//! hosts over and over (every image of a catalog built by one pipeline has the same
//! platforms), so each thread keeps the last [`BOUND`] answers of each and gives a repeat
//! without working it out again.

use std::cell::RefCell;
use std::rc::Rc;

use crate::platform::{Candidate, ListFormat, Platform, RuntimeProfile, Selection, runs, select};

/// Answers kept per thread and kind. A policy judges a handful of hosts under a handful of
/// profiles (the default policy: 9 host and profile pairs), and a catalog's lists come in a
/// few shapes: 64 covers several shapes of a full policy; a key is a few hundred bytes, so a
/// thread's memos stay under 100 KiB whatever the number of images. Past the bound the oldest
/// answer goes.
pub(super) const BOUND: usize = 64;

/// What a selection depends on, owned.
#[derive(Debug)]
struct Key {
    profile: RuntimeProfile,
    format: ListFormat,
    host: Platform,
    candidates: Vec<Entry>,
}

/// What the selector reads of one candidate.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    platform: Option<Platform>,
    config_platform: Option<Platform>,
    zstd: bool,
    nested: bool,
}

impl Key {
    fn of(
        profile: RuntimeProfile,
        host: &Platform,
        format: ListFormat,
        candidates: &[Candidate],
    ) -> Key {
        Key {
            profile,
            format,
            host: host.clone(),
            candidates: candidates
                .iter()
                .map(|c| Entry {
                    platform: c.platform.as_deref().cloned(),
                    config_platform: c.config_platform.clone(),
                    zstd: c.zstd,
                    nested: c.nested,
                })
                .collect(),
        }
    }

    /// Is this the key of these arguments? The cheap fields first.
    fn is(
        &self,
        profile: RuntimeProfile,
        host: &Platform,
        format: ListFormat,
        candidates: &[Candidate],
    ) -> bool {
        self.profile == profile
            && self.format == format
            && self.candidates.len() == candidates.len()
            && self.host == *host
            && self.candidates.iter().zip(candidates).all(|(e, c)| {
                e.zstd == c.zstd
                    && e.nested == c.nested
                    && e.platform.as_ref() == c.platform.as_deref()
                    && e.config_platform == c.config_platform
            })
    }
}

/// The last [`BOUND`] answers of one kind, the oldest replaced first.
struct Bounded<K, V> {
    entries: Vec<(K, V)>,
    /// Where the next answer goes once the memo is full.
    next: usize,
}

impl<K, V: Clone> Bounded<K, V> {
    const fn new() -> Self {
        Bounded {
            entries: Vec::new(),
            next: 0,
        }
    }

    /// The answer whose key `is` accepts, else `make`'s, kept under `key()`.
    fn answer(
        &mut self,
        is: impl Fn(&K) -> bool,
        key: impl FnOnce() -> K,
        make: impl FnOnce() -> V,
    ) -> V {
        if let Some((_, v)) = self.entries.iter().find(|(k, _)| is(k)) {
            return v.clone();
        }
        let v = make();
        let entry = (key(), v.clone());
        if self.entries.len() < BOUND {
            self.entries.push(entry);
        } else {
            self.entries[self.next] = entry;
            self.next = (self.next + 1) % BOUND;
        }
        v
    }
}

/// What [`runs`] depends on: the profile, the host's platform and the image's.
type StartKey = (RuntimeProfile, Platform, Platform);

thread_local! {
    static SELECTIONS: RefCell<Bounded<Key, Rc<Selection>>> = const { RefCell::new(Bounded::new()) };
    static STARTS: RefCell<Bounded<StartKey, bool>> = const { RefCell::new(Bounded::new()) };
}

/// [`select`], answered from this thread's memo when the same arguments were seen lately.
pub(super) fn selection(
    profile: RuntimeProfile,
    host: &Platform,
    format: ListFormat,
    candidates: &[Candidate],
) -> Rc<Selection> {
    SELECTIONS.with(|memo| {
        memo.borrow_mut().answer(
            |k| k.is(profile, host, format, candidates),
            || Key::of(profile, host, format, candidates),
            || Rc::new(select(profile, host, format, candidates)),
        )
    })
}

/// [`runs`], answered from this thread's memo when the same arguments were seen lately.
pub(super) fn starts(profile: RuntimeProfile, host: &Platform, image: &Platform) -> bool {
    STARTS.with(|memo| {
        memo.borrow_mut().answer(
            |(p, h, i)| *p == profile && h == host && i == image,
            || (profile, host.clone(), image.clone()),
            || runs(profile, host, image),
        )
    })
}

#[cfg(test)]
fn held() -> (usize, usize) {
    let selections = SELECTIONS.with(|m| m.borrow().entries.len());
    (selections, STARTS.with(|m| m.borrow().entries.len()))
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use proptest::prelude::*;

    use super::*;

    /// Platforms from a small pool, so lists repeat and hit the memo: the values that change
    /// a selection (os and architecture spellings, variants, Windows builds, features).
    fn platform() -> impl Strategy<Value = Platform> {
        let os = prop::sample::select(vec!["linux", "windows", "Windows", "unknown"]);
        let arch = prop::sample::select(vec!["amd64", "arm64", "arm", "x86_64", "386"]);
        let variant = prop::option::of(prop::sample::select(vec!["v7", "v8", "8", "v3"]));
        let version = prop::option::of(prop::sample::select(vec![
            "10.0.17763.5830",
            "10.0.20348.2461",
            "10.0.26100.1",
            "10.0.17763",
            "10.0.x",
        ]));
        let features = prop::sample::subsequence(vec!["win32k", "hyperv"], 0..=2);
        (os, arch, variant, version, features).prop_map(|(os, arch, variant, version, f)| {
            let mut p = Platform::new(os, arch);
            p.variant = variant.map(str::to_string);
            p.os_version = version.map(str::to_string);
            p.os_features = f.into_iter().map(str::to_string).collect();
            p
        })
    }

    fn candidate() -> impl Strategy<Value = Candidate<'static>> {
        let entry = prop::option::weighted(0.85, platform());
        let config = prop::option::of(platform());
        (entry, config, any::<bool>(), prop::bool::weighted(0.1)).prop_map(
            |(platform, config_platform, zstd, nested)| Candidate {
                config_platform: config_platform.filter(|_| platform.is_none()),
                platform: platform.map(Cow::Owned),
                zstd,
                nested,
            },
        )
    }

    fn host() -> impl Strategy<Value = Platform> {
        prop::sample::select(vec![
            Platform::new("linux", "amd64"),
            Platform::new("linux", "arm64"),
            Platform::new("windows", "amd64").with_os_version("10.0.17763"),
            Platform::new("windows", "amd64").with_os_version("10.0.20348"),
            Platform::new("windows", "amd64").with_os_version("10.0.26100"),
        ])
    }

    proptest! {
        /// The memos answer what the selector and the start check do, on random lists and
        /// hosts under every profile, whether the answer was memoised (the second call) or
        /// not, and hold no more than their bound.
        #[test]
        fn memoised_selection_is_the_selection(
            lists in prop::collection::vec(prop::collection::vec(candidate(), 0..7), 1..6),
            h in host(),
            docker in any::<bool>(),
        ) {
            let format = if docker { ListFormat::Docker } else { ListFormat::Oci };
            for list in &lists {
                for profile in RuntimeProfile::ALL {
                    let plain = select(profile, &h, format, list);
                    prop_assert_eq!(&*selection(profile, &h, format, list), &plain);
                    prop_assert_eq!(&*selection(profile, &h, format, list), &plain);
                    for image in list.iter().filter_map(|c| c.platform.as_deref()) {
                        let plain = runs(profile, &h, image);
                        prop_assert_eq!(starts(profile, &h, image), plain);
                        prop_assert_eq!(starts(profile, &h, image), plain);
                    }
                }
            }
            let (selections, starts) = held();
            prop_assert!(selections <= BOUND && starts <= BOUND);
        }
    }

    /// A repeat is answered from the memo (the same shared selection); another list, host or
    /// profile is not.
    #[test]
    fn repeats_share_one_selection() {
        let list = vec![
            Candidate {
                platform: Some(Cow::Owned(Platform::new("linux", "amd64"))),
                ..Candidate::default()
            },
            Candidate {
                platform: Some(Cow::Owned(
                    Platform::new("windows", "amd64").with_os_version("10.0.17763.1"),
                )),
                ..Candidate::default()
            },
        ];
        let host = Platform::new("windows", "amd64").with_os_version("10.0.17763");
        let p = RuntimeProfile::DEFAULT;
        let first = selection(p, &host, ListFormat::Oci, &list);
        assert_eq!(first.selected, Some(1));
        assert!(Rc::ptr_eq(
            &first,
            &selection(p, &host, ListFormat::Oci, &list)
        ));
        let linux = Platform::new("linux", "amd64");
        let other = selection(RuntimeProfile::CRI_O, &linux, ListFormat::Oci, &list);
        assert!(!Rc::ptr_eq(&first, &other));
        assert_eq!(other.selected, Some(0));
        assert!(!Rc::ptr_eq(
            &first,
            &selection(p, &host, ListFormat::Oci, &list[..1])
        ));
    }
}
