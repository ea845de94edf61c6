//! Where a pod can land: the node-label requirements of its `nodeSelector`, `spec.os.name` and
//! required node affinity, `spec.nodeName`, and its tolerations against a node's taints,
//! evaluated with Kubernetes' semantics — against every label, taint and field of a node of
//! `--nodes` ([`Placement::lands_on`]), or against the labels imgcheck knows for a policy's
//! host and the policy's taints ([`Placement::admits_host`]). `docs/cluster.md` gives the
//! sources.

use std::collections::BTreeMap;
use std::fmt;

use crate::cluster::nodes::{LABEL_ARCH, LABEL_OS, LABEL_WINDOWS_BUILD};
use crate::scheduling::{Effect, NodeFacts, TAINT_UNSCHEDULABLE, Taint, Toleration, untolerated};

/// The node labels imgcheck knows for a host row; requirements on other keys are undecided.
pub const KNOWN_LABELS: [&str; 3] = [LABEL_OS, LABEL_ARCH, LABEL_WINDOWS_BUILD];

/// Deprecated label keys the kubelet still sets with the same value as a known one.
const ALIASES: [(&str, &str); 2] = [
    ("beta.kubernetes.io/os", LABEL_OS),
    ("beta.kubernetes.io/arch", LABEL_ARCH),
];

/// The operator of a [`Requirement`] (Kubernetes `NodeSelectorOperator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// The label is present and its value is one of the values.
    In,
    /// The label is absent, or its value is none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
    /// The label is present, and its value, as an integer, is greater than the one value.
    Gt,
    /// The label is present, and its value, as an integer, is less than the one value.
    Lt,
}

impl Operator {
    /// The operator spelt as in a manifest (`In`, `NotIn`, …), if it is one.
    pub fn parse(s: &str) -> Option<Operator> {
        use Operator::*;
        [In, NotIn, Exists, DoesNotExist, Gt, Lt]
            .into_iter()
            .find(|o| o.to_string() == s)
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// One label requirement of a node selector term (Kubernetes `NodeSelectorRequirement`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    /// The label key (`kubernetes.io/os`).
    pub key: String,
    /// How the label relates to `values`.
    pub op: Operator,
    /// The values: one or more for `In`/`NotIn`, none for `Exists`/`DoesNotExist`, one for
    /// `Gt`/`Lt` (checked when read; a `Gt`/`Lt` value that is not an integer is accepted, and
    /// the requirement then never holds: [`Requirement::never_holds`]).
    pub values: Vec<String>,
}

impl Requirement {
    /// Whether this holds on no node whatever its labels: a `Gt`/`Lt` whose value is not a
    /// 64-bit integer, which `labels.NewRequirement` refuses, so that the scheduler's node
    /// affinity (component-helpers `nodeaffinity.go`, `LazyErrorNodeSelector.Match`) skips
    /// the term holding it.
    pub fn never_holds(&self) -> bool {
        matches!(self.op, Operator::Gt | Operator::Lt)
            && !matches!(self.values.as_slice(), [v] if v.parse::<i64>().is_ok())
    }

    /// Whether a node whose label `key` has `value` (`None`: no such label) satisfies this.
    /// `Gt`/`Lt` compare as 64-bit integers and fail when either side is not one.
    pub fn holds(&self, value: Option<&str>) -> bool {
        let int = |s: &str| s.parse::<i64>().ok();
        let bound = self.values.first().and_then(|v| int(v));
        match (self.op, value) {
            (Operator::In, Some(v)) => self.values.iter().any(|x| x == v),
            (Operator::NotIn, Some(v)) => !self.values.iter().any(|x| x == v),
            (Operator::In | Operator::Exists | Operator::Gt | Operator::Lt, None) => false,
            (Operator::NotIn | Operator::DoesNotExist, None) => true,
            (Operator::Exists, Some(_)) => true,
            (Operator::DoesNotExist, Some(_)) => false,
            (Operator::Gt, Some(v)) => matches!((int(v), bound), (Some(v), Some(b)) if v > b),
            (Operator::Lt, Some(v)) => matches!((int(v), bound), (Some(v), Some(b)) if v < b),
        }
    }

    /// The known label this requirement is decided by (its key, or the key a deprecated
    /// `beta.kubernetes.io/…` alias stands for); `None` when a host row cannot decide it.
    pub fn known_key(&self) -> Option<&'static str> {
        let key = ALIASES
            .iter()
            .find(|(alias, _)| *alias == self.key)
            .map_or(self.key.as_str(), |(_, known)| known);
        KNOWN_LABELS.into_iter().find(|k| *k == key)
    }

