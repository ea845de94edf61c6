//! Text output shows what inputs and registries say (node names, labels, references, origins,
//! finding and registry messages, errors) through [`escape`], so a crafted value cannot clear
//! the screen, move the cursor or forge a line such as `PASS …`. JSON output needs none of
//! this: `serde_json` escapes every control character itself.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every character that acts on a terminal or an editor instead of being shown
/// written out the way Rust's `{:?}` writes it: `\t`, `\n`, `\r`, and `\u{1b}` (lower-case
/// hex) for the others — C0 and C1 controls, DEL, the bidirectional marks, embeddings,
/// overrides and isolates (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), and the
/// line and paragraph separators (U+2028, U+2029). A field escaped this way never makes a
/// line or a column of its own. Backslashes are left as they are: the escaped form is for
/// reading, not for reversing (the JSON output has every value exactly).
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts_on_terminal) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if acts_on_terminal(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Whether `c` is a control character, a bidirectional formatting character or a line or
/// paragraph separator.
fn acts_on_terminal(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{61c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_acts_on_a_terminal_is_written_out() {
        let table = [
            ("winworker-4kq8x", "winworker-4kq8x"),
            ("", ""),
            ("ünïcode → ok", "ünïcode → ok"),
            (r"C:\Windows\System32", r"C:\Windows\System32"),
            ("a\u{1b}[2J\u{1b}[Hb", r"a\u{1b}[2J\u{1b}[Hb"),
            ("a\rPASS", r"a\rPASS"),
            ("a\nb\tc", r"a\nb\tc"),
            ("nul\0del\u{7f}bell\u{7}", r"nul\u{0}del\u{7f}bell\u{7}"),
            ("csi\u{9b}31m", r"csi\u{9b}31m"),
            ("rlo\u{202e}gnp.exe", r"rlo\u{202e}gnp.exe"),
            ("lri\u{2066}x\u{2069}", r"lri\u{2066}x\u{2069}"),
            (
                "alm\u{61c}lrm\u{200e}rlm\u{200f}",
                r"alm\u{61c}lrm\u{200e}rlm\u{200f}",
            ),
            ("ls\u{2028}ps\u{2029}", r"ls\u{2028}ps\u{2029}"),
        ];
        for (input, want) in table {
            let got = escape(input);
            assert_eq!(got, want, "{input:?}");
            assert_eq!(matches!(got, Cow::Borrowed(_)), input == want, "{input:?}");
        }
    }
}
