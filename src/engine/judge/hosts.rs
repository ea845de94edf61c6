//! The host matrix: what each host of the policy pulls under each runtime profile, and the
//! `not-an-index`, `no-match` and `wrong-build-selected` findings it leads to.

use std::collections::{BTreeMap, BTreeSet};

use super::build_text;
use crate::digest::Digest;
use crate::engine::resolve::config_platform;
use crate::engine::{Finding, HostResult, Resolution, Rule, resolve};
use crate::graph::{Content, Graph, Node, Problem};
use crate::platform::{Platform, RuntimeProfile, matches};
use crate::policy::{Host, Policy};

/// The host matrix of one graph.
#[derive(Debug, Default)]
pub(super) struct HostMatrix {
    /// One row per host and runtime profile.
    pub results: Vec<HostResult>,
    /// Every entry some host selects.
    pub selected: BTreeSet<String>,
    /// `not-an-index`, `no-match` and `wrong-build-selected` findings.
    pub findings: Vec<Finding>,
}

/// Resolves every host of the policy, unless a single image stands where several platforms
/// are needed (`not-an-index`) or the top object cannot be judged at all.
pub(super) fn matrix(graph: &Graph, policy: &Policy, runtimes: &[RuntimeProfile]) -> HostMatrix {
    let root = &graph.root;
    let hosts = policy.hosts();
    let mut matrix = HostMatrix::default();
    match root.content {
        Content::Image(_) if hosts.len() > 1 => matrix.findings.push(not_an_index(root, &hosts)),
        Content::Image(_) | Content::Index { .. } => {
            for host in &hosts {
                judge_host(graph, host, runtimes, &mut matrix);
            }
        }
        Content::Schema1 | Content::Problem(_) => {}
    }
    matrix
}

/// A single image where the policy needs several platforms.
fn not_an_index(root: &Node, hosts: &[Host]) -> Finding {
    let cfg = config_platform(Some(root));
    let labels: Vec<String> = hosts.iter().map(Host::label).collect();
    Finding::new(
        Rule::NotAnIndex,
        format!(
            "{} is a single {} image; the policy needs {} platforms ({})",
            root.digest.short(),
            cfg.as_ref()
                .map_or("no platform".to_string(), ToString::to_string),
            hosts.len(),
            labels.join(", ")
        ),
        Some(&root.digest),
    )
}

/// The runtime profiles a host is resolved under, with the build text of the image it would
/// wrongly pull (for `wrong-build-selected`).
type Hits = Vec<(Option<RuntimeProfile>, Option<String>)>;

/// Resolves one host under each profile (Windows) or once (Linux, where profiles agree), adds
/// its rows, and one finding per distinct failing outcome naming the profiles that share it.
fn judge_host(graph: &Graph, host: &Host, runtimes: &[RuntimeProfile], m: &mut HostMatrix) {
    let profiles: Vec<Option<RuntimeProfile>> = if host.platform.is_windows() {
        runtimes.iter().copied().map(Some).collect()
    } else {
        vec![None]
    };
    let mut outcomes: BTreeMap<(Rule, Option<String>), Hits> = BTreeMap::new();
    for profile in profiles {
        let effective = profile.unwrap_or(RuntimeProfile::DEFAULT);
        let r = resolve(graph, &host.platform, effective);
        let (status, built) = status(&r, &host.platform, effective);
        if let Some(d) = &r.digest {
            m.selected.insert(d.clone());
        }
        m.results.push(HostResult {
            platform: host.label(),
            runtime: profile,
            selected: r.digest.clone(),
            os_version: r.config_platform.and_then(|p| p.os_version),
            status: status.map_or("ok", Rule::id).to_string(),
        });
        if let Some(rule @ (Rule::NoMatch | Rule::WrongBuildSelected)) = status {
            outcomes
                .entry((rule, r.digest))
                .or_default()
                .push((profile, built));
        }
    }
    for ((rule, digest), hits) in outcomes {
        m.findings.push(outcome_finding(host, rule, digest, &hits));
    }
}

/// A host's status under one profile: `None` when it pulls an image it can run, else the
/// rule it breaks, with the pulled image's build text for `wrong-build-selected`.
fn status(
    r: &Resolution,
    host: &Platform,
    profile: RuntimeProfile,
) -> (Option<Rule>, Option<String>) {
    match (&r.digest, &r.child_problem) {
        (None, _) => (Some(Rule::NoMatch), None),
        (Some(_), Some(Problem::Missing(_))) => (Some(Rule::ChildMissing), None),
        (Some(_), Some(Problem::DigestMismatch(_))) => (Some(Rule::DigestMismatch), None),
        (Some(_), Some(Problem::Unavailable(_))) => (Some(Rule::FetchError), None),
        (Some(_), Some(Problem::Bad(_))) => (Some(Rule::BadManifest), None),
        (Some(_), None) => match &r.config_platform {
            Some(cfg) if !matches(profile, host, cfg) => {
                (Some(Rule::WrongBuildSelected), Some(build_text(cfg)))
            }
            _ => (None, None),
        },
    }
}

