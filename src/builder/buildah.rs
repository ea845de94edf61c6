//! `buildah` command lines, as pure functions, and what a Buildah version can do.
//!
//! Every command gets the pass-through options (`--storage-driver` as a global flag,
//! `--isolation` for `build`, `--tls-verify` and `--authfile` for anything that talks to a
//! registry), so a lab on Debian's Buildah (docs/buildah.md: vfs, chroot, plain HTTP) and a CI
//! runner use the same code.

use std::fmt;
use std::path::PathBuf;

/// Buildah writes Windows-format layers (`Files/`, `Hives/`, PAX records) from this version on
/// (containers/buildah#6592, docs/buildah.md).
pub const WINDOWS_LAYERS_SINCE: Version = Version {
    major: 1,
    minor: 44,
    patch: 0,
};

/// A Buildah version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl Version {
    /// Parses `1.28.2` (a suffix such as `-dev` is ignored).
    pub fn parse(s: &str) -> Option<Version> {
        let core = s.trim().split(['-', '+', ' ']).next()?;
        let mut parts = core.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = parts.next().map_or(Some(0), |p| p.parse().ok())?;
        if parts.next().is_some() {
            return None;
        }
        Some(Version {
            major,
            minor,
            patch,
        })
    }

    /// Reads the version from `buildah version` output (`Version:   1.28.2`) or from
    /// `buildah --version` (`buildah version 1.28.2 (image-spec 1.1.0-rc2, …)`).
    pub fn from_output(out: &str) -> Option<Version> {
        for line in out.lines() {
            let line = line.trim();
            if let Some(v) = line.strip_prefix("Version:") {
                return Version::parse(v);
            }
            if let Some(v) = line.strip_prefix("buildah version ") {
                return Version::parse(v);
            }
        }
        None
    }

    /// Whether layers this Buildah adds to a Windows image are in the Windows layout.
    pub fn writes_windows_layers(self) -> bool {
        self >= WINDOWS_LAYERS_SINCE
    }
}

/// Options passed through to every `buildah` command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Passthrough {
    /// `--storage-driver` (global flag; Debian's 1.28 ignores `STORAGE_DRIVER` without a
    /// storage.conf).
    pub storage_driver: Option<String>,
    /// `--isolation` for `build` (`chroot` when running as root without a runtime).
    pub isolation: Option<String>,
    /// `--tls-verify`, when set.
    pub tls_verify: Option<bool>,
    /// `--authfile`, when set.
    pub authfile: Option<PathBuf>,
}

impl Passthrough {
    fn global(&self) -> Vec<String> {
        match &self.storage_driver {
            Some(d) => vec!["--storage-driver".into(), d.clone()],
            None => Vec::new(),
        }
    }

    fn registry(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(v) = self.tls_verify {
            out.push(format!("--tls-verify={v}"));
        }
        if let Some(a) = &self.authfile {
            out.push("--authfile".into());
            out.push(a.display().to_string());
        }
        out
    }
}

/// What one `buildah build` produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildSpec {
    /// `os/arch[/variant]` for `--platform`.
    pub platform: String,
    /// `--os-version`, for a Windows base whose config has none.
    pub os_version: Option<String>,
    /// `--timestamp`: every time in the image is this (seconds since the epoch), so the same
    /// inputs give the same image (`SOURCE_DATE_EPOCH`).
    pub timestamp: Option<u64>,
    /// `--build-arg`s in order.
    pub build_args: Vec<(String, String)>,
    /// The Containerfile (`-f`).
    pub containerfile: PathBuf,
    /// The build context directory (or a `$VAR` placeholder in a dry run).
    pub context: String,
    /// Local name to tag the result with (`-t`).
    pub tag: String,
    /// Where Buildah writes the image ID.
    pub iidfile: PathBuf,
}

/// `buildah [--storage-driver D] build …` for one platform.
pub fn build_command(spec: &BuildSpec, pass: &Passthrough) -> Vec<String> {
    let mut cmd = vec!["buildah".to_string()];
    cmd.extend(pass.global());
    cmd.push("build".into());
    if let Some(i) = &pass.isolation {
        cmd.push(format!("--isolation={i}"));
    }
    cmd.extend(pass.registry());
    cmd.push(format!("--platform={}", spec.platform));
    if let Some(v) = &spec.os_version {
        cmd.push(format!("--os-version={v}"));
    }
    if let Some(t) = spec.timestamp {
        cmd.push(format!("--timestamp={t}"));
    }
    for (k, v) in &spec.build_args {
        cmd.push("--build-arg".into());
        cmd.push(format!("{k}={v}"));
    }
    cmd.push("--iidfile".into());
    cmd.push(spec.iidfile.display().to_string());
    cmd.push("-t".into());
    cmd.push(spec.tag.clone());
    cmd.push("-f".into());
    cmd.push(spec.containerfile.display().to_string());
    cmd.push(spec.context.clone());
    cmd
}

