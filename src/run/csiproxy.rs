//! The CSI Proxy the Windows nodes run, learned from the csi-proxy HostProcess DaemonSet of
//! `--from-manifests` under `--deep`, when the policy does not name it
//! (`windows.csi_proxy.version`): its image's Windows program is the proxy (main module
//! `github.com/kubernetes-csi/csi-proxy`), whose Go build information names its release.

use super::progress::Note;
use super::targets::Target;
use crate::binary::{ModuleVersion, PROXY_MODULE};
use crate::engine::Origin;
use crate::graph::{Graph, LookupOutcome, WalkOptions};
use crate::policy::{CsiProxyPolicy, Policy};
use crate::session::Session;

/// The target of a pod template container that runs csi-proxy: its image's repository, its
/// container or its workload is named `csi-proxy` (or contains it).
fn proxy_target(targets: &[Target]) -> Option<(&Target, String)> {
    targets.iter().find_map(|t| {
        let object = t.origins.iter().find_map(|o| match o {
            Origin::Manifest { object, .. } => Some(object.clone()),
            _ => None,
        })?;
        t.names()
            .iter()
            .any(|n| n.contains("csi-proxy"))
            .then_some((t, object))
    })
}

/// The release of the proxy program a Windows entry of `graph` runs, with its path; `Err`
/// says what was found instead.
fn release_of(graph: &Graph) -> Result<(ModuleVersion, String), String> {
    let mut seen = None;
    for node in graph.nodes() {
        let Some(image) = node.image() else { continue };
        for program in image.entry.iter().flat_map(|e| &e.programs) {
            let LookupOutcome::Found { path, binary, .. } = &program.outcome else {
                continue;
            };
            let Some(go) = binary.go.as_ref() else {
                continue;
            };
            if go.main_module.as_deref() != Some(PROXY_MODULE) {
                continue;
            }
            let version = go.main_version.clone().unwrap_or_default();
            match ModuleVersion::parse(&version) {
                Some(v) => return Ok((v, path.clone())),
                None => seen = Some(format!("{path} is {PROXY_MODULE} at version '{version}'")),
            }
        }
    }
    Err(seen.unwrap_or_else(|| format!("no Windows program of it is {PROXY_MODULE}")))
}

/// Sets the nodes' CSI Proxy in `policy` (a policy with a `windows:` section).
fn set(policy: &mut Policy, version: &ModuleVersion, source: &str) {
    if let Some(windows) = &mut policy.windows {
        let proxy = windows
            .csi_proxy
            .get_or_insert_with(CsiProxyPolicy::default);
        proxy.version = Some(version.clone());
        proxy.learned_from = Some(source.to_string());
    }
}

/// When the policy does not name the nodes' CSI Proxy and the run reads layers (`--deep`),
/// reads the csi-proxy DaemonSet's image and gives its release to the policy and to every
/// target's scope; a note says what was learned, or why nothing was.
pub(super) async fn learn(
    session: &Session,
    walk: WalkOptions,
    policy: &mut Policy,
    targets: &mut [Target],
) -> Option<Note> {
    let named = policy
        .windows
        .as_ref()
        .is_none_or(|w| w.csi_proxy.as_ref().is_some_and(|p| p.version.is_some()));
    if named {
        return None;
    }
    let (target, object) = proxy_target(targets)?;
    let reference = target.reference.clone();
    if !walk.deep {
        return Some(Note::CsiProxy(format!(
            "the Windows nodes' CSI Proxy ({object}, {reference}) is read with --deep only"
        )));
    }
    let graph = match session.graph(&reference, walk).await {
        Ok(graph) => graph,
        Err(e) => {
            return Some(Note::CsiProxy(format!(
                "the Windows nodes' CSI Proxy ({object}, {reference}) could not be read: {e}"
            )));
        }
    };
    match release_of(&graph) {
        Ok((version, path)) => {
            let source = format!("{object}, {reference}: {path} is {PROXY_MODULE} {version}");
            set(policy, &version, &source);
            for scope in targets.iter_mut().filter_map(|t| t.scope.as_mut()) {
                set(&mut scope.policy, &version, &source);
            }
            Some(Note::CsiProxy(format!(
                "the Windows nodes run CSI Proxy {version} ({source})"
            )))
        }
        Err(why) => Some(Note::CsiProxy(format!(
            "the Windows nodes' CSI Proxy release is not known: {object} ({reference}): {why}"
        ))),
    }
}
