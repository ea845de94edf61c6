//! The host matrix: what each host of the policy pulls under each runtime profile, and the
//! `not-an-index`, `no-match` and `wrong-build-selected` findings it leads to.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::text::build_text;
use crate::digest::Digest;
use crate::engine::finding::{Finding, HostResult, HostStatus};
use crate::engine::memo::starts;
use crate::engine::resolve::{config_platform, pick};
use crate::engine::rules::Rule;
use crate::graph::{Content, Graph, Node, Problem};
use crate::platform::{Platform, RuntimeProfile};
use crate::policy::{Host, Isolation, Policy};

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
                judge_host(graph, host, policy, runtimes, &mut matrix);
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

/// The hint of `no-match` for a Linux host (the rule's own hint speaks of Windows builds).
const LINUX_NO_MATCH_HINT: &str = "add an entry for this host's architecture (and variant) to the list: build and push that platform, then re-assemble the list";

/// One profile under which a host shares an outcome: the profile, the build text of the image
/// it would wrongly pull, and the nested indexes the selection walked.
#[derive(Debug, Clone, Default)]
struct Hit {
    profile: Option<RuntimeProfile>,
    built: Option<String>,
    descended_into: Vec<String>,
}

/// Resolves one host under each runtime its nodes may run (a host read from a cluster: its
/// nodes' own; Windows hosts: the containerd generations of `runtimes`; Linux hosts: the
/// policy's `linux.runtimes`), adds its rows, and
/// one finding per distinct failing outcome naming the profiles that share it.
fn judge_host(
    graph: &Graph,
    host: &Host,
    policy: &Policy,
    runtimes: &[RuntimeProfile],
    m: &mut HostMatrix,
) {
    let windows = host.platform.is_windows();
    let profiles: Vec<RuntimeProfile> = match host.runtime {
        Some(known) => vec![known],
        None if windows => windows_runtimes(policy, runtimes),
        None => policy.linux_runtimes(),
    };
    let isolation = windows.then(|| policy.isolation());
    let mut outcomes: BTreeMap<(Rule, Option<String>), Vec<Hit>> = BTreeMap::new();
    let label = host.label();
    for profile in profiles {
        let pick = pick(graph, &host.platform, profile);
        let digest = pick.digest();
        let cfg = config_platform(pick.image());
        let outcome = Outcome {
            selected: digest.is_some(),
            problem: pick.problem(),
            config: cfg.as_ref(),
        };
        let (status, built) = status(&outcome, &host.platform, profile, isolation);
        if let Some(d) = &digest
            && !m.selected.contains(d.as_ref())
        {
            m.selected.insert(d.to_string());
        }
        let digest = digest.map(Cow::into_owned);
        m.results.push(HostResult {
            platform: label.clone(),
            runtime: Some(profile),
            isolation,
            selected: digest.clone(),
            os_version: cfg.and_then(|p| p.os_version),
            status: HostStatus::from(status),
            nodes: host.nodes.clone(),
        });
        // A pull the runtime refuses (no content finding says it: the objects are fine).
        let refused = pick
            .refusal()
            .map(|why| (Rule::BadManifest, why.to_string()));
        if let Some(rule @ (Rule::NoMatch | Rule::WrongBuildSelected)) = status {
            outcomes.entry((rule, digest)).or_default().push(Hit {
                profile: Some(profile),
                built,
                descended_into: pick.descended_into(),
            });
        } else if let Some((rule, why)) = refused {
            outcomes.entry((rule, digest)).or_default().push(Hit {
                profile: Some(profile),
                built: Some(why),
                descended_into: pick.descended_into(),
            });
        }
    }
    for ((rule, digest), hits) in outcomes {
        m.findings.push(outcome_finding(host, rule, digest, &hits));
    }
}

/// The runtimes a Windows host is resolved under: those of `runtimes` that run Windows nodes,
/// or the policy's own when none does (`cri-o` alone never leaves a Windows host unjudged).
fn windows_runtimes(policy: &Policy, runtimes: &[RuntimeProfile]) -> Vec<RuntimeProfile> {
    let usable: Vec<RuntimeProfile> = runtimes
        .iter()
        .copied()
        .filter(|p| p.runs_windows())
        .collect();
    if usable.is_empty() {
        policy.runtimes.clone()
    } else {
        usable
    }
}

