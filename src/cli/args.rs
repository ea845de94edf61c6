//! Arguments more than one command takes: the global options (how to reach registries),
//! where a batch command's references come from, the output formats.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use clap::{ArgAction, ValueEnum};
use imgcheck::auth::{AuthError, AuthStore};
use imgcheck::platform::RuntimeProfile;
use imgcheck::reference::ImageRef;
use imgcheck::report;
use imgcheck::run::{Connection, Inputs, ReleaseInput};
use imgcheck::session::Session;
use imgcheck::source::registry::ClientOptions;

use super::error::CliError;

/// Options every command takes: how to reach registries and with which credentials.
#[derive(clap::Args)]
pub struct GlobalArgs {
    /// Credentials file (containers-auth.json format); default: REGISTRY_AUTH_FILE, then the
    /// podman and docker locations.
    #[arg(long, global = true, value_name = "FILE")]
    pub authfile: Option<PathBuf>,
    /// Require HTTPS and verify certificates (loopback registries may always use HTTP).
    #[arg(long, global = true, default_value_t = true, action = ArgAction::Set, value_name = "BOOL")]
    tls_verify: bool,
    /// Credentials for every registry of the run, instead of the auth files.
    #[arg(
        long,
        global = true,
        value_name = "USER:PASSWORD",
        conflicts_with = "no_creds"
    )]
    creds: Option<String>,
    /// Access registries anonymously, whatever the auth files say.
    #[arg(long, global = true)]
    no_creds: bool,
    /// TLS files (*.crt CAs, *.cert/*.key client pair) for every registry, instead of
    /// /etc/containers/certs.d/HOST and /etc/docker/certs.d/HOST.
    #[arg(long, global = true, value_name = "DIR")]
    cert_dir: Option<PathBuf>,
    /// Overall deadline for the run's work (inputs, registries, layouts, layer decoding), e.g. 90s or 5m (default: none).
    #[arg(long, global = true, value_name = "DURATION", value_parser = humantime::parse_duration)]
    timeout: Option<Duration>,
    /// When the run started: `--timeout` counts from here.
    #[arg(skip = Instant::now())]
    started: Instant,
    /// Longest wait for a registry's answer, or for the next piece of its body, before the
    /// request counts as stalled and is retried.
    #[arg(long, global = true, value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    request_timeout: Duration,
    /// Retries of a registry request after faults that may heal (5xx, 429, resets, timeouts).
    #[arg(long, global = true, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(0..=10))]
    retries: u32,
    /// Tell every retry and token request on standard error.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// Largest input file read (node lists, pod templates, reference lists, ImageSets, build plans), e.g.
    /// 512MiB or 1GiB; larger ones are refused, naming the file and the limit.
    #[arg(long, global = true, value_name = "SIZE", default_value = "256MiB", value_parser = parse_size)]
    pub max_input_size: u64,
}

/// A size as `--max-input-size` takes it: bytes, or a whole number of KiB, MiB or GiB
/// (`K`, `M`, `G` alike).
fn parse_size(text: &str) -> Result<u64, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        other => return Err(format!("unknown unit '{other}' (expected KiB, MiB or GiB)")),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 512MiB)"))?;
    match n.checked_mul(1 << shift) {
        Some(0) => Err("the limit must be above 0".to_string()),
        Some(bytes) => Ok(bytes),
        None => Err(format!("'{text}' is too large")),
    }
}

impl GlobalArgs {
    /// The run's credentials: `--no-creds`, `--creds`, else the auth files.
    pub fn auth_store(&self) -> Result<AuthStore, AuthError> {
        if self.no_creds {
            Ok(AuthStore::anonymous())
        } else if let Some(creds) = &self.creds {
            AuthStore::with_creds(creds)
        } else {
            AuthStore::load(self.authfile.as_deref())
        }
    }

    /// How to reach registries, with at most `max_requests` requests in flight.
    pub fn client_options(&self, max_requests: usize) -> Result<ClientOptions, CliError> {
        if let Some(dir) = &self.cert_dir
            && !dir.is_dir()
        {
            return Err(CliError::CertDir(dir.clone()));
        }
        Ok(ClientOptions {
            tls_verify: self.tls_verify,
            max_requests,
            cert_dir: self.cert_dir.clone(),
            request_timeout: self.request_timeout.max(Duration::from_millis(100)),
            deadline: self.timeout,
            clock_start: Some(self.started),
            retries: self.retries,
            ..ClientOptions::default()
        })
    }

    /// When the run must be over (`--timeout` after its start), and the `--timeout`.
    pub fn deadline(&self) -> Option<(Instant, Duration)> {
        self.timeout.map(|t| (self.started + t, t))
    }

    /// How a run reaches registries, with at most `max_requests` requests in flight:
    /// credentials first, then the client options.
    pub fn connection(&self, max_requests: usize) -> Result<Connection, CliError> {
        let auth = self.auth_store()?;
        let options = self.client_options(max_requests)?;
        Ok(Connection { options, auth })
    }

    /// The run's session, told of `refs` (more may follow: [`Session::expect`]): credentials
    /// first, then the client options.
    pub fn session(&self, refs: &[ImageRef], max_requests: usize) -> Result<Session, CliError> {
        let auth = self.auth_store()?;
        let options = self.client_options(max_requests)?;
        let session = Session::new(&options, auth);
        session.expect(refs);
        Ok(session)
    }
}

