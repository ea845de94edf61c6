//! Issue 24: bodies read once agree with bodies read the old way (a walk for duplicate keys,
//! a header read, the typed read), on generated manifests and configs carrying random JSON
//! under unknown keys and keys written twice at random depths.

use proptest::prelude::*;

use super::*;

const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// A JSON value whose objects may hold a key twice (`serde_json::Value` cannot).
#[derive(Debug, Clone)]
enum Json {
    Null,
    Number(i64),
    Text(String),
    Array(Vec<Json>),
    Object(Vec<(&'static str, Json)>),
}

impl Json {
    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Number(n) => out.push_str(&n.to_string()),
            Json::Text(t) => out.push_str(&serde_json::to_string(t).unwrap()),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&format!("\"{key}\":"));
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Keys from a short list, so that an object often has one twice (`\u0061` is `a` escaped).
fn key() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["a", "b", "c", "os", "size", r"\u0061", "manifests"])
}

fn json() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<i64>().prop_map(Json::Number),
        "[ab\"\\\\é]{0,3}".prop_map(Json::Text),
    ];
    leaf.prop_recursive(5, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Json::Array),
            prop::collection::vec((key(), inner), 0..5).prop_map(Json::Object),
        ]
    })
}

fn text(json: &Json) -> String {
    let mut out = String::new();
    json.write(&mut out);
    out
}

