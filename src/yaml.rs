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
//! - [`check_yaml`], the same guard for YAML inputs (mirror sets, ImageSetConfigurations,
//!   node lists, manifests, policies, plans, a release's `image-references`), and a bound on
//!   what aliases (`*name`) expand to: serde_yaml_ng caps the number of alias expansions
//!   (100 per event of the document: the billion-laughs case) but not their size, so a
//!   0.4 MB document repeating one 200 KB string grows to a gigabyte when parsed. The
//!   expanded size is counted first, without building anything.
//! - [`merge_keys`]: YAML merge keys (`<<: *defaults`) applied as kubectl applies them.

use std::cell::Cell;

use serde::de::{self, DeserializeSeed, Visitor};
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

/// Most scalar bytes aliases may add to a YAML input: what the parsed documents hold beyond
/// the input's own length.
pub const MAX_ALIAS_BYTES: u64 = 16 * 1024 * 1024;
/// Most nodes (scalars, sequences, mappings) aliases may add to a YAML input, beyond one per
/// byte of the input.
pub const MAX_ALIAS_NODES: u64 = 1_000_000;

/// Why a YAML input is refused before it is parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Flow collections nested too deep.
    #[error(transparent)]
    TooDeep(#[from] TooDeep),
    /// Aliases expand the documents past [`MAX_ALIAS_BYTES`] or [`MAX_ALIAS_NODES`].
    #[error(
        "YAML aliases (*name) expand the input past {limit} {what} (its {len} bytes, plus \
         {extra} through aliases at most); refused before parsing"
    )]
    Aliases {
        /// `bytes of text` or `nodes`.
        what: &'static str,
        /// The limit passed.
        limit: u64,
        /// The input's length.
        len: usize,
        /// What aliases may add.
        extra: u64,
    },
}

impl Refused {
    /// The line where the input was refused, when there is one.
    pub fn line(&self) -> Option<usize> {
        match self {
            Refused::TooDeep(e) => Some(e.line),
            Refused::Aliases { .. } => None,
        }
    }
}

/// Refuses a YAML input `text` whose flow collections nest too deep ([`check_nesting`]) or
/// whose aliases expand it past [`MAX_ALIAS_BYTES`] of scalars or [`MAX_ALIAS_NODES`] nodes
/// beyond its length. A text that does not parse passes: the parser that follows says why.
pub fn check_yaml(text: &str) -> Result<(), Refused> {
    check_nesting(text)?;
    // An alias needs an anchor (`&name`) and a `*name`.
    if !(text.contains('&') && text.contains('*')) {
        return Ok(());
    }
    let len = text.len() as u64;
    let count = Expansion {
        bytes: &Cell::new(0),
        nodes: &Cell::new(0),
        max_bytes: len + MAX_ALIAS_BYTES,
        max_nodes: len + MAX_ALIAS_NODES,
    };
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        if count.deserialize(doc).is_err() {
            break;
        }
    }
    let refused = |what, limit, extra| Refused::Aliases {
        what,
        limit,
        len: text.len(),
        extra,
    };
    if count.bytes.get() > count.max_bytes {
        return Err(refused("bytes of text", count.max_bytes, MAX_ALIAS_BYTES));
    }
    if count.nodes.get() > count.max_nodes {
        return Err(refused("nodes", count.max_nodes, MAX_ALIAS_NODES));
    }
    Ok(())
}

/// Counts the scalar bytes and nodes of YAML documents as the parser replays them (each alias
/// replays its anchor's events), building nothing; stops with an error past either limit.
#[derive(Clone, Copy)]
struct Expansion<'a> {
    bytes: &'a Cell<u64>,
    nodes: &'a Cell<u64>,
    max_bytes: u64,
    max_nodes: u64,
}

impl Expansion<'_> {
    /// One node of `bytes` scalar bytes more.
    fn add<E: de::Error>(self, bytes: usize) -> Result<(), E> {
        self.bytes
            .set(self.bytes.get().saturating_add(bytes as u64));
        self.nodes.set(self.nodes.get() + 1);
        match self.bytes.get() > self.max_bytes || self.nodes.get() > self.max_nodes {
            true => Err(E::custom("aliases expand past the limit")),
            false => Ok(()),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Expansion<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Expansion<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.add(1)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.add(1)
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.add(1)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.add(1)
    }

    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.add(1)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.add(1)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.add(v.len())
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<(), E> {
        self.add(v.len())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.add(0)
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.add(0)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.deserialize(d)
    }

    fn visit_newtype_struct<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.add(0)?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.add(0)?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        use de::VariantAccess;
        let ((), variant) = data.variant_seed(self)?;
        variant.newtype_variant_seed(self)
    }
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

    /// Table: YAML with aliases → refused (what passed the limit) or not. serde_yaml_ng's own
    /// guard (`de.rs`, the jump count: 100 alias expansions per event) lets a few aliases of
    /// one large string through; [`check_yaml`] bounds what they expand to (issue 33, item 15).
    #[test]
    fn aliases_are_bounded_by_what_they_expand_to() {
        let big = "x".repeat(200_000);
        let bomb =
            |aliases: usize| format!("a: &a {big}\nb: [{}]\n", vec!["*a"; aliases].join(", "));
        // (text, refused for: "bytes of text", "nodes", or None)
        let seq: String = (0..50_000).map(|_| "- a\n").collect();
        let nodes_bomb = format!(
            "a: &a\n{}b: [{}]\n",
            seq.replace("- ", "  - "),
            vec!["*a"; 40].join(", ")
        );
        let cases: Vec<(String, Option<&str>)> = vec![
            // 0.4 MB that parses to 1 GB: 5,000 copies of 200 KB.
            (bomb(5_000), Some("bytes of text")),
            // 80 copies: 16 MB, under the 16 MiB (plus the text) allowed.
            (bomb(80), None),
            (bomb(90), Some("bytes of text")),
            // 40 copies of a 50,000-item sequence: 2 million nodes from 200 KB.
            (nodes_bomb, Some("nodes")),
            // Merge keys and ordinary anchors pass.
            (
                "d: &d {image: a}\nc: {<<: *d, name: x}\ne: *d\n".to_string(),
                None,
            ),
            // `&` and `*` in scalars only: no alias.
            ("a: 'R&D'\nb: '*'\n".to_string(), None),
            // Not YAML: the parser that follows says why.
            ("a: *undefined\n&".to_string(), None),
        ];
        for (text, want) in cases {
            let got = check_yaml(&text).err().map(|e| match e {
                Refused::Aliases { what, .. } => what,
                Refused::TooDeep(_) => "too deep",
            });
            assert_eq!(got, want, "{}", &text[..text.len().min(60)]);
        }
        let e = check_yaml(&bomb(5_000)).unwrap_err();
        assert!(e.to_string().contains("YAML aliases (*name) expand"), "{e}");
        assert_eq!(e.line(), None);
        let deep = format!("a: {}1{}\n", "[".repeat(65), "]".repeat(65));
        assert_eq!(check_yaml(&deep).unwrap_err().line(), Some(1));
    }
}
