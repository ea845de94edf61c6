//! What every YAML and JSON input goes through.
//!
//! - [`check_nesting`], a guard run before any parser sees an input (policies, mirror sets
//!   and registries.conf, ImageSetConfigurations, pod templates, node lists, a release's
//!   `image-references`): libyaml's scanner does work proportional to the open flow
//!   collections (`[`, `{`) for every token, so a document nesting them tens of thousands
//!   deep takes quadratic time (200 KB: close to a minute) before the parser's own depth
//!   limit refuses it. No imgcheck input nests more than a handful of levels, so deep flow
//!   nesting is refused at once, in one linear pass (JSON and TOML nest with the same
//!   brackets, and are refused the same way).
//! - [`merge_keys`]: YAML merge keys (`<<: *defaults`) applied as kubectl applies them.

use serde_yaml_ng::{Mapping, Value};

/// Deepest flow nesting (`[`/`{` inside one another) accepted; serde_yaml_ng refuses
/// documents nested past 128 levels anyway.
pub const MAX_FLOW_DEPTH: usize = 64;

/// A YAML document whose flow collections nest deeper than [`MAX_FLOW_DEPTH`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "line {line}: nested more than {MAX_FLOW_DEPTH} levels deep ('[' and '{{' inside one \
     another); refused before parsing"
)]
pub struct TooDeep {
    /// The line where the limit was passed (1-based).
    pub line: usize,
}

