//! The run's driver check: the CSI drivers whose Linux and Windows halves the run's inputs
//! hold (pod templates: the current halves; a release: the target halves), planned before
//! the images are checked, and judged once their sources are known — one report per driver,
//! after the images' (`driver-skew`, `engine::judge_driver`).

use std::collections::{BTreeSet, HashMap};

use super::targets::{Target, identity};
use crate::cluster::drivers::{DRIVER_CONTAINER, WorkloadPair, pair_components, target_components};
use crate::cluster::release::Release;
use crate::engine::judge_driver;
use crate::engine::{DriverCheck, DriverHalf, DriverStage, EntrySource, HalfOs, ImageReport};
use crate::policy::{DriverPolicy, SkewSeverity};
use crate::reference::ImageRef;

/// One half as planned: its OS, where it was found, its image.
#[derive(Debug, Clone)]
struct PlannedHalf {
    os: HalfOs,
    from: String,
    image: ImageRef,
}

/// One driver as planned: its name, why its halves pair, and the halves at each stage.
#[derive(Debug, Clone)]
pub struct PlannedDriver {
    name: String,
    paired_by: String,
    skew: SkewSeverity,
    stages: Vec<(&'static str, PlannedHalf, PlannedHalf)>,
}

/// The halves of a release component `name` (`None`: the payload lacks it).
fn component(release: &Release, name: &str, os: HalfOs) -> Option<PlannedHalf> {
    let tag = release.tags.iter().find(|t| t.name == name)?;
    let version = release.version.as_deref().unwrap_or(&release.reference);
    Some(PlannedHalf {
        os,
        from: format!("release {version} component {name}"),
        image: tag.image.clone(),
    })
}

/// The drivers of a run: each pair of DaemonSets (one driver per container both run; the
/// target stage from the release, when it holds the pair's component), then the release's
/// own pairs of components. Also the components to verify for them beyond `components`.
pub fn plan(
    pairs: &[WorkloadPair],
    release: Option<&Release>,
    components: &[String],
    policy: &[DriverPolicy],
) -> (Vec<PlannedDriver>, Vec<String>) {
    let mut planned = Vec::new();
    let mut extra = BTreeSet::new();
    let names: Vec<String> = release
        .map(|r| r.tags.iter().map(|t| t.name.clone()).collect())
        .unwrap_or_default();
    for pair in pairs {
        let target = release.zip(target_components(pair, &names));
        for (container, l, w) in pair.containers() {
            let from = |w: &crate::cluster::drivers::Workload| {
                format!("{} container {container}", w.object())
            };
            let mut stages = vec![(
                "current",
                PlannedHalf {
                    os: "linux",
                    from: from(&pair.linux),
                    image: l,
                },
                PlannedHalf {
                    os: "windows",
                    from: from(&pair.windows),
                    image: w,
                },
            )];
            let driver_container = pair.container.as_deref().unwrap_or(DRIVER_CONTAINER);
            if let Some((release, (lc, wc))) = &target
                && container == driver_container
                && let (Some(l), Some(w)) = (
                    component(release, lc, "linux"),
                    component(release, wc, "windows"),
                )
            {
                extra.extend([lc.clone(), wc.clone()]);
                stages.push(("target", l, w));
            }
            let name = match pair.containers().len() {
                1 => pair.name.clone(),
                _ => format!("{} ({container})", pair.name),
            };
            planned.push(PlannedDriver {
                name,
                paired_by: pair.paired_by.clone(),
                skew: pair.skew,
                stages,
            });
        }
    }
    if let Some(release) = release {
        for (name, lc, wc, paired_by, skew) in pair_components(components, policy) {
            let (Some(l), Some(w)) = (
                component(release, &lc, "linux"),
                component(release, &wc, "windows"),
            ) else {
                continue;
            };
            extra.extend([lc, wc]);
            planned.push(PlannedDriver {
                name,
                paired_by,
                skew,
                stages: vec![("target", l, w)],
            });
        }
    }
    let extra = extra
        .into_iter()
        .filter(|c| !components.contains(c))
        .collect();
    (planned, extra)
}

/// The drivers' images among `targets`: the target index of each planned image.
pub fn watched(planned: &[PlannedDriver], targets: &[Target]) -> HashMap<String, usize> {
    let index: HashMap<String, usize> = (targets.iter().enumerate())
        .map(|(i, t)| (identity(&t.reference), i))
        .collect();
    let mut out = HashMap::new();
    for (_, l, w) in planned.iter().flat_map(|d| &d.stages) {
        for half in [l, w] {
            let key = identity(&half.image);
            if let Some(&i) = index.get(&key) {
                out.insert(key, i);
            }
        }
    }
    out
}

/// One report per planned driver, from the sources of the images read (`sources`, by target
/// index; `watched` maps each image to its index).
pub fn reports(
    planned: &[PlannedDriver],
    watched: &HashMap<String, usize>,
    sources: &HashMap<usize, Vec<EntrySource>>,
) -> Vec<ImageReport> {
    let half = |h: &PlannedHalf| {
        let read = (watched.get(&identity(&h.image))).and_then(|i| sources.get(i));
        DriverHalf::new(
            h.os,
            h.from.clone(),
            h.image.to_string(),
            read.map(Vec::as_slice),
        )
    };
    planned
        .iter()
        .map(|d| {
            judge_driver(&DriverCheck {
                name: d.name.clone(),
                paired_by: d.paired_by.clone(),
                skew: d.skew,
                stages: (d.stages.iter())
                    .map(|(stage, l, w)| DriverStage {
                        stage,
                        linux: half(l),
                        windows: half(w),
                    })
                    .collect(),
            })
        })
        .collect()
}
