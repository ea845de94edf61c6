//! Following a run on standard error: its notes, and the batch progress bar, drawn only when
//! standard error is a terminal, so piped output holds nothing but the report.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use imgcheck::engine::Verdict;
use imgcheck::run::{self, Note, Outcome};
use indicatif::{HumanDuration, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use super::output;

/// A run followed on standard error: each note as `imgcheck: note: …` (`warning: …`), and a
/// progress bar once the images are counted.
#[derive(Default)]
pub struct Terminal {
    bar: OnceLock<ProgressMeter>,
}

impl Terminal {
    /// Removes the bar, if any, before the report (or the error) is printed.
    pub fn finish(&self) {
        if let Some(bar) = self.bar.get() {
            bar.finish();
        }
    }

    /// Runs `f` (printing part of the report) with the bar, if any, cleared meanwhile and
    /// drawn again after: the report and the bar never share a line.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match self.bar.get().and_then(|p| p.bar.as_ref()) {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }
}

impl run::Progress for Terminal {
    fn note(&self, note: &Note) {
        let kind = match note.is_warning() {
            true => "warning",
            false => "note",
        };
        let note = imgcheck::escape::escape(&note.to_string()).into_owned();
        output::eprintln(format_args!("imgcheck: {kind}: {note}"));
    }

    fn start(&self, images: usize) {
        self.bar.get_or_init(|| ProgressMeter::new(images as u64));
    }

    fn done(&self, outcome: &Outcome) {
        if let Some(bar) = self.bar.get() {
            bar.done(outcome);
        }
    }
}

/// Count, rate, ETA and failures so far.
pub struct ProgressMeter {
    bar: Option<ProgressBar>,
    failures: Arc<AtomicU64>,
}

impl ProgressMeter {
    /// A bar for `total` images (hidden when stderr is not a terminal or for one image).
    pub fn new(total: u64) -> ProgressMeter {
        let drawn = std::io::stderr().is_terminal() && total > 1;
        ProgressMeter::drawn_to(total, drawn.then(ProgressDrawTarget::stderr))
    }

    /// A bar for `total` images drawn to `target`, or none.
    fn drawn_to(total: u64, target: Option<ProgressDrawTarget>) -> ProgressMeter {
        let failures = Arc::new(AtomicU64::new(0));
        let bar = target.map(|target| {
            let bar = ProgressBar::with_draw_target(Some(total), target);
            let counted = Arc::clone(&failures);
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} images  {images_per_sec}  ETA {eta_once_known}  failures: {failures}",
                )
                .expect("valid template")
                .with_key(
                    "images_per_sec",
                    |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = w.write_str(&rate(state.per_sec()));
                    },
                )
                .with_key(
                    "eta_once_known",
                    |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let total = state.len().unwrap_or(0);
                        let _ = w.write_str(&eta(state.pos(), total, state.elapsed()));
                    },
                )
                .with_key(
                    "failures",
                    move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{}", counted.load(Ordering::Relaxed));
                    },
                ),
            );
            bar
        });
        ProgressMeter { bar, failures }
    }

    /// Records one finished image. The failure is counted before the bar moves, and both
    /// are drawn in the same frame: the bar never shows more failures than images done.
    pub fn done(&self, outcome: &Outcome) {
        let failed = match outcome {
            Outcome::Report(r) => r.verdict != Verdict::Pass,
            Outcome::BadInput(_) => true,
        };
        if failed {
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Removes the bar before the report is printed.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Images per second as people read it: two significant digits below 10 (`8.0/s`,
/// `0.25/s`), whole numbers above (`123/s`); `-` before there is a rate.
fn rate(per_sec: f64) -> String {
    if !per_sec.is_finite() || per_sec <= 0.0 {
        "-/s".to_string()
    } else if per_sec < 1.0 {
        format!("{per_sec:.2}/s")
    } else if per_sec < 10.0 {
        format!("{per_sec:.1}/s")
    } else {
        format!("{per_sec:.0}/s")
    }
}

/// The time left: the time per image so far times the images left; `-` until an image is
/// done (there is no rate to base it on before: indicatif's own estimate then reads minutes
/// for a run of seconds).
fn eta(done: u64, total: u64, elapsed: Duration) -> String {
    if done == 0 || elapsed.is_zero() {
        return "-".to_string();
    }
    let left = total.saturating_sub(done);
    let per_image = elapsed.as_secs_f64() / done as f64;
    HumanDuration(Duration::from_secs_f64(per_image * left as f64)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn rates_are_rounded_for_reading() {
        let table = [
            (7.9829, "8.0/s"),
            (0.2531, "0.25/s"),
            (12.49, "12/s"),
            (1234.5678, "1235/s"),
            (0.0, "-/s"),
            (f64::NAN, "-/s"),
            (f64::INFINITY, "-/s"),
        ];
        for (per_sec, want) in table {
            assert_eq!(rate(per_sec), want, "{per_sec}");
        }
    }

    /// Issue 21, item 5: no ETA before an image is done (it read "10 minutes" at the start of
    /// a 27-second run); then the time per image so far times the images left.
    #[test]
    fn the_eta_waits_for_a_rate() {
        let s = Duration::from_secs;
        let table = [
            (0, 9, s(0), "-"),
            (0, 9, s(5), "-"),
            (3, 9, Duration::ZERO, "-"),
            (3, 9, s(9), "18 seconds"),
            (1, 27, s(1), "26 seconds"),
            (9, 9, s(27), "0 seconds"),
            (10, 9, s(27), "0 seconds"),
            (1, 61, s(2), "2 minutes"),
        ];
        for (done, total, elapsed, want) in table {
            assert_eq!(
                eta(done, total, elapsed),
                want,
                "{done}/{total} {elapsed:?}"
            );
        }
    }

    /// The first frame, before any image is done, shows no ETA.
    #[test]
    fn the_first_frame_has_no_eta() {
        let screen = Screen::default();
        let target = ProgressDrawTarget::term_like(Box::new(screen.clone()));
        let progress = ProgressMeter::drawn_to(27, Some(target));
        progress.bar.as_ref().unwrap().tick();
        let frames = screen.0.lock().unwrap().clone();
        let first = frames.first().expect("a frame");
        assert!(first.contains("ETA -  failures"), "{first:?}");
    }

    /// A terminal that records every line drawn.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<Vec<String>>>);

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(s)
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            if !s.trim().is_empty() {
                self.0.lock().unwrap().push(s.to_string());
            }
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// `N/M images … failures: F` → (N, F).
    fn done_and_failures(frame: &str) -> (u64, u64) {
        let done = frame
            .split_whitespace()
            .find_map(|w| w.split_once('/').and_then(|(n, _)| n.parse().ok()))
            .unwrap_or_else(|| panic!("no count in {frame:?}"));
        let failures = frame
            .rsplit_once("failures: ")
            .and_then(|(_, f)| f.trim().parse().ok())
            .unwrap_or_else(|| panic!("no failures in {frame:?}"));
        (done, failures)
    }

    #[test]
    fn every_frame_shows_no_more_failures_than_images_done() {
        let screen = Screen::default();
        let target = ProgressDrawTarget::term_like(Box::new(screen.clone()));
        let progress = ProgressMeter::drawn_to(3, Some(target));
        let bad = || Outcome::BadInput(imgcheck::input::InputError::new("x", "not a layout"));
        for outcome in [bad(), bad(), bad()] {
            progress.done(&outcome);
        }
        let frames = screen.0.lock().unwrap().clone();
        assert!(!frames.is_empty());
        for frame in &frames {
            let (done, failures) = done_and_failures(frame);
            assert!(failures <= done, "{frame:?} in {frames:#?}");
            assert!(!frame.contains("0000/s"), "{frame:?}");
        }
        assert_eq!(done_and_failures(frames.last().unwrap()), (3, 3));
    }
}