    /// Whether a host with these labels satisfies this; an undecided requirement does (judge
    /// for more hosts, never fewer), unless it [never holds](Requirement::never_holds).
    fn admits(&self, labels: &BTreeMap<&str, String>) -> bool {
        if self.never_holds() {
            return false;
        }
        match self.known_key() {
            Some(key) => self.holds(labels.get(key).map(String::as_str)),
            None => true,
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.key, self.op)?;
        if !self.values.is_empty() {
            write!(f, " [{}]", self.values.join(", "))?;
        }
        Ok(())
    }
}

/// One node selector term: all its requirements must hold (Kubernetes `NodeSelectorTerm`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Term {
    /// Requirements on node labels: the term's `matchExpressions`, with the pod's
    /// `nodeSelector` and `spec.os.name` added.
    pub expressions: Vec<Requirement>,
    /// Requirements on node fields (`matchFields`, e.g. `metadata.name`): never decided from a
    /// host row, so they exclude no host.
    pub fields: Vec<Requirement>,
}

/// Where a pod can land: `nodeSelector` and `spec.os.name` ANDed into every term; the terms of
/// the required node affinity ORed (no terms: any labels); `spec.nodeName`; the tolerations
/// (the DaemonSet controller's included for a DaemonSet's pods, the admission plugin
/// DefaultTolerationSeconds' for every pod); whether the DaemonSet controller places the pods;
/// the pod's own `kubernetes.io/os` label.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Placement {
    /// The terms, any of which admits a node.
    pub terms: Vec<Term>,
    /// `spec.nodeName`: the pod is bound to this node. The scheduler is bypassed; the
    /// DaemonSet controller's own check is not.
    pub node_name: Option<String>,
    /// The pod's tolerations, with those the DaemonSet controller and the admission plugin
    /// DefaultTolerationSeconds add.
    pub tolerations: Vec<Toleration>,
    /// The pods are a DaemonSet's: the controller decides which nodes run one
    /// (`NodeShouldRunDaemonPod`: name, node affinity, `NoSchedule` and `NoExecute` taints),
    /// with or without `spec.nodeName`.
    pub daemonset: bool,
    /// The pod's own `kubernetes.io/os` label (`metadata.labels`, the template's for a
    /// controller): the kubelet rejects the pod on a node of another OS.
    pub os_label: Option<String>,
}

/// Why a pod does not land on a node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PlacementRefusal {
    /// `spec.nodeName` names another node.
    NodeName(String),
    /// The node's labels (or name, for `matchFields`) match no term.
    Labels,
    /// A `NoSchedule` or `NoExecute` taint the pod does not tolerate.
    Taint(Taint),
    /// The node is cordoned (`spec.unschedulable`) and the pod does not tolerate
    /// `node.kubernetes.io/unschedulable:NoSchedule`.
    Unschedulable,
    /// The pod's own `kubernetes.io/os` label (this one) is not the node's OS: the kubelet
    /// rejects it (`rejectPodAdmissionBasedOnOSSelector`).
    OsLabel(String),
}

impl fmt::Display for PlacementRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlacementRefusal::NodeName(n) => write!(f, "spec.nodeName is {n}"),
            PlacementRefusal::Labels => f.write_str("its node selector and affinity do not match"),
            PlacementRefusal::Taint(t) => write!(f, "it does not tolerate the taint {t}"),
            PlacementRefusal::Unschedulable => {
                f.write_str("the node is unschedulable (cordoned) and the pod does not tolerate it")
            }
            PlacementRefusal::OsLabel(os) => write!(
                f,
                "the kubelet rejects it: the pod's own label kubernetes.io/os is {os}"
            ),
        }
    }
}

impl Placement {
    /// A pod that can land on any node.
    pub fn anywhere() -> Placement {
        Placement::default()
    }

    /// Whether the pod lands on `node` of `--nodes`, as Kubernetes decides it, or why not.
    /// A pod bound by `spec.nodeName` that is not a DaemonSet's bypasses the scheduler: only
    /// the name and the kubelet's admission (node affinity, the pod's own OS label,
    /// `NoExecute` taints) count. A DaemonSet's pods meet the controller's
    /// `NodeShouldRunDaemonPod` (name, node affinity, `NoSchedule`/`NoExecute` taints) bound or
    /// not. Otherwise the scheduler's filters: node affinity (every label,
    /// `matchFields metadata.name`), untolerated `NoSchedule`/`NoExecute` taints, and a
    /// cordoned node; then the kubelet's check of the pod's own OS label.
    pub fn lands_on(&self, node: &NodeFacts) -> Result<(), PlacementRefusal> {
        if let Some(name) = self.node_name.as_ref().filter(|n| **n != node.name) {
            return Err(PlacementRefusal::NodeName(name.clone()));
        }
        if !self.matches_node(node) {
            return Err(PlacementRefusal::Labels);
        }
        if let Some(os) = self
            .os_label
            .as_ref()
            .filter(|os| !node.os().is_empty() && **os != node.os())
        {
            return Err(PlacementRefusal::OsLabel(os.clone()));
        }
        let blocking = (node.taints().iter())
            .filter(|t| self.kept_off_by(t.effect))
            .find(|t| !self.tolerations.iter().any(|x| x.tolerates(t)));
        if let Some(t) = blocking {
            return Err(PlacementRefusal::Taint(t.clone()));
        }
        let cordon = Taint {
            key: TAINT_UNSCHEDULABLE.to_string(),
            value: String::new(),
            effect: Effect::NoSchedule,
        };
        let scheduled = !self.bypasses_scheduler();
        if node.unschedulable && scheduled && !self.tolerations.iter().any(|t| t.tolerates(&cordon))
        {
            return Err(PlacementRefusal::Unschedulable);
        }
        Ok(())
    }

