//! Credentials and TLS against the real registry: htpasswd Basic auth, token auth with a token
//! server (JWTs signed by a key the registry trusts), TLS with a generated CA. Every output of
//! every run is kept and, at the end of each test, searched for the secrets it used.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::proxy::{Fault, FaultProxy, Match, Rule};
use crate::common::secure::{Pki, Secured, TokenServer};
use crate::common::{Registry, fixture, imgcheck};
use base64::Engine as _;
use serde_json::Value;

/// Runs imgcheck and keeps everything it printed, for the secret check.
struct Runner {
    outputs: Vec<String>,
    home: tempfile::TempDir,
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn verdicts(&self) -> Vec<String> {
        let doc: Value = serde_json::from_str(&self.stdout).unwrap_or(Value::Null);
        doc["images"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|i| i["verdict"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Runner {
    fn new() -> Runner {
        Runner {
            outputs: Vec::new(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// An imgcheck command with an empty HOME and no auth-file variables, so only what the
    /// test sets up is found.
    fn command(&self) -> Command {
        let mut cmd = imgcheck();
        cmd.env("HOME", self.home.path())
            .env_remove("REGISTRY_AUTH_FILE")
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("DOCKER_CONFIG");
        cmd
    }

    fn run(&mut self, mut cmd: Command) -> Out {
        let out = cmd.output().expect("imgcheck runs");
        let o = Out {
            code: out.status.code().expect("exit code"),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
        self.outputs.push(format!("{}\n{}", o.stdout, o.stderr));
        o
    }

    /// `verify REFS --format json -v` plus `args`.
    fn verify(&mut self, refs: &[String], args: &[&str]) -> Out {
        let mut cmd = self.command();
        cmd.arg("verify")
            .args(refs)
            .args(["--format", "json", "-v", "--retries", "1"])
            .args(args);
        self.run(cmd)
    }

    /// No output of any run contains a secret, plain or base64-encoded as in a header.
    fn assert_no_secrets(&self, secrets: &[&str], users: &[(&str, &str)]) {
        let mut needles: Vec<String> = secrets.iter().map(|s| s.to_string()).collect();
        for (u, p) in users {
            needles.push(base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}")));
        }
        assert!(!self.outputs.is_empty());
        for out in &self.outputs {
            for n in &needles {
                assert!(
                    !out.contains(n.as_str()),
                    "a secret leaked into output:\n{out}"
                );
            }
        }
    }
}

fn write_json(dir: &Path, name: &str, value: &Value) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, value.to_string()).unwrap();
    path
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

const ALICE_PW: &str = "alice-Secret-7d1f";
const BOB_PW: &str = "bob-Secret-99ac";

fn seeded_two_teams() -> Registry {
    let registry = Registry::start();
    registry.push_layout(&fixture("good"), "team-a/driver", "v1");
    registry.push_layout(&fixture("good"), "team-b/driver", "v1");
    registry
}

#[test]
fn htpasswd_basic_auth_with_per_namespace_credentials() {
    let mut registry = seeded_two_teams();
    registry.restart_with(&Secured {
        htpasswd: vec![("alice", ALICE_PW), ("bob", BOB_PW)],
        ..Secured::default()
    });
    // A recording pass-through in front shows which credentials went where.
    let front = FaultProxy::start(&registry.base_url(), vec![]);
    let host = front.host();
    let refs = [
        format!("{host}/team-a/driver:v1"),
        format!("{host}/team-b/driver:v1"),
    ];
    let mut r = Runner::new();
    let authfile = write_json(
        r.home.path(),
        "auth.json",
        &serde_json::json!({"auths": {
            format!("{host}/team-a"): {"auth": b64(&format!("alice:{ALICE_PW}"))},
            format!("{host}/team-b"): {"auth": b64(&format!("bob:{BOB_PW}"))},
        }}),
    );
    let authfile_arg = authfile.to_string_lossy().into_owned();

    // Two namespaces, two users, one run.
    let out = r.verify(&refs, &["--authfile", &authfile_arg]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.verdicts(), ["pass", "pass"]);
    let alice = format!("Basic {}", b64(&format!("alice:{ALICE_PW}")));
    let bob = format!("Basic {}", b64(&format!("bob:{BOB_PW}")));
    let seen = front.seen();
    for s in seen.iter().filter(|s| s.request.contains("/team-")) {
        if let Some(a) = &s.authorization {
            let want = if s.request.contains("/team-a/") {
                &alice
            } else {
                &bob
            };
            assert_eq!(a, want, "{}", s.request);
        }
    }
    for team in ["/team-a/", "/team-b/"] {
        assert!(
            seen.iter()
                .any(|s| s.request.contains(team) && s.authorization.is_some()),
            "{team} was fetched with credentials"
        );
    }

    // The same file found through the lookup order: REGISTRY_AUTH_FILE, XDG_RUNTIME_DIR,
    // DOCKER_CONFIG, ~/.docker/config.json.
    let runtime = r.home.path().join("run");
    std::fs::create_dir_all(runtime.join("containers")).unwrap();
    std::fs::copy(&authfile, runtime.join("containers/auth.json")).unwrap();
    let docker = r.home.path().join(".docker");
    std::fs::create_dir_all(&docker).unwrap();
    std::fs::copy(&authfile, docker.join("config.json")).unwrap();
    for (var, value) in [
        ("REGISTRY_AUTH_FILE", authfile.clone()),
        ("XDG_RUNTIME_DIR", runtime.clone()),
        ("DOCKER_CONFIG", docker.clone()),
        ("UNUSED_VARIABLE", PathBuf::new()),
    ] {
        let mut cmd = r.command();
        cmd.env(var, &value)
            .arg("verify")
            .args(&refs)
            .args(["--format", "json", "--retries", "1"]);
        let out = r.run(cmd);
        assert_eq!(out.code, 0, "{var}: {}\n{}", out.stdout, out.stderr);
    }

    // A credential helper (credHelpers in the Docker config) answers for the host.
    let bin = r.home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let helper = bin.join("docker-credential-imgchecktest");
    std::fs::write(
        &helper,
        format!(
            "#!/bin/sh\nread server\n[ \"$1\" = get ] || exit 1\necho '{{\"ServerURL\":\"'\"$server\"'\",\"Username\":\"alice\",\"Secret\":\"{ALICE_PW}\"}}'\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let helper_cfg = r.home.path().join("helper");
    write_json(
        &helper_cfg,
        "config.json",
        &serde_json::json!({"credHelpers": {host.clone(): "imgchecktest"}}),
    );
    let mut cmd = r.command();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.env("DOCKER_CONFIG", &helper_cfg)
        .env("PATH", &path)
        .arg("verify")
        .arg(&refs[0])
        .args(["--format", "json", "--retries", "1"]);
    let out = r.run(cmd);
    assert_eq!(
        out.code, 0,
        "credential helper: {}\n{}",
        out.stdout, out.stderr
    );

    // credsStore: the helper answers for every registry the file has no entry for.
    let store_cfg = r.home.path().join("store");
    write_json(
        &store_cfg,
        "config.json",
        &serde_json::json!({"credsStore": "imgchecktest", "auths": {}}),
    );
    let mut cmd = r.command();
    cmd.env("DOCKER_CONFIG", &store_cfg)
        .env("PATH", &path)
        .arg("verify")
        .arg(&refs[0])
        .args(["--format", "json", "--retries", "1"]);
    let out = r.run(cmd);
    assert_eq!(out.code, 0, "credsStore: {}\n{}", out.stdout, out.stderr);

    // --creds for every registry; --no-creds and wrong passwords are clear errors.
    let out = r.verify(&refs[..1], &["--creds", &format!("alice:{ALICE_PW}")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = r.verify(&refs[..1], &["--authfile", &authfile_arg, "--no-creds"]);
    assert_eq!((out.code, out.verdicts()), (3, vec!["error".to_string()]));
    assert!(
        out.stdout.contains("requires credentials"),
        "{}",
        out.stdout
    );
    let out = r.verify(&refs[..1], &["--creds", "alice:not-the-password"]);
    assert_eq!((out.code, out.verdicts()), (3, vec!["error".to_string()]));
    assert!(out.stdout.contains("not authorized"), "{}", out.stdout);
    let out = r.verify(&refs[..1], &["--creds", "no-colon"]);
    assert_eq!(out.code, 2, "{}", out.stderr);

    // Blob GETs redirected to another host (object storage): the registry's credentials
    // stay behind. The storage stand-in has its own access to the bytes.
    let storage = FaultProxy::start_with(&registry.base_url(), vec![], Some(alice.clone()));
    front.set_rules(vec![Rule::always(
        Match::Blobs,
        Fault::Redirect(storage.base_url()),
    )]);
    let out = r.verify(&refs, &["--authfile", &authfile_arg]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let blob_gets: Vec<_> = storage
        .seen()
        .into_iter()
        .filter(|s| s.request.contains("/blobs/"))
        .collect();
    assert!(!blob_gets.is_empty());
    for s in blob_gets {
        assert_eq!(
            s.authorization, None,
            "credentials sent to another host: {s:?}"
        );
    }

    r.assert_no_secrets(&[ALICE_PW, BOB_PW], &[("alice", ALICE_PW), ("bob", BOB_PW)]);
}

const CAROL_PW: &str = "carol-Secret-51b0";
const DAVE_PW: &str = "dave-Secret-e3c2";
const CAROL_IDENTITY: &str = "identity-Token-0a9f3e";

#[test]
fn token_auth_with_scopes_per_repository() {
    let mut registry = seeded_two_teams();
    let tokens = TokenServer::start(
        &[
            ("carol", CAROL_PW, &["team-a/"]),
            ("dave", DAVE_PW, &["team-b/"]),
        ],
        &[(CAROL_IDENTITY, "carol")],
    );
    registry.restart_with(&Secured {
        token: Some(&tokens),
        ..Secured::default()
    });
    let host = registry.host();
    let refs = [
        format!("{host}/team-a/driver:v1"),
        format!("{host}/team-b/driver:v1"),
    ];
    let mut r = Runner::new();
    let authfile = write_json(
        r.home.path(),
        "auth.json",
        &serde_json::json!({"auths": {
            format!("{host}/team-a"): {"auth": b64(&format!("carol:{CAROL_PW}"))},
            format!("{host}/team-b"): {"auth": b64(&format!("dave:{DAVE_PW}"))},
        }}),
    );
    let authfile_arg = authfile.to_string_lossy().into_owned();

    // Each namespace with its own user, in one run; one token per repository, reused for
    // every manifest and config.
    let out = r.verify(&refs, &["--authfile", &authfile_arg]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.verdicts(), ["pass", "pass"]);
    let requests = tokens.requests();
    let granted: Vec<(String, String)> = requests
        .iter()
        .filter(|t| t.status == 200)
        .map(|t| (t.user.clone(), t.scopes.join(" ")))
        .collect();
    assert_eq!(
        granted.len(),
        2,
        "one token per repository, reused: {requests:?}"
    );
    assert!(granted.contains(&("carol".into(), "repository:team-a/driver:pull".into())));
    assert!(granted.contains(&("dave".into(), "repository:team-b/driver:pull".into())));

    // A token service that refuses the password says so (not a bare 401).
    let out = r.verify(&refs[..1], &["--creds", "carol:wrong-password"]);
    assert_eq!(out.code, 3, "{}", out.stdout);
    assert!(
        out.stdout.contains("token service") && out.stdout.contains("refused"),
        "{}",
        out.stdout
    );
    // Carol may not pull team-b: the registry refuses her token.
    let out = r.verify(&refs[1..], &["--creds", &format!("carol:{CAROL_PW}")]);
    assert_eq!(out.code, 3, "{}", out.stdout);
    assert!(out.stdout.contains("not authorized"), "{}", out.stdout);
    // Anonymous tokens grant nothing here.
    let out = r.verify(&refs[..1], &["--no-creds"]);
    assert_eq!(out.code, 3, "{}", out.stdout);

    // An identity token (OAuth2 refresh token) from the auth file.
    let idfile = write_json(
        r.home.path(),
        "identity.json",
        &serde_json::json!({"auths": {host.clone(): {"auth": "", "identitytoken": CAROL_IDENTITY}}}),
    );
    let out = r.verify(&refs[..1], &["--authfile", &idfile.to_string_lossy()]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);

    r.assert_no_secrets(
        &[CAROL_PW, DAVE_PW, CAROL_IDENTITY],
        &[("carol", CAROL_PW), ("dave", DAVE_PW)],
    );
}

/// A token service that quotes the request's `Authorization` header (and form body) in its
/// refusal: neither the password, nor `Basic base64(user:password)`, nor an identity token
/// reaches the text or JSON report.
#[test]
fn credentials_echoed_by_a_token_service_are_redacted() {
    let mut registry = seeded_two_teams();
    let tokens = TokenServer::start(
        &[("carol", CAROL_PW, &["team-a/"])],
        &[(CAROL_IDENTITY, "carol")],
    );
    tokens.echo_credentials_in_errors();
    registry.restart_with(&Secured {
        token: Some(&tokens),
        ..Secured::default()
    });
    let reference = vec![format!("{}/team-a/driver:v1", registry.host())];
    let mut r = Runner::new();
    const WRONG: &str = "wrong-Secret-4b2e";
    const WRONG_IDENTITY: &str = "stale-Identity-77c1";
    for format in ["json", "text"] {
        let mut cmd = r.command();
        cmd.args([
            "verify",
            &reference[0],
            "--retries",
            "1",
            "-v",
            "--format",
            format,
        ])
        .args(["--creds", &format!("carol:{WRONG}")]);
        let out = r.run(cmd);
        assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
        assert!(
            out.stdout.contains("refused") && out.stdout.contains("<redacted>"),
            "the refusal is reported, the secret replaced: {}",
            out.stdout
        );
    }
    let idfile = write_json(
        r.home.path(),
        "identity.json",
        &serde_json::json!({"auths": {registry.host(): {"auth": "", "identitytoken": WRONG_IDENTITY}}}),
    );
    let out = r.verify(&reference, &["--authfile", &idfile.to_string_lossy()]);
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    assert!(
        tokens.requests().iter().filter(|t| t.status == 401).count() >= 3,
        "the token service refused (and echoed) each run: {:?}",
        tokens.requests()
    );
    r.assert_no_secrets(&[WRONG, WRONG_IDENTITY], &[("carol", WRONG)]);
}

/// A batch over many repositories asks the token service once for all of them (one
/// `scope` per repository), not once per repository; a repository the user may not pull,
/// asked for in that batch, still ends in a clear refusal after one retry of its own.
#[test]
fn one_token_request_covers_the_repositories_of_a_batch() {
    let mut registry = Registry::start();
    let team_a: Vec<String> = (0..5).map(|i| format!("team-a/driver{i}")).collect();
    for repo in &team_a {
        registry.push_layout(&fixture("good"), repo, "v1");
    }
    registry.push_layout(&fixture("good"), "team-b/driver", "v1");
    let tokens = TokenServer::start(
        &[("carol", CAROL_PW, &["team-a/"])],
        &[(CAROL_IDENTITY, "carol")],
    );
    registry.restart_with(&Secured {
        token: Some(&tokens),
        ..Secured::default()
    });
    let host = registry.host();
    let mut refs: Vec<String> = team_a.iter().map(|r| format!("{host}/{r}:v1")).collect();
    refs.push(format!("{host}/team-b/driver:v1"));
    let mut r = Runner::new();
    let carol = format!("carol:{CAROL_PW}");

    let out = r.verify(&refs, &["--creds", &carol, "--stats"]);
    assert_eq!(out.code, 3, "{}\n{}", out.stdout, out.stderr);
    let mut verdicts = out.verdicts();
    verdicts.sort();
    assert_eq!(verdicts, ["error", "pass", "pass", "pass", "pass", "pass"]);
    assert!(out.stdout.contains("not authorized"), "{}", out.stdout);
    let requests = tokens.requests();
    let all: Vec<String> = team_a
        .iter()
        .chain(["team-b/driver".to_string()].iter())
        .map(|r| format!("repository:{r}:pull"))
        .collect();
    // The first token request names all six repositories (in some order); the only others
    // are team-b's own retries after the registry refused the batch token there.
    let first = &requests[0].scopes;
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(sorted, all, "{requests:?}");
    for t in &requests[1..] {
        assert_eq!(t.scopes, ["repository:team-b/driver:pull"], "{requests:?}");
    }
    assert!(requests.len() <= 3, "{requests:?}");
    assert!(
        out.stderr.contains(&format!("{} token", requests.len())),
        "--stats counts the token requests: {}",
        out.stderr
    );

    // The identity-token grant (POST, one space-separated scope) batches the same way.
    let idfile = write_json(
        r.home.path(),
        "identity.json",
        &serde_json::json!({"auths": {host.clone(): {"auth": "", "identitytoken": CAROL_IDENTITY}}}),
    );
    let before = tokens.requests().len();
    let out = r.verify(&refs[..5], &["--authfile", &idfile.to_string_lossy()]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let requests = tokens.requests();
    assert_eq!(requests.len() - before, 1, "{requests:?}");
    assert_eq!(requests[before].scopes.len(), 5, "{requests:?}");

    r.assert_no_secrets(&[CAROL_PW, CAROL_IDENTITY], &[("carol", CAROL_PW)]);
}

#[test]
fn tls_with_a_generated_ca_and_client_certificates() {
    let mut registry = Registry::start();
    registry.push_layout(&fixture("good"), "csi/driver", "v1");
    let pki = Pki::new();
    registry.restart_with(&Secured {
        tls: Some(&pki),
        ..Secured::default()
    });
    let reference = [format!("{}/csi/driver:v1", registry.host())];
    let mut r = Runner::new();
    let ca_dir = pki.cert_dir(false).to_string_lossy().into_owned();

    let out = r.verify(&reference, &["--cert-dir", &ca_dir]);
    assert_eq!(
        (out.code, out.verdicts()),
        (0, vec!["pass".to_string()]),
        "{}",
        out.stdout
    );
    // Verification is on by default: an unknown CA is an error, not a pass.
    let out = r.verify(&reference, &[]);
    assert_eq!(
        (out.code, out.verdicts()),
        (3, vec!["error".to_string()]),
        "{}",
        out.stdout
    );
    // The finding's line: what failed, what to do, then the causes (not retried).
    let host = registry.host();
    let want = format!(
        "manifest {host}/csi/driver:v1: the registry's certificate is not trusted; trust its CA \
         with --cert-dir DIR (DIR/ca.crt) or /etc/containers/certs.d/HOST:PORT/ca.crt, or pass \
         --tls-verify=false: error sending request for url \
         (https://{host}/v2/csi/driver/manifests/v1): client error (Connect): invalid peer \
         certificate: UnknownIssuer"
    );
    let message = format!("\"message\": \"{want}\"");
    assert!(out.stdout.contains(&message), "{}", out.stdout);
    let out = r.verify(&reference, &["--tls-verify=false"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let out = r.verify(&reference, &["--cert-dir", "/nonexistent/imgcheck-certs"]);
    assert_eq!(out.code, 2, "{}", out.stderr);

    // Client certificates from the same directory (NAME.cert + NAME.key).
    registry.restart_with(&Secured {
        tls: Some(&pki),
        client_certs: true,
        ..Secured::default()
    });
    let out = r.verify(&reference, &["--cert-dir", &ca_dir]);
    assert_eq!(out.code, 3, "without a client certificate: {}", out.stdout);
    let client_dir = pki.cert_dir(true).to_string_lossy().into_owned();
    let out = r.verify(&reference, &["--cert-dir", &client_dir]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
}