/// The `no-match` or `wrong-build-selected` finding for one outcome of one host.
fn outcome_finding(host: &Host, rule: Rule, digest: Option<String>, hits: &Hits) -> Finding {
    let names: Vec<&str> = hits
        .iter()
        .filter_map(|(p, _)| p.map(RuntimeProfile::name))
        .collect();
    let under = if names.is_empty() {
        String::new()
    } else {
        format!(" under {}", names.join(", "))
    };
    if rule == Rule::NoMatch {
        let docker = format!(
            "no matching manifest for {} {} in the manifest list entries",
            host.platform.os_arch(),
            host.platform.os_version.clone().unwrap_or_default()
        );
        let message = format!(
            "{} would select nothing{under}: {}",
            host.label(),
            docker.trim_end()
        );
        return Finding::new(rule, message, None).on_host(host.label());
    }
    let built = hits[0].1.as_deref().unwrap_or("");
    let d: Option<Digest> = digest.as_deref().and_then(|d| d.parse().ok());
    let message = format!(
        "{} would pull {}{under}, an image built for {built}: it fails at container start",
        host.label(),
        d.as_ref().map_or("?".into(), |d| d.short()),
    );
    Finding::new(rule, message, d.as_ref()).on_host(host.label())
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn resolution(digest: bool, problem: Option<Problem>, config: Option<Platform>) -> Resolution {
        Resolution {
            digest: digest.then(|| D.to_string()),
            platform: None,
            config_platform: config,
            candidates: vec![],
            child_problem: problem,
        }
    }

    fn host(p: &str) -> Host {
        let (os, rest) = p.split_once('/').unwrap();
        let (arch, version) = rest
            .split_once(':')
            .map_or((rest, None), |(a, v)| (a, Some(v)));
        let platform = Platform::new(os, arch);
        Host {
            platform: match version {
                Some(v) => platform.with_os_version(v),
                None => platform,
            },
        }
    }

    #[test]
    fn status_per_outcome() {
        let w17763 = host("windows/amd64:10.0.17763").platform;
        let built_for = |v: &str| Some(Platform::new("windows", "amd64").with_os_version(v));
        let cases = [
            (
                resolution(false, None, None),
                None.or(Some(Rule::NoMatch)),
                None,
            ),
            (
                resolution(true, Some(Problem::Missing("m".into())), None),
                Some(Rule::ChildMissing),
                None,
            ),
            (
                resolution(true, Some(Problem::DigestMismatch("m".into())), None),
                Some(Rule::DigestMismatch),
                None,
            ),
            (
                resolution(true, Some(Problem::Unavailable("m".into())), None),
                Some(Rule::FetchError),
                None,
            ),
            (
                resolution(true, Some(Problem::Bad("m".into())), None),
                Some(Rule::BadManifest),
                None,
            ),
            (
                resolution(true, None, built_for("10.0.20348.1")),
                Some(Rule::WrongBuildSelected),
                Some("10.0.20348.1 (Windows Server 2022 (ltsc2022))"),
            ),
            (
                resolution(true, None, built_for("10.0.17763.5830")),
                None,
                None,
            ),
            (resolution(true, None, None), None, None),
        ];
        for (r, rule, built) in cases {
            let (got, text) = status(&r, &w17763, RuntimeProfile::DEFAULT);
            assert_eq!(got, rule, "{r:?}");
            assert_eq!(text.as_deref(), built, "{r:?}");
        }
    }

    #[test]
    fn outcome_findings_name_the_host_and_the_runtimes_that_share_them() {
        let linux = host("linux/amd64");
        let windows = host("windows/amd64:10.0.17763");
        let profiles = vec![
            (
                Some(RuntimeProfile::Containerd16),
                Some("10.0.20348.1 (x)".to_string()),
            ),
            (
                Some(RuntimeProfile::Containerd23),
                Some("ignored".to_string()),
            ),
        ];
        let cases = [
            (
                &linux,
                Rule::NoMatch,
                None,
                vec![(None, None)],
                // Linux hosts have no os.version: Docker's wording keeps its two spaces.
                "linux/amd64 would select nothing: no matching manifest for linux/amd64  in the manifest list entries".to_string(),
            ),
            (
                &windows,
                Rule::NoMatch,
                None,
                profiles.clone(),
                "windows/amd64:10.0.17763 would select nothing under containerd-1.6, containerd-2.3: \
                 no matching manifest for windows/amd64 10.0.17763 in the manifest list entries"
                    .to_string(),
            ),
            (
                &windows,
                Rule::WrongBuildSelected,
                Some(D.to_string()),
                profiles,
                "windows/amd64:10.0.17763 would pull sha256:e3b0c44298fc under containerd-1.6, containerd-2.3, \
                 an image built for 10.0.20348.1 (x): it fails at container start"
                    .to_string(),
            ),
        ];
        for (host, rule, digest, hits, message) in cases {
            let f = outcome_finding(host, rule, digest.clone(), &hits);
            assert_eq!(f.rule, rule);
            assert_eq!(f.message, message);
            assert_eq!(f.host, Some(host.label()));
            assert_eq!(f.digest, digest);
        }
    }
}
