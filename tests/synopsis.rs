//! README's command synopsis against the binary (issue 21, item 5): every command has a line,
//! and every flag a command's `--help` lists is on that line, or on the synopsis's first line,
//! the options of every command.

use crate::common::run_imgcheck as run;

/// The long flags `imgcheck ARGS --help` lists, `--help` aside.
fn flags(args: &[&str]) -> Vec<String> {
    let mut argv = args.to_vec();
    argv.push("--help");
    let out = run(&argv);
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    let mut flags: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            // `  -v, --verbose` or `      --nodes <FILE>`: option lines start with a dash.
            let l = l.trim_start();
            if !l.starts_with('-') {
                return None;
            }
            let rest = &l[l.find("--")? + 2..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            Some(format!("--{name}"))
        })
        .filter(|f| f != "--help" && f != "--")
        .collect();
    flags.sort();
    flags.dedup();
    flags
}

#[test]
fn every_flag_of_every_command_is_in_the_readme_synopsis() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    let start = readme
        .find("## Commands\n\n```\n")
        .expect("a Commands section");
    let synopsis = &readme[start..];
    let synopsis = &synopsis[..synopsis[18..].find("```").expect("its end") + 18];
    // The first line gives the options of every command: `imgcheck [--authfile FILE] … COMMAND`.
    let globals = synopsis
        .lines()
        .find(|l| l.starts_with("imgcheck [-"))
        .expect("a synopsis line of the global options");
    let mut missing = Vec::new();
    for command in [
        "verify",
        "resolve",
        "inspect",
        "mirror-check",
        "policy show",
        "assemble",
        "build",
        "completion",
        "man",
    ] {
        let prefix = format!("imgcheck {command} ");
        let Some(line) = synopsis.lines().find(|l| l.starts_with(&prefix)) else {
            missing.push(format!("{command}: no synopsis line"));
            continue;
        };
        let args: Vec<&str> = command.split(' ').collect();
        for flag in flags(&args) {
            let names = |l: &str| -> Vec<String> {
                l.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                    .map(str::to_string)
                    .collect()
            };
            let global = names(globals)
                .iter()
                .any(|w| *w == flag || (flag == "--verbose" && w == "-v"));
            let on_line = names(line).contains(&flag);
            if !on_line && !global {
                missing.push(format!("{command}: {flag}"));
            }
        }
    }
    assert!(missing.is_empty(), "not in README's synopsis: {missing:#?}");
}

/// The text `imgcheck ARGS --help` gives the option `flag`: its line and the lines under it,
/// up to the next option.
fn option_help(args: &[&str], flag: &str) -> String {
    let mut argv = args.to_vec();
    argv.push("--help");
    let out = run(&argv);
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let start = text
        .find(&format!("      {flag} "))
        .unwrap_or_else(|| panic!("{args:?} --help: no {flag}\n{text}"));
    let rest = &text[start..];
    let end = rest[flag.len() + 6..]
        .find("\n      -")
        .map_or(rest.len(), |e| e + flag.len() + 6);
    rest[..end].split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `--runtime` takes a row of the profile table (`PROFILES`, src/platform/profile.rs): the
/// help of `verify` and `resolve` lists every row's name, from the table, in its order, and so
/// does README's line under the synopsis. Before, `resolve --help` said "containerd generation
/// to emulate" (the table has had Docker Engine's `docker-19.03` and CRI-O's `cri-o` since)
/// and neither help nor README said which names there are.
#[test]
fn the_runtime_flag_lists_every_row_of_the_profile_table() {
    let names: Vec<&str> = imgcheck::platform::RuntimeProfile::ALL
        .iter()
        .map(|p| p.name())
        .collect();
    assert!(names.contains(&"docker-19.03") && names.contains(&"cri-o"));
    let listed = format!("[possible values: {}]", names.join(", "));
    for command in ["verify", "resolve"] {
        let help = option_help(&[command], "--runtime");
        assert!(help.contains(&listed), "{command}: {help}");
        assert!(help.contains("--runtime <PROFILE>"), "{command}: {help}");
        assert!(
            !help.contains("containerd generation to emulate"),
            "{command}: {help}"
        );
    }
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    let want = format!("`--runtime PROFILE`: {}.", quoted.join(", "));
    assert!(
        readme
            .lines()
            .any(|l| l.starts_with("`--runtime PROFILE`: ")),
        "README.md: no line `--runtime PROFILE`: under the synopsis"
    );
    assert!(readme.lines().any(|l| l == want), "README.md lacks: {want}");
}