/// What a host's walk ended on, as far as its status goes.
#[derive(Debug)]
struct Outcome<'a> {
    /// Some entry (or the single image) is pulled.
    selected: bool,
    /// Why the pulled child cannot be judged, if so.
    problem: Option<Problem>,
    /// The pulled image's config platform, when known.
    config: Option<&'a Platform>,
}

/// A host's status under one profile: `None` when it pulls an image it can run, else the
/// rule it breaks, with the pulled image's build text for `wrong-build-selected`. Whether
/// the image runs: Windows, process isolation: the profile's compatibility window; Windows,
/// HostProcess: any build; Linux: what containerd's platform vector accepts (the kernel runs
/// 386 on amd64, arm on arm64), whichever runtime pulled it.
fn status(
    r: &Outcome,
    host: &Platform,
    profile: RuntimeProfile,
    isolation: Option<Isolation>,
) -> (Option<Rule>, Option<String>) {
    match (r.selected, &r.problem) {
        (false, _) => (Some(Rule::NoMatch), None),
        (true, Some(Problem::Missing(_))) => (Some(Rule::ChildMissing), None),
        (true, Some(Problem::DigestMismatch(_))) => (Some(Rule::DigestMismatch), None),
        (true, Some(Problem::Unavailable(_))) => (Some(Rule::FetchError), None),
        (true, Some(Problem::Bad(_))) => (Some(Rule::BadManifest), None),
        (true, None) => {
            let runner = if host.is_windows() {
                profile
            } else {
                RuntimeProfile::DEFAULT
            };
            match r.config {
                Some(cfg) if host.is_windows() && isolation == Some(Isolation::Hostprocess) => {
                    // HostProcess pods run on the host: only os and architecture matter.
                    let ok = starts(runner, host, &Platform::new(&cfg.os, &cfg.architecture));
                    wrong_build(ok, host, cfg)
                }
                Some(cfg) => wrong_build(starts(runner, host, cfg), host, cfg),
                None => (None, None),
            }
        }
    }
}

/// `wrong-build-selected` with the image's build text, unless the image runs. A Linux image
/// a Windows host pulls (containerd 1.4's fallback) is named by its OS and architecture; so
/// is whatever a Linux host pulls that it cannot run (Windows wording such as "no
/// os.version" is for Windows hosts only).
fn wrong_build(runs: bool, host: &Platform, cfg: &Platform) -> (Option<Rule>, Option<String>) {
    if runs {
        (None, None)
    } else if host.is_windows() && !cfg.is_windows() {
        let built = format!("{}, not Windows", cfg.os_arch());
        (Some(Rule::WrongBuildSelected), Some(built))
    } else if !host.is_windows() {
        let built = format!("{}, not {}", cfg.os_arch(), host.os_arch());
        (Some(Rule::WrongBuildSelected), Some(built))
    } else {
        (Some(Rule::WrongBuildSelected), Some(build_text(cfg)))
    }
}

/// The `no-match`, `wrong-build-selected` or (a pull the runtime refuses) `bad-manifest`
/// finding for one outcome of one host.
fn outcome_finding(host: &Host, rule: Rule, digest: Option<String>, hits: &[Hit]) -> Finding {
    let names: Vec<&str> = hits
        .iter()
        .filter_map(|h| h.profile.map(RuntimeProfile::name))
        .collect();
    let under = if names.is_empty() {
        String::new()
    } else {
        format!(" under {}", names.join(", "))
    };
    let nested = hits
        .iter()
        .find(|h| !h.descended_into.is_empty())
        .map(|h| {
            let short: Vec<String> = h
                .descended_into
                .iter()
                .map(|d| d.parse::<Digest>().map_or(d.clone(), |d| d.short()))
                .collect();
            format!(" (inside nested index {})", short.join(" → "))
        })
        .unwrap_or_default();
    if rule == Rule::NoMatch {
        return no_match(host, &under, &nested);
    }
    let built = hits[0].built.as_deref().unwrap_or("");
    let d: Option<Digest> = digest.as_deref().and_then(|d| d.parse().ok());
    if rule == Rule::BadManifest {
        let message = format!(
            "{} would pull {}{nested}{under}, but {built}: the pull fails",
            host.subject(),
            d.as_ref().map_or("?".into(), |d| d.short()),
        );
        return Finding::new(rule, message, d.as_ref()).on_host(host.label());
    }
    let message = format!(
        "{} would pull {}{nested}{under}, an image built for {built}: it fails at container start",
        host.subject(),
        d.as_ref().map_or("?".into(), |d| d.short()),
    );
    Finding::new(rule, message, d.as_ref()).on_host(host.label())
}

