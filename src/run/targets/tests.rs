use std::time::{Duration, Instant};

use super::*;
use crate::cluster::manifests::parse_manifests;
use crate::cluster::release::ReleaseTag;

const A: &str =
    "quay.io/ocp/a@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str =
    "quay.io/ocp/b@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn release() -> Release {
    Release {
        reference: "quay.io/ocp/release:4.18.0-multi".into(),
        digest: format!("sha256:{}", "c".repeat(64)),
        from_index: None,
        layer: format!("sha256:{}", "d".repeat(64)),
        version: Some("4.18.0".into()),
        tags: [("cli", B), ("azure-file-csi-driver", A)]
            .iter()
            .map(|(n, r)| ReleaseTag {
                name: n.to_string(),
                image: r.parse().unwrap(),
            })
            .collect(),
    }
}

#[test]
fn release_components_in_the_order_named_and_those_lacking_fail() {
    let names = ["azure-file-csi-driver", "csi-livenessprobe", "cli"].map(String::from);
    let (targets, missing) = from_release(&release(), &names);
    let refs: Vec<String> = targets.iter().map(|t| t.reference.to_string()).collect();
    assert_eq!(refs, [A, B]);
    assert!(targets.iter().all(|t| t.scope.is_none()));
    assert!(
        matches!(&targets[0].origins[0], Origin::Release { tag, .. } if tag == "azure-file-csi-driver")
    );
    assert_eq!(missing.len(), 1);
    let m = &missing[0];
    assert_eq!(
        m.reference,
        "quay.io/ocp/release:4.18.0-multi#csi-livenessprobe"
    );
    assert_eq!(m.verdict, crate::engine::Verdict::Fail);
    assert_eq!(m.findings[0].rule, crate::engine::Rule::ReleaseImageMissing);
    assert!(
        m.findings[0]
            .message
            .starts_with("release 4.18.0 has no component 'csi-livenessprobe'"),
        "{}",
        m.findings[0].message
    );
}

/// A DaemonSet on `os` nodes that tolerates WMCO's `os=Windows:NoSchedule`, as the Windows
/// CSI node DaemonSets do.
fn ds(name: &str, os: &str, hostprocess: bool, image: &str) -> String {
    format!(
        "kind: DaemonSet\napiVersion: apps/v1\nmetadata: {{name: {name}, namespace: ns}}\n\
         spec:\n  template:\n    spec:\n      nodeSelector: {{kubernetes.io/os: {os}}}\n\
         \x20     tolerations: [{{key: os, operator: Equal, value: Windows, effect: NoSchedule}}]\n\
         \x20     securityContext: {{windowsOptions: {{hostProcess: {hostprocess}}}}}\n\
         \x20     containers:\n      - {{name: c, image: '{image}'}}\n---\n"
    )
}

/// The openshift policies taint their Windows hosts as WMCO taints its nodes: a DaemonSet
/// without selector or toleration is judged for the Linux hosts only, and a note says which
/// hosts its pods are kept off (the report carries the note, not only standard error).
#[test]
fn policy_taints_keep_untolerating_pods_off() {
    let yaml = format!(
        "kind: DaemonSet\nmetadata: {{name: d, namespace: ns}}\nspec:\n  template:\n    spec:\n\
         \x20     containers:\n      - {{name: c, image: '{A}'}}\n"
    );
    let uses = parse_manifests(&yaml, "m.yaml").unwrap();
    let (targets, notes) = from_manifests(&uses, &Policy::default_policy(), None);
    assert_eq!(hosts_of(&targets[0]), ["linux/amd64"]);
    let notes: Vec<String> = notes.iter().map(ToString::to_string).collect();
    assert_eq!(
        notes,
        [
            "DaemonSet ns/d: its pods are not judged for 2 hosts (windows/amd64:10.0.17763, \
          windows/amd64:10.0.20348): it does not tolerate the taint os=Windows:NoSchedule"
        ]
    );
    // linux-only has no taints: nothing is kept off.
    let (targets, notes) = from_manifests(&uses, &Policy::load("linux-only").unwrap(), None);
    assert_eq!(hosts_of(&targets[0]), ["linux/amd64"]);
    assert!(notes.is_empty());
}

fn scoped(yaml: &str) -> Vec<Target> {
    let uses = parse_manifests(yaml, "m.yaml").unwrap();
    from_manifests(&uses, &Policy::default_policy(), None).0
}

fn hosts_of(t: &Target) -> Vec<String> {
    let policy = &t.scope.as_ref().unwrap().policy;
    policy.hosts().iter().map(Host::label).collect()
}

