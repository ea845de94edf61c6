use super::*;
use crate::signature::Stored;

fn d(s: &str) -> Digest {
    Digest::sha256(s.as_bytes())
}

/// A simple-signing payload naming `digest`, signed `sig`.
fn stored(digest: &Digest, sig: &str) -> Stored {
    let payload = format!(
        r#"{{"critical":{{"identity":{{"docker-reference":"q/r"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#
    );
    Stored {
        payload: payload.into_bytes(),
        signature: Some(sig.into()),
    }
}

/// What a repository holds: `sigs` signatures (by their signature text) and `atts`
/// attestations (by their bytes), of `digest`.
fn held(digest: &Digest, sigs: &[&str], atts: &[&str]) -> Found {
    let mut found = Found::default();
    found.signatures = sigs.iter().map(|s| Ok(stored(digest, s))).collect();
    found.attestations = atts.iter().map(|a| Ok(a.as_bytes().to_vec())).collect();
    found
}

fn unavailable() -> Found {
    let mut found = Found::default();
    found.unavailable = vec!["503 Service Unavailable".into()];
    found
}

/// (rule, severity) of each finding, signatures first.
fn rows(c: &Compared) -> Vec<(Rule, Severity)> {
    (c.signatures.iter().chain(&c.attestations))
        .map(|f| (f.rule, f.severity))
        .collect()
}

/// A case: its name, what the source holds, what the mirror holds, required, the findings.
type Row = (
    &'static str,
    Option<Found>,
    Found,
    bool,
    Vec<(Rule, Severity)>,
);

/// Runs each row.
fn run(table: Vec<Row>) {
    let e = d("entry");
    for (case, source, mirror, required, want) in table {
        let subject = Subject {
            entry: "linux/amd64",
            digest: &e,
            source: source.as_ref(),
            mirror: &mirror,
        };
        let got = compare(subject, "m.example/mirror/csi", required);
        assert_eq!(rows(&got), want, "{case}: {got:#?}");
    }
}

/// Each row: what the source holds, what the mirror holds, whether signatures are required,
/// and the findings. Source: containers/image rewrites the `.sig` manifest but keeps each
/// layer's payload and annotations (`docker_image_dest.go` `putSignaturesToSigstoreAttachments`,
/// `layerMatchesSigstoreSignature`), so a signature is matched by payload and signature, never
/// by the manifest holding it; it copies no `.att` (`copy/single.go` copies signatures only).
#[test]
fn a_signature_travelled_when_the_mirror_holds_it_as_is() {
    use Rule::MirrorSignatureMissing as Missing;
    use Severity::{Error, Warning};
    let e = d("entry");
    let all = held(&e, &["s1", "s2"], &["a1"]);
    let nothing = Found::default;
    run(vec![
        (
            "everything copied",
            Some(all.clone()),
            all.clone(),
            true,
            vec![],
        ),
        (
            "skopeo copy --all: nothing copied, not required",
            Some(all.clone()),
            nothing(),
            false,
            vec![(Missing, Warning), (Missing, Warning)],
        ),
        (
            "nothing copied, required: the signature fails the pull",
            Some(all.clone()),
            nothing(),
            true,
            vec![(Missing, Error), (Missing, Warning)],
        ),
        (
            "oc-mirror v2 / use-sigstore-attachments: .sig copied, .att not",
            Some(all.clone()),
            held(&e, &["s2", "s1"], &[]),
            true,
            vec![(Missing, Warning)],
        ),
        (
            "one of two signatures copied: a pull can still pass",
            Some(all.clone()),
            held(&e, &["s1"], &["a1"]),
            true,
            vec![(Missing, Warning)],
        ),
        (
            "the mirror's signature is another one (re-signed): the source's did not travel",
            Some(held(&e, &["s1"], &[])),
            held(&e, &["other"], &[]),
            true,
            vec![(Missing, Error)],
        ),
        (
            "the source holds nothing",
            Some(nothing()),
            nothing(),
            true,
            vec![],
        ),
    ]);
}

/// The source not asked (`--disconnected`): the mirror's own signatures, when required. A
/// lookup that could not be completed: `fetch-error` when required, else nothing.
#[test]
fn without_the_source_the_mirror_must_hold_a_signature_when_required() {
    use Rule::{FetchError, MirrorSignatureMissing as Missing};
    use Severity::Error;
    let e = d("entry");
    let all = held(&e, &["s1", "s2"], &["a1"]);
    let nothing = Found::default;
    run(vec![
        (
            "required, the mirror holds one",
            None,
            held(&e, &["m"], &[]),
            true,
            vec![],
        ),
        (
            "required, the mirror holds none",
            None,
            nothing(),
            true,
            vec![(Missing, Error)],
        ),
        (
            "not required: nothing checked",
            None,
            nothing(),
            false,
            vec![],
        ),
        (
            "a lookup failed, required: the check did not run",
            Some(all.clone()),
            unavailable(),
            true,
            vec![(FetchError, Error)],
        ),
        (
            "a lookup failed, not required: a warning at most was at stake",
            Some(unavailable()),
            nothing(),
            false,
            vec![],
        ),
    ]);
}

/// A signature in the mirror that signs another digest is none of this one's (under
/// `--disconnected`, where presence is all that can be checked).
#[test]
fn under_disconnected_a_signature_of_another_digest_does_not_count() {
    let e = d("entry");
    let mirror = held(&d("other"), &["m"], &[]);
    let subject = Subject {
        entry: "linux/amd64",
        digest: &e,
        source: None,
        mirror: &mirror,
    };
    let got = compare(subject, "m.example/mirror/csi", true);
    assert_eq!(got.signatures.len(), 1, "{got:#?}");
    assert!(got.signatures[0].message.contains("--disconnected"));
}

/// The messages name the entry, the mirror repository, how many did not travel, and what
/// it does to the pull: an entry's pull fails on Linux nodes; the index's signature is not
/// what CRI-O checks.
#[test]
fn the_messages_name_the_entry_the_mirror_and_the_consequence() {
    let e = d("entry");
    let source = held(&e, &["s1", "s2"], &["a1"]);
    let mirror = held(&e, &["s1"], &[]);
    let subject = |entry| Subject {
        entry,
        digest: &e,
        source: Some(&source),
        mirror: &mirror,
    };
    let got = compare(subject("linux/amd64"), "m.example/mirror/csi", true);
    let signature = &got.signatures[0].message;
    assert!(
        signature.starts_with(&format!("linux/amd64 ({e}): 1 of the source's 2 cosign signatures is not in the mirror m.example/mirror/csi: Linux nodes (CRI-O)")),
        "{signature}"
    );
    let attestation = &got.attestations[0].message;
    assert!(
        attestation.contains("none of the source's 1 in-toto attestations is in the mirror"),
        "{attestation}"
    );
    let got = compare(subject("index"), "m.example/mirror/csi", true);
    assert!(
        got.signatures[0]
            .message
            .contains("not the index's (containers/image copy.Image)"),
        "{got:#?}"
    );
}
