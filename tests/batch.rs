//! Batch verification: reference lists, ImageSetConfiguration, per-image errors, request
//! counts, and the progress bar (only on a terminal).

use std::process::{Command, Output};

use crate::common::{Registry, fixture, imgcheck};
use serde_json::Value;

fn run(args: &[&str]) -> Output {
    let out = imgcheck().args(args).output().expect("imgcheck runs");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn a_batch_of_200_references_with_and_without_a_terminal() {
    let registry = Registry::start();
    let mut list = String::from("# 50 repositories x 4 tags\n");
    for i in 0..50 {
        let repo = format!("csi/driver{i}");
        for tag in ["v1", "v1.1", "v2", "latest"] {
            registry.push_layout(&fixture("good"), &repo, tag);
            list.push_str(&format!("{}/{repo}:{tag}\n", registry.host()));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("refs.txt");
    std::fs::write(&file, &list).unwrap();
    let file = file.to_str().unwrap();

    // Piped: nothing but the report on stdout, nothing on stderr but the stats line.
    let out = run(&["verify", "--from-file", file, "--format", "json", "--stats"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let images = doc["images"].as_array().unwrap();
    assert_eq!(images.len(), 200);
    assert!(images.iter().all(|i| i["verdict"] == "pass"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("ETA"),
        "no progress bar when piped: {stderr}"
    );
    // The minimum: one top manifest per reference, and each child manifest and config once
    // per repository (the other three tags hit the run's cache).
    assert!(
        stderr.contains("requests: 400 manifest, 200 blob") && stderr.contains("1200 cache hits"),
        "{stderr}"
    );

    // Under a pseudo-terminal the bar is drawn on stderr.
    let cmd = format!(
        "{} verify --from-file {file} --format json > {}/report.json",
        env!("CARGO_BIN_EXE_imgcheck"),
        dir.path().display()
    );
    let tty = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .expect("script(1) from util-linux runs");
    let screen = String::from_utf8_lossy(&tty.stdout);
    assert!(
        screen.contains("images") && screen.contains("failures: 0"),
        "{screen}"
    );
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    assert_eq!(doc["images"].as_array().unwrap().len(), 200);
}

#[test]
fn one_bad_image_does_not_stop_the_batch() {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "good", "v1");
    registry.push_layout(&fixture("ltsc2022-only"), "partial", "v1");
    let h = registry.host();
    // issue 15: a tag that was never pushed is now a failure (`not-found`); the image that
    // cannot be checked is one on a registry that does not answer.
    let down = "127.0.0.1:1";
    let list = format!("{h}/good:v1\n{down}/absent:v1   # nothing listens\n{h}/partial:v1\n");
    let out = imgcheck()
        .args(["verify", "--from-file", "-", "--retries", "0"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(list.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    // A failure outranks an error.
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let summary = text.split("summary:").nth(1).expect("summary table");
    let lines: Vec<&str> = summary.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        lines[0].contains("FAIL") && lines[0].contains("partial") && lines[0].contains("no-match"),
        "{summary}"
    );
    assert!(
        lines[1].contains("ERROR") && lines[1].contains("absent"),
        "{summary}"
    );
    assert!(
        lines[2].contains("PASS") && lines[2].contains("good"),
        "{summary}"
    );
    assert!(
        lines[3].contains("3 images: 1 pass, 1 fail, 1 error"),
        "{summary}"
    );

    // Without the failing image the error decides: exit 3.
    let out = run(&[
        "verify",
        &format!("{h}/good:v1"),
        &format!("{down}/absent:v1"),
        "--retries",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn imageset_configuration_and_bad_lists() {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "sig-storage/livenessprobe", "v2.14.0");
    let dir = tempfile::tempdir().unwrap();
    let isc = dir.path().join("isc.yaml");
    std::fs::write(
        &isc,
        format!(
            "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  additionalImages:\n  - name: {}/sig-storage/livenessprobe:v2.14.0\n  - name: oci:{}\n",
            registry.host(),
            fixture("good").display()
        ),
    )
    .unwrap();
    let out = run(&[
        "verify",
        "--from-imageset",
        isc.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["images"].as_array().unwrap().len(), 2);

    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "quay.io/ok/img:v1\n\nNot A Ref\n").unwrap();
    let out = run(&["verify", "--from-file", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:3", bad.display())) && err.contains("Not A Ref"),
        "{err}"
    );

    let out = run(&["verify", "--from-file", "/nonexistent/refs.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/refs.txt"));

    let out = run(&["verify"]);
    assert_eq!(out.status.code(), Some(2), "clap usage error");
}

/// `--stats` reports queueing as a mean per request, which cannot exceed the run's wall time
/// (the old figure summed the waits of every request: `973.560s queued` for a 22 s run).
#[test]
fn stats_report_the_mean_wait_per_request() {
    let registry = Registry::start();
    let mut refs = Vec::new();
    for i in 0..40 {
        let repo = format!("csi/driver{i}");
        registry.push_layout(&fixture("good"), &repo, "v1");
        refs.push(format!("{}/{repo}:v1", registry.host()));
    }
    let started = std::time::Instant::now();
    let mut args = vec!["verify", "--jobs", "4", "--stats", "--format", "json"];
    args.extend(refs.iter().map(String::as_str));
    let out = run(&args);
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let figure = |label: &str| -> f64 {
        let (before, _) = stderr
            .split_once(label)
            .unwrap_or_else(|| panic!("no '{label}' in {stderr}"));
        let number = before.trim_end().trim_end_matches("ms").trim_end();
        number
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no figure before '{label}' in {stderr}"))
    };
    let waiting = figure("waiting for a slot");
    let in_flight = figure("in flight (means)");
    assert!(
        waiting >= 0.0 && waiting < wall_ms && in_flight > 0.0 && in_flight < wall_ms,
        "means per request must fit in the run ({wall_ms:.0} ms): {stderr}"
    );
    assert!(
        stderr.contains("requests: 200 manifest, 160 blob"),
        "{stderr}"
    );
}

/// ImageSetConfiguration sections imgcheck does not read (`platform`, `operators`) are
/// warned about on standard error; the additional images are still verified.
#[test]
fn imageset_sections_not_checked_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let isc = dir.path().join("isc.yaml");
    std::fs::write(
        &isc,
        format!(
            "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  platform:\n    channels:\n    - name: stable-4.18\n  operators:\n  - catalog: registry.redhat.io/redhat/redhat-operator-index:v4.18\n  additionalImages:\n  - name: oci:{}\n",
            fixture("good").display()
        ),
    )
    .unwrap();
    let out = run(&[
        "verify",
        "--from-imageset",
        isc.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for section in ["mirror.platform", "mirror.operators"] {
        assert!(
            stderr.contains(&format!(
                "warning: {}: {section} is not checked",
                isc.display()
            )),
            "{section}: {stderr}"
        );
    }
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["images"].as_array().unwrap().len(), 1);
}
