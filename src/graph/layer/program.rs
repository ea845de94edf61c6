//! `--deep` on one image: every layer streamed once (a Windows layer also gets its layout
//! check on the way), keeping what the program lookup needs (`scan.rs`); then the lookup
//! (`resolve.rs`), which may ask for the headers of a file that was not a target the first
//! time (a link's target, a script's interpreter): only the layer holding it is read again,
//! for that file alone.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;

use super::fetch::read_blob;
use super::resolve::{LayerState, LookupPlan, LookupStep, MAX_PROGRAMS, resolve};
use super::scan::{Targets, scan_linux_layer, scan_windows_layer};
use crate::graph::model::{EntryCheck, LayerFormat, LookupOutcome, Problem, Program};
use crate::manifest::{Descriptor, RunConfig};
use crate::source::Source;

/// What `--deep` learned of one image: each layer's layout check (Windows layers) and the
/// program its container starts.
pub(crate) struct DeepImage {
    /// Per layer, the layout check (`None` for the layers of a Linux image).
    pub formats: Vec<Option<LayerFormat>>,
    /// The program.
    pub entry: EntryCheck,
}

/// Reads the layer `d` for `targets`: its layout check (Windows) and what it gives the lookup.
async fn scan_one<S: Source>(
    source: &S,
    d: &Descriptor,
    targets: Arc<Targets>,
) -> (Option<LayerFormat>, LayerState) {
    let windows = targets.windows;
    let failed = |p: Problem| {
        let why = p.to_string();
        (
            windows.then_some(LayerFormat::Failed(p)),
            LayerState::NotRead(why),
        )
    };
    if d.is_foreign_layer() {
        let why = "foreign layer: --deep does not fetch it from its urls".to_string();
        return (
            windows.then(|| LayerFormat::NotChecked(why.clone())),
            LayerState::NotRead(why),
        );
    }
    let digest = match d.digest() {
        Ok(digest) => digest,
        Err(e) => return failed(Problem::Bad(e.with_causes())),
    };
    let size = u64::try_from(d.size).ok();
    if windows {
        let read = read_blob(source, &digest, size, move |r, limits| {
            scan_windows_layer(r, limits, &targets)
        })
        .await;
        match read {
            Err(p) => failed(p),
            Ok((LayerFormat::Failed(p), _)) => failed(p),
            Ok((format, scan)) => (Some(format), LayerState::Read(scan)),
        }
    } else {
        let read = read_blob(source, &digest, size, move |r, limits| {
            scan_linux_layer(r, limits, &targets)
        })
        .await;
        match read.and_then(|scan| scan) {
            Err(p) => failed(p),
            Ok(scan) => (None, LayerState::Read(scan)),
        }
    }
}

/// Streams the layers of an image (at most `jobs` at once) for the layout check and the
/// program lookup of an image of `os` with run settings `run`.
pub(crate) async fn read_image<S: Source>(
    source: &S,
    layers: &[Descriptor],
    os: &str,
    run: &RunConfig,
    jobs: usize,
) -> DeepImage {
    let plan = LookupPlan::new(os, run);
    let targets = Arc::new(plan.targets());
    let pending: Vec<BoxFuture<'_, (Option<LayerFormat>, LayerState)>> = layers
        .iter()
        .map(|d| -> BoxFuture<'_, _> { Box::pin(scan_one(source, d, Arc::clone(&targets))) })
        .collect();
    let read: Vec<(Option<LayerFormat>, LayerState)> = futures::stream::iter(pending)
        .buffered(jobs.max(1))
        .collect()
        .await;
    let (formats, mut states): (Vec<_>, Vec<_>) = read.into_iter().unzip();
    let mut probed = BTreeMap::new();
    // Each extra read either gives a program its headers or marks a layer unread, and a
    // chain holds at most MAX_PROGRAMS programs: the bound is never reached in practice.
    for _ in 0..=2 * MAX_PROGRAMS {
        let (layer, key) = match resolve(&plan, &states, &probed) {
            LookupStep::Done(entry) => return DeepImage { formats, entry },
            LookupStep::Need { layer, key } => (layer, key),
        };
        let targets = Targets {
            windows: plan.windows,
            probe: BTreeSet::from([key.clone()]),
            dirs: BTreeSet::new(),
        };
        let Some(d) = layers.get(layer) else { break };
        match scan_one(source, d, Arc::new(targets)).await {
            (_, LayerState::Read(mut scan)) => match scan.probed.remove(&key) {
                Some(info) => {
                    probed.insert((layer, key), info);
                }
                None => {
                    states[layer] = LayerState::NotRead(
                        "a second read of the layer did not give the same file".to_string(),
                    )
                }
            },
            (_, not_read) => states[layer] = not_read,
        }
    }
    let entry = EntryCheck {
        command: plan.command.clone(),
        programs: vec![Program {
            name: plan.command.first().cloned().unwrap_or_default(),
            looked_up: vec![],
            outcome: LookupOutcome::NotChecked("the lookup did not settle".to_string()),
        }],
    };
    DeepImage { formats, entry }
}
