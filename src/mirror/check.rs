//! The mirror gate for one image: does each kind of node find it where it looks, exactly as
//! its source, and can it run what it pulls?
//!
//! After mirroring ([`check_image`]), for each node OS that pulls the image: resolve where its
//! nodes look ([`Mirrors::node_plan`]), gather the evidence ([`gather`]: the source graph,
//! what each mirror holds, the layer blobs) and judge it ([`judge`], pure: presence, byte
//! identity, and the policy on what those nodes pull). A pull no mirror serves fails from the
//! configuration alone, without asking the source: a disconnected node cannot fall back to
//! it. Before mirroring (`--pre`), each source
//! is judged as `verify` does, with what the configuration and the ImageSet will cover
//! ([`judge_copy`]: what oc-mirror will copy). On the Linux nodes' row, the signatures and
//! attestations that did not travel to the mirror ([`travelled`]). The rows of one image
//! become one report ([`combine`]), each finding of one OS's pull marked with it.

use super::config::MirrorConfig;
use super::gather::{Evidence, Held, gather};
use super::hosts::model::HostsConfig;
use super::judge::{add_plan, judge, unread_source};
use super::ocmirror::judge_copy;
use super::pull::{self, NodeOs, NodePlan};
use super::resolve::{ResolveError, resolve};
use super::signatures::travelled;
use crate::engine::{Finding, ImageReport, Origin, Rule, judge as verify, verdict_of};
use crate::graph::WalkOptions;
use crate::platform::RuntimeProfile;
use crate::policy::Policy;
use crate::reference::{ImageRef, RegistryRef};
use crate::session::Session;
use crate::signature::policy::{NodeSignaturePolicy, check_admission};
use crate::source::FetchError;

/// The mirror configuration as each OS reads it, and the OSes in scope.
#[derive(Debug, Clone, Copy)]
pub struct Mirrors<'a> {
    /// IDMS, ITMS, ICSP and registries.conf, as read (Linux nodes: registries.conf).
    pub config: &'a MirrorConfig,
    /// The hosts.toml tree of Windows nodes (WMCO's rendering, or `--hosts-dir`).
    pub windows: &'a HostsConfig,
    /// The node OSes in scope.
    pub oses: &'a [NodeOs],
    /// The runtime profiles of the Windows nodes (they read a hosts.toml without a `host`
    /// table differently).
    pub windows_runtimes: &'a [RuntimeProfile],
}

impl Mirrors<'_> {
    /// How nodes of `os` pull `reference`.
    pub fn node_plan(&self, reference: &RegistryRef, os: NodeOs) -> Result<NodePlan, ResolveError> {
        let resolution = resolve(self.config, reference)?;
        Ok(match os {
            NodeOs::Linux => pull::linux(reference, resolution.as_ref()),
            NodeOs::Windows => {
                let linux = resolution
                    .map(|r| r.mirrors_for(true).into_iter().cloned().collect())
                    .unwrap_or_default();
                let nodes = pull::WindowsNodes {
                    hosts: self.windows,
                    sets: self.config.mirror_sets(),
                    runtimes: self.windows_runtimes,
                };
                pull::windows(reference, nodes, linux)
            }
        })
    }
}

/// The report origin naming the nodes of `os`.
pub fn nodes_origin(os: NodeOs) -> Origin {
    Origin::Nodes {
        os: os.name().into(),
        runtime: os.runtime().into(),
        configured_by: os.configured_by().into(),
    }
}

/// How the gate checks each image.
#[derive(Debug, Clone)]
pub struct Gate {
    /// The runtime profiles what the nodes pull is judged under.
    pub runtimes: Vec<RuntimeProfile>,
    /// Before mirroring: judge each source, and what the configuration and the ImageSets will
    /// cover, instead of the mirrors.
    pub pre: bool,
    /// The gate runs where the sources cannot be reached either (`--disconnected`): the
    /// mirrors of a pinned reference are checked against its digest without asking its
    /// source. (A pull no mirror serves is never asked of its source: the configuration
    /// alone fails it.)
    pub disconnected: bool,
    /// Signatures are required (`--signatures`, or the policy's `signatures.required`): a
    /// signature that did not travel to the mirror Linux nodes pull from is an error, and
    /// under `disconnected` the mirror must hold signatures of its own.
    pub signatures: bool,
    /// Walk options (per image).
    pub walk: WalkOptions,
    /// The Linux nodes' signature policy (`--signature-policy`, `--image-policy`): each Linux
    /// pull's admission predicted, its signature looked for in the mirror that serves it.
    pub admission: Option<NodeSignaturePolicy>,
    /// `--pre` with ImageSetConfigurations: the images they name, which oc-mirror will copy
    /// (and the mirror sets it writes will cover).
    pub imageset: Option<ImageSetImages>,
}

