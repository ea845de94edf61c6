//! Issue 24: reports streamed as each image is judged. A run prints an image's report as soon
//! as it and every image before it are judged (not when the last is), in every format; bad
//! input ends the run keeping what was printed, a JSON document begun is closed validly.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::proxy::{Fault, FaultProxy, Match, Rule};
use crate::common::{Registry, fixture, imgcheck};

/// The first image's report is on standard output while the second image is still held
/// back by its registry (every request for it answered 429 `Retry-After: 4` until the test
/// lets it through): a run that kept its reports until the end would print nothing before.
#[test]
fn the_first_report_is_printed_while_a_later_image_is_held_back() {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "stream/first", "v1");
    registry.push_layout(&fixture("good"), "stream/held", "v1");
    let hold = Rule::always(
        Match::PathContains("/stream/held/".into()),
        Fault::TooMany {
            retry_after: "4".into(),
        },
    );
    let proxy = FaultProxy::start(&registry.base_url(), vec![hold]);
    let (first, held) = (
        format!("{}/stream/first:v1", proxy.host()),
        format!("{}/stream/held:v1", proxy.host()),
    );
    let mut child = imgcheck()
        .args(["verify", "--retries", "10", &first, &held])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("imgcheck starts");
    let stdout = child.stdout.take().unwrap();
    let (lines, seen) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let mut printed = Vec::new();
    let until = Instant::now() + Duration::from_secs(25);
    let mut early = None;
    while early.is_none() && Instant::now() < until {
        if let Ok(line) = seen.recv_timeout(Duration::from_millis(100)) {
            if line.starts_with(&format!("PASS  {first}")) {
                let held_asked = proxy
                    .seen()
                    .iter()
                    .any(|s| s.request.contains("/stream/held/"));
                early = Some((child.try_wait().unwrap().is_none(), held_asked));
            }
            printed.push(line);
        }
    }
    proxy.set_rules(vec![]);
    let status = child.wait().unwrap();
    printed.extend(seen.iter());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let out = printed.join("\n") + "\n" + &stderr;
    assert_eq!(
        early,
        Some((true, true)),
        "the first report was not printed while the second image was held:\n{out}"
    );
    assert_eq!(status.code(), Some(0), "{out}");
    assert!(out.contains(&format!("PASS  {held}")), "{out}");
    assert!(
        out.contains("\n2 images: 2 pass, 0 fail, 0 error\n"),
        "{out}"
    );
}

/// Bad input (a layout that is not there) between two registry images ends the run, exit 2:
/// text keeps the first image's block (no summary), JSON is one valid document holding the
/// first image and `stopped`, Konflux prints nothing; the error is on standard error.
#[test]
fn bad_input_mid_stream_keeps_what_was_printed_and_closes_the_json() {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "stream/a", "v1");
    registry.push_layout(&fixture("good"), "stream/b", "v1");
    let missing = tempfile::tempdir().unwrap();
    let bad = format!("oci:{}", missing.path().join("gone").display());
    let refs = [
        format!("{}/stream/a:v1", registry.host()),
        bad.clone(),
        format!("{}/stream/b:v1", registry.host()),
    ];
    let run = |format: &str| {
        let out = imgcheck()
            .args(["verify", "--format", format])
            .args(&refs)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{format}: {stderr}");
        assert!(
            stderr.contains(&format!("imgcheck: {bad}: ")) && !stderr.contains("panicked"),
            "{format}: {stderr}"
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run("text");
    assert!(text.starts_with(&format!("PASS  {}", refs[0])), "{text}");
    assert!(
        !text.contains("stream/b") && !text.contains("summary"),
        "{text}"
    );
    let json = run("json");
    let doc: serde_json::Value = serde_json::from_str(&json).expect("one valid document");
    crate::schema::assert_conforms("imagesReport", "a stopped run's report", &doc);
    let images = doc["images"].as_array().unwrap();
    assert_eq!(images.len(), 1, "{json}");
    assert_eq!(images[0]["reference"], refs[0].as_str());
    let stopped = doc["stopped"].as_str().unwrap();
    assert!(stopped.starts_with(&format!("{bad}: ")), "{stopped}");
    assert_eq!(run("konflux"), "");
}
