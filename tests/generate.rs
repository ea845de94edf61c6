//! `imgcheck completion SHELL` and `imgcheck man`: the scripts load in real bash, zsh and fish
//! and complete every command; the manual pages render with groff without warnings and
//! cover every command. The command list comes from `imgcheck --help`, so a new command is
//! checked without editing this file.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use crate::common::imgcheck;

fn run(args: &[&str]) -> Output {
    let out = imgcheck().args(args).output().expect("imgcheck runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    out
}

/// The commands `imgcheck --help` lists (without clap's `help`).
fn commands() -> Vec<String> {
    let help = String::from_utf8(run(&["--help"]).stdout).unwrap();
    let section = help
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands: section");
    let names: Vec<String> = section
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(String::from)
        .collect();
    for expected in ["verify", "mirror-check", "build", "completion", "man"] {
        assert!(names.iter().any(|n| n == expected), "{names:?}");
    }
    names
}

/// Runs `shell args…` with `script` on standard input; returns standard output.
fn shell(program: &str, args: &[&str], script: &str) -> String {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} runs (scripts/test installs it): {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "{program} {args:?}: {stderr}"
    );
    String::from_utf8(out.stdout).unwrap()
}

fn script_file(shell: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(&run(&["completion", shell]).stdout).unwrap();
    file
}

#[test]
fn bash_completes_every_command() {
    let file = script_file("bash");
    let path = file.path().to_str().unwrap();
    shell("bash", &["-n", path], "");
    let candidates = shell(
        "bash",
        &[],
        &format!(
            "source {path}\nCOMP_WORDS=(imgcheck '')\nCOMP_CWORD=1\n_imgcheck imgcheck '' imgcheck\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
        ),
    );
    for command in commands() {
        assert!(
            candidates.lines().any(|c| c == command),
            "bash does not complete {command}: {candidates}"
        );
    }
    // Option values come from the definitions too: `verify --format <TAB>`.
    let formats = shell(
        "bash",
        &[],
        &format!(
            "source {path}\nCOMP_WORDS=(imgcheck verify --format '')\nCOMP_CWORD=3\n_imgcheck imgcheck '' --format\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
        ),
    );
    for format in ["text", "json", "konflux", "junit"] {
        assert!(formats.lines().any(|c| c == format), "{formats}");
    }
}

#[test]
fn fish_completes_every_command() {
    let file = script_file("fish");
    let path = file.path().to_str().unwrap();
    shell("fish", &["--no-execute", path], "");
    let candidates = shell(
        "fish",
        &[],
        &format!("source {path}\ncomplete --do-complete 'imgcheck '\n"),
    );
    for command in commands() {
        assert!(
            candidates
                .lines()
                .any(|c| c.split('\t').next() == Some(command.as_str())),
            "fish does not complete {command}: {candidates}"
        );
    }
}

#[test]
fn zsh_script_parses_and_names_every_command() {
    let file = script_file("zsh");
    let text = std::fs::read_to_string(file.path()).unwrap();
    shell("zsh", &["-n", file.path().to_str().unwrap()], "");
    assert!(text.starts_with("#compdef imgcheck"), "{text}");
    // Loaded as a completion function the way zsh's compinit loads it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("_imgcheck"), &text).unwrap();
    let loaded = shell(
        "zsh",
        &["-f"],
        &format!(
            "fpath=({} $fpath)\nautoload -Uz compinit && compinit -u -D\nprint -r -- ${{_comps[imgcheck]}}\n",
            dir.path().display()
        ),
    );
    assert_eq!(loaded.trim(), "_imgcheck");
    for command in commands() {
        assert!(
            text.contains(&format!("'{command}:")),
            "zsh script lacks {command}"
        );
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let out = imgcheck().args(["completion", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tcsh"));
}

/// groff's rendering of a page as text, asserting it gives no warning.
fn render(page: &[u8], name: &str) -> String {
    let mut child = Command::new("groff")
        // -k: preconv, as man(1) runs it, so UTF-8 in help texts is read as such.
        .args(["-k", "-man", "-Tutf8", "-ww", "-P-c"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("groff runs");
    child.stdin.take().unwrap().write_all(page).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.is_empty(),
        "{name}: groff warns: {stderr}"
    );
    // Undo groff's overstriking (bold, underline) to plain text.
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut plain = String::new();
    for c in text.chars() {
        if c == '\u{8}' {
            plain.pop();
        } else {
            plain.push(c);
        }
    }
    plain
}

#[test]
fn the_man_page_renders_and_lists_every_command() {
    let page = run(&["man"]).stdout;
    let text = render(&page, "imgcheck.1");
    assert!(text.contains("imgcheck - Keeps multi-arch"), "{text}");
    for option in [
        "--authfile",
        "--tls-verify",
        "--request-timeout",
        "--retries",
    ] {
        assert!(text.contains(option), "imgcheck(1) lacks {option}");
    }
    for command in commands() {
        assert!(
            text.contains(&format!("imgcheck-{command}(1)")),
            "imgcheck(1) lacks {command}: {text}"
        );
    }
}

#[test]
fn man_dir_writes_one_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    run(&["man", "--dir", dir.path().to_str().unwrap()]);
    for command in commands() {
        let name = format!("imgcheck-{command}.1");
        let page = std::fs::read(dir.path().join(&name))
            .unwrap_or_else(|e| panic!("{name} not written: {e}"));
        let text = render(&page, &name);
        assert!(text.contains(&format!("imgcheck-{command}")), "{text}");
    }
    let verify = render(
        &std::fs::read(dir.path().join("imgcheck-verify.1")).unwrap(),
        "imgcheck-verify.1",
    );
    for option in ["--from-file", "--policy", "--format", "--deep", "--stats"] {
        assert!(verify.contains(option), "imgcheck-verify(1) lacks {option}");
    }
    let out = imgcheck()
        .args(["man", "--dir", "/nonexistent/imgcheck-man"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("man --dir /nonexistent/imgcheck-man") && stderr.contains("caused by:"),
        "{stderr}"
    );
}

/// docs/commands.md is what `imgcheck man --markdown` prints: the command reference follows
/// the command definitions, and a changed option or help text fails here until the file is
/// regenerated.
#[test]
fn the_command_reference_is_generated_from_the_binary() {
    let generated = String::from_utf8(run(&["man", "--markdown"]).stdout).unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/commands.md");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/commands.md differs from what the binary generates; regenerate it with\n    \
         cargo run -- man --markdown > docs/commands.md\nfirst differing line: {:?}",
        committed
            .lines()
            .zip(generated.lines())
            .find(|(a, b)| a != b)
    );
    // Every command has its section, and every option of `verify --help` is in it.
    for command in commands() {
        assert!(
            generated.contains(&format!("\n## imgcheck {command}\n")),
            "no section for {command}"
        );
    }
    let verify = &generated[generated.find("\n## imgcheck verify\n").unwrap()..];
    for option in [
        "--from-file",
        "--policy",
        "--format",
        "--deep",
        "--runtime",
        "--jobs",
    ] {
        assert!(
            verify.contains(&format!("`{option} ")) || verify.contains(&format!("`{option}`")),
            "{option}"
        );
    }
    // The options of every command are listed once, at the top, not under each command.
    assert_eq!(generated.matches("`--authfile <FILE>`").count(), 1);
}