/// The images the run's ImageSetConfigurations name, and the files.
#[derive(Debug, Clone)]
pub struct ImageSetImages {
    /// The ImageSetConfiguration files, as given.
    pub files: Vec<String>,
    /// The images of their `mirror.additionalImages`.
    pub images: Vec<ImageRef>,
}

impl ImageSetImages {
    /// Does an entry name `reference`: the same repository, with its tag or its digest?
    fn names(&self, reference: &ImageRef) -> bool {
        let ImageRef::Registry(r) = reference else {
            return self.images.contains(reference);
        };
        self.images.iter().any(|i| match i {
            ImageRef::Registry(i) => {
                i.registry == r.registry
                    && i.repository == r.repository
                    && ((r.digest.is_some() && i.digest == r.digest)
                        || (r.tag.is_some() && i.tag == r.tag))
            }
            ImageRef::Layout(_) => false,
        })
    }
}

/// One image the gate checks.
#[derive(Debug, Clone, Copy)]
pub struct GateImage<'a> {
    /// The source reference.
    pub reference: &'a ImageRef,
    /// Where the run found it.
    pub origins: &'a [Origin],
    /// How the nodes of each OS that pulls it pull it (none: no mirror configuration).
    pub plans: &'a [NodePlan],
    /// The policy it is judged against (its scope's, or the run's).
    pub policy: &'a Policy,
}

/// Checks one image: after mirroring, for each node OS, where its nodes look ([`judge`]);
/// before mirroring or without a configuration, its source as `verify` does, with the plans'
/// findings. One report, the rows combined ([`combine`]). `Err` only for bad input
/// ([`crate::error::Fault::Input`]); a source or mirror that cannot be reached gives an
/// `error` verdict.
pub async fn check_image(
    session: &Session,
    image: GateImage<'_>,
    gate: &Gate,
) -> Result<ImageReport, FetchError> {
    if gate.pre || image.plans.is_empty() {
        return before_mirroring(session, image, gate).await;
    }
    let mut rows = Vec::with_capacity(image.plans.len());
    for plan in image.plans {
        let report = match plan.plan.mirrors.is_empty() {
            true => unserved(plan),
            false => {
                let ask_pinned_source = !gate.disconnected;
                let evidence = gather(session, plan, gate.walk, ask_pinned_source).await?;
                let mut report = judge(&evidence, image.policy, &gate.runtimes);
                let required = gate.signatures || image.policy.signatures_required();
                travelled(session, &evidence, &mut report, required).await;
                if let Some(node) = &gate.admission
                    && plan.os == NodeOs::Linux
                    && let Some(served) = served_by(&evidence)
                {
                    check_admission(session, node, &evidence.reference, served, &mut report).await;
                }
                report
            }
        };
        rows.push((plan.os, report));
    }
    Ok(combine(&image.reference.to_string(), rows))
}

/// The mirror that serves a pull: the first of the plan that holds the source's image (a
/// node stops there, and CRI-O reads the signatures there).
fn served_by(evidence: &Evidence) -> Option<&RegistryRef> {
    let look = evidence
        .mirrors
        .iter()
        .find(|l| matches!(l.held, Held::Same { .. }))?;
    Some(&look.target)
}

/// The report of a pull no mirror serves: the plan's findings, and the pull's failure when
/// they do not already say it. Nothing is asked: the configuration alone decides (a
/// disconnected node cannot fall back to the source).
fn unserved(plan: &NodePlan) -> ImageReport {
    let mut findings = plan.plan.findings.clone();
    if verdict_of(&findings) != crate::engine::Verdict::Fail {
        let why = match plan.plan.source_blocked {
            true => "the source may not be contacted (NeverContactSource)",
            false => "a disconnected node cannot reach the source",
        };
        findings.push(Finding::new(
            Rule::MirrorNotConfigured,
            format!(
                "no mirror serves {}'s pull of {} and {why}: the pull fails",
                plan.os, plan.reference
            ),
            None,
        ));
    }
    ImageReport::unread(&plan.reference.to_string(), findings)
}

