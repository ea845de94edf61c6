//! Docker credential helpers: `docker-credential-<name> get`, with the server on standard
//! input and the credentials as JSON on standard output.

use std::io::{Read as _, Write as _};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::credentials::{AuthError, Credentials};

/// How a helper that is not on `PATH` is reported.
pub(super) const NOT_INSTALLED: &str = "not installed";

/// How long a credential helper may take before imgcheck gives up on it.
const HELPER_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `docker-credential-<name> get` with the server URL on standard input (Docker's
/// credential-helper protocol). "credentials not found" is `None`; anything else that goes
/// wrong is an error naming the helper. A helper that fails is told by its exit status and
/// the first line it printed, redacted ([`said_first`]): never its whole output, which may
/// hold the secret.
pub(super) fn run_helper(name: &str, host: &str) -> Result<Option<Credentials>, AuthError> {
    let helper = Helper {
        program: format!("docker-credential-{name}"),
    };
    if name.is_empty() || name.contains(['/', '\\']) {
        return Err(helper.err("not a valid credential helper name"));
    }
    let server = if host == "docker.io" {
        "https://index.docker.io/v1/"
    } else {
        host
    };
    let mut child = helper.spawn(server)?;
    let status = helper.wait(&mut child)?;
    let (stdout, stderr) = read_output(&mut child);
    if !status.success() {
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        );
        if said.to_ascii_lowercase().contains("credentials not found") {
            return Ok(None);
        }
        let first = said_first(&stderr, &stdout)
            .map(|line| format!(": {line}"))
            .unwrap_or_default();
        return Err(helper.err(format!("'get' for {server} failed with {status}{first}")));
    }
    helper.answer(server, &stdout)
}

/// One credential helper program.
struct Helper {
    program: String,
}

impl Helper {
    fn err(&self, reason: impl Into<String>) -> AuthError {
        AuthError::new(format!("credential helper {}", self.program), reason)
    }

    fn caused(&self, reason: &str, cause: std::io::Error) -> AuthError {
        AuthError::caused(format!("credential helper {}", self.program), reason, cause)
    }

    /// Starts `<program> get` and writes `server` to its standard input.
    fn spawn(&self, server: &str) -> Result<Child, AuthError> {
        let mut child = Command::new(&self.program)
            .arg("get")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    self.err(format!("{NOT_INSTALLED} (not found on PATH)"))
                } else {
                    self.caused("cannot run it", e)
                }
            })?;
        if let Some(mut stdin) = child.stdin.take() {
            // A helper that exits without reading its input is judged by its exit status.
            let _ = stdin.write_all(server.as_bytes());
        }
        Ok(child)
    }

    /// Waits at most [`HELPER_TIMEOUT`] for the helper to exit; kills it after that.
    fn wait(&self, child: &mut Child) -> Result<ExitStatus, AuthError> {
        let started = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if started.elapsed() < HELPER_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(self.err(format!("no answer within {}s", HELPER_TIMEOUT.as_secs())));
                }
                Err(e) => return Err(self.caused("cannot wait for it", e)),
            }
        }
    }

    /// The credentials in a successful helper's output; an empty secret is none.
    fn answer(&self, server: &str, stdout: &[u8]) -> Result<Option<Credentials>, AuthError> {
        #[derive(serde::Deserialize)]
        struct Answer {
            #[serde(rename = "Username", default)]
            username: String,
            #[serde(rename = "Secret", default)]
            secret: String,
        }
        let answer: Answer = serde_json::from_slice(stdout).map_err(|_| {
            self.err(format!(
                "'get' for {server} did not print the expected JSON"
            ))
        })?;
        if answer.secret.is_empty() {
            return Ok(None);
        }
        Ok(Some(Credentials {
            username: answer.username,
            password: answer.secret,
        }))
    }
}

/// The first line a failed helper printed (on standard error, else on standard output), with
/// whatever looks like a secret redacted (`crate::secret::scrub_words`), cut to 200
/// characters; `None` when it printed nothing. Docker's own client quotes the whole output
/// (docker/docker-credential-helpers, `client/client.go`, `Get`); imgcheck does not.
fn said_first(stderr: &[u8], stdout: &[u8]) -> Option<String> {
    [stderr, stdout].into_iter().find_map(|bytes| {
        let text = String::from_utf8_lossy(bytes);
        let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
        Some(crate::secret::scrub_words(line).chars().take(200).collect())
    })
}

/// What an exited helper printed: at most 1 MiB of standard output, 64 KiB of standard error.
fn read_output(child: &mut Child) -> (Vec<u8>, Vec<u8>) {
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    if let Some(out) = child.stdout.take() {
        let _ = out.take(1 << 20).read_to_end(&mut stdout);
    }
    if let Some(e) = child.stderr.take() {
        let _ = e.take(1 << 16).read_to_end(&mut stderr);
    }
    (stdout, stderr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_helper_is_quoted_by_its_first_line_redacted() {
        let table: [(&[u8], &[u8], Option<&str>); 5] = [
            (
                b"\n  keychain locked for token=s3cr3t-Value\nsecond line hunter2\n",
                b"",
                Some("keychain locked for token=<redacted>"),
            ),
            (
                b"",
                b"{\"Secret\":\"s3cr3t\"}\n",
                Some("{\"Secret\":\"<redacted>\"}"),
            ),
            (b"", b"", None),
            (b" \n\n", b"", None),
            (
                b"vault said Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig and AKIAxQ7Zr4Secret99Word",
                b"ignored",
                Some("vault said Bearer <redacted> and <redacted>"),
            ),
        ];
        for (stderr, stdout, want) in table {
            assert_eq!(
                said_first(stderr, stdout).as_deref(),
                want,
                "{:?}",
                String::from_utf8_lossy(stderr)
            );
        }
        assert_eq!(
            said_first(&[b'x'; 500], b"").map(|l| l.chars().count()),
            Some(200)
        );
    }
}
