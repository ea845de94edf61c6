//! imgcheck against a real registry behind a fault-injecting proxy (`tests/common/proxy.rs`):
//! transient faults heal to the right verdict (with every retry told under `-v`), permanent
//! ones end in `error` (exit 3) or `fail` with `digest-mismatch` — never `pass`.

mod common;

use std::time::{Duration, Instant};

use common::proxy::{Fault, FaultProxy, Match, Rule};
use common::{Registry, fixture, imgcheck};
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
