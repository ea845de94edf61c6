//! Mirror configuration as a cluster node reads it (docs/mirroring.md).
//!
//! Three inputs end up in one [`MirrorConfig`], the shape of containers-registries.conf(5)
//! v2 after the Machine Config Operator has rendered the cluster objects into it:
//!
//! - `ImageDigestMirrorSet` / `ImageTagMirrorSet` (`config.openshift.io/v1`) and
//!   `ImageContentSourcePolicy` (`operator.openshift.io/v1alpha1`), several YAML documents per
//!   file (and `kind: List`), as `oc-mirror` writes them. Each `source` becomes a registry
//!   entry whose prefix is the source; IDMS and ICSP mirrors serve digest pulls only, ITMS
//!   mirrors tag pulls only; `mirrorSourcePolicy: NeverContactSource` blocks the source.
//!   Entries for the same source are merged, mirrors in document order.
//! - `registries.conf` v2 (TOML) with its `<file>.d/*.conf` drop-ins, read in name order; a
//!   drop-in entry replaces an earlier entry with the same prefix, and within one file the
//!   first entry of a prefix wins (containers/image `sysregistriesv2`).
//!
//! Registries files are applied first, then the mirror sets, whatever the order of the flags.
//! Each input format is read in its own file (`sets.rs`, `registries_conf.rs`) into the entries
//! of `model.rs`; scopes are checked by [`validate_scope`]; `file.rs` reads a file within its
//! limits and says what is wrong with one. This file merges the entries into a
//! [`MirrorConfig`]; the files below never import it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod file;
mod model;
mod registries_conf;
mod scope;
mod sets;

pub use file::{ConfigError, ConfigProblem};
use file::{MAX_DROP_INS, error, read};
pub use model::{Mirror, MirrorSet, MirrorSetKind, PullFrom, Registry};
pub use scope::{ScopeError, validate_scope};
use sets::SetEntry;

/// Every registry entry of the inputs, one per prefix, sorted by prefix; and every mirror-set
/// entry as written, in input order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MirrorConfig {
    registries: BTreeMap<String, Registry>,
    sets: Vec<MirrorSet>,
}

impl MirrorConfig {
    /// True when no registry entry was configured.
    pub fn is_empty(&self) -> bool {
        self.registries.is_empty()
    }

    /// Every registry entry, sorted by prefix.
    pub fn registries(&self) -> impl Iterator<Item = &Registry> {
        self.registries.values()
    }

    /// Every IDMS, ITMS and ICSP entry read, as written, in input order.
    pub fn mirror_sets(&self) -> &[MirrorSet] {
        &self.sets
    }

    /// Loads mirror-set YAML (IDMS, ITMS, ICSP; several documents) and merges it in.
    pub fn add_mirror_sets_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        let text = read(path)?;
        self.add_mirror_sets(path, &text)
    }

    /// Merges mirror-set YAML text read from `path`.
    pub fn add_mirror_sets(&mut self, path: &Path, text: &str) -> Result<(), ConfigError> {
        let entries = sets::collect(path, text)?;
        if entries.is_empty() {
            let none =
                "no ImageDigestMirrorSet, ImageTagMirrorSet or ImageContentSourcePolicy found";
            return Err(error(path, None, ConfigProblem::Invalid(none.into())));
        }
        for e in entries {
            self.merge_set_entry(e);
        }
        Ok(())
    }

    fn merge_set_entry(&mut self, e: SetEntry) {
        self.sets.push(MirrorSet {
            kind: e.kind,
            source: e.source.clone(),
            mirrors: e.mirrors.clone(),
            never_contact_source: e.never_contact_source,
            origin: e.origin.clone(),
            at: e.at.clone(),
        });
        let reg = self
            .registries
            .entry(e.source.clone())
            .or_insert_with(|| Registry {
                prefix: e.source.clone(),
                location: if e.source.starts_with("*.") {
                    String::new()
                } else {
                    e.source.clone()
                },
                blocked: false,
                mirrors: Vec::new(),
                origin: e.origin.clone(),
            });
        reg.blocked |= e.never_contact_source;
        for location in e.mirrors {
            if !reg
                .mirrors
                .iter()
                .any(|m| m.location == location && m.pull_from == e.pull_from)
            {
                reg.mirrors.push(Mirror {
                    location,
                    pull_from: e.pull_from,
                    origin: e.origin.clone(),
                });
            }
        }
    }

    /// Loads a registries.conf v2 file and its `<file>.d/*.conf` drop-ins (name order).
    pub fn add_registries_conf_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        let text = read(path)?;
        self.add_registries_conf(path, &text)?;
        let mut dir = path.as_os_str().to_owned();
        dir.push(".d");
        let dir = PathBuf::from(dir);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(error(&dir, None, ConfigProblem::Read(Arc::new(e)))),
        };
        let mut drop_ins: Vec<PathBuf> = Vec::new();
        for (n, entry) in entries.enumerate() {
            if n >= MAX_DROP_INS {
                let problem = ConfigProblem::TooManyDropIns(MAX_DROP_INS);
                return Err(error(&dir, None, problem));
            }
            let entry = entry.map_err(|e| error(&dir, None, ConfigProblem::Read(Arc::new(e))))?;
            let p = entry.path();
            if p.extension().is_some_and(|x| x == "conf") && p.is_file() {
                drop_ins.push(p);
            }
        }
        drop_ins.sort();
        for p in drop_ins {
            let text = read(&p)?;
            self.add_registries_conf(&p, &text)?;
        }
        Ok(())
    }

    /// Merges registries.conf v2 text read from `path`: its entries replace earlier entries
    /// with the same prefix (as a drop-in does).
    pub fn add_registries_conf(&mut self, path: &Path, text: &str) -> Result<(), ConfigError> {
        let entries = registries_conf::parse(path, text)?;
        self.registries.extend(entries);
        Ok(())
    }
}

