use super::*;
use crate::error::one_line;
use crate::input::DEFAULT_MAX_INPUT_BYTES;
use serde_json::json;

/// A node as `oc get nodes -o json` prints it, reduced to the fields read here.
fn node(
    name: &str,
    os: &str,
    arch: &str,
    build: Option<&str>,
    kernel: &str,
    rt: &str,
) -> serde_json::Value {
    let mut labels = json!({"kubernetes.io/os": os, "kubernetes.io/arch": arch});
    if let Some(b) = build {
        labels[LABEL_WINDOWS_BUILD] = json!(b);
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"nodeInfo": {
            "architecture": arch, "operatingSystem": os,
            "kernelVersion": kernel, "containerRuntimeVersion": rt
        }}
    })
}

fn list(items: Vec<serde_json::Value>) -> String {
    json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

fn rows(hosts: &NodeHosts) -> Vec<String> {
    hosts
        .hosts
        .iter()
        .map(|h| {
            format!(
                "{} {} {}",
                h.label(),
                h.runtime.map_or("-", RuntimeProfile::name),
                h.nodes.join(",")
            )
        })
        .collect()
}

#[test]
fn runtime_versions_map_to_profiles() {
    // (containerRuntimeVersion, profile name, judged with the nearest profile)
    let cases: &[(&str, &str, bool)] = &[
        ("containerd://1.7.27", "containerd-1.7", false),
        ("containerd://1.7.0", "containerd-1.7.0", false), // the window: 1.7.6, containerd#9069
        ("containerd://1.7.6", "containerd-1.7", false),
        ("containerd://v1.7.27", "containerd-1.7", false),
        ("containerd://1.6.23", "containerd-1.6", false),
        ("containerd://1.6.39", "containerd-1.6", false),
        // Issue 21, item 3: 1.6.0 – 1.6.17 have the prefix-only Windows matcher (EKS 1.24's
        // Windows nodes report 1.6.6); issue 33, D: 1.6.18 – 1.6.22 the prefix with the
        // fallback for entries without os.version (containerd#8106, released in 1.6.18), no
        // LTSC window yet (containerd#8854, 1.6.23). containerd v1.5.2's matcher is `containerd-1.5`
        // (1.5.0, 1.5.1: the newer row of the series); 1.3 and older, the oldest row (1.4).
        ("containerd://1.6.0", "containerd-1.6.0", false),
        ("containerd://1.6.6", "containerd-1.6.0", false),
        ("containerd://1.6.17", "containerd-1.6.0", false),
        ("containerd://1.6.18", "containerd-1.6.18", false),
        ("containerd://1.6.20", "containerd-1.6.18", false),
        ("containerd://1.6.10", "containerd-1.6.0", false),
        ("containerd://1.5.18", "containerd-1.5", false),
        ("containerd://1.5.2", "containerd-1.5", false),
        ("containerd://1.5.1", "containerd-1.5", true),
        ("containerd://1.4.13", "containerd-1.4", false),
        ("containerd://1.4.0", "containerd-1.4", false),
        ("containerd://1.3.9", "containerd-1.4", true),
        ("containerd://2.0.4", "containerd-2.0", false),
        ("containerd://2.1.3", "containerd-2.0", false),
        ("containerd://2.1.5", "containerd-2.0", false),
        ("containerd://2.1.6", "containerd-2.2", false),
        ("containerd://2.2.0", "containerd-2.2", false),
        ("containerd://2.2.1-rc.1", "containerd-2.2", false),
        ("containerd://2.3.1", "containerd-2.3", false),
        ("containerd://2.4.0", "containerd-next", true),
        // The edges of the profile table's releases, and the nearest profile beyond them.
        ("containerd://0.9.0", "containerd-1.4", true),
        ("containerd://1.6.22", "containerd-1.6.18", false),
        ("containerd://1.6.40", "containerd-1.6", true),
        ("containerd://1.7.4294967295", "containerd-1.7", false),
        ("containerd://1.8.0", "containerd-next", true),
        ("containerd://2.1.0", "containerd-2.0", false),
        ("containerd://2.2.99", "containerd-2.2", false),
        ("containerd://2.3.0", "containerd-2.3", false),
        ("containerd://3.0.0", "containerd-next", true),
        ("cri-o://1.31.6-3.rhaos4.18.gitb5a7b3a.el9", "cri-o", false),
        // Issue 21, item 3: Docker Engine (dockershim-era Windows nodes), moby 19.03 – 24.0.
        ("docker://19.3.14", "docker-19.03", false),
        ("docker://19.03.0", "docker-19.03", false),
        ("docker://20.10.9", "docker-19.03", false),
        ("docker://24.0.7", "docker-19.03", false),
    ];
    for (v, want, noted) in cases {
        let got = runtime_profile(v).unwrap();
        let note = got.note();
        assert_eq!(got.profile.name(), *want, "{v}");
        assert_eq!(note.is_some(), *noted, "{v}: {note:?}");
        if let Some(n) = note {
            assert!(n.contains(&format!("judged as {want}")), "{n}");
        }
    }
    for (v, why) in [
        (
            "docker://18.9.1",
            "is Docker Engine 18.9.1, a release whose Windows pull code",
        ),
        (
            "docker://25.0.0",
            "was not read: imgcheck follows moby 19.03 – 24.0",
        ),
        ("docker://Unknown", "MAJOR.MINOR.PATCH"),
        ("containerd://1.7", "MAJOR.MINOR.PATCH"),
        ("containerd://abc", "MAJOR.MINOR.PATCH"),
        ("containerd://", "MAJOR.MINOR.PATCH"),
        ("1.7.27", "RUNTIME://VERSION"),
        ("", "RUNTIME://VERSION"),
    ] {
        let err = runtime_profile(v).unwrap_err();
        assert!(err.contains(why), "{v}: {err}");
    }
}

#[test]
fn nodes_become_deduplicated_host_rows() {
    let text = list(vec![
        node(
            "winworker-9tbzm",
            "windows",
            "amd64",
            Some("10.0.17763"),
            "10.0.17763.6893",
            "containerd://1.7.27",
        ),
        node(
            "winworker-4kq8x",
            "windows",
            "amd64",
            Some("10.0.17763"),
            "10.0.17763.7009",
            "containerd://1.7.27",
        ),
        // No build label: the kernel version (with its revision) gives the build.
        node(
            "winworker-2022",
            "windows",
            "amd64",
            None,
            "10.0.20348.3328",
            "containerd://2.1.3",
        ),
        node(
            "worker-arm",
            "linux",
            "arm64",
            None,
            "5.14.0-427.el9.aarch64",
            "cri-o://1.31.6",
        ),
        node(
            "worker-a",
            "linux",
            "amd64",
            None,
            "5.14.0-427.el9.x86_64",
            "cri-o://1.31.6",
        ),
        node(
            "master-0",
            "linux",
            "amd64",
            None,
            "5.14.0-427.el9.x86_64",
            "cri-o://1.31.6",
        ),
    ]);
    let got = parse_nodes(&text, "n.json", OddNodes::Skip).unwrap();
    assert_eq!(
        rows(&got),
        [
            "linux/amd64 cri-o master-0,worker-a",
            "linux/arm64 cri-o worker-arm",
            "windows/amd64:10.0.17763 containerd-1.7 winworker-4kq8x,winworker-9tbzm",
            "windows/amd64:10.0.20348 containerd-2.0 winworker-2022",
        ]
    );
    assert!(got.notes.is_empty());
    assert_eq!(
        got.hosts[2].subject(),
        "2 nodes (winworker-4kq8x, winworker-9tbzm) on windows/amd64:10.0.17763"
    );
}

/// A single Node, a runtime no profile covers, and one build under two runtimes.
#[test]
fn single_nodes_notes_and_runtime_splits() {
    // One node, on its own: a Node, not a List; a runtime no profile covers gets a note.
    let one = node(
        "w",
        "windows",
        "amd64",
        Some("10.0.26100"),
        "",
        "containerd://2.4.1",
    );
    let got = parse_nodes(&one.to_string(), "-", OddNodes::Skip).unwrap();
    assert_eq!(rows(&got), ["windows/amd64:10.0.26100 containerd-next w"]);
    assert_eq!(got.notes.len(), 1, "{:?}", got.notes);
    assert_eq!(
        got.hosts[0].subject(),
        "1 node (w) on windows/amd64:10.0.26100"
    );
    // Same build, different runtimes: two rows.
    let text = list(vec![
        node(
            "a",
            "windows",
            "amd64",
            Some("10.0.17763"),
            "",
            "containerd://1.7.27",
        ),
        node(
            "b",
            "windows",
            "amd64",
            Some("10.0.17763"),
            "",
            "containerd://2.2.0",
        ),
    ]);
    assert_eq!(
        parse_nodes(&text, "x", OddNodes::Skip).unwrap().hosts.len(),
        2
    );
}

#[test]
fn bad_node_lists_name_the_node_and_the_field() {
    let win = |name: &str, build: Option<&str>, kernel: &str, rt: &str| {
        node(name, "windows", "amd64", build, kernel, rt)
    };
    let mut no_name = win("", Some("10.0.17763"), "", "containerd://1.7.27");
    no_name["metadata"].as_object_mut().unwrap().remove("name");
    let mut no_arch = node("l", "linux", "", None, "", "cri-o://1.31.6");
    no_arch["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove(LABEL_ARCH);
    let cases: Vec<(String, &str)> = vec![
        ("{".into(), "not JSON"),
        ("[]".into(), "no 'kind'"),
        (json!({"kind": "Pod"}).to_string(), "kind is 'Pod'"),
        (json!({"kind": "List"}).to_string(), "no 'items' array"),
        (list(vec![]), "holds no nodes"),
        (
            list(vec![json!({"kind": "Pod", "metadata": {"name": "p"}})]),
            "item 0 is not a Node (Pod)",
        ),
        (list(vec![json!("text")]), "item 0 is not a Node"),
        (list(vec![no_name]), "item 0: metadata.name is missing"),
        (
            list(vec![no_arch]),
            "node l: neither the kubernetes.io/arch label nor status.nodeInfo.architecture",
        ),
        (
            list(vec![node("l", "linux", "x86", None, "", "cri-o://1")]),
            "node l: metadata.labels[\"kubernetes.io/arch\"] 'x86' is not a known architecture",
        ),
        (
            list(vec![win("w1", Some("ltsc2019"), "", "containerd://1.7.27")]),
            "node w1: metadata.labels[\"node.kubernetes.io/windows-build\"] 'ltsc2019' is not a Windows version",
        ),
        (
            list(vec![win("w2", None, "10.0", "containerd://1.7.27")]),
            "node w2: status.nodeInfo.kernelVersion '10.0' is not a Windows version",
        ),
        (
            list(vec![win("w3", None, "", "containerd://1.7.27")]),
            "node w3: neither the node.kubernetes.io/windows-build label nor status.nodeInfo.kernelVersion",
        ),
        (
            list(vec![win(
                "w4",
                Some("10.0.10240"),
                "",
                "containerd://1.7.27",
            )]),
            "'10.0.10240' is not a Windows version",
        ),
        (
            list(vec![win("w5", Some("10.0.17763"), "", "containerd://1.7")]),
            "node w5: status.nodeInfo.containerRuntimeVersion 'containerd://1.7' has no version",
        ),
        (
            list(vec![win("w6", Some("10.0.17763"), "", "cri-o://1.31.6")]),
            "node w6: status.nodeInfo.containerRuntimeVersion 'cri-o://1.31.6' on a Windows node",
        ),
        (
            list(vec![node("d", "darwin", "arm64", None, "", "cri-o://1")]),
            "node d: operating system 'darwin'",
        ),
    ];
    for (text, want) in cases {
        let err = one_line(&parse_nodes(&text, "nodes.json", OddNodes::Refuse).unwrap_err());
        assert!(err.starts_with("nodes nodes.json: "), "{err}");
        assert!(err.contains(want), "{text} → {err}");
    }
}

#[test]
fn read_nodes_names_a_missing_file() {
    let err = one_line(
        &read_nodes(
            "/nonexistent/nodes.json",
            DEFAULT_MAX_INPUT_BYTES,
            OddNodes::Skip,
        )
        .unwrap_err(),
    );
    assert!(
        err.contains("nodes /nonexistent/nodes.json: cannot read"),
        "{err}"
    );
}

/// Issue 22, item 4: a node list nesting `[` deeper than any real one is refused by the
/// guard every YAML and JSON input goes through, naming the file and the nesting (not as
/// "not JSON" from the parser's own recursion limit).
#[test]
fn deep_nesting_is_refused_by_the_input_guard() {
    let text = format!(
        r#"{{"kind":"List","items":{}{}}}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    let err = one_line(&parse_nodes(&text, "nodes.json", OddNodes::Refuse).unwrap_err());
    assert!(
        err.starts_with("nodes nodes.json: ") && err.contains("nested more than 64 levels"),
        "{err}"
    );
}

/// Issue 22, item 9: a node list with a UTF-8 byte-order mark (PowerShell's `Out-File
/// -Encoding utf8`) or in UTF-16 with one (its `>`) is read as kubectl reads files.
#[test]
fn a_byte_order_mark_is_read_as_kubectl_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let list = json!({"kind": "List", "items": [node("w1", "windows", "amd64", Some("10.0.20348"), "10.0.20348.2461", "containerd://1.7.27")]}).to_string();
    let utf8: Vec<u8> = b"\xEF\xBB\xBF"
        .iter()
        .copied()
        .chain(list.bytes())
        .collect();
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(list.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    for (name, bytes) in [("utf8.json", utf8), ("utf16.json", utf16)] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let read = read_nodes(
            path.to_str().unwrap(),
            DEFAULT_MAX_INPUT_BYTES,
            OddNodes::Skip,
        )
        .unwrap_or_else(|e| panic!("{name}: {}", one_line(&e)));
        assert_eq!(read.hosts.len(), 1, "{name}");
    }
}

/// Issue 21, item 4: `oc get nodes -o yaml` (a `List`, or one `Node`) is read as its JSON is,
/// through the reader every YAML input uses.
#[test]
fn yaml_node_lists_are_read_like_json_ones() {
    let list_yaml = r#"apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    labels:
      kubernetes.io/arch: amd64
      kubernetes.io/os: windows
      node.kubernetes.io/windows-build: 10.0.17763
    name: ip-10-0-1-20.ec2.internal
  status:
    nodeInfo:
      architecture: amd64
      containerRuntimeVersion: containerd://1.7.27
      kernelVersion: 10.0.17763.6893
      operatingSystem: windows
- apiVersion: v1
  kind: Node
  metadata:
    labels: &linux
      kubernetes.io/arch: amd64
      kubernetes.io/os: linux
    name: ip-10-0-1-10.ec2.internal
  status:
    nodeInfo:
      architecture: amd64
      containerRuntimeVersion: containerd://1.7.27
      kernelVersion: 5.10.219-208.866.amzn2.x86_64
      operatingSystem: linux
kind: List
metadata:
  resourceVersion: ""
"#;
    let got = parse_nodes(list_yaml, "nodes.yaml", OddNodes::Refuse).unwrap();
    assert_eq!(
        rows(&got),
        [
            "linux/amd64 containerd-1.7 ip-10-0-1-10.ec2.internal",
            "windows/amd64:10.0.17763 containerd-1.7 ip-10-0-1-20.ec2.internal",
        ]
    );
    let one_yaml = "apiVersion: v1\nkind: Node\nmetadata:\n  name: w\n  labels:\n    kubernetes.io/os: windows\n    kubernetes.io/arch: amd64\nstatus:\n  nodeInfo:\n    operatingSystem: windows\n    architecture: amd64\n    kernelVersion: 10.0.20348.2461\n    containerRuntimeVersion: containerd://1.7.27\n";
    let got = parse_nodes(one_yaml, "node.yaml", OddNodes::Refuse).unwrap();
    assert_eq!(rows(&got), ["windows/amd64:10.0.20348 containerd-1.7 w"]);
    let mut odd = node(
        "w\u{9b}",
        "windows",
        "amd64",
        None,
        "10.0.20348.1",
        "containerd://1.7.27",
    );
    odd["metadata"]["labels"]["x"] = json!("\u{202e}");
    let got = parse_nodes(&list(vec![odd]), "n.json", OddNodes::Refuse).unwrap();
    assert_eq!(got.hosts[0].nodes, ["w\u{9b}"]);
    for (text, want) in [
        ("kind: List\nitems: [\n", "not YAML or JSON"),
        // JSON may hold what YAML refuses (a raw C1 control character): read as JSON.
        ("kind: List\nitems: []\nx: \"\u{9b}\"\n", "not YAML or JSON"),
        ("kind: Pod\n", "kind is 'Pod'"),
        ("kind: List\nitems: {}\n", "no 'items' array"),
        (
            "kind: List\nitems:\n- kind: Node\n  metadata: [1]\n",
            "item 0 is not a Node",
        ),
    ] {
        let err = one_line(&parse_nodes(text, "n.yaml", OddNodes::Skip).unwrap_err());
        assert!(
            err.starts_with("nodes n.yaml: ") && err.contains(want),
            "{text:?} → {err}"
        );
    }
}

/// Issue 21, item 4: the values read are trimmed, as the kubelet's own readers do not always
/// do (a Windows kernel version ending in a newline, kubernetes#72659).
#[test]
fn the_values_read_are_trimmed() {
    let mut n = node(
        " winworker-1 ",
        "windows",
        "amd64",
        None,
        "10.0.17763.194\n",
        "containerd://1.7.27\r\n",
    );
    n["status"]["nodeInfo"]["operatingSystem"] = json!("windows\n");
    n["metadata"]["labels"][LABEL_ARCH] = json!(" amd64");
    let got = parse_nodes(&list(vec![n]), "n.json", OddNodes::Refuse).unwrap();
    assert_eq!(
        rows(&got),
        ["windows/amd64:10.0.17763 containerd-1.7 winworker-1"]
    );
    // A blank label is no label: the kernel version gives the build.
    let blank = node(
        "w",
        "windows",
        "amd64",
        Some(" \n"),
        "10.0.20348.1\n",
        "containerd://1.7.27",
    );
    let got = parse_nodes(&list(vec![blank]), "n.json", OddNodes::Refuse).unwrap();
    assert_eq!(rows(&got), ["windows/amd64:10.0.20348 containerd-1.7 w"]);
}

/// The nodes `odd-1` that [`odd_nodes_are_skipped_unless_strict`] skips: the node, the field
/// named, and the words of the reason.
fn odd_nodes() -> Vec<(serde_json::Value, &'static str, &'static str)> {
    let win = |build: Option<&str>, kernel: &str, rt: &str| {
        node("odd-1", "windows", "amd64", build, kernel, rt)
    };
    let runtime = "status.nodeInfo.containerRuntimeVersion";
    let build_label = "metadata.labels[\"node.kubernetes.io/windows-build\"]";
    vec![
        (
            win(Some("10.0.17763"), "", "containerd://Unknown"),
            runtime,
            "'containerd://Unknown' has no version MAJOR.MINOR.PATCH",
        ),
        // Issue 21, item 3: Docker Engine releases whose code was not read, and Docker on a
        // Linux node (moby's pull_v2_unix.go is not followed).
        (
            win(Some("10.0.17763"), "", "docker://18.9.11"),
            runtime,
            "'docker://18.9.11' is Docker Engine 18.9.11, a release whose Windows pull code \
             (moby distribution/pull_v2_windows.go) was not read: imgcheck follows moby 19.03 – 24.0",
        ),
        (
            win(Some("10.0.17763"), "", "docker://25.0.3"),
            runtime,
            "'docker://25.0.3' is Docker Engine 25.0.3, a release whose Windows pull code",
        ),
        (
            node("odd-1", "linux", "amd64", None, "5.4", "docker://20.10.9"),
            runtime,
            "'docker://20.10.9' on a Linux node: docker-19.03 follows moby's Windows pull only",
        ),
        (
            win(Some("10.0.17763"), "", "rkt://1.30.0"),
            runtime,
            "'rkt://1.30.0' names runtime 'rkt'",
        ),
        (
            win(Some("10.0.17763"), "", "unknown"),
            runtime,
            "'unknown' is not RUNTIME://VERSION",
        ),
        (
            win(Some("10.0.17763"), "", "cri-o://1.31.6"),
            runtime,
            "on a Windows node",
        ),
        (
            win(Some("ltsc2019"), "", "containerd://1.7.27"),
            build_label,
            "'ltsc2019' is not a Windows version",
        ),
        (
            win(None, "", "containerd://1.7.27"),
            "status.nodeInfo.kernelVersion",
            "neither the node.kubernetes.io/windows-build label nor status.nodeInfo.kernelVersion",
        ),
    ]
}

/// Issue 21, item 4: a node whose runtime or Windows build cannot be read is skipped, named
/// with its field in `skipped` and in a note; `--strict-nodes` refuses the list instead, with
/// the same words.
#[test]
fn odd_nodes_are_skipped_unless_strict() {
    let good = node("linux-1", "linux", "amd64", None, "5.14", "cri-o://1.31.6");
    for (odd, field, why) in odd_nodes() {
        let text = list(vec![good.clone(), odd]);
        let got = parse_nodes(&text, "n.json", OddNodes::Skip).unwrap();
        assert_eq!(rows(&got), ["linux/amd64 cri-o linux-1"], "{why}");
        let [skipped] = &got.skipped[..] else {
            panic!("{why}: {:?}", got.skipped)
        };
        assert_eq!(
            (skipped.node.as_str(), skipped.field.as_str()),
            ("odd-1", field)
        );
        assert!(skipped.reason.contains(why), "{}", skipped.reason);
        let [note] = &got.notes[..] else {
            panic!("{why}: {:?}", got.notes)
        };
        assert!(
            note.starts_with("node odd-1: ") && note.contains(why) && note.contains("skipped"),
            "{note}"
        );
        let err = one_line(&parse_nodes(&text, "n.json", OddNodes::Refuse).unwrap_err());
        assert!(
            err.starts_with("nodes n.json: node odd-1: ") && err.contains(why),
            "{err}"
        );
    }
    // Every node skipped: nothing is left to judge, and the list is refused.
    let only = list(vec![node(
        "odd-1",
        "windows",
        "amd64",
        Some("10.0.17763"),
        "",
        "containerd://Unknown",
    )]);
    let err = one_line(&parse_nodes(&only, "n.json", OddNodes::Skip).unwrap_err());
    assert!(
        err.contains("no node can be judged: all 1 skipped (first: node odd-1: "),
        "{err}"
    );
}

/// One runtime entry per `containerRuntimeVersion` as reported, its nodes sorted across the
/// rows they fall in, with how the version maps and why (issue 21 item 3).
#[test]
fn runtimes_name_profile_and_reason_once_each() {
    let text = list(vec![
        node(
            "w-b",
            "windows",
            "amd64",
            Some("10.0.17763"),
            "",
            "containerd://1.7.27",
        ),
        node(
            "w-a",
            "windows",
            "amd64",
            Some("10.0.20348"),
            "",
            "containerd://1.7.27",
        ),
        node(
            "w-c",
            "windows",
            "amd64",
            Some("10.0.20348"),
            "",
            "containerd://2.1.3",
        ),
        node("worker-arm", "linux", "arm64", None, "", "cri-o://1.31.6"),
        node("master-0", "linux", "amd64", None, "", "cri-o://1.31.6"),
        node("worker-a", "linux", "amd64", None, "", "cri-o://1.31.6"),
    ]);
    let got = parse_nodes(&text, "n.json", OddNodes::Skip).unwrap();
    // One entry per runtime as reported, its nodes sorted across rows, with the reason.
    let runtimes: Vec<(&str, &str, String, &str)> = got
        .runtimes
        .iter()
        .map(|r| {
            let (mapped, _) = r.reason.split_once(": ").unwrap();
            (
                r.version.as_str(),
                r.profile.name(),
                r.nodes.join(","),
                mapped,
            )
        })
        .collect();
    assert_eq!(
        runtimes,
        [
            (
                "containerd://1.7.27",
                "containerd-1.7",
                "w-a,w-b".to_string(),
                "containerd 1.7.27 is in 1.7.6–1.7.x"
            ),
            (
                "containerd://2.1.3",
                "containerd-2.0",
                "w-c".to_string(),
                "containerd 2.1.3 is in 2.0.0–2.1.5"
            ),
            (
                "cri-o://1.31.6",
                "cri-o",
                "master-0,worker-a,worker-arm".to_string(),
                "cri-o 1.31.6"
            ),
        ]
    );
    assert_eq!(
        got.runtimes[2].line(),
        "cri-o://1.31.6 (3 nodes): cri-o 1.31.6: CRI-O pulls through containers/image (ChooseInstanceByCompression), Linux nodes only"
    );
}

/// Issue 33, item 17: a JSON node list is streamed from the file, each item turned into the
/// fields kept as it is read (memory grows with what is kept, not with the file: measured in
/// docs/decisions.md). 100,000 nodes parse into their rows, in the list's order.
#[test]
fn a_hundred_thousand_streamed_nodes_parse() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nodes.json");
    let mut text = String::from("{\"apiVersion\": \"v1\", \"items\": [");
    for i in 0..100_000 {
        let n = match i % 4 {
            0 => node(
                &format!("w{i}"),
                "windows",
                "amd64",
                Some("10.0.20348"),
                "",
                "containerd://1.7.27",
            ),
            _ => node(
                &format!("l{i}"),
                "linux",
                "amd64",
                None,
                "",
                "cri-o://1.31.6",
            ),
        };
        text.push_str(if i == 0 { "\n" } else { ",\n" });
        text.push_str(&n.to_string());
    }
    // `kind` after `items`, as `oc get -o json` sorts the keys.
    text.push_str("], \"kind\": \"List\", \"metadata\": {\"resourceVersion\": \"\"}}\n");
    std::fs::write(&path, &text).unwrap();
    let got = read_nodes(
        path.to_str().unwrap(),
        DEFAULT_MAX_INPUT_BYTES,
        OddNodes::Refuse,
    )
    .unwrap();
    assert_eq!(got.nodes.len(), 100_000);
    assert_eq!(got.nodes[99_999].name, "l99999");
    // Two shapes (Linux, Windows) for 100,000 nodes.
    let shapes: std::collections::HashSet<_> =
        got.nodes.iter().map(|n| Arc::as_ptr(&n.shape)).collect();
    assert_eq!(shapes.len(), 2);
    let counts: Vec<(String, usize)> = (got.hosts.iter())
        .map(|h| (h.platform.to_string(), h.nodes.len()))
        .collect();
    assert_eq!(
        counts,
        [
            ("linux/amd64".to_string(), 75_000),
            ("windows/amd64:10.0.20348".to_string(), 25_000)
        ]
    );
    // The same text, parsed whole, gives the same.
    assert_eq!(parse_nodes(&text, "n.json", OddNodes::Refuse).unwrap(), got);
}

/// A streamed JSON node list: a UTF-8 byte-order mark is dropped, the input limit is named
/// when passed mid-stream, text after the list and items that are not nodes are refused.
#[test]
fn streamed_node_lists_are_refused_as_whole_ones() {
    let dir = tempfile::tempdir().unwrap();
    let one = list(vec![node(
        "l",
        "linux",
        "amd64",
        None,
        "",
        "cri-o://1.31.6",
    )]);
    let bad_arch = node("a0", "linux", "x86", None, "", "cri-o://1.31.6");
    let cases: Vec<(Vec<u8>, u64, Result<usize, &str>)> = vec![
        (
            [b"\xEF\xBB\xBF".as_slice(), one.as_bytes()].concat(),
            1 << 20,
            Ok(1),
        ),
        (
            one.clone().into_bytes(),
            64,
            Err("larger than the input limit of 64 bytes"),
        ),
        (format!("{one} x").into_bytes(), 1 << 20, Err("not JSON")),
        (
            list(vec![json!(1)]).into_bytes(),
            1 << 20,
            Err("item 0 is not a Node"),
        ),
        (
            b"{\"kind\": \"List\", \"items\": 5}".to_vec(),
            1 << 20,
            Err("not a node list"),
        ),
        (
            b"{\"kind\": \"List\", \"items\": null}".to_vec(),
            1 << 20,
            Err("no 'items' array"),
        ),
        (b"{\"kind\": 7}".to_vec(), 1 << 20, Err("no 'kind'")),
        // Items are judged as they are read, yet the list is refused as a whole one would be:
        // a malformed item after a node that refuses the list, or the `kind` after the items,
        // is what is said.
        (
            list(vec![bad_arch.clone(), json!(1)]).into_bytes(),
            1 << 20,
            Err("item 1 is not a Node"),
        ),
        (
            format!("{{\"items\": [{bad_arch}], \"kind\": \"Pod\"}}").into_bytes(),
            1 << 20,
            Err("kind is 'Pod'"),
        ),
        (
            list(vec![
                bad_arch,
                node("a1", "linux", "x86", None, "", "cri-o://1"),
            ])
            .into_bytes(),
            1 << 20,
            Err("node a0: "),
        ),
    ];
    for (bytes, max, want) in cases {
        let path = dir.path().join("n.json");
        std::fs::write(&path, &bytes).unwrap();
        let got = read_nodes(path.to_str().unwrap(), max, OddNodes::Refuse);
        match want {
            Ok(n) => assert_eq!(got.unwrap().nodes.len(), n),
            Err(want) => {
                let err = one_line(&got.unwrap_err());
                assert!(
                    err.contains(want),
                    "{}: {err}",
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
    }
}

/// Issue 33, item 17: labels, taints and OS are kept once per distinct node shape, not per
/// node. The fixture cluster's 10 nodes fall into 6 shapes (a label whose value is the node's
/// own name, `kubernetes.io/hostname`, splits none); repeated 1,000 times under new names, as
/// `scripts/nodes-seed.py` does, they still keep 6, and each node reads its own labels.
#[test]
fn nodes_of_one_shape_share_their_labels() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/nodes/ocp-wmco.json");
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let pool = fixture["items"].as_array().unwrap();
    let items = (0..1000)
        .map(|i| {
            let mut n = pool[i % pool.len()].clone();
            let name = format!("node-{i:06}.example.internal");
            n["metadata"]["name"] = json!(name);
            n["metadata"]["labels"]["kubernetes.io/hostname"] = json!(name);
            n
        })
        .collect();
    for (origin, text) in [("n.json", list(items)), ("fixture", fixture.to_string())] {
        let got = parse_nodes(&text, origin, OddNodes::Refuse).unwrap();
        let shapes: std::collections::HashSet<_> =
            got.nodes.iter().map(|n| Arc::as_ptr(&n.shape)).collect();
        assert_eq!(shapes.len(), 6, "{origin}");
        for n in &got.nodes {
            assert_eq!(n.label("kubernetes.io/hostname"), Some(n.name.as_str()));
            assert_eq!(n.label("topology.kubernetes.io/zone"), Some("us-east-1a"));
            assert_eq!(n.label("kubernetes.io/os"), Some(n.os()));
            assert_eq!(n.label("no/such-label"), None);
        }
    }
}
