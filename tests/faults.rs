//! imgcheck against a real registry behind a fault-injecting proxy (`tests/common/proxy.rs`):
//! transient faults heal to the right verdict (with every retry told under `-v`), permanent
//! ones end in `error` (exit 3) or `fail` with `digest-mismatch` — never `pass`.

use std::time::{Duration, Instant};

use crate::common::proxy::{Fault, FaultProxy, Match, Rule};
use crate::common::{Registry, fixture, imgcheck};
use serde_json::Value;

struct Run {
    code: i32,
    doc: Value,
    stderr: String,
    took: Duration,
}

impl Run {
    fn verdict(&self) -> &str {
        self.doc["images"][0]["verdict"]
            .as_str()
            .unwrap_or("<none>")
    }

    fn error_rules(&self) -> Vec<String> {
        self.doc["images"][0]["findings"]
            .as_array()
            .map(|fs| {
                fs.iter()
                    .filter(|f| f["severity"] == "error")
                    .map(|f| f["rule"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn retries_told(&self) -> usize {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("imgcheck: retry "))
            .count()
    }
}

fn verify(reference: &str, extra: &[&str]) -> Run {
    let started = Instant::now();
    let out = imgcheck()
        .args(["verify", reference, "--format", "json", "-v"])
        .args(extra)
        .output()
        .expect("imgcheck runs");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "imgcheck panicked: {stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{reference}: stdout is not JSON ({e}): {}\nstderr: {stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    Run {
        code: out.status.code().expect("exit code"),
        doc,
        stderr,
        took,
    }
}

/// Fast settings for fault runs: short per-request timeout, few quick retries.
const QUICK: &[&str] = &["--request-timeout", "1s", "--retries", "3"];

fn seeded() -> Registry {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "csi/driver", "v1");
    registry
}

/// A fault that lasts `n` requests: the run retries through it and passes.
fn heals(registry: &Registry, on: Match, fault: Fault, n: usize) -> Run {
    let proxy = FaultProxy::start(
        &registry.base_url(),
        vec![Rule::times(on, fault.clone(), n)],
    );
    let run = verify(&format!("{}/csi/driver:v1", proxy.host()), QUICK);
    assert_eq!(
        proxy.faults_injected(),
        n,
        "{fault:?}: the fault must have fired {n} times"
    );
    assert_eq!(
        run.verdict(),
        "pass",
        "{fault:?}: {:#}\n{}",
        run.doc,
        run.stderr
    );
    assert_eq!(run.code, 0, "{fault:?}");
    assert!(
        run.retries_told() >= n,
        "{fault:?}: every retry is told under -v:\n{}",
        run.stderr
    );
    run
}

/// A fault on every matching request: the run ends in `error` (exit 3) or, where bytes were
/// altered, `fail` with `digest-mismatch` (exit 1). Returns the run for further checks.
fn never_passes(registry: &Registry, on: Match, fault: Fault, extra: &[&str]) -> Run {
    let proxy = FaultProxy::start(&registry.base_url(), vec![Rule::always(on, fault.clone())]);
    let mut args = if extra.iter().any(|a| a.starts_with("--retries")) {
        vec!["--request-timeout", "1s"]
    } else {
        QUICK.to_vec()
    };
    args.extend_from_slice(extra);
    let run = verify(&format!("{}/csi/driver:v1", proxy.host()), &args);
    assert!(proxy.faults_injected() > 0, "{fault:?} never fired");
    assert_ne!(run.verdict(), "pass", "{fault:?}: {:#}", run.doc);
    match run.verdict() {
        "error" => assert_eq!(run.code, 3, "{fault:?}: {:#}", run.doc),
        "fail" => {
            assert_eq!(run.code, 1, "{fault:?}");
            assert!(
                run.error_rules().iter().any(|r| r == "digest-mismatch"),
                "{fault:?}: {:#}",
                run.doc
            );
        }
        other => panic!("{fault:?}: verdict {other}"),
    }
    run
}

#[test]
fn server_error_bursts_heal() {
    let registry = seeded();
    for code in [500, 502, 503] {
        heals(&registry, Match::All, Fault::Status(code), 3);
    }
    heals(&registry, Match::Blobs, Fault::Status(504), 2);
}

#[test]
fn rate_limits_honour_retry_after() {
    let registry = seeded();
    let run = heals(
        &registry,
        Match::Manifests,
        Fault::TooMany {
            retry_after: "2".into(),
        },
        1,
    );
    assert!(
        run.took >= Duration::from_secs(2),
        "waited only {:?}",
        run.took
    );
    assert!(run.stderr.contains("Retry-After"), "{}", run.stderr);

    // The HTTP-date form: 3 s from now, at one-second resolution, so at least 2 s.
    let at = std::time::SystemTime::now() + Duration::from_secs(3);
    let run = heals(
        &registry,
        Match::Manifests,
        Fault::TooMany {
            retry_after: httpdate::fmt_http_date(at),
        },
        1,
    );
    assert!(
        run.took >= Duration::from_secs(2),
        "waited only {:?} for Retry-After: {}",
        run.took,
        httpdate::fmt_http_date(at)
    );
}

#[test]
fn connection_faults_heal() {
    let registry = seeded();
    heals(&registry, Match::All, Fault::Reset, 2);
    heals(
        &registry,
        Match::Manifests,
        Fault::Stall(Duration::from_secs(4)),
        1,
    );
    heals(&registry, Match::Blobs, Fault::Truncate, 2);
    heals(
        &registry,
        Match::Blobs,
        Fault::StallBody(Duration::from_secs(4)),
        1,
    );
    heals(&registry, Match::Manifests, Fault::Truncate, 1);
}

#[test]
fn damaged_answers_heal_when_asked_again() {
    let registry = seeded();
    heals(&registry, Match::Manifests, Fault::FlipByte, 2);
    heals(&registry, Match::Blobs, Fault::FlipByte, 1);
    heals(
        &registry,
        Match::Manifests,
        Fault::ContentType("text/html"),
        1,
    );
    heals(&registry, Match::Manifests, Fault::LyingDigestHeader, 2);
}

#[test]
fn permanent_faults_never_pass() {
    let registry = seeded();
    for (on, fault) in [
        (Match::All, Fault::Status(500)),
        (Match::Blobs, Fault::Status(503)),
        (
            Match::Manifests,
            Fault::TooMany {
                retry_after: "0".into(),
            },
        ),
        (Match::All, Fault::Reset),
        (Match::Blobs, Fault::Truncate),
        (Match::Blobs, Fault::StallBody(Duration::from_secs(2))),
        (Match::Manifests, Fault::ContentType("text/html")),
        (Match::Manifests, Fault::LyingDigestHeader),
        (Match::Manifests, Fault::FlipByte),
    ] {
        let run = never_passes(&registry, on, fault.clone(), &[]);
        assert!(
            run.retries_told() >= 3,
            "{fault:?}: retried before giving up:\n{}",
            run.stderr
        );
    }
    // Altered config bytes: the config is named by its digest, so this is a finding.
    let run = never_passes(&registry, Match::Blobs, Fault::FlipByte, &[]);
    assert_eq!(run.verdict(), "fail", "{:#}", run.doc);
}

#[test]
fn stalls_end_at_the_request_timeout_and_the_deadline() {
    let registry = seeded();
    let run = never_passes(
        &registry,
        Match::Manifests,
        Fault::Stall(Duration::from_secs(5)),
        &["--retries=1"],
    );
    assert!(
        run.stderr.contains("nothing received for 1.0s"),
        "{}",
        run.stderr
    );
    assert!(run.took < Duration::from_secs(8), "{:?}", run.took);

    // The overall deadline cuts through a long per-request timeout and many retries.
    let proxy = FaultProxy::start(
        &registry.base_url(),
        vec![Rule::always(
            Match::All,
            Fault::Stall(Duration::from_secs(5)),
        )],
    );
    let started = Instant::now();
    let run = verify(
        &format!("{}/csi/driver:v1", proxy.host()),
        &[
            "--timeout",
            "2s",
            "--request-timeout",
            "60s",
            "--retries",
            "10",
        ],
    );
    assert_eq!((run.verdict(), run.code), ("error", 3), "{:#}", run.doc);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn answers_that_cannot_heal_are_not_retried() {
    let registry = seeded();
    let proxy = FaultProxy::start(
        &registry.base_url(),
        vec![Rule::always(Match::Blobs, Fault::Status(403))],
    );
    let run = verify(&format!("{}/csi/driver:v1", proxy.host()), QUICK);
    assert_eq!((run.verdict(), run.code), ("error", 3), "{:#}", run.doc);
    assert_eq!(run.retries_told(), 0, "{}", run.stderr);
    let blob_gets = proxy
        .seen()
        .iter()
        .filter(|s| s.request.contains("/blobs/"))
        .count();
    assert_eq!(
        blob_gets,
        4,
        "one GET per config, no retries: {:?}",
        proxy.seen()
    );

    // A missing tag is a 404 from the registry itself: asked once.
    let proxy = FaultProxy::start(&registry.base_url(), vec![]);
    let run = verify(&format!("{}/csi/driver:nope", proxy.host()), QUICK);
    assert_ne!(run.verdict(), "pass");
    let manifest_gets = proxy
        .seen()
        .iter()
        .filter(|s| s.request.contains("/manifests/"))
        .count();
    assert_eq!(manifest_gets, 1, "{:?}", proxy.seen());
}

#[test]
fn blob_redirects_to_another_host_are_followed() {
    let registry = seeded();
    // The "object storage": another origin serving the same bytes.
    let storage = FaultProxy::start(&registry.base_url(), vec![]);
    let front = FaultProxy::start(
        &registry.base_url(),
        vec![Rule::always(
            Match::Blobs,
            Fault::Redirect(storage.base_url()),
        )],
    );
    let run = verify(&format!("{}/csi/driver:v1", front.host()), QUICK);
    assert_eq!((run.verdict(), run.code), ("pass", 0), "{:#}", run.doc);
    assert_eq!(front.faults_injected(), 4);
    assert_eq!(
        storage
            .seen()
            .iter()
            .filter(|s| s.request.contains("/blobs/"))
            .count(),
        4
    );

    // Storage that alters the bytes: a finding, never a pass.
    let bad_storage = FaultProxy::start(
        &registry.base_url(),
        vec![Rule::always(Match::All, Fault::FlipByte)],
    );
    front.set_rules(vec![Rule::always(
        Match::Blobs,
        Fault::Redirect(bad_storage.base_url()),
    )]);
    let run = verify(&format!("{}/csi/driver:v1", front.host()), QUICK);
    assert_eq!((run.verdict(), run.code), ("fail", 1), "{:#}", run.doc);
    assert!(run.error_rules().iter().any(|r| r == "digest-mismatch"));
}

/// A registry that sends a manifest one byte at a time, never quiet for a whole
/// `--request-timeout`, is a stall: each attempt ends once a window passes below the
/// minimum rate, and the run ends in `error` (exit 3) instead of never.
#[test]
fn trickling_bodies_are_stalls() {
    let registry = seeded();
    let run = never_passes(
        &registry,
        Match::Manifests,
        Fault::Trickle(Duration::from_millis(50)),
        &["--retries=1"],
    );
    assert_eq!((run.verdict(), run.code), ("error", 3), "{:#}", run.doc);
    assert!(
        run.doc.to_string().contains("trickled in"),
        "the stall is named: {:#}",
        run.doc
    );
}

/// A manifest GET redirected to another host keeps its `Accept` header: without it the
/// registry answers an OCI index with 404 (or an old format).
#[test]
fn manifest_redirects_to_another_host_keep_accept() {
    let registry = seeded();
    let front = FaultProxy::start(
        &registry.base_url(),
        vec![Rule::always(
            Match::Manifests,
            Fault::Redirect(registry.base_url()),
        )],
    );
    let run = verify(&format!("{}/csi/driver:v1", front.host()), QUICK);
    assert_eq!((run.verdict(), run.code), ("pass", 0), "{:#}", run.doc);
    assert!(front.faults_injected() >= 1);
}

/// A tag or repository that does not exist is `not-found`: verdict `fail`, exit 1, asked
/// once (retrying cannot fix it), with a hint about typos and private repositories.
#[test]
fn missing_tags_and_repositories_fail_as_not_found() {
    let registry = seeded();
    // docker-registry 2.8 says MANIFEST_UNKNOWN for both (others say NAME_UNKNOWN).
    for reference in ["csi/driver:no-such-tag", "csi/no-such-repo:v1"] {
        let run = verify(&format!("{}/{reference}", registry.host()), QUICK);
        assert_eq!((run.verdict(), run.code), ("fail", 1), "{:#}", run.doc);
        assert_eq!(run.error_rules(), ["not-found"], "{:#}", run.doc);
        let finding = &run.doc["images"][0]["findings"][0];
        let message = finding["message"].as_str().unwrap_or("");
        assert!(
            message.contains("MANIFEST_UNKNOWN") || message.contains("NAME_UNKNOWN"),
            "{message}"
        );
        let hint = finding["hint"].as_str().unwrap_or("");
        assert!(hint.contains("typos") && hint.contains("private"), "{hint}");
        assert_eq!(run.retries_told(), 0, "{}", run.stderr);
    }
}

#[test]
fn stats_count_retries() {
    let registry = seeded();
    let proxy = FaultProxy::start(
        &registry.base_url(),
        vec![Rule::times(Match::Manifests, Fault::Status(503), 2)],
    );
    let out = imgcheck()
        .args([
            "verify",
            &format!("{}/csi/driver:v1", proxy.host()),
            "--stats",
        ])
        .args(QUICK)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("; 2 retries;"), "{stderr}");
    // Without -v, retries are counted but not told.
    assert!(!stderr.contains("imgcheck: retry"), "{stderr}");
}

// ---- Writes: `assemble` through the proxy ----

/// An `assemble` run.
struct Assembled {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Assembled {
    /// The digest of the pushed list, from the first stdout line `REF@DIGEST`.
    fn pushed(&self) -> String {
        let line = self.stdout.lines().next().unwrap_or_default();
        match line.rsplit_once('@') {
            Some((_, d)) if d.starts_with("sha256:") => d.to_string(),
            _ => panic!("no REF@DIGEST line:\n{}\n{}", self.stdout, self.stderr),
        }
    }
}

/// `assemble -v --stats` of `children` to `TARGET` (`HOST/out:TAG`), with quick retries.
fn assemble(target: &str, children: &[String], extra: &[&str]) -> Assembled {
    let out = imgcheck()
        .args(["assemble", "--target", target, "-v", "--stats"])
        .args(QUICK)
        .args(extra)
        .args(children)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("imgcheck runs");
    let run = Assembled {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

/// The good fixture's images, as one OCI layout child.
fn good_layout() -> Vec<String> {
    vec![format!("oci:{}", fixture("good").display())]
}

/// A new registry behind a proxy with `rules`.
fn proxied(rules: Vec<Rule>) -> (Registry, FaultProxy) {
    let registry = Registry::start();
    let proxy = FaultProxy::start(&registry.base_url(), rules);
    (registry, proxy)
}

/// The list `digest` under `HOST/out:TAG` passes `verify` read straight from the registry.
fn verifies(registry: &Registry, tag: &str, digest: &str) {
    assert_eq!(
        registry.manifest_digest("out", tag).as_deref(),
        Some(digest),
        "the tag names the pushed list"
    );
    let run = verify(&format!("{}/out:{tag}", registry.host()), &[]);
    assert_eq!((run.code, run.verdict()), (0, "pass"), "{:#}", run.doc);
}

/// A registry that answers 503 to every request twice before it serves it: the writes (and
/// the reads around them) heal, `assemble` exits 0, every retry is told and counted, and the
/// list verifies.
#[test]
fn writes_heal_through_503_twice_per_request() {
    let (registry, proxy) = proxied(vec![Rule::per_request(Match::All, Fault::Status(503), 2)]);
    let r = assemble(&format!("{}/out:v1", proxy.host()), &good_layout(), &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let seen = proxy.seen();
    for kind in [
        "POST ",
        "PATCH ",
        "PUT /v2/out/blobs/uploads/",
        "PUT /v2/out/manifests/",
    ] {
        assert!(
            seen.iter().any(|s| s.fault.is_some()
                && s.request.starts_with(kind.split_once(' ').unwrap().0)
                && s.request.contains(kind.split_once(' ').unwrap().1)),
            "no fault on a {kind} request"
        );
    }
    assert!(r.stderr.contains("imgcheck: retry "), "{}", r.stderr);
    assert!(
        r.stderr.contains("writes: "),
        "--stats counts writes: {}",
        r.stderr
    );
    assert!(
        r.stderr.contains("upload blob sha256:") && r.stderr.contains("put manifest "),
        "-v tells the writes: {}",
        r.stderr
    );
    verifies(&registry, "v1", &r.pushed());
    // Children in another repository of the same registry are mounted, through the same
    // faults.
    let children: Vec<String> = registry_children(&registry, &r.pushed())
        .iter()
        .map(|d| format!("{}/out@{d}", proxy.host()))
        .collect();
    let again = assemble(&format!("{}/other:v1", proxy.host()), &children, &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stderr.contains("0 uploaded, "), "{}", again.stderr);
    assert!(
        proxy
            .seen()
            .iter()
            .any(|s| s.fault.is_some() && s.request.contains("?mount=")),
        "no fault on a mount"
    );
    assert_eq!(again.pushed(), r.pushed());
}

/// The child manifests of the list `digest` in `out`.
fn registry_children(registry: &Registry, digest: &str) -> Vec<String> {
    let (status, body) = registry.get_manifest("out", digest);
    assert_eq!(status, 200);
    let list: Value = serde_json::from_slice(&body).expect("list JSON");
    list["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .map(|m| m["digest"].as_str().expect("digest").to_string())
        .collect()
}

/// An upload that stalls every time ends at the overall deadline (`--timeout`), exit 3,
/// saying so.
#[test]
fn a_write_that_never_ends_stops_at_the_deadline() {
    let (registry, proxy) = proxied(vec![Rule::always(
        Match::Request("PATCH ".into()),
        Fault::Stall(Duration::from_secs(5)),
    )]);
    let out = imgcheck()
        .args(["assemble", "--target", &format!("{}/out:v1", proxy.host())])
        .args(["--timeout", "2s", "--request-timeout", "30s"])
        .args(good_layout())
        .output()
        .expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("the overall deadline (--timeout 2s) passed"),
        "{stderr}"
    );
    assert_eq!(registry.manifest_digest("out", "v1"), None);
}

/// 429 with Retry-After on an upload chunk and on the tag's PUT: waited out, then healed.
#[test]
fn rate_limited_writes_honour_retry_after() {
    let too_many = Fault::TooMany {
        retry_after: "1".into(),
    };
    let (registry, proxy) = proxied(vec![
        Rule::times(Match::Request("PATCH ".into()), too_many.clone(), 1),
        Rule::times(
            Match::Request("PUT /v2/out/manifests/v1".into()),
            too_many,
            1,
        ),
    ]);
    let r = assemble(&format!("{}/out:v1", proxy.host()), &good_layout(), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(proxy.faults_injected(), 2);
    assert_eq!(r.stderr.matches("(Retry-After)").count(), 2, "{}", r.stderr);
    verifies(&registry, "v1", &r.pushed());
}

/// A connection reset during an upload (a chunk, then the commit) and a stall mid-upload
/// (no answer to a chunk): each upload starts again from its POST and the list verifies.
#[test]
fn resets_and_stalls_mid_upload_start_the_upload_again() {
    for fault in [Fault::Reset, Fault::Stall(Duration::from_secs(5))] {
        let (registry, proxy) = proxied(vec![
            Rule::times(Match::Request("PATCH ".into()), fault.clone(), 1),
            Rule::times(Match::Request("&digest=".into()), fault.clone(), 1),
        ]);
        let r = assemble(&format!("{}/out:v1", proxy.host()), &good_layout(), &[]);
        assert_eq!(r.code, 0, "{fault:?}: {}", r.stderr);
        assert_eq!(proxy.faults_injected(), 2, "{fault:?}");
        let seen = proxy.seen();
        let posts = seen
            .iter()
            .filter(|s| s.request.starts_with("POST /v2/out/blobs/uploads/"))
            .count();
        let uploaded: usize = r
            .stderr
            .split("blobs: ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no blob count: {}", r.stderr));
        assert_eq!(
            posts,
            uploaded + 2,
            "{fault:?}: each of the two interrupted uploads started again with a POST"
        );
        if fault != Fault::Reset {
            assert!(r.stderr.contains("--request-timeout"), "{}", r.stderr);
        }
        verifies(&registry, "v1", &r.pushed());
    }
}

/// A manifest PUT whose answer is lost (the registry stored it) is sent again and heals; a
/// tag PUT that never gets through exits 3 without replacing the good tag, and prints no
/// secret.
#[test]
fn dropped_manifest_puts_heal_or_leave_the_good_tag() {
    let (registry, proxy) = proxied(vec![Rule::times(
        Match::Request("PUT /v2/out/manifests/".into()),
        Fault::DropAnswer,
        2,
    )]);
    let target = format!("{}/out:v1", proxy.host());
    let good = assemble(&target, &good_layout(), &[]);
    assert_eq!(good.code, 0, "{}", good.stderr);
    assert_eq!(proxy.faults_injected(), 2);
    verifies(&registry, "v1", &good.pushed());

    proxy.set_rules(vec![Rule::always(
        Match::Request("PUT /v2/out/manifests/v1".into()),
        Fault::Reset,
    )]);
    let amd64 = format!(
        "oci:{}@sha256:6fcf813d4eb7845e239cee66bcb6de35e33e1f69ea98eb8ff7b48dbe7de7ab00",
        fixture("good").display()
    );
    let secret = "pw-never-printed";
    let r = assemble(
        &target,
        &[amd64],
        &[
            "--policy",
            "linux-only",
            "--creds",
            &format!("pusher:{secret}"),
        ],
    );
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("push manifest v1") && r.stderr.contains("gave up after"),
        "{}",
        r.stderr
    );
    assert_eq!(
        registry.manifest_digest("out", "v1"),
        Some(good.pushed()),
        "the good tag was replaced"
    );
    let b64 = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(format!("pusher:{secret}"))
    };
    for text in [&r.stdout, &r.stderr] {
        assert!(!text.contains(secret) && !text.contains(&b64), "{text}");
    }
}