/// `buildah push --digestfile F IMAGE docker://DEST`: pushes a built image and records the
/// digest of the manifest the registry stores.
pub fn push_command(
    image: &str,
    destination: &str,
    digestfile: &std::path::Path,
    pass: &Passthrough,
) -> Vec<String> {
    push_to(
        image,
        format!("docker://{destination}"),
        true,
        digestfile,
        pass,
    )
}

/// `buildah push --digestfile F IMAGE oci:DIR`: writes a built image to a local OCI layout
/// (the files of a composed Windows stage) and records its manifest's digest.
pub fn push_layout_command(
    image: &str,
    dir: &std::path::Path,
    digestfile: &std::path::Path,
    pass: &Passthrough,
) -> Vec<String> {
    push_to(
        image,
        format!("oci:{}", dir.display()),
        false,
        digestfile,
        pass,
    )
}

/// `buildah push` of `image` to `destination` (with the registry options when it is a
/// registry), recording the manifest's digest in `digestfile`.
fn push_to(
    image: &str,
    destination: String,
    registry: bool,
    digestfile: &std::path::Path,
    pass: &Passthrough,
) -> Vec<String> {
    let mut cmd = vec!["buildah".to_string()];
    cmd.extend(pass.global());
    cmd.push("push".into());
    if registry {
        cmd.extend(pass.registry());
    }
    cmd.push("--digestfile".into());
    cmd.push(digestfile.display().to_string());
    cmd.push(image.to_string());
    cmd.push(destination);
    cmd
}

/// `buildah version`.
pub fn version_command() -> Vec<String> {
    vec!["buildah".to_string(), "version".to_string()]
}

