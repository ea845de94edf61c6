//! The report of `verify` and `mirror-check` printed as the run goes: each image's part on
//! standard output as soon as its turn comes (the library's [`ReportSink`]), drawn around the
//! progress bar, then the end of the report; or, when bad input stops the run, what closes
//! it ([`Printer::stop`]; docs/output.md, "Streamed reports").

use std::io::{ErrorKind, Write};
use std::time::SystemTime;

use imgcheck::engine::ImageReport;
use imgcheck::engine::RunExtras;
use imgcheck::report::{self, Writer};
use imgcheck::run::{ReportSink, RunError};

use super::error::CliError;
use super::progress::Terminal;

/// The verify report on its way to standard output.
pub struct Printer<'t> {
    writer: Writer<Stdout>,
    terminal: &'t Terminal,
}

impl<'t> Printer<'t> {
    /// A report in `format` for standard output; `terminal`'s bar is cleared while it writes.
    pub fn new(format: report::OutputFormat, terminal: &'t Terminal) -> Printer<'t> {
        Printer {
            writer: Writer::new(format, Stdout::default()),
            terminal,
        }
    }

    /// Prints the end of the report (summary, notes, per-node answer; Konflux: all of it).
    pub fn finish(self, extras: &RunExtras, now: SystemTime) -> Result<(), CliError> {
        self.writer.finish(extras, now).map_err(CliError::Stdout)?;
        Ok(())
    }

    /// The run ended with `error` before all its images: what was printed stays, a JSON
    /// document begun is closed with `notes` and `stopped` (the error, on one line). Returns
    /// the error the command ends with: the run's, except that standard output that cannot
    /// be written is [`CliError::Stdout`], as for any command (nothing more is written).
    pub fn stop(self, notes: &[String], error: RunError) -> CliError {
        if let RunError::Output(e) = error {
            return CliError::Stdout(e);
        }
        let why = imgcheck::error::one_line(&error);
        // The bad input is what the command ends with (exit 2) even when standard output
        // fails now: it came first, and it is what the user must fix.
        let _closed = self.writer.stop(notes, &why);
        error.into()
    }
}

impl ReportSink for Printer<'_> {
    fn report(&mut self, report: ImageReport) -> std::io::Result<()> {
        self.terminal.suspend(|| self.writer.image(&report))
    }
}

/// Standard output for a report written piece by piece: a reader that has gone away
/// (`EPIPE`) is not an error — the rest is dropped and the command ends with the exit code it
/// would have had anyway (`cli::output`); any other write error is returned.
#[derive(Default)]
struct Stdout {
    gone: bool,
}

impl Write for Stdout {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.gone {
            return Ok(bytes.len());
        }
        if super::output::stdout_closed() {
            return Err(super::output::closed_error());
        }
        match std::io::stdout().lock().write_all(bytes) {
            Err(e) if e.kind() == ErrorKind::BrokenPipe => self.gone = true,
            Err(e) => return Err(e),
            Ok(()) => {}
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.gone {
            return Ok(());
        }
        match std::io::stdout().lock().flush() {
            Err(e) if e.kind() == ErrorKind::BrokenPipe => {
                self.gone = true;
                Ok(())
            }
            other => other,
        }
    }
}