/// Refuses `text` when its flow collections nest deeper than [`MAX_FLOW_DEPTH`]. Brackets in
/// comments and quoted scalars do not count; brackets inside plain scalars do (they can only
/// make the count too high, and no real input has 64 of them).
pub fn check_nesting(text: &str) -> Result<(), TooDeep> {
    let mut depth = 0usize;
    let mut line = 1;
    let mut prev: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => line += 1,
            '#' if prev.is_none_or(char::is_whitespace) => {
                // A comment: to the end of the line.
                for d in chars.by_ref() {
                    if d == '\n' {
                        line += 1;
                        break;
                    }
                }
                prev = Some('\n');
                continue;
            }
            '\'' | '"' if starts_token(prev) => {
                line += skip_quoted(c, &mut chars);
            }
            '[' | '{' => {
                depth += 1;
                if depth > MAX_FLOW_DEPTH {
                    return Err(TooDeep { line });
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        prev = Some(c);
    }
    Ok(())
}

/// Can a quoted scalar start after `prev`? (At the start, after blanks and after flow or
/// block indicators; a quote inside a plain scalar such as `it's` opens nothing.)
fn starts_token(prev: Option<char>) -> bool {
    const INDICATORS: &str = "[{,:-?";
    prev.is_none_or(|p| p.is_whitespace() || INDICATORS.contains(p))
}

/// Skips a quoted scalar opened by `quote` (`''` escapes `'`, `\` escapes in `"…"`);
/// returns the newlines it spanned.
fn skip_quoted(quote: char, chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> usize {
    let mut lines = 0;
    while let Some(c) = chars.next() {
        match c {
            '\n' => lines += 1,
            // An escape: the next character is taken as it is.
            '\\' if quote == '"' => lines += usize::from(chars.next() == Some('\n')),
            '\'' if quote == '\'' && chars.peek() == Some(&'\'') => {
                chars.next();
            }
            c if c == quote => break,
            _ => {}
        }
    }
    lines
}

/// A merge key (`<<`) whose value is neither a mapping nor a sequence of mappings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("map merge requires map or sequence of maps as the value")]
pub struct BadMerge;

/// Applies the merge keys (`<<: *defaults`, `<<: [*a, *b]`) of `value` as kubectl does:
/// kubectl turns YAML into JSON with sigs.k8s.io/yaml, which decodes with its fork of go-yaml
/// v2 (`goyaml.v2/decode.go`: `decoder.mapping` takes a mapping's keys in order and, for a
/// `<<` key (`isMerge`), `decoder.merge` sets every key of the merged mapping, or of each
/// mapping of a sequence, last to first so that the earlier ones win). A key written after
/// `<<` overrides the merged one; one written before it is overridden. Merged mappings have
/// their own merge keys applied first. (Two `<<` keys in one mapping are refused by the YAML
/// parser as a duplicate key; go-yaml would apply both.)
pub fn merge_keys(value: &mut Value) -> Result<(), BadMerge> {
    match value {
        Value::Mapping(mapping) => {
            for v in mapping.values_mut() {
                merge_keys(v)?;
            }
            if mapping.contains_key("<<") {
                for (k, v) in std::mem::take(mapping) {
                    match k.as_str() == Some("<<") {
                        true => merge_into(mapping, v)?,
                        false => {
                            mapping.insert(k, v);
                        }
                    }
                }
            }
        }
        Value::Sequence(items) => items.iter_mut().try_for_each(merge_keys)?,
        Value::Tagged(tagged) => merge_keys(&mut tagged.value)?,
        _ => {}
    }
    Ok(())
}

/// Sets the keys of the merge key's value `merged` in `into` (see [`merge_keys`]).
fn merge_into(into: &mut Mapping, merged: Value) -> Result<(), BadMerge> {
    let maps = match merged {
        Value::Mapping(m) => vec![m],
        Value::Sequence(items) => items
            .into_iter()
            .rev()
            .map(|item| match item {
                Value::Mapping(m) => Ok(m),
                _ => Err(BadMerge),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(BadMerge),
    };
    for (k, v) in maps.into_iter().flatten() {
        into.insert(k, v);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table: YAML with merge keys → the JSON kubectl makes of it (go-yaml v2
    /// `decoder.merge`), or the error.
    #[test]
    fn merge_keys_are_applied_as_kubectl_applies_them() {
        let cases: [(&str, Result<serde_json::Value, BadMerge>); 7] = [
            (
                "d: &d {image: a, name: c}\nc: {<<: *d, name: x}",
                Ok(serde_json::json!({"image": "a", "name": "x"})),
            ),
            // A key before `<<` is overridden by the merged one (go-yaml sets keys in order).
            (
                "d: &d {image: a}\nc: {image: b, <<: *d}",
                Ok(serde_json::json!({"image": "a"})),
            ),
            // A sequence: the earlier mapping wins.
            (
                "a: &a {image: a}\nb: &b {image: b, name: n}\nc: {<<: [*a, *b]}",
                Ok(serde_json::json!({"image": "a", "name": "n"})),
            ),
            // A merged mapping's own merge keys are applied first.
            (
                "a: &a {image: a}\nb: &b {<<: *a, name: n}\nc: {<<: *b}",
                Ok(serde_json::json!({"image": "a", "name": "n"})),
            ),
            (
                "c:\n  - {<<: {image: a}}",
                Ok(serde_json::json!([{"image": "a"}])),
            ),
            ("c: {<<: 1}", Err(BadMerge)),
            ("c: {<<: [1]}", Err(BadMerge)),
        ];
        for (text, want) in cases {
            let mut value: Value = serde_yaml_ng::from_str(text).unwrap();
            let got = merge_keys(&mut value).map(|()| serde_json::to_value(&value["c"]).unwrap());
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn deep_flow_nesting_is_refused_and_the_rest_is_not() {
        let deep = |open: &str, close: &str, n: usize| {
            format!("a: {}1{}\n", open.repeat(n), close.repeat(n))
        };
        // (text, the line refused at, or None)
        let cases: Vec<(String, Option<usize>)> = vec![
            (deep("[", "]", 64), None),
            (deep("[", "]", 65), Some(1)),
            (deep("{b: ", "}", 65), Some(1)),
            (format!("x: 1\ny: 2\n{}", deep("[{c: ", "}]", 40)), Some(3)),
            // Brackets in comments and quoted scalars do not count.
            (format!("# {}\na: 1\n", "[".repeat(100)), None),
            (format!("a: '{}'\n", "[".repeat(100)), None),
            (format!("a: 'it''s {}'\n", "{".repeat(100)), None),
            (format!("a: \"\\\" {}\"\n", "[".repeat(100)), None),
            // A quote inside a plain scalar opens nothing.
            (format!("a: it's\nb: {}\n", deep("[", "]", 65)), Some(2)),
            // Closing more than was opened does not hide what follows.
            (format!("a: ]]]]\nb: {}", deep("[", "]", 65)), Some(2)),
            // Block nesting is not flow nesting.
            (
                (0..200).map(|i| format!("{}a:\n", " ".repeat(i))).collect(),
                None,
            ),
            (String::new(), None),
        ];
        for (text, want) in cases {
            let got = check_nesting(&text).err().map(|e| e.line);
            assert_eq!(got, want, "{}", &text[..text.len().min(80)]);
        }
        let e = check_nesting(&deep("[", "]", 100)).unwrap_err();
        assert!(e.to_string().contains("nested more than 64 levels"), "{e}");
    }
}