    /// Whether the pod reaches its node without the scheduler or the DaemonSet controller
    /// judging it: bound by `spec.nodeName` and not a DaemonSet's.
    fn bypasses_scheduler(&self) -> bool {
        self.node_name.is_some() && !self.daemonset
    }

    /// Whether an untolerated taint of `effect` keeps the pod off: `NoExecute` only for a pod
    /// that [bypasses the scheduler](Placement::bypasses_scheduler) (the kubelet's
    /// `generalFilter`), `NoSchedule` and `NoExecute` for every other (the scheduler's
    /// TaintToleration filter, the DaemonSet controller's `predicates`).
    fn kept_off_by(&self, effect: Effect) -> bool {
        match self.bypasses_scheduler() {
            true => effect == Effect::NoExecute,
            false => effect.repels(),
        }
    }

    /// Whether the required terms admit `node` (every label, and its name for
    /// `matchFields metadata.name`); no terms admit every node.
    fn matches_node(&self, node: &NodeFacts) -> bool {
        self.terms.is_empty()
            || self.terms.iter().any(|t| {
                t.expressions.iter().all(|r| r.holds(node.label(&r.key)))
                    && t.fields.iter().all(|r| r.holds(Some(&node.name)))
            })
    }

    /// Whether a policy's host with these known labels and the policy's `taints` for its OS
    /// can host the pod: [`Placement::admits`], the pod's own OS label, and no untolerated
    /// taint that keeps it off (`NoSchedule`/`NoExecute`; `NoExecute` only for a pod bound by
    /// `spec.nodeName` that is not a DaemonSet's). A bound pod can land on a host whose nodes
    /// are not known.
    pub fn admits_host(
        &self,
        labels: &BTreeMap<&str, String>,
        taints: &[Taint],
    ) -> Result<(), PlacementRefusal> {
        if !self.admits(labels) {
            return Err(PlacementRefusal::Labels);
        }
        let host_os = labels.get(LABEL_OS);
        if let Some(os) = self
            .os_label
            .as_ref()
            .filter(|os| host_os.is_some_and(|h| h != *os))
        {
            return Err(PlacementRefusal::OsLabel(os.clone()));
        }
        let taints: Vec<Taint> = taints
            .iter()
            .filter(|t| self.kept_off_by(t.effect))
            .cloned()
            .collect();
        match untolerated(&taints, &self.tolerations) {
            Some(t) => Err(PlacementRefusal::Taint(t.clone())),
            None => Ok(()),
        }
    }

    /// Whether a node with these labels can host the pod. `labels` are the labels imgcheck
    /// knows for a host ([`KNOWN_LABELS`]; a key missing from the map is a label the node
    /// lacks). Requirements on other keys, and `matchFields`, do not exclude the host: see
    /// [`Placement::undecided_keys`].
    pub fn admits(&self, labels: &BTreeMap<&str, String>) -> bool {
        self.terms.is_empty()
            || self
                .terms
                .iter()
                .any(|t| t.expressions.iter().all(|r| r.admits(labels)))
    }

    /// What [`Placement::admits`] could not decide and so ignored, sorted and once each: label
    /// keys outside [`KNOWN_LABELS`] (`type`, `node-role.kubernetes.io/worker`) and node fields
    /// as `matchFields metadata.name`.
    pub fn undecided_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .terms
            .iter()
            .flat_map(|t| {
                let labels = t.expressions.iter().filter(|r| r.known_key().is_none());
                let labels = labels.map(|r| r.key.clone());
                labels.chain(t.fields.iter().map(|r| format!("matchFields {}", r.key)))
            })
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return f.write_str("any node");
        }
        let terms: Vec<String> = self
            .terms
            .iter()
            .map(|t| {
                let all: Vec<String> = t.expressions.iter().map(|r| r.to_string()).collect();
                let fields = t.fields.iter().map(|r| format!("field {r}"));
                all.into_iter()
                    .chain(fields)
                    .collect::<Vec<_>>()
                    .join(" and ")
            })
            .collect();
        f.write_str(&terms.join(" or "))
    }
}
