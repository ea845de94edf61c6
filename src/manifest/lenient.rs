//! JSON read leniently, straight from the body: a value of the wanted shape is kept, a value
//! of any other shape is read, dropped and stands as the default. This is what reading the
//! value as a `serde_json::Value` and then picking from it gives, without building the value.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A type read leniently: each shape it accepts has a reading, every other gives the default.
pub(super) trait Lenient<'de>: Default {
    /// From a JSON string.
    fn from_str(_: &str) -> Self {
        Self::default()
    }

    /// From a JSON array.
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }

    /// From a JSON object.
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
}

/// Reads a `T` leniently.
pub(super) fn lenient<'de, T: Lenient<'de>, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(LenientVisitor(PhantomData))
}

struct LenientVisitor<T>(PhantomData<T>);

impl<'de, T: Lenient<'de>> Visitor<'de> for LenientVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_str<E>(self, s: &str) -> Result<T, E> {
        Ok(T::from_str(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::from_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::from_map(map)
    }
}

/// A string, or nothing for any other value.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Text(pub Option<String>);

impl Lenient<'_> for Text {
    fn from_str(s: &str) -> Text {
        Text(Some(s.to_string()))
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        lenient(d)
    }
}

/// The strings of an array (its other items left out), or none for any other value.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Texts(pub Vec<String>);

impl<'de> Lenient<'de> for Texts {
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Texts, A::Error> {
        let mut texts = Vec::new();
        while let Some(Text(t)) = seq.next_element::<Text>()? {
            texts.extend(t);
        }
        Ok(Texts(texts))
    }
}

impl<'de> Deserialize<'de> for Texts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Texts, D::Error> {
        lenient(d)
    }
}

/// The string members of an object (others left out), or none for any other value.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Labels(pub BTreeMap<String, String>);

impl<'de> Lenient<'de> for Labels {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Labels, A::Error> {
        let mut labels = BTreeMap::new();
        while let Some((k, Text(v))) = map.next_entry::<String, Text>()? {
            if let Some(v) = v {
                labels.insert(k, v);
            }
        }
        Ok(Labels(labels))
    }
}

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Labels, D::Error> {
        lenient(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each shape against the reading of a `serde_json::Value` it replaces.
    #[test]
    fn lenient_reads_agree_with_picking_from_a_value() {
        let rows = [
            "null",
            "true",
            "-3",
            "7",
            "1.5",
            r#""a""#,
            r#""a\nb""#,
            "[]",
            r#"["a", 1, null, "b", ["c"], {"d": "e"}]"#,
            r#"{"a": "b", "c": 1, "d": ["e"], "f": {"g": "h"}, "i": null}"#,
            r#"[[["deep"]]]"#,
        ];
        for json in rows {
            let value: serde_json::Value = serde_json::from_str(json).unwrap();
            let text = value.as_str().map(str::to_string);
            let texts: Vec<String> = match &value {
                serde_json::Value::Array(items) => items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
                _ => vec![],
            };
            let labels: BTreeMap<String, String> = match &value {
                serde_json::Value::Object(m) => m
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect(),
                _ => BTreeMap::new(),
            };
            assert_eq!(
                serde_json::from_str::<Text>(json).unwrap(),
                Text(text),
                "{json}"
            );
            assert_eq!(
                serde_json::from_str::<Texts>(json).unwrap(),
                Texts(texts),
                "{json}"
            );
            assert_eq!(
                serde_json::from_str::<Labels>(json).unwrap(),
                Labels(labels),
                "{json}"
            );
        }
    }
}