fn isolation_of(t: &Target) -> Isolation {
    t.scope.as_ref().unwrap().policy.isolation()
}

/// Table: the pods of an image → the hosts it is judged for and its isolation.
#[test]
fn pod_templates_narrow_hosts_and_set_isolation() {
    let windows = ["windows/amd64:10.0.17763", "windows/amd64:10.0.20348"];
    let all = ["linux/amd64", windows[0], windows[1]];
    let cases: [(String, &[&str], Isolation); 5] = [
        (
            ds("w", "windows", true, A),
            &windows,
            Isolation::Hostprocess,
        ),
        (ds("w", "windows", false, A), &windows, Isolation::Process),
        (
            ds("l", "linux", false, A),
            &["linux/amd64"],
            Isolation::Process,
        ),
        // A HostProcess and a process-isolated Windows pod: the stricter one.
        (
            ds("w1", "windows", true, A) + &ds("w2", "windows", false, A),
            &windows,
            Isolation::Process,
        ),
        // Windows and Linux pods: every host; HostProcess on Windows.
        (
            ds("w", "windows", true, A) + &ds("l", "linux", false, A),
            &all,
            Isolation::Hostprocess,
        ),
    ];
    for (yaml, want_hosts, want_isolation) in cases {
        let targets = scoped(&yaml);
        assert_eq!(targets.len(), 1, "{yaml}");
        assert_eq!(hosts_of(&targets[0]), want_hosts, "{yaml}");
        assert_eq!(isolation_of(&targets[0]), want_isolation, "{yaml}");
        assert_eq!(
            targets[0].origins.len(),
            yaml.matches("kind:").count(),
            "{yaml}"
        );
    }
}

#[test]
fn one_target_per_image_in_order_of_first_use() {
    let targets = scoped(
        &(ds("x", "linux", false, B) + &ds("y", "windows", true, A) + &ds("z", "linux", false, B)),
    );
    let refs: Vec<String> = targets.iter().map(|t| t.reference.to_string()).collect();
    assert_eq!(refs, [B, A]);
    assert_eq!(targets[0].origins.len(), 2);
    assert!(
        matches!(&targets[1].origins[0], Origin::Manifest { object, container, path, init: false } if object == "DaemonSet ns/y" && container == "c" && path == "m.yaml")
    );
    assert_eq!(
        targets[1].scope.as_ref().unwrap().placement,
        "kubernetes.io/os In [windows]"
    );
}

#[test]
fn an_image_also_named_without_scope_is_judged_for_every_host() {
    let scoped = scoped(&ds("w", "windows", true, A));
    let plain = Target::plain(A.parse().unwrap());
    let merged = merge(vec![plain.clone(), scoped[0].clone()], None).unwrap();
    assert_eq!(merged.len(), 1);
    assert!(merged[0].scope.is_none());
    assert_eq!(merged[0].origins.len(), 1);
    let merged = merge(vec![scoped[0].clone(), plain, scoped[0].clone()], None).unwrap();
    assert!(merged[0].scope.is_none());
    assert_eq!(merged[0].origins.len(), 1, "origins are not repeated");
    let only = merge(scoped.clone(), None).unwrap();
    assert!(only[0].scope.is_some());
}

/// A reference with a tag and a digest is pulled by its digest (the tag is not read), so
/// `x:v1@D`, `x@D` and `x:v2@D` are one image: judged once, with every origin.
#[test]
fn an_image_pinned_by_digest_is_one_image_whatever_its_tag() {
    let digest = format!("sha256:{}", "e".repeat(64));
    let pinned = |tag: &str| format!("quay.io/ocp/a{tag}@{digest}");
    let yaml = ds("x", "windows", true, &pinned(":v1"))
        + &ds("y", "windows", true, &pinned(""))
        + &ds("z", "windows", true, &pinned(":v2"));
    let targets = scoped(&yaml);
    assert_eq!(targets.len(), 1, "{targets:#?}");
    assert_eq!(targets[0].reference.to_string(), pinned(":v1"));
    assert_eq!(targets[0].origins.len(), 3);
    let typed = Target::plain(pinned("").parse().unwrap());
    let merged = merge(vec![typed, targets[0].clone()], None).unwrap();
    assert_eq!(merged.len(), 1);
    assert!(merged[0].scope.is_none());
    assert_eq!(merged[0].origins.len(), 3);
    // A tag alone is not the same image as a digest: the tag may have moved.
    let tagged = scoped(
        &(ds("x", "linux", false, &pinned("")) + &ds("y", "linux", false, "quay.io/ocp/a:v1")),
    );
    assert_eq!(tagged.len(), 2);
}

