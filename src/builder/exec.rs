//! Running Buildah: `buildah version`, and a command whose output is appended to a job's log
//! line by line and that can be stopped; the tail of a log for a failure.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::builder::buildah::{Version, shell_line, version_command};
use crate::builder::error::{BuildRunError, JobError};

/// Lines of a failed build's log printed with the failure.
pub const LOG_TAIL_LINES: usize = 25;

/// `buildah version`, parsed. A missing `buildah` names the package to install.
pub async fn buildah_version() -> Result<Version, BuildRunError> {
    let cmd = version_command();
    let out = tokio::process::Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                BuildRunError::BuildahMissing
            } else {
                BuildRunError::BuildahUnrunnable(Arc::new(e))
            }
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(BuildRunError::BuildahFailed {
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Version::from_output(&text).ok_or_else(|| BuildRunError::BuildahVersionUnreadable {
        output: text.trim().to_string(),
    })
}

/// Attempts of a `buildah build` whose runtime setup failed transiently (see
/// [`is_transient_setup_failure`]): the first, and one more.
pub const BUILD_ATTEMPTS: u32 = 2;

/// Whether a line of Buildah's output says its process setup failed before the Containerfile
/// step ran, in a way that running it again heals. One such failure is known: Buildah
/// (1.28.2 here) runs `RUN` steps through a re-exec that copies its own binary into a sealed
/// memfd (runc's `cloned_binary.c`, vendored), and `F_ADD_SEALS` can answer `EBUSY` while
/// other builds run at the same time — `Close_Fd sealing memfd copy: Device or resource busy`.
/// Nothing of the user's step has run then; seen about once in seven runs of the build
/// tests, never twice in a row.
pub fn is_transient_setup_failure(line: &str) -> bool {
    line.contains("sealing memfd copy: Device or resource busy")
}

fn log_write(e: std::io::Error) -> JobError {
    JobError::WriteLog(Arc::new(e))
}

/// Runs `cmd`, appending its output to `log`; `on_line` sees every line. When `stop` turns
/// true the process is killed and the job ends as stopped. `Ok(false)`: it exited with an
/// error.
pub async fn run_logged(
    cmd: &[String],
    log: &mut tokio::fs::File,
    stop: &mut watch::Receiver<bool>,
    mut on_line: impl FnMut(&str),
) -> Result<bool, JobError> {
    let (program, args) = cmd.split_first().ok_or(JobError::EmptyCommand)?;
    let header = format!("$ {}\n", shell_line(cmd));
    log.write_all(header.as_bytes()).await.map_err(log_write)?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| JobError::Start(program.clone(), Arc::new(e)))?;
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(forward_lines(out, tx.clone()));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(forward_lines(err, tx.clone()));
    }
    drop(tx);
    let mut watching = true;
    loop {
        tokio::select! {
            line = rx.recv() => {
                let Some(line) = line else { break };
                on_line(&line);
                log.write_all(line.as_bytes())
                    .await
                    .and(log.write_all(b"\n").await)
                    .map_err(log_write)?;
            }
            changed = stop.changed(), if watching => {
                if changed.is_err() {
                    watching = false;
                } else if *stop.borrow() {
                    terminate(&mut child).await;
                    let _ = log
                        .write_all(b"# stopped: another build of this image failed\n")
                        .await;
                    return Err(JobError::Stopped);
                }
            }
        }
    }
    for r in readers {
        let _ = r.await;
    }
    let status = child
        .wait()
        .await
        .map_err(|e| JobError::Wait(program.clone(), Arc::new(e)))?;
    log.write_all(format!("# exit: {status}\n").as_bytes())
        .await
        .map_err(log_write)?;
    Ok(status.success())
}

/// Sends every line of a process's output to `tx`.
fn forward_lines(
    pipe: impl AsyncRead + Unpin + Send + 'static,
    tx: mpsc::UnboundedSender<String>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(pipe).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            let _ = tx.send(l);
        }
    })
}

/// Ends a build: SIGTERM first, so Buildah removes its build container and stops the RUN it
/// is in; SIGKILL when it has not exited after 10 s.
async fn terminate(child: &mut tokio::process::Child) {
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid
        && rustix::process::kill_process(pid, rustix::process::Signal::TERM).is_ok()
        && tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .is_ok()
    {
        return;
    }
    let _ = child.kill().await;
}

/// The last `n` lines of a log file.
pub fn log_tail(path: &Path, n: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("<cannot read {}: {e}>", path.display()),
    }
}

/// A file Buildah wrote (image ID, digest), trimmed.
pub fn read_trimmed(path: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(path).map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_buildahs_memfd_race_counts_as_transient() {
        let table = [
            ("Close_Fd sealing memfd copy: Device or resource busy", true),
            (
                "time=\"…\" level=error msg=\"Close_Fd sealing memfd copy: Device or resource busy\"",
                true,
            ),
            (
                "Close_Fd sealing memfd copy: Operation not permitted",
                false,
            ),
            ("Error: building at STEP \"RUN make\": exit status 1", false),
            ("make: *** [Makefile:3: all] Device or resource busy", false),
            ("", false),
        ];
        for (line, want) in table {
            assert_eq!(is_transient_setup_failure(line), want, "{line}");
        }
    }

    #[test]
    fn log_tails() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("x.log");
        let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, text).unwrap();
        let tail = log_tail(&log, 3);
        assert_eq!(tail, "line 28\nline 29\nline 30");
        assert!(log_tail(&dir.path().join("none"), 3).starts_with("<cannot read"));
    }
}
