//! `imgcheck build` as text: the `--check` findings, the `--dry-run` command lines, and the
//! final table (image → list digest → verdict) after the reports of the images that did not
//! pass.

use std::fmt::Write as _;
use std::path::Path;

use crate::builder::buildah::{Passthrough, build_command, shell_line};
use crate::builder::check::{CheckFinding, Level};
use crate::builder::jobs::Job;
use crate::builder::outcome::{ImageOutcome, ImageResult};
use crate::engine::{ImageReport, Severity, Verdict};
use crate::policy::Policy;
use crate::reference::RegistryRef;

use crate::escape::escape;

/// `--check`: every finding, then the count line.
pub fn check(plan: &Path, images: usize, findings: &[CheckFinding]) -> String {
    let errors = errors(findings).count();
    let mut out = String::new();
    for f in findings {
        let _ = writeln!(out, "{}", escape(&f.to_string()));
    }
    let _ = writeln!(
        out,
        "{}: {images} image(s) checked, {errors} error(s), {} note(s)",
        plan.display(),
        findings.len() - errors
    );
    out
}

/// The findings that stop a build.
pub fn errors(findings: &[CheckFinding]) -> impl Iterator<Item = &CheckFinding> {
    findings.iter().filter(|f| f.level == Level::Error)
}

/// `--dry-run`: the notes, then per image the exact `buildah` command lines and what follows
/// them: how each Windows stage is made (composed by imgcheck, or built by Buildah and why),
/// and lists with Windows images verified with `--deep`.
pub fn dry_run(
    findings: &[CheckFinding],
    lists: &[(String, RegistryRef, Policy)],
    jobs: &[Job],
    pass: &Passthrough,
) -> String {
    let mut out = String::new();
    for f in findings.iter().filter(|f| f.level == Level::Note) {
        let _ = writeln!(out, "# {}", escape(&f.to_string()));
    }
    for (name, list, policy) in lists {
        let _ = writeln!(
            out,
            "# {} → {list} (policy {})",
            escape(name),
            escape(&policy.name)
        );
        for job in jobs.iter().filter(|j| &j.image == name) {
            job_lines(&mut out, job, pass);
        }
        let deep = jobs
            .iter()
            .any(|j| &j.image == name && j.target.os == "windows");
        let _ = writeln!(
            out,
            "# then: assemble {list} from the pushed digests, push it, verify it with policy {}{}",
            policy.name,
            if deep { " (--deep)" } else { "" }
        );
    }
    out.push_str(
        "# Windows bases without os.version get --os-version=10.0.<build> (checked when building)\n",
    );
    out.push_str(
        "# With Buildah before 1.44, imgcheck rewrites the layers each Windows stage built by \
         Buildah adds into the Windows layer format (Files/, Hives/, PAX records) and pushes them \
         again before assembling\n",
    );
    out
}

/// One job of `--dry-run`: how its Windows stage is made, its `buildah build` and `buildah
/// push`, and for a composed stage the files stage it builds and the image imgcheck pushes.
fn job_lines(out: &mut String, job: &Job, pass: &Passthrough) {
    if let Some(note) = &job.stage_note {
        let _ = writeln!(
            out,
            "# {} {}: {}",
            escape(&job.image),
            escape(&job.target.label()),
            escape(&note.to_string())
        );
    }
    if let Some(c) = &job.compose {
        let _ = writeln!(
            out,
            "# {} (written when building), its files stage:",
            job.spec.containerfile.display()
        );
        let files = c.plan.files_containerfile.split("FROM scratch\n").nth(1);
        for line in files.unwrap_or_default().lines() {
            let _ = writeln!(out, "#   {line}");
        }
    }
    let _ = writeln!(out, "{}", shell_line(&build_command(&job.spec, pass)));
    let id = format!("$(cat {})", job.spec.iidfile.display());
    let push = job.push_command("IMAGE_ID", pass);
    let _ = writeln!(
        out,
        "{}",
        shell_line(&push).replace("IMAGE_ID", &format!("\"{id}\""))
    );
    if job.compose.is_some() {
        let _ = writeln!(
            out,
            "# then: compose docker://{} from {} (its manifest and config read, one Windows \
             layer of the files added; its layers mounted or copied, never pulled to build)",
            job.push_to,
            job.target.base.as_deref().unwrap_or("the Windows base"),
        );
    }
}

