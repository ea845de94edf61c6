use super::unique::Seen;
use super::*;

const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

fn index_json(entries: &str) -> String {
    format!(r#"{{"schemaVersion":2,"mediaType":"{OCI_INDEX}","manifests":[{entries}]}}"#)
}

#[test]
fn parses_index_with_windows_fields() {
    let body = index_json(&format!(
        r#"{{"mediaType":"{OCI_MANIFEST}","digest":"{D}","size":10,
          "platform":{{"os":"windows","architecture":"amd64","os.version":"10.0.17763.5830","os.features":["win32k"]}}}}"#
    ));
    let Manifest::Index(index) = Manifest::parse(body.as_bytes(), Some(OCI_INDEX)).unwrap() else {
        panic!("not an index")
    };
    let p = index.manifests[0].platform.clone().unwrap();
    assert_eq!(p.os_version.as_deref(), Some("10.0.17763.5830"));
    assert_eq!(p.os_features, vec!["win32k"]);
}

#[test]
fn classifies_and_rejects() {
    let image = format!(
        r#"{{"schemaVersion":2,"mediaType":"{DOCKER_MANIFEST}","config":{{"mediaType":"{DOCKER_CONFIG}","digest":"{D}","size":2}},"layers":[]}}"#
    );
    assert!(matches!(
        Manifest::parse(image.as_bytes(), None),
        Ok(Manifest::Image(_))
    ));
    // A Docker manifest referenced as an OCI manifest is still an image (registries mix them).
    assert!(matches!(
        Manifest::parse(image.as_bytes(), Some(OCI_MANIFEST)),
        Ok(Manifest::Image(_))
    ));
    let no_type = r#"{"schemaVersion":2,"manifests":[]}"#;
    assert!(matches!(
        Manifest::parse(no_type.as_bytes(), None),
        Ok(Manifest::Index(_))
    ));
    assert_eq!(
        Manifest::parse(br#"{"schemaVersion":1,"name":"x","fsLayers":[]}"#, None).ok(),
        Some(Manifest::Schema1)
    );
    let cases: &[(&[u8], Option<&str>, &str)] = &[
        (b"", None, "not valid JSON"),
        (b"{\"schemaVersion\":2,\"manifests\":[", None, "not valid JSON"),
        (b"[]", None, "not a JSON object"),
        (b"{}", None, "schemaVersion must be 2"),
        (b"{\"schemaVersion\":3}", None, "schemaVersion must be 2"),
        (
            br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.config.v1+json"}"#,
            None,
            "unsupported media type",
        ),
        (br#"{"schemaVersion":2,"mediaType":7}"#, None, "not a string"),
        (br#"{"schemaVersion":2}"#, None, "neither"),
        (
            br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#,
            Some(OCI_MANIFEST),
            "disagrees",
        ),
        (br#"{"schemaVersion":2,"manifests":[{"digest":"sha256:x","size":1}]}"#, None, "invalid hex"),
        (br#"{"schemaVersion":2,"manifests":{}}"#, None, "invalid index"),
    ];
    for (body, claimed, want) in cases {
        let err = Manifest::parse(body, *claimed).unwrap_err().with_causes();
        assert!(
            err.contains(want),
            "{}: {err}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn config_platform() {
    let c = ImageConfig::parse(
        br#"{"os":"windows","architecture":"amd64","os.version":"10.0.20348.2461","variant":""}"#,
    )
    .unwrap();
    let p = c.platform();
    assert_eq!(p.os_version.as_deref(), Some("10.0.20348.2461"));
    assert_eq!(p.variant, None);
    assert!(ImageConfig::parse(br#"{"os":"linux"}"#).is_err());
    assert!(ImageConfig::parse(b"nope").is_err());
}

#[test]
fn attestation_and_foreign() {
    let mut d: Descriptor = serde_json::from_str(&format!(
        r#"{{"mediaType":"{OCI_MANIFEST}","digest":"{D}","size":1,"platform":{{"os":"unknown","architecture":"unknown"}}}}"#
    ))
    .unwrap();
    assert!(d.is_attestation() && d.never_selected());
    d.platform = None;
    assert!(!d.is_attestation());
    d.annotations.insert(
        ANNOTATION_REFERENCE_TYPE.into(),
        "attestation-manifest".into(),
    );
    // Annotated but platform-less: an attestation a runtime may still select.
    assert!(d.is_attestation() && !d.never_selected());
    let mut l = d.clone();
    l.media_type = DOCKER_FOREIGN_LAYER.into();
    assert!(l.is_foreign_layer());
    l.media_type = "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip".into();
    assert!(l.is_foreign_layer());
    l.media_type = "application/vnd.oci.image.layer.v1.tar+gzip".into();
    assert!(!l.is_foreign_layer());
    l.urls = vec!["https://example.com/x".into()];
    assert!(l.is_foreign_layer());
}

/// Duplicate keys are found whether a key is borrowed or unescaped, and before or after
/// an object's keys move from the short list to the hash set.
#[test]
fn duplicate_keys_in_small_and_large_objects() {
    let object = |keys: &[String]| {
        let body: Vec<String> = keys.iter().map(|k| format!(r#""{k}":1"#)).collect();
        format!("{{{}}}", body.join(","))
    };
    let distinct = |n: usize| (0..n).map(|i| format!("k{i}")).collect::<Vec<_>>();
    let with = |n: usize, extra: &str| {
        let mut keys = distinct(n);
        keys.push(extra.to_string());
        keys
    };
    // (keys, the duplicate found)
    let rows: Vec<(Vec<String>, Option<&str>)> = vec![
        (distinct(3), None),
        (distinct(Seen::FEW), None),
        (distinct(Seen::FEW + 1), None),
        (distinct(200), None),
        (with(3, "k1"), Some("k1")),
        (with(Seen::FEW, "k0"), Some("k0")),
        (with(Seen::FEW + 1, "k3"), Some("k3")),
        (with(200, "k150"), Some("k150")),
        // An escaped key is the same key.
        (with(2, r"k1"), Some("k1")),
        (with(40, r"k1"), Some("k1")),
        (vec![r"k1".into(), "k1".into()], Some("k1")),
    ];
    for (keys, duplicate) in rows {
        let json = object(&keys);
        match (check_unique_keys(json.as_bytes()), duplicate) {
            (Ok(()), None) => {}
            (Err(e), Some(key)) => {
                assert!(
                    e.to_string().contains(&format!("duplicate key '{key}'")),
                    "{e}"
                )
            }
            (got, _) => panic!("{json}: {got:?}"),
        }
    }
}

#[test]
fn hostile_json_is_refused_clearly() {
    // Duplicate keys, at the top and nested: which copy wins differs between parsers.
    let dup_top =
        format!(r#"{{"schemaVersion":2,"mediaType":"{OCI_INDEX}","manifests":[],"manifests":[]}}"#);
    let err = Manifest::parse(dup_top.as_bytes(), None)
        .unwrap_err()
        .with_causes();
    assert!(err.contains("duplicate key 'manifests'"), "{err}");
    let dup_nested = index_json(&format!(
        r#"{{"mediaType":"{OCI_MANIFEST}","digest":"{D}","size":1,"size":2}}"#
    ));
    assert!(
        Manifest::parse(dup_nested.as_bytes(), None)
            .unwrap_err()
            .with_causes()
            .contains("duplicate key 'size'")
    );
    let err = ImageConfig::parse(br#"{"os":"linux","os":"windows","architecture":"amd64"}"#)
        .unwrap_err()
        .with_causes();
    assert!(err.contains("duplicate key 'os'"), "{err}");
    // Same key in sibling objects is fine.
    let ok = index_json(&format!(
        r#"{{"mediaType":"{OCI_MANIFEST}","digest":"{D}","size":1}},{{"mediaType":"{OCI_MANIFEST}","digest":"{D}","size":1}}"#
    ));
    assert!(Manifest::parse(ok.as_bytes(), None).is_ok());

    // Thousands of entries.
    let entry = format!(r#"{{"mediaType":"{OCI_MANIFEST}","digest":"{D}","size":1}}"#);
    let many = index_json(&vec![entry.as_str(); MAX_ENTRIES + 1].join(","));
    assert!(
        Manifest::parse(many.as_bytes(), None)
            .unwrap_err()
            .with_causes()
            .contains("more than the 1000")
    );
    let at_cap = index_json(&vec![entry.as_str(); MAX_ENTRIES].join(","));
    assert!(Manifest::parse(at_cap.as_bytes(), None).is_ok());

    // Absurd sizes, deep nesting, non-UTF-8, trailing garbage.
    for bad in [
        index_json(&format!(
            r#"{{"mediaType":"{OCI_MANIFEST}","digest":"{D}","size":-5}}"#
        ))
        .into_bytes(),
        index_json(&format!(
            r#"{{"mediaType":"{OCI_MANIFEST}","digest":"{D}","size":99999999999999999999999}}"#
        ))
        .into_bytes(),
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
        b"{\"schemaVersion\":2,\"manifests\":[],\"x\":\"\xff\xfe\"}".to_vec(),
        format!("{} {{}}", index_json("")).into_bytes(),
    ] {
        assert!(Manifest::parse(&bad, None).is_err());
    }
}

#[test]
fn parser_errors_keep_their_cause() {
    let cases: &[(&[u8], &str, &str)] = &[
        (b"{", "not valid JSON", "EOF while parsing"),
        (br#"{"a":1,"a":2}"#, "not valid JSON", "duplicate key 'a'"),
        (
            br#"{"schemaVersion":2,"manifests":{}}"#,
            "invalid index",
            "invalid type: map",
        ),
    ];
    for (body, reason, cause) in cases {
        let err = Manifest::parse(body, None).unwrap_err();
        assert_eq!(err.to_string(), *reason);
        let source = std::error::Error::source(&err)
            .expect("a cause")
            .to_string();
        assert!(source.contains(cause), "{source}");
        assert_eq!(err.with_causes(), format!("{reason}: {source}"));
    }
    let bad_digest = index_json(r#"{"digest":"sha256:x","size":1}"#);
    let err = Manifest::parse(bad_digest.as_bytes(), None).unwrap_err();
    assert!(matches!(err, ManifestError::Digest(_)), "{err:?}");
    assert!(err.to_string().contains("invalid hex part"), "{err}");
}

/// A body, the media type its referrer claims, and what parsing it gives.
type Edge = (String, Option<&'static str>, &'static str);

/// Bodies at the edges of the header checks: shape, `mediaType`, `schemaVersion`.
fn header_edges() -> Vec<Edge> {
    vec![
        ("[1,2]".into(), None, "not a JSON object"),
        (" \n 7".into(), None, "not a JSON object"),
        (
            r#"{"schemaVersion":2,"mediaType":null}"#.into(),
            None,
            "mediaType is not a string: null",
        ),
        (
            r#"{"schemaVersion":2,"mediaType":7}"#.into(),
            None,
            "mediaType is not a string: 7",
        ),
        (
            r#"{"schemaVersion":null}"#.into(),
            None,
            "schemaVersion must be 2, found null",
        ),
        (
            r#"{"schemaVersion":"2"}"#.into(),
            None,
            "schemaVersion must be 2, found \"2\"",
        ),
        (
            r#"{"schemaVersion":2.0}"#.into(),
            None,
            "schemaVersion must be 2, found 2.0",
        ),
        (
            r#"{"manifests":[]}"#.into(),
            None,
            "schemaVersion must be 2, found nothing",
        ),
        (
            r#"{"schemaVersion":1,"mediaType":7}"#.into(),
            None,
            "mediaType is not a string: 7",
        ),
    ]
}

/// Bodies at the edges of the kind checks and of the typed reading.
fn kind_edges() -> Vec<Edge> {
    let entry = format!(r#"{{"mediaType":"{OCI_MANIFEST}","digest":"{D}","size":1}}"#);
    vec![
        (r#"{"schemaVersion":1}"#.into(), None, "schema1"),
        (
            r#"{"schemaVersion":2,"manifests":null}"#.into(),
            None,
            "invalid index: invalid type: null, expected a sequence",
        ),
        (
            r#"{"schemaVersion":2,"config":null,"manifests":[]}"#.into(),
            None,
            "index of 0",
        ),
        (
            r#"{"schemaVersion":2,"config":[]}"#.into(),
            None,
            "invalid image manifest: invalid length 1, expected struct Descriptor with 6 elements",
        ),
        (
            r#"{"schemaVersion":2}"#.into(),
            None,
            "neither an index nor a manifest",
        ),
        (
            r#"{"schemaVersion":2}"#.into(),
            Some(OCI_INDEX),
            "invalid index: missing field `manifests`",
        ),
        (
            r#"{"schemaVersion":2,"manifests":[]}"#.into(),
            Some(""),
            "index of 0",
        ),
        (
            format!(r#"{{"schemaVersion":2,"manifests":[{entry}]}}"#),
            Some(OCI_MANIFEST),
            "invalid image manifest: missing field `config`",
        ),
        (
            format!(r#"{{"schemaVersion":2,"manifests":[{entry}]}}"#),
            Some(DOCKER_LIST),
            "index of 1",
        ),
        (
            format!(r#"{{"schemaVersion":2,"manifests":[["{OCI_MANIFEST}","{D}",1]]}}"#),
            None,
            "index of 1",
        ),
        (
            format!(r#"{{"schemaVersion":2,"manifests":[{{"digest":"{D}","size":1.0}}]}}"#),
            None,
            "invalid index: invalid type: floating point `1.0`, expected i64",
        ),
        (
            format!(r#"{{"schemaVersion":2,"config":{entry},"layers":[{entry}]}}"#),
            None,
            "image of 1 layers",
        ),
    ]
}

/// Bodies read straight into their types (issue 24): the outcome and the wording are
/// those of the body read as a JSON value first, `null` fields, arrays and numbers of the
/// wrong kind included.
#[test]
fn edge_bodies_keep_their_outcome_and_wording() {
    for (body, claimed, want) in header_edges().into_iter().chain(kind_edges()) {
        let got = match Manifest::parse(body.as_bytes(), claimed) {
            Ok(Manifest::Index(i)) => format!("index of {}", i.manifests.len()),
            Ok(Manifest::Image(i)) => format!("image of {} layers", i.layers.len()),
            Ok(Manifest::Schema1) => "schema1".into(),
            Err(e) => e.with_causes(),
        };
        assert_eq!(got, want, "{body} (claimed {claimed:?})");
    }
}
