use std::collections::BTreeSet;

use super::*;

const HEAD: &str = "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\n";

fn parse(body: &str) -> Result<ImageSet, InputError> {
    parse_imageset(&format!("{HEAD}{body}"), "isc.yaml")
}

#[test]
fn imagesets() {
    let set = parse("mirror:\n  additionalImages:\n  - name: quay.io/org/azure-file:v4.18\n  - name: registry.k8s.io/sig-storage/livenessprobe:v2.14.0\n  operators: []\n").unwrap();
    let warnings = set.warnings(&needed());
    assert!(warnings.is_empty(), "{warnings:?}");
    let refs = set.images();
    assert_eq!(refs.len(), 2);
    assert_eq!(
        refs[1].to_string(),
        "registry.k8s.io/sig-storage/livenessprobe:v2.14.0"
    );
    assert_eq!(set.entries[1].entry, "mirror.additionalImages[1]");
    let cases = [
        (
            "kind: Pod\napiVersion: v1\n",
            "expected ImageSetConfiguration",
        ),
        (
            "kind: ImageSetConfiguration\napiVersion: v1\n",
            "mirror.openshift.io",
        ),
        (HEAD, "lists no images"),
        (
            "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  additionalImages:\n  - name: 'bad ref'\n",
            "additionalImages[0].name",
        ),
        ("[", "isc.yaml"),
        (
            "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  operators:\n  - catalog: c\n",
            "(mirror.operators not read",
        ),
    ];
    for (text, want) in cases {
        let err = parse_imageset(text, "isc.yaml").unwrap_err().to_string();
        assert!(err.contains(want), "{text:?}: {err}");
    }
}

/// Issue 22, item 9: YAML merge keys in an ImageSetConfiguration are applied.
#[test]
fn imageset_merge_keys_are_applied() {
    let set = parse("mirror:\n  additionalImages:\n  - &i {name: quay.io/org/a:v1}\n  - <<: *i\n")
        .unwrap();
    assert_eq!(set.entries.len(), 2);
    assert_eq!(set.entries[1].image.to_string(), "quay.io/org/a:v1");
}

#[test]
fn imageset_sections_not_read_are_warned_about() {
    let set = parse("mirror:\n  platform:\n    channels:\n    - name: stable-4.18\n  operators:\n  - catalog: registry.redhat.io/redhat/redhat-operator-index:v4.18\n  helm: {}\n  additionalImages:\n  - name: quay.io/org/img:v1\n").unwrap();
    assert_eq!(set.entries.len(), 1);
    let warnings = set.warnings(&needed());
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(warnings[0].starts_with("isc.yaml: mirror.platform is not checked"));
    assert!(warnings[1].starts_with("isc.yaml: mirror.operators is not checked"));
    assert!(
        warnings[2].starts_with(
            "isc.yaml: mirror.platform.platforms: oc-mirror copies linux/amd64 only of the \
             release payload (not the mirror.additionalImages checked here)"
        ),
        "{}",
        warnings[2]
    );
}

/// The `os/architecture` of the default policy's hosts.
fn needed() -> BTreeSet<String> {
    ["linux/amd64", "windows/amd64"].map(String::from).into()
}

/// Issue 20, item 5: each entry's filters as oc-mirror v2 reads them. One row per rule, with
/// the oc-mirror file and function (or type) it follows.
#[test]
fn additional_images_carry_what_oc_mirror_copies_and_where() {
    // (rule and source, entry YAML, platforms, targetRepo, targetTag)
    type Row<'a> = (
        &'a str,
        &'a str,
        &'a [&'a str],
        Option<&'a str>,
        Option<&'a str>,
    );
    let rows: [Row; 4] = [
        (
            "type_config.go AdditionalImage.Platforms: empty mirrors all platforms \
             (type_internal.go CopyImageSchema.Platforms: nil means all)",
            "{name: quay.io/org/img:v1}",
            &[],
            None,
            None,
        ),
        (
            "type_platform.go InstancePlatformFilter: os + architecture, written os/architecture \
             (InstancePlatformFilter.String)",
            "{name: quay.io/org/img:v1, platforms: [{os: linux, architecture: amd64}, {os: windows, architecture: amd64}]}",
            &["linux/amd64", "windows/amd64"],
            None,
            None,
        ),
        (
            "local_stored_collector.go AdditionalImagesCollector: targetRepo replaces the \
             repository path",
            "{name: quay.io/org/img:v1, targetRepo: mirrored/img}",
            &[],
            Some("mirrored/img"),
            None,
        ),
        (
            "local_stored_collector.go AdditionalImagesCollector: targetTag replaces the tag",
            "{name: quay.io/org/img:v1, targetTag: v1-mirrored}",
            &[],
            None,
            Some("v1-mirrored"),
        ),
    ];
    for (rule, yaml, platforms, repo, tag) in rows {
        let set = parse(&format!("mirror:\n  additionalImages:\n  - {yaml}\n")).unwrap();
        let e = &set.entries[0];
        assert_eq!(e.platforms, platforms, "{rule}");
        assert_eq!(e.target_repo.as_deref(), repo, "{rule}");
        assert_eq!(e.target_tag.as_deref(), tag, "{rule}");
    }
}