/// Where a known key is written a second time, if anywhere.
#[derive(Debug, Clone, Copy)]
enum Twice {
    Nowhere,
    Top(&'static str),
    Entry(&'static str),
    Platform(&'static str),
}

fn twice() -> impl Strategy<Value = Twice> {
    prop_oneof![
        Just(Twice::Nowhere),
        prop::sample::select(vec![
            "schemaVersion",
            "mediaType",
            "manifests",
            "config",
            "x"
        ])
        .prop_map(Twice::Top),
        prop::sample::select(vec!["digest", "size", "platform", "x"]).prop_map(Twice::Entry),
        prop::sample::select(vec!["os", "architecture", "os.version", "x"])
            .prop_map(Twice::Platform),
    ]
}

/// A manifest-like body: its header fields of random values, an index entry and a config
/// descriptor carrying random JSON under `x`, members in a random order. Every field is of
/// its type: the one fault a body may have is a key written twice.
fn body() -> impl Strategy<Value = String> {
    let schema = prop::sample::select(vec![
        None,
        Some("2"),
        Some("1"),
        Some("\"2\""),
        Some("null"),
    ]);
    let media = prop::sample::select(vec![
        None,
        Some(format!("\"{OCI_INDEX}\"")),
        Some(format!("\"{DOCKER_LIST}\"")),
        Some(format!("\"{OCI_MANIFEST}\"")),
        Some("7".to_string()),
    ]);
    (
        schema,
        media,
        any::<[bool; 3]>(),
        [json(), json(), json()],
        twice(),
    )
        .prop_flat_map(
            |(schema, media, [index, image, annotated], [j0, j1, j2], twice)| {
                let platform = |j: &Json| {
                    let mut p = format!(r#""os":"windows","architecture":"amd64","x":{}"#, text(j));
                    if let Twice::Platform(k) = twice {
                        p.push_str(&format!(r#","{k}":"10.0.17763.1""#));
                    }
                    format!("{{{p}}}")
                };
                let mut entry = format!(
                    r#""mediaType":"{OCI_MANIFEST}","digest":"{D}","size":1,"platform":{},"x":{}"#,
                    platform(&j0),
                    text(&j1)
                );
                if let Twice::Entry(k) = twice {
                    entry.push_str(&format!(
                        r#","{k}":{}"#,
                        if k == "size" { "2" } else { "{}" }
                    ));
                }
                let mut members = vec![format!(r#""x":{}"#, text(&j2))];
                members.extend(schema.map(|s| format!(r#""schemaVersion":{s}"#)));
                members.extend(media.map(|m| format!(r#""mediaType":{m}"#)));
                if index {
                    members.push(format!(r#""manifests":[{{{entry}}}]"#));
                }
                if image {
                    members.push(format!(
                        r#""config":{{"digest":"{D}","size":3}},"layers":[]"#
                    ));
                }
                if annotated {
                    members.push(r#""annotations":{"a":"b"}"#.into());
                }
                if let Twice::Top(k) = twice {
                    let value = match k {
                        "schemaVersion" => "2".to_string(),
                        "mediaType" => format!("\"{OCI_INDEX}\""),
                        "config" => format!(r#"{{"digest":"{D}","size":3}}"#),
                        _ => "[]".to_string(),
                    };
                    members.push(format!(r#""{k}":{value}"#));
                }
                Just(members).prop_shuffle()
            },
        )
        .prop_map(|members| format!("{{{}}}", members.join(",")))
}

/// A config: platform, run settings whose labels and unknown members carry random JSON,
/// a key written twice at one of three depths, members in a random order.
fn config() -> impl Strategy<Value = String> {
    ([json(), json(), json()], 0..4usize, any::<bool>())
        .prop_flat_map(|([j0, j1, j2], twice, windows)| {
            let mut labels = format!(r#""l":"v","y":{}"#, text(&j1));
            let mut run = format!(
                r#""Env":["A=b"],"Cmd":["c"],"Labels":{{LABELS}},"z":{}"#,
                text(&j2)
            );
            let mut members = vec![
                r#""os":"linux""#.to_string(),
                r#""architecture":"amd64""#.to_string(),
                format!(r#""x":{}"#, text(&j0)),
            ];
            match twice {
                1 => members.push(r#""os":"windows""#.into()),
                2 => run.push_str(r#","Cmd":["d"]"#),
                3 => labels.push_str(r#","l":"w""#),
                _ => {}
            }
            if windows {
                members.push(r#""os.version":"10.0.20348.1""#.into());
            }
            members.push(format!(
                r#""config":{{{}}}"#,
                run.replace("LABELS", &labels)
            ));
            Just(members).prop_shuffle()
        })
        .prop_map(|members| format!("{{{}}}", members.join(",")))
}

/// The duplicate-key walk as it was before the one reading (its own visitor, independent of
/// `unique`'s wrapper): what both readings are held to.
fn old_walk(bytes: &[u8]) -> Result<(), serde_json::Error> {
    use serde::de::{Deserializer as _, Error as _, MapAccess, SeqAccess, Visitor};

    struct Unique;
    impl<'de> serde::Deserialize<'de> for Unique {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Unique, D::Error> {
            d.deserialize_any(UniqueVisitor)
        }
    }
    struct UniqueVisitor;
    impl<'de> Visitor<'de> for UniqueVisitor {
        type Value = Unique;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_str<E>(self, _: &str) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_unit<E>(self) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Unique, A::Error> {
            while seq.next_element::<Unique>()?.is_some() {}
            Ok(Unique)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unique, A::Error> {
            let mut seen = super::unique::Seen::default();
            while let Some(super::unique::Key(key)) = map.next_key::<super::unique::Key<'de>>()? {
                if seen.contains(&key) {
                    return Err(A::Error::custom(super::unique::duplicate_key(&key)));
                }
                map.next_value::<Unique>()?;
                seen.insert(key);
            }
            Ok(Unique)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.deserialize_any(UniqueVisitor).and_then(|_| de.end())
}

/// A parse's outcome, comparable: the value or the error as findings show it.
fn outcome<T: std::fmt::Debug>(r: Result<T, ManifestError>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => e.with_causes(),
    }
}

proptest! {
    /// The one reading, and the slow reading's check, refuse a body for a key twice exactly
    /// when the old walk does, with the same error (position included); and what the parse gives (value, or error and its wording) is what reading
    /// the body the old way gives, claimed media type or not.
    #[test]
    fn a_body_read_once_is_the_body_read_three_times(
        body in body(),
        claimed in prop::sample::select(vec![None, Some(OCI_INDEX), Some(OCI_MANIFEST), Some("")]),
    ) {
        let old = old_walk(body.as_bytes()).map_err(|e| e.to_string());
        let check = check_unique_keys(body.as_bytes()).map_err(|e| e.to_string());
        prop_assert_eq!(&check, &old, "{}", body);
        let once = Body::read(body.as_bytes()).map(|_| ()).map_err(|e| e.to_string());
        match (&old, &once) {
            (Ok(()), Ok(())) => {}
            (Err(dup), Err(e)) => prop_assert_eq!(dup, e),
            _ => prop_assert!(false, "{body}: walk {old:?}, one reading {once:?}"),
        }
        let claimed_type = claimed.filter(|t| !t.is_empty());
        prop_assert_eq!(
            outcome(Manifest::parse(body.as_bytes(), claimed)),
            outcome(Manifest::diagnose(body.as_bytes(), claimed_type)),
            "{}", body
        );
    }

    /// The same for configs: refused exactly when a key is there twice, read as before.
    #[test]
    fn a_config_read_once_is_the_config_read_twice(body in config()) {
        let old = old_walk(body.as_bytes()).map_err(|e| e.to_string());
        let check = check_unique_keys(body.as_bytes()).map_err(|e| e.to_string());
        prop_assert_eq!(&check, &old, "{}", body);
        let once = unique::read::<ImageConfig>(body.as_bytes());
        match (&old, &once) {
            (Ok(()), Ok(config)) => {
                let before: ImageConfig = serde_json::from_slice(body.as_bytes()).unwrap();
                prop_assert_eq!(config, &before);
            }
            (Err(dup), Err(e)) => prop_assert_eq!(dup, &e.to_string()),
            _ => prop_assert!(false, "{body}: walk {old:?}, one reading {once:?}"),
        }
    }
}

/// The check agrees with the old walk on bodies the generators do not write: broken UTF-8 in a
/// string and in a key, text after the value, nothing, duplicates written with escapes, in
/// arrays and deep down, numbers of every kind.
#[test]
fn the_check_is_the_old_walk_on_odd_bodies() {
    let bodies: [&[u8]; 12] = [
        b"",
        b"{}",
        b"{} x",
        b"{\"a\":\"\xff\"}",
        b"{\"\xff\":1,\"\xff\":2}",
        br#"{"a":1,"\u0061":2}"#,
        br#"[{"a":1},{"a":1,"b":{"c":[{"d":0,"d":1}]}}]"#,
        br#"{"n":-1,"m":18446744073709551615,"f":1.5e300,"t":true,"z":null}"#,
        br#"{"a":{"a":{"a":1}},"b":[[],{}],"a":0}"#,
        br#"{"a":1,}"#,
        br#"{"a" 1}"#,
        br#""just a string""#,
    ];
    for body in bodies {
        let old = old_walk(body).map_err(|e| e.to_string());
        let check = check_unique_keys(body).map_err(|e| e.to_string());
        assert_eq!(check, old, "{}", String::from_utf8_lossy(body));
    }
}