/// One report of an image from the report of each OS's pull: every finding of one OS's row
/// marked with it (a finding every row has, once and unmarked), the host rows one after the
/// other, the worst verdict.
pub fn combine(reference: &str, rows: Vec<(NodeOs, ImageReport)>) -> ImageReport {
    let mut combined = ImageReport::unread(reference, vec![]);
    let shared = |f: &Finding| {
        rows.len() > 1
            && rows.iter().all(|(_, r)| {
                r.findings
                    .iter()
                    .any(|g| g.rule == f.rule && g.message == f.message)
            })
    };
    for (os, r) in &rows {
        for f in &r.findings {
            match shared(f) {
                true if combined.findings.contains(f) => {}
                true => combined.findings.push(f.clone()),
                false => combined.findings.push(f.clone().for_nodes(os.name())),
            }
        }
    }
    for (_, r) in rows {
        combined.digest = combined.digest.or(r.digest);
        combined.verdict = combined.verdict.max(r.verdict);
        combined.hosts.extend(r.hosts);
        combined.binaries.extend(r.binaries);
        combined.admissions.extend(r.admissions);
    }
    combined.findings.sort_by_key(|f| f.severity);
    combined
}

/// Before mirroring (and without a configuration): the source judged as `verify` does, with
/// each OS's plan findings and where its nodes will pull it from, what oc-mirror will copy of
/// it, and — with ImageSets — whether anything will put it in the mirror at all.
async fn before_mirroring(
    session: &Session,
    image: GateImage<'_>,
    gate: &Gate,
) -> Result<ImageReport, FetchError> {
    let r = image.reference;
    let mut report = match session.graph(r, gate.walk).await {
        Ok(g) => {
            let mut report = verify(&g, image.policy, &gate.runtimes);
            judge_copy(&mut report, &g, r, image.policy, image.origins);
            report
        }
        Err(e @ FetchError::BadInput(_)) => return Err(e),
        Err(e) => unread_source(&r.to_string(), &e, &crate::error::one_line(&e)),
    };
    for p in image.plans {
        add_plan(&mut report, p.os, &p.plan);
    }
    // Without a mirror configuration, the nodes pull from the source: its signatures count.
    if let (Some(node), true, ImageRef::Registry(source)) =
        (&gate.admission, image.plans.is_empty(), r)
    {
        check_admission(session, node, source, source, &mut report).await;
    }
    if let Some(f) = not_in_imageset(image, gate) {
        report.findings.push(f);
    }
    report.findings.sort_by_key(|f| f.severity);
    report.verdict = report.verdict.max(verdict_of(&report.findings));
    Ok(report)
}

/// `--pre` with ImageSets: an image that no ImageSet names (the Windows pause image, say) and
/// that no mirror set covers will not be in the mirror: `mirror-not-configured`.
fn not_in_imageset(image: GateImage<'_>, gate: &Gate) -> Option<Finding> {
    let sets = gate.imageset.as_ref()?;
    let listed = image
        .origins
        .iter()
        .any(|o| matches!(o, Origin::Imageset { .. }));
    let covered = image.plans.iter().any(|p| !p.plan.mirrors.is_empty());
    if listed || covered || sets.names(image.reference) {
        return None;
    }
    let what = match image
        .origins
        .iter()
        .any(|o| matches!(o, Origin::Sandbox { .. }))
    {
        true => "the pause image every Windows pod pulls first (windows.sandbox_image)",
        false => "this image",
    };
    Some(Finding::new(
        Rule::MirrorNotConfigured,
        format!(
            "{} is {what}, but no ImageSetConfiguration ({}) lists it in mirror.additionalImages \
             and no mirror set covers it: oc-mirror will not copy it, and a disconnected node \
             cannot pull it; add '- name: {}' to mirror.additionalImages",
            image.reference,
            sets.files.join(", "),
            image.reference
        ),
        None,
    ))
}

/// Why the references cannot be checked under the mirror configuration (bad input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// A mirror of the entry covering a reference rewrites it into no image reference.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// An OCI layout was given with a mirror configuration.
    #[error(
        "{0}: mirror-check needs registry references (an OCI layout is not mirrored by the cluster)"
    )]
    Layout(ImageRef),
}

/// The pull plan of `reference` for each of `oses` under `mirrors` (none without a
/// configuration); refuses an OCI layout when a configuration is given (the cluster mirrors
/// registry references only).
pub fn plans(
    mirrors: Option<Mirrors<'_>>,
    reference: &ImageRef,
    oses: &[NodeOs],
) -> Result<Vec<NodePlan>, TargetError> {
    match (reference, mirrors) {
        (_, None) => Ok(vec![]),
        (ImageRef::Layout(_), Some(_)) => Err(TargetError::Layout(reference.clone())),
        (ImageRef::Registry(reg), Some(m)) => {
            oses.iter().map(|os| Ok(m.node_plan(reg, *os)?)).collect()
        }
    }
}

crate::error::input_errors!(TargetError);
