//! The pull plan: which mirrors a node tries for one reference, by digest or by tag, worked
//! out from its [`MirrorResolution`] alone (no network), with the findings about the plan itself
//! (`mirror-not-configured`, `mirror-tag-ignored`).

use super::resolve::{MirrorLocation, MirrorResolution};
use crate::digest::Digest;
use crate::engine::{Finding, Rule, Severity};
use crate::reference::RegistryRef;

/// How a node pulls one reference under the mirror configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullPlan {
    /// The node asks the mirrors by digest (`false`: by tag).
    pub by_digest: bool,
    /// The mirrors it tries, in order.
    pub mirrors: Vec<MirrorLocation>,
    /// The source may not be contacted.
    pub source_blocked: bool,
    /// What is wrong or worth knowing about the plan itself.
    pub findings: Vec<Finding>,
}

impl PullPlan {
    /// The name a node pulls from `mirror`: its repository at `digest` when pulling by
    /// digest, else at the reference's tag.
    pub fn pulled_name(
        &self,
        mirror: &MirrorLocation,
        reference: &RegistryRef,
        digest: &Digest,
    ) -> RegistryRef {
        if self.by_digest {
            mirror.repository.with_digest(digest)
        } else {
            RegistryRef {
                tag: reference.tag.clone(),
                ..mirror.repository.clone()
            }
        }
    }
}

/// Works out the pull plan for `reference` (no network): which mirrors, by digest or tag,
/// and the findings `mirror-not-configured` and `mirror-tag-ignored`.
pub fn plan(reference: &RegistryRef, resolution: Option<&MirrorResolution>) -> PullPlan {
    let name = format!("{}/{}", reference.registry, reference.repository);
    let Some(res) = resolution else {
        return PullPlan {
            by_digest: reference.digest.is_some(),
            mirrors: vec![],
            source_blocked: false,
            findings: vec![Finding::new(
                Rule::MirrorNotConfigured,
                format!(
                    "no mirror configuration entry covers {name}: a disconnected node pulls it from the source"
                ),
                None,
            )],
        };
    };
    let mut findings = Vec::new();
    let (by_digest, mirrors) = if reference.digest.is_some() {
        (true, owned(res.mirrors_for(true)))
    } else {
        let by_tag = owned(res.mirrors_for(false));
        if by_tag.is_empty() {
            let by_digest = owned(res.mirrors_for(true));
            if !by_digest.is_empty() {
                findings.push(tag_ignored(reference, res));
            }
            (true, by_digest)
        } else {
            (false, by_tag)
        }
    };
    if mirrors.is_empty() {
        findings.push(Finding::new(
            Rule::MirrorNotConfigured,
            format!(
                "the entry for {} ({}) has no mirror serving {} pulls of {name}",
                res.prefix,
                res.origin,
                if by_digest { "digest" } else { "tag" }
            ),
            None,
        ));
    }
    PullPlan {
        by_digest,
        mirrors,
        source_blocked: res.source_blocked,
        findings,
    }
}

fn owned(mirrors: Vec<&MirrorLocation>) -> Vec<MirrorLocation> {
    mirrors.into_iter().cloned().collect()
}

/// `mirror-tag-ignored`: a tag reference whose mirrors serve digest pulls only; an error when
/// the source may not be contacted either.
fn tag_ignored(reference: &RegistryRef, res: &MirrorResolution) -> Finding {
    let mut f = Finding::new(
        Rule::MirrorTagIgnored,
        format!(
            "{reference} is a tag reference, but the mirrors for {} ({}) serve digest pulls only: \
             a node pulling this tag {}; checking the mirrors at the source's digest instead",
            res.prefix,
            res.origin,
            if res.source_blocked {
                "fails, since the source may not be contacted (NeverContactSource/blocked)"
            } else {
                "goes to the source"
            }
        ),
        None,
    );
    if res.source_blocked {
        f.severity = Severity::Error;
    }
    f
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::mirror::resolve::resolve;
    use crate::mirror::testing::{config, ids, reg, rule_ids};

    const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn plans() {
        let c = config();
        let (warning, error) = (Some(Severity::Warning), Some(Severity::Error));
        let (ignored, unconfigured) = (Rule::MirrorTagIgnored, Rule::MirrorNotConfigured);
        /// (reference, by digest, mirrors, rules, first finding's severity)
        type Case<'a> = (String, bool, &'a [&'a str], &'a [Rule], Option<Severity>);
        let cases: &[Case] = &[
            (
                format!("q.io/open/x@{D}"),
                true,
                &["m.local/open/x"],
                &[],
                None,
            ),
            (
                "q.io/open/x:v1".into(),
                true,
                &["m.local/open/x"],
                &[ignored],
                warning,
            ),
            (
                "q.io/closed/x:v1".into(),
                true,
                &["m.local/closed/x"],
                &[ignored],
                error,
            ),
            (
                "q.io/tags/x:v1".into(),
                false,
                &["t.local/tags/x"],
                &[],
                None,
            ),
            (
                format!("q.io/tags/x@{D}"),
                true,
                &[],
                &[unconfigured],
                error,
            ),
            ("q.io/other/x:v1".into(), false, &[], &[unconfigured], error),
        ];
        for (r, by_digest, mirrors, want, severity) in cases {
            let r = reg(r);
            let res = resolve(&c, &r).unwrap();
            let p = plan(&r, res.as_ref());
            assert_eq!(p.by_digest, *by_digest, "{r}");
            let got: Vec<String> = p.mirrors.iter().map(ToString::to_string).collect();
            assert_eq!(got, *mirrors, "{r}");
            assert_eq!(ids(&p.findings), rule_ids(want), "{r}");
            assert_eq!(p.findings.first().map(|f| f.severity), *severity, "{r}");
        }
    }
}