crate::error::input_errors!(ConfigError);

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(text: &str) -> Result<MirrorConfig, ConfigError> {
        let mut c = MirrorConfig::default();
        c.add_mirror_sets(Path::new("sets.yaml"), text)?;
        Ok(c)
    }

    fn conf(text: &str) -> Result<MirrorConfig, ConfigError> {
        let mut c = MirrorConfig::default();
        c.add_registries_conf(Path::new("registries.conf"), text)?;
        Ok(c)
    }

    /// Issue 22, item 4: a registries.conf nesting brackets deeper than any real one is
    /// refused by the guard every YAML, JSON and TOML input goes through, naming the line and
    /// the nesting (the TOML parser's own error quoted the whole line back).
    #[test]
    fn deep_nesting_in_registries_conf_is_refused_by_the_input_guard() {
        let text = format!(
            "[[registry]]\nlocation = \"quay.io\"\n\nunqualified-search-registries = {}{}\n",
            "[".repeat(200),
            "]".repeat(200)
        );
        let e = conf(&text).unwrap_err().to_string();
        assert!(
            e.starts_with("registries.conf:4: line 4: nested more than 64 levels"),
            "{}",
            &e[..e.len().min(300)]
        );
    }

    /// Issue 22, item 9: YAML merge keys in mirror sets are applied as kubectl applies them.
    #[test]
    fn merge_keys_in_mirror_sets_are_applied() {
        let text = format!(
            "{IDMS_HEAD}  - &m {{source: quay.io/a, mirrors: [m.local/a]}}\n  - <<: *m\n    source: quay.io/b\n"
        );
        let c = sets(&text).unwrap();
        let got: Vec<(&str, &str)> = c
            .registries()
            .map(|r| (r.prefix.as_str(), r.mirrors[0].location.as_str()))
            .collect();
        assert_eq!(
            got,
            [("quay.io/a", "m.local/a"), ("quay.io/b", "m.local/a")]
        );
    }

    /// As oc-mirror v2 writes it (`status: {}`, a null creationTimestamp).
    const IDMS_HEAD: &str = "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata:\n  creationTimestamp: null\n  name: x\nstatus: {}\nspec:\n  imageDigestMirrors:\n";

    #[test]
    fn oc_mirror_output_merges_documents_and_lists() {
        let text = format!(
            "{IDMS_HEAD}  - source: quay.io/org\n    mirrors: [m1.local/org]\n---\n\
             {IDMS_HEAD}  - source: quay.io/org\n    mirrors: [m2.local/org, m1.local/org]\n    mirrorSourcePolicy: NeverContactSource\n---\n\
             apiVersion: v1\nkind: List\nitems:\n- apiVersion: config.openshift.io/v1\n  kind: ImageTagMirrorSet\n  metadata: {{name: t}}\n  spec:\n    imageTagMirrors:\n    - source: quay.io/org/\n      mirrors: [t.local/org/]\n---\n"
        );
        let c = sets(&text).unwrap();
        let regs: Vec<&Registry> = c.registries().collect();
        assert_eq!(regs.len(), 1);
        let r = regs[0];
        assert_eq!(r.prefix, "quay.io/org");
        assert!(
            r.blocked,
            "NeverContactSource on any entry blocks the source"
        );
        let got: Vec<(&str, PullFrom)> = r
            .mirrors
            .iter()
            .map(|m| (m.location.as_str(), m.pull_from))
            .collect();
        assert_eq!(
            got,
            [
                ("m1.local/org", PullFrom::DigestOnly),
                ("m2.local/org", PullFrom::DigestOnly),
                ("t.local/org", PullFrom::TagOnly),
            ]
        );
        assert!(r.mirrors[0].origin.contains("ImageDigestMirrorSet x"));
    }

    #[test]
    fn drop_ins_replace_entries_by_prefix_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("registries.conf");
        std::fs::write(
            &main,
            "[[registry]]\nlocation = \"quay.io/org\"\n[[registry.mirror]]\nlocation = \"main.local/org\"\n\
             [[registry]]\nlocation = \"quay.io/other\"\n[[registry.mirror]]\nlocation = \"keep.local/other\"\n",
        )
        .unwrap();
        let d = dir.path().join("registries.conf.d");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(
            d.join("20-late.conf"),
            "[[registry]]\nlocation = \"quay.io/org\"\n[[registry.mirror]]\nlocation = \"late.local/org\"\n",
        )
        .unwrap();
        std::fs::write(
            d.join("10-early.conf"),
            "[[registry]]\nlocation = \"quay.io/org\"\n[[registry.mirror]]\nlocation = \"early.local/org\"\n",
        )
        .unwrap();
        std::fs::write(d.join("README"), "not a drop-in").unwrap();
        let mut c = MirrorConfig::default();
        c.add_registries_conf_file(&main).unwrap();
        let locs: Vec<(String, String)> = c
            .registries()
            .map(|r| (r.prefix.clone(), r.mirrors[0].location.clone()))
            .collect();
        assert_eq!(
            locs,
            [
                ("quay.io/org".to_string(), "late.local/org".to_string()),
                ("quay.io/other".to_string(), "keep.local/other".to_string()),
            ]
        );
    }

    /// The error's message and the messages of its causes, one a line, as the CLI prints them.
    fn chain(err: &dyn std::error::Error) -> String {
        let mut shown = err.to_string();
        let mut cause = err.source();
        while let Some(c) = cause {
            shown.push_str(&format!("\n  caused by: {c}"));
            cause = c.source();
        }
        shown
    }

    /// `err`, refusing `text` read as `file`, names the file, says `want` (in its message or a
    /// cause's) and, when given, the line.
    fn assert_refused(file: &str, text: &str, err: ConfigError, want: &str, line: Option<usize>) {
        let shown = chain(&err);
        assert!(err.to_string().starts_with(file), "{text}: {shown}");
        assert!(shown.contains(want), "{text}: want '{want}' in: {shown}");
        if line.is_some() {
            assert_eq!(err.line, line, "{text}: {shown}");
        }
    }

    #[test]
    fn bad_mirror_sets_are_refused_naming_file_and_place() {
        let entry = |body: &str| format!("{IDMS_HEAD}  - source: {body}\n");
        let icsp = "apiVersion: operator.openshift.io/v1alpha1\nkind: ImageContentSourcePolicy\nspec:\n  repositoryDigestMirrors:\n  - source: \"*.quay.io\"\n    mirrors: [m.local]\n";
        // (text, what the message or a cause says, the line when known)
        let cases: &[(String, &str, Option<usize>)] = &[
            ("kind: Deployment\napiVersion: apps/v1\n".into(), "kind 'Deployment'", None),
            (
                "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nspec: {}\n".into(),
                "no spec.imageDigestMirrors",
                None,
            ),
            (
                "apiVersion: v1alpha1\nkind: ImageDigestMirrorSet\nspec: {imageDigestMirrors: []}\n"
                    .into(),
                "apiVersion config.openshift.io/v1",
                None,
            ),
            (entry("quay.io/org\n    mirror: [m.local]"), "unknown field `mirror`", None),
            (
                entry("quay.io/org\n    mirrors: [m.local]\n    mirrorSourcePolicy: Never"),
                "mirrorSourcePolicy 'Never'",
                None,
            ),
            (entry("https://quay.io/org\n    mirrors: [m.local]"), "URI schemes", None),
            (entry("quay.io/Org\n    mirrors: [m.local]"), "path component 'Org'", None),
            (entry("quay.io/org\n    mirrors: [\"*.m.local\"]"), "wildcards are not allowed", None),
            (entry("quay.io/org:v1\n    mirrors: [m.local]"), "must not contain a tag", None),
            (icsp.into(), "wildcards are not allowed", None),
            ("a: [unclosed\n".into(), "document 1", Some(2)),
            ("".into(), "no ImageDigestMirrorSet", None),
        ];
        for (text, want, line) in cases {
            assert_refused("sets.yaml", text, sets(text).unwrap_err(), want, *line);
        }
    }

    #[test]
    fn bad_registries_conf_is_refused_naming_file_and_place() {
        let mirror = |pull_from: &str| {
            format!(
                "[[registry]]\nlocation = \"quay.io\"\n{pull_from}[[registry.mirror]]\nlocation = \"m.local\"\npull-from-mirror = "
            )
        };
        // (text, what the message or a cause says, the line when known)
        let cases: &[(String, &str, Option<usize>)] = &[
            (
                "[[registry]]\nlocation = \"quay.io\"\nmirror-by-digest = true\n".into(),
                "unknown field `mirror-by-digest`",
                Some(3),
            ),
            (
                "[registries.search]\nregistries = [\"quay.io\"]\n".into(),
                "v1 format",
                None,
            ),
            (
                "[[registry]]\nprefix = \"quay.io/org\"\n".into(),
                "location is unset",
                None,
            ),
            (
                "[[registry]]\nprefix = \"docker.io\"\nblocked = true\n".into(),
                "add location = \"docker.io\"",
                None,
            ),
            (
                mirror("mirror-by-digest-only = true\n") + "\"all\"\n",
                "cannot both be set",
                None,
            ),
            (mirror("") + "\"sometimes\"\n", "'sometimes'", None),
            (
                "[[registry]]\nlocation = \"https://quay.io\"\n".into(),
                "URI schemes",
                None,
            ),
            ("[[registry]\nlocation = 1\n".into(), "", Some(1)),
        ];
        for (text, want, line) in cases {
            assert_refused(
                "registries.conf",
                text,
                conf(text).unwrap_err(),
                want,
                *line,
            );
        }
    }

    #[test]
    fn causes_are_kept_apart_from_the_message() {
        let mut c = MirrorConfig::default();
        let err = c
            .add_mirror_sets_file(Path::new("/nonexistent/idms.yaml"))
            .unwrap_err();
        assert_eq!(err.to_string(), "/nonexistent/idms.yaml: cannot be read");
        let cause = std::error::Error::source(&err).expect("the I/O error is kept");
        let io = cause
            .downcast_ref::<Arc<std::io::Error>>()
            .expect("an io::Error");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        let err =
            conf("[[registry]]\nlocation = \"quay.io\"\nmirror-by-digest = true\n").unwrap_err();
        let cause = std::error::Error::source(&err).expect("the TOML error is kept");
        assert!(
            cause.downcast_ref::<Arc<toml::de::Error>>().is_some(),
            "{cause}"
        );
        assert!(!err.to_string().contains("unknown field"), "{err}");
        let err = sets(&format!("{IDMS_HEAD}  - source: quay.io/Org\n")).unwrap_err();
        let cause = std::error::Error::source(&err).expect("the scope error is kept");
        assert!(matches!(
            cause.downcast_ref::<ScopeError>(),
            Some(ScopeError::PathComponent(c)) if c == "Org"
        ));
    }

    #[test]
    fn unreadable_files_name_the_path() {
        let mut c = MirrorConfig::default();
        let err = c
            .add_mirror_sets_file(Path::new("/nonexistent/idms.yaml"))
            .unwrap_err();
        assert!(
            err.to_string().starts_with("/nonexistent/idms.yaml: "),
            "{err}"
        );
        let err = c
            .add_registries_conf_file(Path::new("/nonexistent/registries.conf"))
            .unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent/registries.conf"),
            "{err}"
        );
    }
}
