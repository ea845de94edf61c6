//! The batch progress bar: drawn on standard error only when it is a terminal, so piped
//! output holds nothing but the report.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};

use imgcheck::batch::Outcome;
use imgcheck::engine::Verdict;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Count, rate, ETA and failures so far.
pub struct Progress {
    bar: Option<ProgressBar>,
    failures: AtomicU64,
}

impl Progress {
    /// A bar for `total` images (hidden when stderr is not a terminal or for one image).
    pub fn new(total: u64) -> Progress {
        let bar = (std::io::stderr().is_terminal() && total > 1).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} images  {per_sec}  ETA {eta}  failures: {msg}",
                )
                .expect("valid template"),
            );
            bar.set_message("0");
            bar
        });
        Progress {
            bar,
            failures: AtomicU64::new(0),
        }
    }

    /// Records one finished image.
    pub fn done(&self, outcome: &Outcome) {
        let failed = match outcome {
            Outcome::Report(r) => r.verdict != Verdict::Pass,
            Outcome::BadInput(_) => true,
        };
        let failures = if failed {
            self.failures.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            self.failures.load(Ordering::Relaxed)
        };
        if let Some(bar) = &self.bar {
            bar.set_message(failures.to_string());
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