/// Issue 20, item 5: what oc-mirror would refuse or skip is bad input naming the field, never a
/// silent pass.
#[test]
fn bad_filters_and_targets_name_the_field() {
    let rows = [
        (
            // type_platform.go ValidatePlatforms: an empty OS or architecture is an error.
            "mirror:\n  additionalImages:\n  - {name: quay.io/o/i:v1, platforms: [{os: windows}]}\n",
            "isc.yaml: mirror.additionalImages[0].platforms[0]",
        ),
        (
            // local_stored_collector.go AdditionalImagesCollector: an invalid targetRepo
            // (type_config.go IsValidPathComponent) makes oc-mirror skip the image.
            "mirror:\n  additionalImages:\n  - {name: quay.io/o/i:v1, targetRepo: 'Bad/Repo:tag'}\n",
            "isc.yaml: mirror.additionalImages[0].targetRepo",
        ),
        (
            "mirror:\n  additionalImages:\n  - {name: quay.io/o/i:v1, targetTag: 'no tag'}\n",
            "isc.yaml: mirror.additionalImages[0].targetTag",
        ),
        (
            // A key oc-mirror's InstancePlatformFilter does not have: it would be ignored.
            "mirror:\n  additionalImages:\n  - {name: quay.io/o/i:v1, platforms: [{os: windows, architecture: amd64, osVersion: 10.0.17763}]}\n",
            "osVersion",
        ),
        (
            "mirror:\n  additionalImages:\n  - {name: quay.io/o/i:v1, platform: [{os: windows, architecture: amd64}]}\n",
            "platform",
        ),
        (
            "mirror:\n  operators:\n  - {catalog: c, platforms: [{architecture: amd64}]}\n  additionalImages:\n  - {name: quay.io/o/i:v1}\n",
            "isc.yaml: mirror.operators[0].platforms[0]",
        ),
    ];
    for (body, want) in rows {
        let err = parse(body).unwrap_err().to_string();
        assert!(err.contains(want), "{body}: {err}");
    }
    let err = parse_imageset(
        "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v1alpha2\nmirror:\n  additionalImages:\n  - name: quay.io/o/i:v1\n",
        "isc.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("oc-mirror v1") && err.contains("v2alpha1"),
        "{err}"
    );
}

/// Issue 20, item 5 and issue 32, item 3: a filter of a section imgcheck does not read that
/// leaves out a platform the hosts need (Windows or Linux) is told, naming the field to set (type_config.go `Platform`: platforms, else the deprecated
/// architectures as linux/ARCH, else linux/amd64; `Operator.Platforms`, `Chart.Platforms`:
/// empty copies every platform).
#[test]
fn section_filters_that_leave_a_needed_platform_out_are_told() {
    let image = "  additionalImages:\n  - {name: quay.io/o/i:v1}\n";
    let windows = "{os: windows, architecture: amd64}";
    let rows: [(&str, Option<(&str, &str)>); 7] = [
        (
            "  platform:\n    channels: [{name: stable-4.18}]\n",
            Some((
                "mirror.platform.platforms: oc-mirror copies linux/amd64 only",
                windows,
            )),
        ),
        (
            "  platform:\n    channels: [{name: stable-4.18}]\n    architectures: [amd64, arm64]\n",
            Some((
                "copies linux/amd64, linux/arm64 only of the release payload (not the \
                 mirror.additionalImages checked here) (the deprecated mirror.platform.architectures",
                windows,
            )),
        ),
        (
            "  platform:\n    channels: [{name: stable-4.18}]\n    platforms: [{os: linux, architecture: amd64}, {os: windows, architecture: amd64}]\n",
            None,
        ),
        ("  operators:\n  - {catalog: c}\n", None),
        (
            "  operators:\n  - {catalog: c, platforms: [{os: linux, architecture: arm64}]}\n",
            Some((
                "mirror.operators[0].platforms: oc-mirror copies linux/arm64 only",
                "{os: linux, architecture: amd64} and {os: windows, architecture: amd64}",
            )),
        ),
        (
            "  helm:\n    repositories:\n    - {name: r, url: u, charts: [{name: c, platforms: [{os: linux, architecture: amd64}]}]}\n",
            Some((
                "mirror.helm.repositories[0].charts[0].platforms: oc-mirror copies linux/amd64",
                windows,
            )),
        ),
        (
            "  helm:\n    local:\n    - {name: c, path: p, platforms: [{os: windows, architecture: amd64}]}\n",
            Some((
                "mirror.helm.local[0].platforms: oc-mirror copies windows/amd64 only",
                "{os: linux, architecture: amd64}",
            )),
        ),
    ];
    for (section, want) in rows {
        let set = parse(&format!("mirror:\n{section}{image}")).unwrap();
        let warnings = set.warnings(&needed());
        let drops: Vec<&String> = warnings
            .iter()
            .filter(|w| w.contains("will not be mirrored"))
            .collect();
        match want {
            Some((w, add)) => assert!(
                drops.len() == 1 && drops[0].contains(w) && drops[0].contains(add),
                "{section}: {drops:?}"
            ),
            None => assert!(drops.is_empty(), "{section}: {drops:?}"),
        }
    }
}

#[test]
fn target_repos_follow_oc_mirrors_path_component_rule() {
    // type_config.go IsValidPathComponent
    for ok in ["a", "ocp4/openshift4", "a.b/c_d/e__f/g-h/i---j", "0"] {
        assert!(is_valid_target_repo(ok), "{ok}");
    }
    for bad in [
        "", "A", "a/", "/a", "a//b", "a:b", "a@b", "-a", "a.", "a._b", "a___b", "a..b",
    ] {
        assert!(!is_valid_target_repo(bad), "{bad}");
    }
}
