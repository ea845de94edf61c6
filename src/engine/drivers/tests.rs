//! The judgement of one driver's halves.

use super::*;
use crate::engine::HalfOs;

fn half(os: HalfOs, image: &str, revisions: &[&str], versions: &[&str]) -> DriverHalf {
    let claims = |list: &[&str], source: &str| {
        list.iter()
            .map(|r| Revision {
                source: source.to_string(),
                revision: r.to_string(),
            })
            .collect()
    };
    DriverHalf {
        os,
        from: format!("DaemonSet ns/{image}"),
        image: image.to_string(),
        read: true,
        revisions: claims(revisions, "vcs-ref"),
        versions: claims(versions, "version"),
    }
}

fn check(stages: Vec<DriverStage>, skew: SkewSeverity) -> Vec<(Rule, Severity)> {
    let report = judge_driver(&DriverCheck {
        name: "d".to_string(),
        paired_by: "test".to_string(),
        skew,
        stages,
    });
    report
        .findings
        .iter()
        .map(|f| (f.rule, f.severity))
        .collect()
}

fn stage(stage: &'static str, l: DriverHalf, w: DriverHalf) -> DriverStage {
    DriverStage {
        stage,
        linux: l,
        windows: w,
    }
}

#[test]
fn halves_are_judged_by_revision_and_version() {
    use Rule::{DriverSkew, NoSourceRevision};
    use Severity::{Error, Info, Warning};
    let w = SkewSeverity::Warning;
    // (linux revisions, linux versions, windows revisions, windows versions, skew, findings)
    type Row<'a> = (
        &'a [&'a str],
        &'a [&'a str],
        &'a [&'a str],
        &'a [&'a str],
        SkewSeverity,
        Vec<(Rule, Severity)>,
    );
    let rows: Vec<Row> = vec![
        (&["abcdef1234"], &[], &["abcdef1"], &[], w, vec![]), // an abbreviation is the same commit
        (
            &["aaaaaaa1"],
            &[],
            &["bbbbbbb2"],
            &[],
            w,
            vec![(DriverSkew, Warning)],
        ),
        (
            &["aaaaaaa1"],
            &[],
            &["bbbbbbb2"],
            &[],
            SkewSeverity::Error,
            vec![(DriverSkew, Error)],
        ),
        (
            &["aaaaaaa1"],
            &["v1.2.0"],
            &["aaaaaaa1"],
            &["1.2.0"],
            w,
            vec![],
        ), // a leading v
        (
            &["aaaaaaa1"],
            &["1.2.0"],
            &["aaaaaaa1"],
            &["1.3.0"],
            w,
            vec![(DriverSkew, Warning)],
        ),
        (
            &[],
            &[],
            &["bbbbbbb2"],
            &[],
            w,
            vec![(NoSourceRevision, Info)],
        ), // no claim
    ];
    for (lr, lv, wr, wv, skew, want) in rows {
        let s = stage(
            "current",
            half("linux", "l", lr, lv),
            half("windows", "w", wr, wv),
        );
        assert_eq!(check(vec![s], skew), want, "{lr:?} {lv:?} {wr:?} {wv:?}");
    }
}

#[test]
fn a_rollout_reports_both_orders_as_information() {
    let current = stage(
        "current",
        half("linux", "l1", &["aaaaaaa1"], &[]),
        half("windows", "w1", &["aaaaaaa1"], &[]),
    );
    let target = stage(
        "target",
        half("linux", "l2", &["bbbbbbb2"], &[]),
        half("windows", "w2", &["bbbbbbb2"], &[]),
    );
    let report = judge_driver(&DriverCheck {
        name: "d".to_string(),
        paired_by: "test".to_string(),
        skew: SkewSeverity::Error,
        stages: vec![current.clone(), target],
    });
    assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    let f = &report.findings[0];
    assert_eq!((f.rule, f.severity), (Rule::DriverSkew, Severity::Info));
    assert!(
        f.message.contains("both orders are possible"),
        "{}",
        f.message
    );
    assert!(f.message.contains("Linux first runs the target Linux half (bbbbbbb2, l2) next to the current Windows half (aaaaaaa1, w1)"), "{}", f.message);
    assert_eq!(report.verdict, crate::engine::Verdict::Pass);
    // Nothing moves: no rollout finding.
    let same = vec![
        current.clone(),
        DriverStage {
            stage: "target",
            ..current
        },
    ];
    assert_eq!(check(same, SkewSeverity::Warning), vec![]);
}