/// Quotes a command line for a POSIX shell, for `--dry-run` and logs.
pub fn shell_line(cmd: &[String]) -> String {
    cmd.iter()
        .map(|a| {
            let safe = !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@,+%".contains(&b));
            if safe {
                a.clone()
            } else if a.starts_with('$')
                && a[1..]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_{}".contains(&b))
            {
                // A placeholder for a variable the user has not set: leave it for the shell.
                format!("\"{a}\"")
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Progress parsed from a line of `buildah build` output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildahStep {
    /// Stage number and count (`[2/3]`), when the build has several stages.
    pub stage: Option<(u32, u32)>,
    /// Step number within the stage.
    pub step: u32,
    /// Steps in the stage.
    pub of: u32,
    /// The instruction.
    pub instruction: String,
}

impl fmt::Display for BuildahStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((s, n)) = self.stage {
            write!(f, "[{s}/{n}] ")?;
        }
        write!(f, "STEP {}/{}: {}", self.step, self.of, self.instruction)
    }
}

fn fraction(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once('/')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Parses `[1/2] STEP 3/4: RUN …` or `STEP 3/4: RUN …`.
pub fn parse_step(line: &str) -> Option<BuildahStep> {
    let line = line.trim();
    let (stage, rest) = match line.strip_prefix('[') {
        Some(r) => {
            let (inside, after) = r.split_once(']')?;
            (Some(fraction(inside)?), after.trim_start())
        }
        None => (None, line),
    };
    let rest = rest.strip_prefix("STEP ")?;
    let (counts, instruction) = rest.split_once(':')?;
    let (step, of) = fraction(counts)?;
    Some(BuildahStep {
        stage,
        step,
        of,
        instruction: instruction.trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        let cases = [
            ("1.28.2", Some((1, 28, 2))),
            ("1.44.0-dev", Some((1, 44, 0))),
            ("1.44", Some((1, 44, 0))),
            ("v1.44.0", None),
            ("1.2.3.4", None),
            ("", None),
        ];
        for (s, want) in cases {
            let got = Version::parse(s).map(|v| (v.major, v.minor, v.patch));
            assert_eq!(got, want, "{s}");
        }
        let out =
            "Version:         1.28.2\nGo Version:      go1.19.8\nImage Spec:      1.1.0-rc2\n";
        let v = Version::from_output(out).unwrap();
        assert_eq!(v.to_string(), "1.28.2");
        assert!(!v.writes_windows_layers());
        let v = Version::from_output("buildah version 1.44.1 (image-spec 1.1.0)").unwrap();
        assert!(v.writes_windows_layers());
        assert!(Version::parse("1.43.9").unwrap() < WINDOWS_LAYERS_SINCE);
        assert!(Version::parse("2.0.0").unwrap().writes_windows_layers());
        assert_eq!(Version::from_output("nothing here"), None);
    }

    fn spec() -> BuildSpec {
        BuildSpec {
            platform: "windows/amd64".into(),
            os_version: None,
            timestamp: None,
            build_args: vec![
                (
                    "WINDOWS_BASE".into(),
                    "mcr.microsoft.com/windows/nanoserver:ltsc2022".into(),
                ),
                ("OSVERSION".into(), "ltsc2022".into()),
            ],
            containerfile: "buildah/x/Containerfile.windows".into(),
            context: "/src/x".into(),
            tag: "localhost/imgcheck/x:windows-amd64-20348".into(),
            iidfile: "/logs/x.iid".into(),
        }
    }

    #[test]
    fn command_lines() {
        let lab = Passthrough {
            storage_driver: Some("vfs".into()),
            isolation: Some("chroot".into()),
            tls_verify: Some(false),
            authfile: Some("/run/auth.json".into()),
        };
        let mut with_version = spec();
        with_version.os_version = Some("10.0.20348".into());
        with_version.timestamp = Some(1_700_000_000);
        let cases: [(&str, Vec<String>, &str); 4] = [
            (
                "plain",
                build_command(&spec(), &Passthrough::default()),
                "buildah build --platform=windows/amd64 \
                 --build-arg WINDOWS_BASE=mcr.microsoft.com/windows/nanoserver:ltsc2022 \
                 --build-arg OSVERSION=ltsc2022 --iidfile /logs/x.iid \
                 -t localhost/imgcheck/x:windows-amd64-20348 -f buildah/x/Containerfile.windows /src/x",
            ),
            (
                "lab",
                build_command(&with_version, &lab),
                "buildah --storage-driver vfs build --isolation=chroot --tls-verify=false \
                 --authfile /run/auth.json --platform=windows/amd64 --os-version=10.0.20348 \
                 --timestamp=1700000000 --build-arg WINDOWS_BASE=mcr.microsoft.com/windows/nanoserver:ltsc2022 \
                 --build-arg OSVERSION=ltsc2022 --iidfile /logs/x.iid \
                 -t localhost/imgcheck/x:windows-amd64-20348 -f buildah/x/Containerfile.windows /src/x",
            ),
            (
                "push",
                push_command(
                    "sha256:abc",
                    "reg:5000/ns/x:v1-windows-amd64-20348",
                    "/logs/x.digest".as_ref(),
                    &lab,
                ),
                "buildah --storage-driver vfs push --tls-verify=false --authfile /run/auth.json \
                 --digestfile /logs/x.digest sha256:abc docker://reg:5000/ns/x:v1-windows-amd64-20348",
            ),
            ("version", version_command(), "buildah version"),
        ];
        for (what, got, want) in cases {
            let want: Vec<String> = want.split_whitespace().map(String::from).collect();
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn shell_quoting() {
        let cmd: Vec<String> = ["buildah", "--build-arg", "A=b c", "it's", "${SRC}", ""]
            .map(String::from)
            .to_vec();
        assert_eq!(
            shell_line(&cmd),
            r#"buildah --build-arg 'A=b c' 'it'\''s' "${SRC}" ''"#
        );
    }

    #[test]
    fn steps() {
        let cases = [
            (
                "[1/2] STEP 4/4: RUN echo hi",
                Some("[1/2] STEP 4/4: RUN echo hi"),
            ),
            ("STEP 1/3: FROM busybox", Some("STEP 1/3: FROM busybox")),
            (
                "  [2/2] STEP 2/4: COPY --from=builder /a /b",
                Some("[2/2] STEP 2/4: COPY --from=builder /a /b"),
            ),
            ("Copying blob sha256:abc", None),
            ("[2/2] COMMIT localhost/t1", None),
            ("STEP x/3: FROM", None),
        ];
        for (line, want) in cases {
            assert_eq!(
                parse_step(line).map(|s| s.to_string()).as_deref(),
                want,
                "{line}"
            );
        }
    }
}