/// A component named twice (`--release-image X --release-image X`) is one target, and a
/// missing one is one failing report.
#[test]
fn a_component_named_twice_is_judged_once() {
    let names = ["cli", "nope", "cli", "nope"].map(String::from);
    let (targets, missing) = from_release(&release(), &names);
    assert_eq!(targets.len(), 1);
    assert_eq!(missing.len(), 1, "{missing:#?}");
}

#[test]
fn host_labels_are_those_the_kubelet_sets() {
    let p = Policy::default_policy();
    let labels: Vec<BTreeMap<&str, String>> = p.hosts().iter().map(host_labels).collect();
    assert_eq!(labels[0].len(), 2);
    assert_eq!(labels[0]["kubernetes.io/os"], "linux");
    assert_eq!(labels[1]["kubernetes.io/arch"], "amd64");
    assert_eq!(labels[1]["node.kubernetes.io/windows-build"], "10.0.17763");
}

/// Merging reads each target's identity once, whatever the number of targets (item 2 of
/// issue 22: the merge compared every target with every one before it, so 200,000 listed
/// references never got past it). 3,000 targets, a third of them repeats.
#[test]
fn merging_reads_each_identity_once() {
    let n = 3_000;
    let targets: Vec<Target> = (0..n)
        .map(|i| Target::plain(format!("quay.io/ocp/r{}:v1", i % 2_000).parse().unwrap()))
        .collect();
    let calls = std::cell::Cell::new(0usize);
    let merged = merge_by(targets, None, |r| {
        calls.set(calls.get() + 1);
        identity(r)
    })
    .unwrap();
    assert_eq!(merged.len(), 2_000);
    assert_eq!(calls.get(), n, "identities read while merging {n} targets");
}

/// `--timeout` bounds the merge (issue 22, item 3): the deadline is checked before every
/// [`MERGE_CHECK_EVERY`]th target, so a merge stops at most that many targets after the
/// deadline passes, and merges whole without a deadline or before it. Rows: targets, the
/// deadline (`None`: none; seconds from now, negative: passed), when the merge falls behind
/// (the target whose identity takes 300 ms), and the targets merged when it stopped
/// (`None`: merged whole).
/// Targets, deadline in seconds from now, the slow target, the targets merged when it stopped.
type MergeRow = (usize, Option<f64>, Option<usize>, Option<usize>);

#[test]
fn the_merge_stops_once_the_deadline_has_passed() {
    let rows: [MergeRow; 6] = [
        (10, None, None, None),
        (10, Some(3600.0), None, None),
        (10, Some(-1.0), None, Some(0)),
        (20_000, Some(-1.0), None, Some(0)),
        (20_000, Some(0.2), Some(5_000), Some(2 * MERGE_CHECK_EVERY)),
        (
            20_000,
            Some(0.2),
            Some(MERGE_CHECK_EVERY - 1),
            Some(MERGE_CHECK_EVERY),
        ),
    ];
    for (n, deadline, slow, stopped) in rows {
        // The targets first: on a loaded machine, making them may take longer than the
        // deadline, which counts from the start of the merge.
        let targets: Vec<Target> = (0..n)
            .map(|i| Target::plain(format!("quay.io/ocp/r{i}:v1").parse().unwrap()))
            .collect();
        let now = Instant::now();
        let deadline = deadline.map(|s: f64| match s < 0.0 {
            true => now - Duration::from_secs_f64(-s),
            false => now + Duration::from_secs_f64(s),
        });
        let calls = std::cell::Cell::new(0usize);
        let merged = merge_by(targets, deadline, |r| {
            if Some(calls.get()) == slow {
                std::thread::sleep(Duration::from_millis(300));
            }
            calls.set(calls.get() + 1);
            identity(r)
        });
        let row = (n, deadline.is_some(), slow);
        match (merged, stopped) {
            (Ok(m), None) => assert_eq!(m.len(), n, "{row:?}"),
            (Err(e), Some(done)) => {
                assert_eq!((e.done, e.total), (done, n), "{row:?}");
                assert_eq!(calls.get(), done, "{row:?}: identities read");
            }
            (Ok(_), Some(done)) => panic!("{row:?}: merged whole, not stopped at {done}"),
            (Err(e), None) => panic!("{row:?}: stopped at {}", e.done),
        }
    }
}

