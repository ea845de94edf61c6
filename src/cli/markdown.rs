//! `imgcheck man --markdown`: the command reference (docs/commands.md) as Markdown, made from
//! the command definitions as the manual pages are: every command's usage, then each of its
//! arguments with its help, default, possible values and environment variable. Written with
//! clap's own accessors rather than the `clap-markdown` crate, which shows no `env` (two of
//! our options read one); docs/decisions.md, "Completions, man pages and the command reference
//! from the binary".

use std::fmt::Write;

use clap::{Arg, ArgAction, Command};

/// The command reference of `command` (the whole command line) as one Markdown document.
pub fn reference(mut command: Command) -> String {
    // Building sets each subcommand's full name (`imgcheck policy show`) and copies the global
    // options into every subcommand, where they are then told apart by `is_global_set`.
    command.build();
    let mut out = String::from(
        "# Command reference\n\n\
         <!-- Generated from the command definitions (src/cli/) by `imgcheck man --markdown`; do\n\
         not edit. Regenerate: `cargo run -- man --markdown > docs/commands.md` (tests/generate.rs\n\
         fails while this file differs from what the binary prints). -->\n\n\
         Every command and every option, as `imgcheck COMMAND --help` states them. What the\n\
         commands are for: [README.md](../README.md); the long explanations:\n\
         [usage.md](usage.md).\n\n",
    );
    let commands = listed(&command);
    for sub in &commands {
        let path = full_name(sub);
        let _ = writeln!(out, "- [{path}](#{})", path.replace(' ', "-"));
    }
    for (i, sub) in commands.into_iter().enumerate() {
        section(&mut out, sub, i == 0);
    }
    out
}

/// `command` and every subcommand under it, depth first, without clap's `help` command.
fn listed(command: &Command) -> Vec<&Command> {
    let mut all = vec![command];
    for sub in command.get_subcommands() {
        if sub.get_name() != "help" && !sub.is_hide_set() {
            all.extend(listed(sub));
        }
    }
    all
}

/// `imgcheck verify`, `imgcheck policy show`: the name a built command is called by.
fn full_name(command: &Command) -> String {
    command
        .get_bin_name()
        .unwrap_or(command.get_name())
        .to_string()
}