/// The `no-match` finding: Docker's wording (with the host's os.version for Windows), the
/// nested index the selection walked, and for Linux hosts a hint of their own.
fn no_match(host: &Host, under: &str, nested: &str) -> Finding {
    let p = &host.platform;
    let wanted = match &p.os_version {
        Some(v) if p.is_windows() => format!("{} {v}", p.os_arch()),
        _ => p.os_arch(),
    };
    let message = format!(
        "{} would select nothing{nested}{under}: no matching manifest for {wanted} in the manifest list entries",
        host.subject(),
    );
    let f = Finding::new(Rule::NoMatch, message, None).on_host(host.label());
    if p.is_windows() {
        f
    } else {
        f.with_hint(LINUX_NO_MATCH_HINT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn resolution(
        selected: bool,
        problem: Option<Problem>,
        config: Option<Platform>,
    ) -> (bool, Option<Problem>, Option<Platform>) {
        (selected, problem, config)
    }

    fn outcome(r: &(bool, Option<Problem>, Option<Platform>)) -> Outcome<'_> {
        Outcome {
            selected: r.0,
            problem: r.1.clone(),
            config: r.2.as_ref(),
        }
    }

    fn host(p: &str) -> Host {
        let (os, rest) = p.split_once('/').unwrap();
        let (arch, version) = rest
            .split_once(':')
            .map_or((rest, None), |(a, v)| (a, Some(v)));
        let platform = Platform::new(os, arch);
        Host::of(match version {
            Some(v) => platform.with_os_version(v),
            None => platform,
        })
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
            let process = Some(Isolation::Process);
            let (got, text) = status(&outcome(&r), &w17763, RuntimeProfile::DEFAULT, process);
            assert_eq!(got, rule, "{r:?}");
            assert_eq!(text.as_deref(), built, "{r:?}");
        }
    }

    /// Issue 33, item 7 (c): a Linux host that pulls an image of another platform (an
    /// attestation's `unknown/unknown` config) is told that platform, not Windows wording
    /// ("built for no os.version").
    #[test]
    fn a_linux_host_is_told_the_platform_not_a_windows_build() {
        let linux = host("linux/amd64").platform;
        let unknown = resolution(true, None, Some(Platform::new("unknown", "unknown")));
        let (rule, built) = status(&outcome(&unknown), &linux, RuntimeProfile::DEFAULT, None);
        assert_eq!(rule, Some(Rule::WrongBuildSelected));
        assert_eq!(built.as_deref(), Some("unknown/unknown, not linux/amd64"));
    }

    /// Issue 12, HostProcess: a pulled image of another build runs (no wrong-build-selected),
    /// but an image of another OS or architecture still does not; process isolation unchanged.
    #[test]
    fn hostprocess_runs_any_build_once_pulled() {
        let w17763 = host("windows/amd64:10.0.17763").platform;
        let built = |p: Platform| resolution(true, None, Some(p));
        let ws2022 = Platform::new("windows", "amd64").with_os_version("10.0.20348.1");
        let cases = [
            (built(ws2022.clone()), Isolation::Hostprocess, None),
            (
                built(ws2022),
                Isolation::Process,
                Some(Rule::WrongBuildSelected),
            ),
            (
                built(Platform::new("windows", "arm64")),
                Isolation::Hostprocess,
                Some(Rule::WrongBuildSelected),
            ),
            (
                resolution(false, None, None),
                Isolation::Hostprocess,
                Some(Rule::NoMatch),
            ),
        ];
        for (r, isolation, want) in cases {
            for profile in RuntimeProfile::CONTAINERD {
                let (got, _) = status(&outcome(&r), &w17763, profile, Some(isolation));
                assert_eq!(got, want, "{profile} {isolation}: {r:?}");
            }
        }
    }

    /// Linux hosts: an image the kernel runs (386 on amd64) is fine whichever runtime pulled it.
    #[test]
    fn linux_runnability_follows_the_platform_vector() {
        let amd64 = host("linux/amd64").platform;
        let cases = [
            (Platform::new("linux", "386"), None),
            (Platform::new("linux", "amd64"), None),
            (
                Platform::new("linux", "arm64"),
                Some(Rule::WrongBuildSelected),
            ),
        ];
        for (cfg, want) in cases {
            let r = resolution(true, None, Some(cfg.clone()));
            let (got, _) = status(&outcome(&r), &amd64, RuntimeProfile::CRI_O, None);
            assert_eq!(got, want, "{cfg}");
        }
    }

    #[test]
    fn windows_hosts_never_run_cri_o() {
        let policy = Policy::default_policy();
        let cases: &[(&[RuntimeProfile], &[RuntimeProfile])] = &[
            (
                &[RuntimeProfile::CONTAINERD_1_6],
                &[RuntimeProfile::CONTAINERD_1_6],
            ),
            (
                &[RuntimeProfile::CRI_O, RuntimeProfile::CONTAINERD_2_3],
                &[RuntimeProfile::CONTAINERD_2_3],
            ),
            (&[RuntimeProfile::CRI_O], &policy.runtimes),
            (&[], &policy.runtimes),
        ];
        for (given, want) in cases {
            assert_eq!(windows_runtimes(&policy, given), *want, "{given:?}");
        }
    }

    fn hit(profile: RuntimeProfile, built: &str, nested: &[&str]) -> Hit {
        Hit {
            profile: Some(profile),
            built: Some(built.to_string()),
            descended_into: nested.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn outcome_findings_name_the_host_and_the_runtimes_that_share_them() {
        let linux = host("linux/amd64");
        let windows = host("windows/amd64:10.0.17763");
        let profiles = vec![
            hit(RuntimeProfile::CONTAINERD_1_6, "10.0.20348.1 (x)", &[]),
            hit(RuntimeProfile::CONTAINERD_2_3, "ignored", &[]),
        ];
        let nested = vec![hit(RuntimeProfile::CONTAINERD_2_3, "", &[D])];
        let cases = [
            (
                &linux,
                Rule::NoMatch,
                None,
                vec![hit(RuntimeProfile::CRI_O, "", &[])],
                // Issue 12: one space, not two, where a Windows host has its os.version.
                "linux/amd64 would select nothing under cri-o: no matching manifest for linux/amd64 in the manifest list entries".to_string(),
                LINUX_NO_MATCH_HINT,
            ),
            (
                &windows,
                Rule::NoMatch,
                None,
                profiles.clone(),
                "windows/amd64:10.0.17763 would select nothing under containerd-1.6, containerd-2.3: \
                 no matching manifest for windows/amd64 10.0.17763 in the manifest list entries"
                    .to_string(),
                Rule::NoMatch.hint(),
            ),
            (
                &windows,
                Rule::NoMatch,
                None,
                nested,
                "windows/amd64:10.0.17763 would select nothing (inside nested index sha256:e3b0c44298fc) \
                 under containerd-2.3: no matching manifest for windows/amd64 10.0.17763 in the manifest list entries"
                    .to_string(),
                Rule::NoMatch.hint(),
            ),
            (
                &windows,
                Rule::WrongBuildSelected,
                Some(D.to_string()),
                profiles,
                "windows/amd64:10.0.17763 would pull sha256:e3b0c44298fc under containerd-1.6, containerd-2.3, \
                 an image built for 10.0.20348.1 (x): it fails at container start"
                    .to_string(),
                Rule::WrongBuildSelected.hint(),
            ),
        ];
        for (host, rule, digest, hits, message, hint) in cases {
            let f = outcome_finding(host, rule, digest.clone(), &hits);
            assert_eq!(f.rule, rule);
            assert_eq!(f.message, message);
            assert_eq!(f.hint, hint);
            assert_eq!(f.host, Some(host.label()));
            assert_eq!(f.digest, digest);
        }
        assert!(!LINUX_NO_MATCH_HINT.contains("Windows"));
    }
}