/// The merge as it was (every target compared with every one kept before it): what
/// [`merge`] must still give, in the same order, on any input.
fn merge_quadratic(targets: Vec<Target>) -> Vec<Target> {
    let mut merged: Vec<Target> = Vec::new();
    for t in targets {
        let key = identity(&t.reference);
        match merged.iter_mut().find(|m| identity(&m.reference) == key) {
            Some(m) => {
                for o in t.origins {
                    if !m.origins.contains(&o) {
                        m.origins.push(o);
                    }
                }
                if t.scope.is_none() {
                    m.scope = None;
                }
            }
            None => merged.push(t),
        }
    }
    merged
}

/// What a merged target is, for comparing two merges.
fn shape(targets: &[Target]) -> Vec<(String, Vec<Origin>, Option<String>)> {
    targets
        .iter()
        .map(|t| {
            let scope = t.scope.as_ref().map(|s| s.placement.clone());
            (t.reference.to_string(), t.origins.clone(), scope)
        })
        .collect()
}

proptest::proptest! {
    /// Random targets (pinned references under several tags, repeated origins, scoped and
    /// plain): the merge gives what the quadratic one gave, in the same order.
    #[test]
    fn merging_gives_what_the_quadratic_merge_gave(
        picks in proptest::collection::vec((0usize..6, proptest::collection::vec(0usize..4, 0..4), proptest::option::of(0usize..3)), 0..40)
    ) {
        let digest = format!("sha256:{}", "e".repeat(64));
        let refs = [
            format!("quay.io/ocp/a:v1@{digest}"),
            format!("quay.io/ocp/a@{digest}"),
            format!("quay.io/ocp/a:v2@{digest}"),
            "quay.io/ocp/a:v1".to_string(),
            "quay.io/ocp/b:v1".to_string(),
            "oci:fixtures/layouts/good".to_string(),
        ];
        let origin = |i: usize| Origin::Manifest {
            path: format!("m{}.yaml", i % 2),
            object: format!("DaemonSet ns/d{i}"),
            container: "c".into(),
            init: false,
        };
        let targets: Vec<Target> = picks
            .iter()
            .map(|(r, origins, scope)| Target {
                reference: refs[*r].parse().unwrap(),
                origins: origins.iter().map(|&i| origin(i)).collect(),
                scope: scope.map(|s| {
                    Box::new(Scope {
                        policy: Policy::default_policy(),
                        placement: format!("placement {s}"),
                        runs_nowhere: None,
                    })
                }),
                landings: vec![],
            })
            .collect();
        let want = shape(&merge_quadratic(targets.clone()));
        proptest::prop_assert_eq!(shape(&merge(targets, None).unwrap()), want);
    }
}

/// Issue 20, item 4: the Windows nodes' sandbox image (WMCO's containerd `sandbox_image`,
/// openshift/windows-machine-config-operator `pkg/internal/containerd_conf.toml`) is a target
/// judged for the Windows hosts only, saying why it is there; none without Windows hosts, or
/// with `sandbox_image: none`.
#[test]
fn the_sandbox_image_is_judged_for_the_windows_hosts() {
    let policy = Policy::default_policy();
    let t = sandbox(&policy, "windows.sandbox_image")
        .expect("the OpenShift policies name WMCO's pause image");
    assert_eq!(
        t.reference.to_string(),
        "mcr.microsoft.com/oss/kubernetes/pause:3.9"
    );
    assert_eq!(
        t.origins[0].to_string(),
        "sandbox image of Windows nodes (policy windows.sandbox_image)"
    );
    let hosts: Vec<String> = t
        .scope
        .as_ref()
        .unwrap()
        .policy
        .hosts()
        .iter()
        .map(Host::label)
        .collect();
    assert_eq!(
        hosts,
        ["windows/amd64:10.0.17763", "windows/amd64:10.0.20348"]
    );

    let rows = [
        ("linux-only policy", Policy::load("linux-only").unwrap()),
        (
            "sandbox_image: none",
            Policy::parse(
                "name: p\nwindows:\n  architectures: [amd64]\n  builds: [17763]\n  sandbox_image: none\n",
                "p.yaml",
            )
            .unwrap(),
        ),
        (
            "no key",
            Policy::parse("name: p\nwindows:\n  architectures: [amd64]\n  builds: [17763]\n", "p.yaml")
                .unwrap(),
        ),
        (
            "a cluster without Windows nodes",
            policy.clone().with_hosts(vec![Host::of(crate::platform::Platform::new("linux", "amd64"))]),
        ),
    ];
    for (what, p) in rows {
        assert!(sandbox(&p, "windows.sandbox_image").is_none(), "{what}");
    }
    let err = Policy::parse(
        "name: p\nwindows:\n  architectures: [amd64]\n  builds: [17763]\n  sandbox_image: 'Not A Ref'\n",
        "p.yaml",
    )
    .unwrap_err();
    let err = crate::error::one_line(&err);
    assert!(err.contains("windows.sandbox_image"), "{err}");
}

