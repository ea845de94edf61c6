//! The images a run verifies when a cluster's inputs name them: the components of a release
//! payload (`--from-release`) and the containers of pod templates (`--from-manifests`), each
//! with where it was found and, for pod templates, the hosts its pods can land on.

use std::collections::{BTreeMap, BTreeSet};

use crate::batch::{Scope, Target};
use crate::cluster::manifests::ImageUse;
use crate::cluster::release::Release;
use crate::engine::{ImageReport, Origin};
use crate::policy::{Host, Isolation, Policy};

/// The components `names` of `release`: a target for each one the payload has (in the order
/// of `names`), and a failing `release-image-missing` report for each it lacks.
pub fn from_release(release: &Release, names: &[String]) -> (Vec<Target>, Vec<ImageReport>) {
    let mut targets = Vec::new();
    let mut missing = Vec::new();
    for name in names {
        let origin = Origin::Release {
            release: release.reference.clone(),
            release_digest: release.digest.clone(),
            version: release.version.clone(),
            tag: name.clone(),
        };
        match release.tags.iter().find(|t| &t.name == name) {
            Some(tag) => targets.push(Target {
                reference: tag.image.clone(),
                origins: vec![origin],
                scope: None,
            }),
            None => missing.push(ImageReport::release_image_missing(
                &format!("{}#{name}", release.reference),
                format!(
                    "release {} has no component '{name}': its release-manifests/image-references \
                     names {} others",
                    release.version.as_deref().unwrap_or(&release.reference),
                    release.tags.len()
                ),
                origin,
            )),
        }
    }
    (targets, missing)
}

/// The labels a node of `host` carries that pod placement can test: `kubernetes.io/os`,
/// `kubernetes.io/arch` and, on Windows, `node.kubernetes.io/windows-build` (`10.0.17763`).
pub fn host_labels(host: &Host) -> BTreeMap<&'static str, String> {
    let p = &host.platform;
    let mut labels = BTreeMap::from([
        ("kubernetes.io/os", p.os.clone()),
        ("kubernetes.io/arch", p.architecture.clone()),
    ]);
    if let Some(v) = p.windows_version() {
        labels.insert(
            "node.kubernetes.io/windows-build",
            format!("{}.{}.{}", v.major, v.minor, v.build),
        );
    }
    labels
}

/// The images of pod templates, one target per image (in order of first use): judged for the
/// hosts of `policy` any of its pods can land on, with `hostprocess` isolation when every pod
/// of it that can land on a Windows host is a HostProcess pod.
pub fn from_manifests(uses: &[ImageUse], policy: &Policy) -> Vec<Target> {
    let mut order: Vec<String> = Vec::new();
    let mut by_image: BTreeMap<String, Vec<&ImageUse>> = BTreeMap::new();
    for u in uses {
        let key = u.image.to_string();
        if !by_image.contains_key(&key) {
            order.push(key.clone());
        }
        by_image.entry(key).or_default().push(u);
    }
    order
        .iter()
        .map(|key| target_of(&by_image[key], policy))
        .collect()
}

fn target_of(uses: &[&ImageUse], policy: &Policy) -> Target {
    let admits = |h: &Host| {
        let labels = host_labels(h);
        uses.iter().any(|u| u.placement.admits(&labels))
    };
    let on_windows: Vec<&&ImageUse> = uses
        .iter()
        .filter(|u| {
            policy
                .hosts()
                .iter()
                .any(|h| h.platform.is_windows() && u.placement.admits(&host_labels(h)))
        })
        .collect();
    let isolation = match !on_windows.is_empty() && on_windows.iter().all(|u| u.hostprocess) {
        true => Isolation::Hostprocess,
        false => Isolation::Process,
    };
    let placements: BTreeSet<String> = uses.iter().map(|u| u.placement.to_string()).collect();
    Target {
        reference: uses[0].image.clone(),
        origins: uses.iter().map(|u| manifest_origin(u)).collect(),
        scope: Some(Scope {
            policy: policy.scoped(admits, isolation),
            placement: placements.into_iter().collect::<Vec<_>>().join(" or "),
        }),
    }
}

fn manifest_origin(u: &ImageUse) -> Origin {
    let o = &u.origin;
    let object = match &o.namespace {
        Some(ns) => format!("{} {ns}/{}", o.kind, o.name),
        None => format!("{} {}", o.kind, o.name),
    };
    Origin::Manifest {
        path: o.path.clone(),
        object,
        container: o.container.clone(),
    }
}

/// One target per reference, in order of first appearance: origins joined; an image also
/// named without a scope (typed, listed, a release component) is judged for every host.
pub fn merge(targets: Vec<Target>) -> Vec<Target> {
    let mut merged: Vec<Target> = Vec::new();
    for t in targets {
        let key = t.reference.to_string();
        match merged.iter_mut().find(|m| m.reference.to_string() == key) {
            Some(m) => {
                for o in t.origins {
                    if !m.origins.contains(&o) {
                        m.origins.push(o);
                    }
                }
                if t.scope.is_none() {
                    m.scope = None;
                }
            }
            None => merged.push(t),
        }
    }
    merged
}
