//! Where a run's reports go as they are judged ([`ReportSink`]), and what a run keeps of them
//! meanwhile ([`Delivery`]): counts, the overall verdict and the per-node answer, never the
//! reports themselves.

use std::collections::{HashMap, HashSet};

use super::error::RunError;
use super::outcome::Outcome;
use super::targets::{Landing, Target, placements_of};
use crate::engine::NodePlacement;
use crate::engine::{EntrySource, ImageReport, Verdict};

/// Takes a run's reports one at a time, in input order, each as soon as it and every one
/// before it are judged (the command line writes each to standard output then; a
/// `Vec<ImageReport>` keeps them all).
pub trait ReportSink {
    /// The next report. An error stops the run ([`RunError::Output`]).
    fn report(&mut self, report: ImageReport) -> std::io::Result<()>;
}

impl ReportSink for Vec<ImageReport> {
    fn report(&mut self, report: ImageReport) -> std::io::Result<()> {
        self.push(report);
        Ok(())
    }
}

/// A run's reports on their way to a [`ReportSink`], in input order: what the run keeps of each is
/// its verdict (into the overall one), a count, and — for a target whose pods land on nodes
/// of `--nodes` — its placements.
pub struct Delivery<'s> {
    sink: &'s mut dyn ReportSink,
    /// The landings of the targets that have any, by target index (the per-node answer needs
    /// nothing of the others).
    landings: HashMap<usize, Vec<Landing>>,
    reports: usize,
    verdict: Verdict,
    placements: Vec<NodePlacement>,
    /// The targets whose sources the run's driver check reads (`None`: no driver check, as
    /// in the mirror gate), and those sources once read.
    keep: Option<HashSet<usize>>,
    sources: HashMap<usize, Vec<EntrySource>>,
}

impl<'s> Delivery<'s> {
    /// Reports of `targets` (in their order) to `sink`.
    pub fn new(targets: &[Target], sink: &'s mut dyn ReportSink) -> Delivery<'s> {
        let landings = (targets.iter().enumerate())
            .filter(|(_, t)| !t.landings.is_empty())
            .map(|(i, t)| (i, t.landings.clone()))
            .collect();
        Delivery {
            sink,
            landings,
            reports: 0,
            verdict: Verdict::Pass,
            placements: Vec::new(),
            keep: None,
            sources: HashMap::new(),
        }
    }

    /// Keeps the sources of the reports of these targets (by index) for the driver check.
    pub fn keep_sources(&mut self, targets: HashSet<usize>) {
        self.keep = Some(targets);
    }

    /// The sources kept, by target index (only of images that were read); `None` when the
    /// run checks no driver ([`Delivery::keep_sources`] was not called).
    pub fn sources(&self) -> Option<&HashMap<usize, Vec<EntrySource>>> {
        self.keep.as_ref().map(|_| &self.sources)
    }

    /// The outcome of the next target: its report goes to the sink, after its placements
    /// are noted; bad input ends the run ([`RunError::Input`]), before anything of it goes
    /// to the sink.
    pub fn outcome(&mut self, outcome: Outcome) -> Result<(), RunError> {
        match outcome {
            Outcome::Report(r) => {
                if (self.keep.as_ref()).is_some_and(|k| k.contains(&self.reports))
                    && r.digest.is_some()
                {
                    self.sources.insert(self.reports, r.sources.clone());
                }
                if let Some(landings) = self.landings.remove(&self.reports) {
                    self.placements.extend(placements_of(&landings, &r));
                }
                self.report(r)
            }
            Outcome::BadInput(e) => Err(RunError::Input(e)),
        }
    }

    /// A report that stands for no target (a release component the payload lacks), after
    /// the targets' reports.
    pub fn report(&mut self, report: ImageReport) -> Result<(), RunError> {
        self.reports += 1;
        self.verdict = self.verdict.max(report.verdict);
        self.sink.report(report).map_err(RunError::Output)
    }

    /// The reports handed on so far, their overall verdict (the worst of them)
    /// and the per-node answer, in target order.
    pub fn end(self) -> (usize, Verdict, Vec<NodePlacement>) {
        (self.reports, self.verdict, self.placements)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::InputError;

    /// Bad input ends the run before its outcome reaches the sink; the reports before it
    /// are there, counted, and the verdict is the highest so far.
    #[test]
    fn reports_pass_through_in_order_until_bad_input() {
        let mut got: Vec<ImageReport> = Vec::new();
        let mut d = Delivery::new(&[], &mut got);
        let fail = ImageReport::not_found("q.io/a:gone", "404");
        d.outcome(Outcome::Report(fail)).unwrap();
        let error = ImageReport::unavailable("q.io/a:down", "503");
        d.outcome(Outcome::Report(error)).unwrap();
        let bad = Outcome::BadInput(InputError::new("oci:x", "not a layout"));
        assert!(matches!(d.outcome(bad), Err(RunError::Input(_))));
        let (count, verdict, placements) = d.end();
        assert_eq!((count, verdict, placements.len()), (2, Verdict::Fail, 0));
        let names: Vec<&str> = got.iter().map(|r| r.reference.as_str()).collect();
        assert_eq!(names, ["q.io/a:gone", "q.io/a:down"]);
    }
}