/// issue 21, item 4: a pod that can land only on nodes skipped (here a dockershim-era Windows
/// node on Docker EE 18.09, a release whose pull code was not read) is judged on no host (`no-host-in-scope`), and the finding names those nodes and why
/// they were skipped.
#[test]
fn pods_landing_only_on_skipped_nodes_name_them() {
    use crate::cluster::nodes::{OddNodes, parse_nodes};
    let nodes = "kind: List\nitems:\n\
        - kind: Node\n  metadata: {name: lin-1, labels: {kubernetes.io/os: linux}}\n  \
          status: {nodeInfo: {architecture: amd64, operatingSystem: linux, \
          containerRuntimeVersion: 'containerd://1.7.27'}}\n\
        - kind: Node\n  metadata: {name: win-dockershim, labels: {kubernetes.io/os: windows}}\n  \
          status: {nodeInfo: {architecture: amd64, operatingSystem: windows, \
          kernelVersion: '10.0.17763.1757', containerRuntimeVersion: 'docker://18.9.11'}}\n";
    let read = parse_nodes(nodes, "nodes.yaml", OddNodes::Skip).unwrap();
    assert_eq!(read.skipped.len(), 1);
    let policy = Policy::default_policy().with_hosts(read.hosts);
    let uses = parse_manifests(&ds("w", "windows", true, A), "m.yaml").unwrap();
    let (targets, _) = from_manifests(&uses, &policy, Some(&read.nodes));
    let scope = targets[0].scope.as_ref().unwrap();
    let f = scope.no_host().expect("no-host-in-scope");
    assert_eq!(f.rule, Rule::NoHostInScope);
    assert!(
        f.message.contains(
            "it lands only on nodes skipped: node win-dockershim: \
             status.nodeInfo.containerRuntimeVersion 'docker://18.9.11' is Docker Engine 18.9.11"
        ),
        "{}",
        f.message
    );
    // A Linux pod lands on lin-1: judged there, nothing said about skipped nodes.
    let uses = parse_manifests(&ds("l", "linux", false, B), "m.yaml").unwrap();
    let (targets, _) = from_manifests(&uses, &policy, Some(&read.nodes));
    assert!(targets[0].scope.as_ref().unwrap().no_host().is_none());
}

/// Issue 37, item 3: a Windows workload (its pods select Windows nodes, or tolerate only
/// their taint) that lands on no host is an error naming what keeps it out; any other
/// workload that lands nowhere keeps the warning.
#[test]
fn a_windows_workload_that_runs_nowhere_is_an_error() {
    use crate::engine::Severity;
    let policy = Policy::default_policy();
    let workload = |selector: &str, tolerations: &str| {
        format!(
            "kind: DaemonSet\nmetadata: {{name: w, namespace: ns}}\nspec:\n  template:\n    spec:\n\
             \x20     nodeSelector: {selector}\n      tolerations: {tolerations}\n\
             \x20     containers:\n      - {{name: c, image: '{A}'}}\n"
        )
    };
    let wmco = "[{key: os, operator: Equal, value: Windows, effect: NoSchedule}]";
    // (selector, tolerations, severity, a text the finding holds)
    let rows: [(&str, &str, Option<Severity>, &str); 4] = [
        (
            "{kubernetes.io/os: windows}",
            "[]",
            Some(Severity::Error),
            "it does not tolerate the taint os=Windows:NoSchedule",
        ),
        (
            "{node.kubernetes.io/windows-build: 10.0.14393}",
            wmco,
            Some(Severity::Error),
            "its node selector and affinity match no Windows host's labels",
        ),
        ("{kubernetes.io/os: windows}", wmco, None, ""),
        (
            "{kubernetes.io/arch: s390x}",
            "[]",
            Some(Severity::Warning),
            "only its content was checked",
        ),
    ];
    for (selector, tolerations, severity, says) in rows {
        let uses = parse_manifests(&workload(selector, tolerations), "m.yaml").unwrap();
        let (targets, _) = from_manifests(&uses, &policy, None);
        let found = targets[0].scope.as_ref().unwrap().no_host();
        assert_eq!(found.as_ref().map(|f| f.severity), severity, "{selector}");
        if let Some(f) = found {
            assert_eq!(f.rule, Rule::NoHostInScope);
            assert!(f.message.contains(says), "{selector}: {}", f.message);
        }
    }
}