/// Where the references of a batch command come from.
#[derive(clap::Args)]
pub struct RefInput {
    /// References: REGISTRY/REPO[:TAG][@DIGEST], docker://…, oci:DIR[:TAG], oci:DIR@DIGEST.
    #[arg(value_name = "REF", required_unless_present_any = ["from_file", "from_imageset", "from_manifests", "from_release"])]
    references: Vec<String>,
    /// Read references from FILE, one per line, `#` comments (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    from_file: Option<String>,
    /// Read references from an oc-mirror ImageSetConfiguration (mirror.additionalImages).
    #[arg(long, value_name = "FILE")]
    from_imageset: Option<String>,
    /// Read the images of the pod templates in PATH (a file, `-`, or a directory of *.yaml,
    /// *.yml, *.json): DaemonSets, Deployments, StatefulSets, ReplicaSets, Jobs, CronJobs,
    /// Pods, ReplicationControllers, DeploymentConfigs; each judged for the hosts its pods can
    /// land on.
    #[arg(long, value_name = "PATH")]
    from_manifests: Option<PathBuf>,
    /// Verify the components of an OpenShift release image (e.g.
    /// quay.io/openshift-release-dev/ocp-release:4.18.0-multi): those the policy's
    /// `release.components` names, or those given with --release-image.
    #[arg(long, value_name = "REF")]
    from_release: Option<String>,
    /// A component of the release to verify (a tag of its image-references; repeatable),
    /// instead of the policy's `release.components`.
    #[arg(
        long = "release-image",
        value_name = "NAME",
        requires = "from_release",
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    release_images: Vec<String>,
    /// The Windows nodes' sandbox (pause) image, instead of the policy's
    /// `windows.sandbox_image`; `none`: do not check it. Judged wherever Windows nodes are in
    /// scope (--nodes with Windows nodes, --from-release, --from-manifests with Windows pods).
    #[arg(long, value_name = "REF|none", env = "IMGCHECK_SANDBOX_IMAGE")]
    sandbox_image: Option<String>,
}

impl RefInput {
    /// The run's inputs: these references, lists, pod templates and release; the rest
    /// (policy, nodes, jobs…) as [`Inputs::default`] has them.
    pub fn inputs(&self) -> Inputs {
        Inputs {
            references: self.references.clone(),
            from_files: self.from_file.iter().cloned().collect(),
            imagesets: self.from_imageset.iter().cloned().collect(),
            manifests: self.from_manifests.clone(),
            release: self.from_release.as_ref().map(|r| ReleaseInput {
                reference: r.clone(),
                components: self.release_images.clone(),
            }),
            sandbox_image: self.sandbox_image.clone(),
            ..Inputs::default()
        }
    }
}

/// Parses references as typed.
pub fn parse_refs(inputs: &[String]) -> Result<Vec<ImageRef>, CliError> {
    Ok(inputs
        .iter()
        .map(|s| s.parse::<ImageRef>())
        .collect::<Result<_, _>>()?)
}

/// Report formats of `verify`, `mirror-check` and `assemble`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Human-readable matrix and findings.
    Text,
    /// One JSON document.
    Json,
    /// Konflux TEST_OUTPUT (ADR 0030).
    Konflux,
    /// JUnit XML: a testsuite per image, a testcase per host row and per rule, a failure
    /// with the finding and its hint.
    Junit,
}

impl From<ReportFormat> for report::OutputFormat {
    fn from(f: ReportFormat) -> report::OutputFormat {
        match f {
            ReportFormat::Text => report::OutputFormat::Text,
            ReportFormat::Json => report::OutputFormat::Json,
            ReportFormat::Konflux => report::OutputFormat::Konflux,
            ReportFormat::Junit => report::OutputFormat::Junit,
        }
    }
}

/// `--runtime`'s values (`verify`, `resolve`): the names of the profile table's rows, which
/// `--help`, the man pages and the completions list from the table itself; a name is read as
/// [`RuntimeProfile`]'s `FromStr` reads it (an unknown one is told with the known ones).
#[derive(Clone, Copy)]
pub struct RuntimeParser;

impl TypedValueParser for RuntimeParser {
    type Value = RuntimeProfile;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<RuntimeProfile, clap::Error> {
        StringValueParser::new()
            .try_map(|name| name.parse::<RuntimeProfile>())
            .parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            RuntimeProfile::ALL
                .map(|p| PossibleValue::new(p.name()))
                .into_iter(),
        ))
    }
}

/// Output formats of `resolve` and `inspect`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimpleFormat {
    // No doc comments: they would become per-value help in `--help`.
    Text,
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_input_sizes() {
        let cases: [(&str, Option<u64>); 9] = [
            ("256MiB", Some(imgcheck::input::DEFAULT_MAX_INPUT_BYTES)),
            ("1GiB", Some(1 << 30)),
            ("512M", Some(512 << 20)),
            ("64K", Some(64 << 10)),
            ("1000", Some(1000)),
            ("0", None),
            ("MiB", None),
            ("5 TB", None),
            ("99999999999999G", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_size(text).ok(), want, "{text}");
        }
    }
}
