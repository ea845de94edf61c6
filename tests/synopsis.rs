//! README's command synopsis against the binary (issue 21, item 5): every command has a line,
//! and every flag a command's `--help` lists is on that line, or in the global options table.

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
    let globals = &readme[readme
        .find("Global options:")
        .expect("a global options table")..];
    let globals = &globals[..globals.find("\n\n###").unwrap_or(globals.len())];
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
            let global = globals.contains(&format!("`{flag}"))
                || (flag == "--verbose" && globals.contains("`-v`"));
            let on_line = line
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .any(|w| w == flag);
            if !on_line && !global {
                missing.push(format!("{command}: {flag}"));
            }
        }
    }
    assert!(missing.is_empty(), "not in README's synopsis: {missing:#?}");
}
