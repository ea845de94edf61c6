//! Build progress on standard error: one spinner per build when standard output and standard
//! error are terminals, plain `LABEL: status` lines otherwise.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use super::output;
use imgcheck::builder::progress::{JobProgress, Reporter};
use imgcheck::escape::escape;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Draws a run's progress. The bars exist only while builds run: lines told before or after
/// them go straight to standard error.
pub struct BuildProgress {
    bars: bool,
    multi: Mutex<Option<MultiProgress>>,
}

impl BuildProgress {
    /// Bars when standard output is a terminal (and standard error, where they are drawn,
    /// too); plain lines otherwise.
    pub fn for_terminal() -> BuildProgress {
        BuildProgress {
            bars: std::io::stdout().is_terminal() && std::io::stderr().is_terminal(),
            multi: Mutex::new(None),
        }
    }

    fn multi(&self) -> std::sync::MutexGuard<'_, Option<MultiProgress>> {
        self.multi.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Reporter for BuildProgress {
    fn line(&self, text: &str) {
        match &*self.multi() {
            Some(m) => {
                if m.println(output::escape_lines(text)).is_err() {
                    output::eprint_lines(text);
                }
            }
            None => output::eprint_lines(text),
        }
    }

    fn job(&self, label: &str) -> Box<dyn JobProgress> {
        let bar = self.bars.then(|| {
            let mut multi = self.multi();
            let m = multi.get_or_insert_with(|| {
                MultiProgress::with_draw_target(ProgressDrawTarget::stderr())
            });
            let bar = m.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix:40} {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_prefix(escape(label).into_owned());
            bar.set_message("waiting");
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Box::new(JobLine {
            bar,
            label: label.to_string(),
        })
    }

    fn jobs_done(&self) {
        if let Some(m) = self.multi().take() {
            let _ = m.clear();
        }
    }
}

/// One build: its spinner, or its label for plain lines.
struct JobLine {
    bar: Option<ProgressBar>,
    label: String,
}

impl JobProgress for JobLine {
    fn status(&self, text: &str) {
        match &self.bar {
            Some(b) => b.set_message(escape(text).into_owned()),
            None => output::eprintln(format_args!("{}: {text}", self.label)),
        }
    }

    fn finish(&self, text: &str) {
        match &self.bar {
            Some(b) => b.finish_with_message(escape(text).into_owned()),
            None => output::eprintln(format_args!("{}: {text}", self.label)),
        }
    }
}
