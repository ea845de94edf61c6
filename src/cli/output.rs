//! Standard output and standard error for every command: the one place that writes them.
//!
//! A closed standard output (`imgcheck verify … | head -1`) means the reader is gone, not that
//! the command failed: [`print`] swallows `EPIPE` and the command ends with the exit code it
//! would have had anyway — the verdict's, since every command writes its report after the
//! verdict is known (docs/decisions.md, "A closed standard output"). Any other write error
//! (a full disk behind `>`) is a [`CliError::Stdout`]: the report was not delivered.
//! Messages on standard error are best effort: a closed standard error loses them, silently.
//! Every message is one line with what inputs and registries said escaped
//! ([`imgcheck::escape::escape`]): a node name, a label or a registry's message cannot clear
//! the screen or forge a line (docs/output.md).

use std::error::Error as _;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use imgcheck::escape::escape;

use super::error::CliError;

/// Writes `bytes` to standard output and flushes it; a reader that has gone away is not an
/// error.
pub fn print(bytes: impl AsRef<[u8]>) -> Result<(), CliError> {
    if stdout_closed() {
        return Err(CliError::Stdout(closed_error()));
    }
    write_to(&mut std::io::stdout().lock(), bytes.as_ref())
}

/// Whether standard output was closed when the program started (`>&-`). Rust's runtime
/// opens `/dev/null` on a closed standard descriptor before `main` runs (so that no file
/// opened later takes its number), where every write would succeed and the report be lost
/// with exit 0: [`STDOUT_AT_START`] looks before it does.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// The error of a write to a standard output that was closed at start: `EBADF`, what the
/// write would have failed with.
pub fn closed_error() -> std::io::Error {
    std::io::Error::from_raw_os_error(EBADF)
}

/// `EBADF` (Linux, and every Unix): not an open file descriptor.
const EBADF: i32 = 9;

/// Set by [`STDOUT_AT_START`] when file descriptor 1 was not open.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Run by the C runtime before Rust's (an ELF `.init_array` entry, as the `ctor` crate
/// makes them): is file descriptor 1 open?
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static STDOUT_AT_START: extern "C" fn() = look_at_stdout;

#[cfg(target_os = "linux")]
extern "C" fn look_at_stdout() {
    unsafe extern "C" {
        /// glibc's `fcntl(2)`.
        fn fcntl(fd: i32, cmd: i32, ...) -> i32;
    }
    /// `F_GETFD`: the descriptor's flags, or -1 (`EBADF`) when it is not open.
    const F_GETFD: i32 = 1;
    // SAFETY: F_GETFD reads the flags of a descriptor number; it changes nothing and touches
    // no memory of ours.
    let closed = unsafe { fcntl(1, F_GETFD) } == -1;
    STDOUT_CLOSED.store(closed, Ordering::Relaxed);
}

/// Writes `text` and a newline to standard output, as [`print`].
pub fn println(text: impl std::fmt::Display) -> Result<(), CliError> {
    print(format!("{text}\n"))
}

/// Writes `text`, escaped into one line, and a newline to standard error; a write error loses
/// the line.
pub fn eprintln(text: impl std::fmt::Display) {
    let line = text.to_string();
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", escape(&line)).and_then(|()| err.flush());
}

/// `text` as lines, each escaped: a message that quotes another program's lines (the tail of
/// a build log) keeps them as lines, and each stays one line.
pub fn escape_lines(text: &str) -> String {
    text.split('\n')
        .map(|l| escape(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes each line of `text`, escaped ([`escape_lines`]), to standard error.
pub fn eprint_lines(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", escape_lines(text)).and_then(|()| err.flush());
}

/// [`print`] on any writer: `EPIPE` is success, other errors are [`CliError::Stdout`].
fn write_to(out: &mut impl Write, bytes: &[u8]) -> Result<(), CliError> {
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(CliError::Stdout(e)),
        _ => Ok(()),
    }
}

/// Prints `imgcheck: <error>` and one `  caused by: <cause>` line per cause on standard error.
pub fn print_error(error: &CliError) {
    eprintln(format_args!("imgcheck: {error}"));
    let mut cause = error.source();
    while let Some(c) = cause {
        eprintln(format_args!("  caused by: {c}"));
        cause = c.source();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::exit::ExitKind;

    /// A writer that fails every write with `kind`.
    struct Failing(ErrorKind);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(self.0.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_gone_reader_is_not_an_error_and_other_write_errors_are() {
        let table = [
            (ErrorKind::BrokenPipe, None),
            (ErrorKind::StorageFull, Some(ExitKind::Incomplete)),
            (ErrorKind::PermissionDenied, Some(ExitKind::Incomplete)),
        ];
        for (kind, want) in table {
            let got = write_to(&mut Failing(kind), b"report\n").err();
            assert_eq!(got.as_ref().map(ExitKind::of_error), want, "{kind:?}");
        }
        let mut buf = Vec::new();
        write_to(&mut buf, b"report\n").unwrap();
        assert_eq!(buf, b"report\n");
    }
}