/// What a run prints at the end: the verify matrix and findings of every image that did not
/// pass, then the table.
pub fn results(results: &[ImageResult]) -> String {
    let reports: Vec<ImageReport> = results
        .iter()
        .filter_map(|r| match &r.outcome {
            ImageOutcome::Verified { report, .. } if report.verdict != Verdict::Pass => {
                Some((**report).clone())
            }
            _ => None,
        })
        .collect();
    let mut out = String::new();
    if !reports.is_empty() {
        let _ = writeln!(out, "{}", super::text(&reports));
    }
    out.push_str(&table(results));
    out
}

/// The final table: image → list digest → verdict.
pub fn table(results: &[ImageResult]) -> String {
    let mut out = format!("{:<28} {:<73} {}\n", "image", "list digest", "verdict");
    for r in results {
        let (digest, verdict) = match &r.outcome {
            ImageOutcome::Verified { digest, report } => (digest.to_string(), verdict(report)),
            ImageOutcome::BuildFailed(why) => (
                "-".to_string(),
                format!("build failed: {}", escape(&why.join("; "))),
            ),
            ImageOutcome::Incomplete(why) => ("-".to_string(), format!("error: {}", escape(why))),
        };
        let _ = writeln!(out, "{:<28} {:<73} {verdict}", escape(&r.image), digest);
    }
    out
}

/// `pass`, `fail (rule, rule)`: the verdict with the rules of its errors, each once.
fn verdict(report: &ImageReport) -> String {
    let mut errors: Vec<&str> = Vec::new();
    for f in &report.findings {
        if f.severity == Severity::Error && !errors.contains(&f.rule.id()) {
            errors.push(f.rule.id());
        }
    }
    let verdict = format!("{:?}", report.verdict).to_lowercase();
    if errors.is_empty() {
        verdict
    } else {
        format!("{verdict} ({})", errors.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::outcome::overall;
    use crate::digest::Digest;
    use crate::engine::{Finding, Rule};

    fn report(verdict: Verdict, rules: &[Rule]) -> Box<ImageReport> {
        Box::new(ImageReport {
            reference: "r".into(),
            origins: vec![],
            binaries: vec![],
            signatures: vec![],
            sources: vec![],
            admissions: vec![],
            digest: None,
            verdict,
            findings: rules
                .iter()
                .map(|r| Finding {
                    rule: *r,
                    severity: Severity::Error,
                    message: String::new(),
                    hint: "",
                    digest: None,
                    host: None,
                    nodes: None,
                })
                .collect(),
            hosts: vec![],
        })
    }

    fn result(image: &str, outcome: ImageOutcome) -> ImageResult {
        ImageResult {
            image: image.into(),
            list: format!("reg/ns/{image}:v1"),
            outcome,
        }
    }

    #[test]
    fn table_and_exit_codes() {
        let d = Digest::sha256(b"list");
        let pass = || ImageOutcome::Verified {
            digest: d.clone(),
            report: report(Verdict::Pass, &[]),
        };
        let fail = ImageOutcome::Verified {
            digest: d.clone(),
            report: report(
                Verdict::Fail,
                &[
                    Rule::WindowsLayerFormat,
                    Rule::NoMatch,
                    Rule::WindowsLayerFormat,
                ],
            ),
        };
        let results = [
            result("a", pass()),
            result("b", fail),
            result(
                "c",
                ImageOutcome::BuildFailed(vec!["linux/amd64: boom".into()]),
            ),
            result("d", ImageOutcome::Incomplete("registry down".into())),
        ];
        let t = table(&results);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 5);
        assert!(lines[0].starts_with("image") && lines[0].ends_with("verdict"));
        assert!(
            lines[1].starts_with("a ")
                && lines[1].contains(&d.to_string())
                && lines[1].ends_with(" pass")
        );
        assert!(
            lines[2].ends_with(" fail (windows-layer-format, no-match)"),
            "{}",
            lines[2]
        );
        assert!(lines[3].ends_with(" build failed: linux/amd64: boom"));
        assert!(lines[4].ends_with(" error: registry down"));
        let cases: [(Vec<ImageResult>, Verdict); 5] = [
            (vec![result("a", pass())], Verdict::Pass),
            (results.to_vec(), Verdict::Fail),
            (vec![result("a", pass()), results[2].clone()], Verdict::Fail),
            (
                vec![result("a", pass()), results[3].clone()],
                Verdict::Error,
            ),
            (
                vec![result(
                    "e",
                    ImageOutcome::Verified {
                        digest: d.clone(),
                        report: report(Verdict::Error, &[]),
                    },
                )],
                Verdict::Error,
            ),
        ];
        for (rs, want) in cases {
            assert_eq!(overall(&rs), want, "{}", table(&rs));
        }
    }
}