/// One command's section: heading, about, usage, aliases, subcommands, arguments, options.
/// The `top` command's section lists the options of every command; the others leave them out.
fn section(out: &mut String, command: &Command, top: bool) {
    let _ = write!(out, "\n## {}\n\n", full_name(command));
    if let Some(about) = command.get_long_about().or(command.get_about()) {
        let _ = write!(out, "{}\n\n", escape(&about.to_string()));
    }
    let usage = command.clone().render_usage().to_string();
    let usage = usage.trim_start_matches("Usage: ");
    let _ = write!(out, "```\n{usage}\n```\n\n");
    let aliases: Vec<String> = command
        .get_visible_aliases()
        .map(|a| format!("`{a}`"))
        .collect();
    if !aliases.is_empty() {
        let _ = write!(out, "Also called {}.\n\n", aliases.join(", "));
    }
    let subs: Vec<&Command> = command
        .get_subcommands()
        .filter(|s| s.get_name() != "help" && !s.is_hide_set())
        .collect();
    if !subs.is_empty() {
        out.push_str("Commands:\n\n");
        for sub in subs {
            let about = sub.get_about().map(|a| escape(&a.to_string()));
            let _ = writeln!(
                out,
                "- [`{}`](#{}): {}",
                sub.get_name(),
                full_name(sub).replace(' ', "-"),
                about.unwrap_or_default()
            );
        }
        out.push('\n');
    }
    let shown = |a: &&Arg| !a.is_hide_set() && a.get_id() != "help" && a.get_id() != "version";
    let (positional, options): (Vec<&Arg>, Vec<&Arg>) = command
        .get_arguments()
        .filter(shown)
        .filter(|a| top || !a.is_global_set())
        .partition(|a| a.is_positional());
    let heading = if top {
        "Options of every command"
    } else {
        "Options (and the options of every command, [above](#imgcheck))"
    };
    for (title, args) in [("Arguments", positional), (heading, options)] {
        if !args.is_empty() {
            let _ = write!(out, "{title}:\n\n");
            for arg in args {
                argument(out, arg);
            }
            out.push('\n');
        }
    }
    if let Some(after) = command.get_after_long_help().or(command.get_after_help()) {
        let _ = write!(out, "{}\n\n", escape(&after.to_string()));
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
}

/// One argument as a list item: its spelling and its help, then a sub-list of what else clap
/// knows of it: required, default, possible values, environment variable.
fn argument(out: &mut String, arg: &Arg) {
    let _ = write!(out, "- `{}`", spelling(arg));
    if let Some(help) = arg.get_long_help().or(arg.get_help()) {
        let help = escape(&help.to_string()).replace("\n\n", "\n\n  ");
        let _ = write!(out, ": {help}");
    }
    out.push('\n');
    let flag = matches!(
        arg.get_action(),
        ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count
    );
    if arg.is_required_set() {
        out.push_str("  - required\n");
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    if !defaults.is_empty() && !flag {
        let _ = writeln!(out, "  - default: {}", defaults.join(", "));
    }
    let values: Vec<_> = arg
        .get_possible_values()
        .into_iter()
        .filter(|v| !v.is_hide_set())
        .collect();
    if !values.is_empty() && !flag {
        // Values with help get a line each; bare names fit on one.
        let explained = values.iter().any(|v| v.get_help().is_some());
        let (start, between) = if explained {
            ("\n    - ", "\n    - ")
        } else {
            (" ", ", ")
        };
        let items: Vec<String> = values
            .iter()
            .map(|v| match v.get_help() {
                Some(help) => format!("`{}`: {}", v.get_name(), escape(&help.to_string())),
                None => format!("`{}`", v.get_name()),
            })
            .collect();
        let _ = writeln!(out, "  - possible values:{start}{}", items.join(between));
    }
    if let Some(env) = arg.get_env() {
        let _ = writeln!(out, "  - environment: `{}`", env.to_string_lossy());
    }
}

/// `-v, --verbose`, `--policy <POLICY>`, `<REF>...`: how the argument is written.
fn spelling(arg: &Arg) -> String {
    let value = arg
        .get_value_names()
        .and_then(|names| names.first())
        .map_or_else(
            || arg.get_id().to_string().to_uppercase(),
            |n| n.to_string(),
        );
    let many = matches!(arg.get_action(), ArgAction::Append);
    let dots = if many { "..." } else { "" };
    if arg.is_positional() {
        return format!("<{value}>{dots}");
    }
    let mut names: Vec<String> = arg
        .get_short()
        .map(|s| format!("-{s}"))
        .into_iter()
        .collect();
    names.extend(arg.get_long().map(|l| format!("--{l}")));
    let takes = arg.get_action().takes_values();
    let value = if takes {
        format!(" <{value}>")
    } else {
        String::new()
    };
    format!("{}{value}", names.join(", "))
}

/// Help text made safe for Markdown: outside `code spans`, the characters Markdown would
/// read as emphasis, HTML or links are escaped.
fn escape(text: &str) -> String {
    text.split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                return part.to_string();
            }
            part.chars().fold(String::new(), |mut s, c| {
                if matches!(c, '\\' | '*' | '_' | '<' | '>' | '[' | ']') {
                    s.push('\\');
                }
                s.push(c);
                s
            })
        })
        .collect::<Vec<_>>()
        .join("`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_leaves_code_spans_alone() {
        assert_eq!(
            escape("a *.yaml or `a_b*` <FILE> [x]"),
            r"a \*.yaml or `a_b*` \<FILE\> \[x\]"
        );
    }

    #[test]
    fn spelling_names_short_long_and_value() {
        let flag = Arg::new("verbose")
            .short('v')
            .long("verbose")
            .action(ArgAction::SetTrue);
        assert_eq!(spelling(&flag), "-v, --verbose");
        let option = Arg::new("policy").long("policy").value_name("POLICY");
        assert_eq!(spelling(&option), "--policy <POLICY>");
        let refs = Arg::new("refs").value_name("REF").action(ArgAction::Append);
        assert_eq!(spelling(&refs), "<REF>...");
    }
}
