//! Taints and tolerations as Kubernetes weighs them when it decides whether a pod may land on a
//! node, and the node facts placement reads (name, every label, taints, `spec.unschedulable`).
//! `docs/cluster.md` ("Where a pod can land") gives the sources; the table test in
//! `scheduling/tests.rs` cites the Kubernetes function behind each rule.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The taint the node lifecycle controller puts on a node whose `spec.unschedulable` is set,
/// and the key the scheduler's NodeUnschedulable plugin looks for in a pod's tolerations.
pub const TAINT_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// What a taint does to pods that do not tolerate it (Kubernetes `TaintEffect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Effect {
    /// New pods are not scheduled there.
    NoSchedule,
    /// The scheduler avoids the node when it can: no bar to landing.
    PreferNoSchedule,
    /// New pods are not scheduled there, and running ones are evicted.
    NoExecute,
}

impl Effect {
    /// The effect spelt as in a manifest, if it is one.
    pub fn parse(s: &str) -> Option<Effect> {
        [
            Effect::NoSchedule,
            Effect::PreferNoSchedule,
            Effect::NoExecute,
        ]
        .into_iter()
        .find(|e| e.to_string() == s)
    }

    /// Whether a pod that does not tolerate a taint of this effect is kept off the node (the
    /// scheduler's TaintToleration filter and the DaemonSet controller both filter on
    /// `NoSchedule` and `NoExecute`).
    pub fn repels(self) -> bool {
        matches!(self, Effect::NoSchedule | Effect::NoExecute)
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A node taint (Kubernetes `Taint`): `key[=value]:Effect` as `kubectl taint` writes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Taint {
    /// The key (`os`).
    pub key: String,
    /// The value (`Windows`), empty when none.
    pub value: String,
    /// The effect.
    pub effect: Effect,
}

impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value.is_empty() {
            true => write!(f, "{}:{}", self.key, self.effect),
            false => write!(f, "{}={}:{}", self.key, self.value, self.effect),
        }
    }
}

impl FromStr for Taint {
    type Err = String;

    /// `key[=value]:Effect` (`os=Windows:NoSchedule`).
    fn from_str(s: &str) -> Result<Taint, String> {
        let bad =
            || format!("'{s}' is not a taint KEY[=VALUE]:EFFECT (e.g. os=Windows:NoSchedule)");
        let (kv, effect) = s.rsplit_once(':').ok_or_else(bad)?;
        let effect = Effect::parse(effect).ok_or_else(|| {
            format!("'{s}': the effect is not NoSchedule, PreferNoSchedule or NoExecute")
        })?;
        let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
        if key.is_empty() {
            return Err(bad());
        }
        Ok(Taint {
            key: key.to_string(),
            value: value.to_string(),
            effect,
        })
    }
}

impl<'de> Deserialize<'de> for Taint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for Taint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// How a toleration compares its value (Kubernetes `TolerationOperator`; empty is `Equal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TolerationOp {
    /// The taint's value equals the toleration's.
    Equal,
    /// Any value.
    Exists,
}

/// A pod's toleration (Kubernetes `Toleration`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Toleration {
    /// The taint key; empty (with `Exists`) matches every key.
    pub key: String,
    /// How the value is compared.
    pub op: TolerationOp,
    /// The value (`Equal` only).
    pub value: String,
    /// The effect; `None` matches every effect.
    pub effect: Option<Effect>,
}

impl Toleration {
    /// An `Exists` toleration of `key` with `effect`, as the DaemonSet controller adds them.
    fn exists(key: &str, effect: Effect) -> Toleration {
        Toleration {
            key: key.to_string(),
            op: TolerationOp::Exists,
            value: String::new(),
            effect: Some(effect),
        }
    }

    /// Whether this tolerates `taint`: the effect is empty or the same, the key is empty or
    /// the same, and the operator is `Exists` or the values are equal.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.op {
            TolerationOp::Exists => true,
            TolerationOp::Equal => self.value == taint.value,
        }
    }
}

/// The first taint of `taints` that keeps a pod with `tolerations` off the node: one whose
/// effect is `NoSchedule` or `NoExecute` and that no toleration tolerates. `None`: the taints
/// let the pod land.
pub fn untolerated<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| t.effect.repels())
        .find(|t| !tolerations.iter().any(|tol| tol.tolerates(t)))
}

/// The tolerations the DaemonSet controller adds to every pod it makes: not-ready and
/// unreachable (`NoExecute`), disk, memory and PID pressure and unschedulable (`NoSchedule`),
/// and network-unavailable (`NoSchedule`) for host-network pods.
pub fn daemonset_tolerations(host_network: bool) -> Vec<Toleration> {
    let mut added = vec![
        Toleration::exists("node.kubernetes.io/not-ready", Effect::NoExecute),
        Toleration::exists("node.kubernetes.io/unreachable", Effect::NoExecute),
        Toleration::exists("node.kubernetes.io/disk-pressure", Effect::NoSchedule),
        Toleration::exists("node.kubernetes.io/memory-pressure", Effect::NoSchedule),
        Toleration::exists("node.kubernetes.io/pid-pressure", Effect::NoSchedule),
        Toleration::exists(TAINT_UNSCHEDULABLE, Effect::NoSchedule),
    ];
    if host_network {
        added.push(Toleration::exists(
            "node.kubernetes.io/network-unavailable",
            Effect::NoSchedule,
        ));
    }
    added
}

/// The tolerations the admission plugin DefaultTolerationSeconds (on by default) adds to a
/// pod with `tolerations`: `node.kubernetes.io/not-ready` and `node.kubernetes.io/unreachable`
/// (`Exists`, `NoExecute`, 300 s), each unless a toleration whose key is that key or empty and
/// whose effect is `NoExecute` or empty is already there, whatever its operator and value
/// (k8s.io/kubernetes `plugin/pkg/admission/defaulttolerationseconds/admission.go`,
/// `Plugin.Admit`). A DaemonSet's pods have both already ([`daemonset_tolerations`]).
pub fn default_tolerations(tolerations: &[Toleration]) -> Vec<Toleration> {
    [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    .into_iter()
    .filter(|key| {
        !tolerations.iter().any(|t| {
            (t.key.is_empty() || t.key == *key) && t.effect.is_none_or(|e| e == Effect::NoExecute)
        })
    })
    .map(|key| Toleration::exists(key, Effect::NoExecute))
    .collect()
}

/// What placement reads of one node of `--nodes`: its name, its [shape](NodeShape) (labels,
/// taints, OS: shared with the nodes of the same shape) and whether it is cordoned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFacts {
    /// `metadata.name`.
    pub name: String,
    /// Its labels, taints and OS, kept once for every node of the same shape.
    pub shape: Arc<NodeShape>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// Why the node is skipped (its runtime or Windows build cannot be read): no host row
    /// holds it, and a pod that can land only on such nodes is judged on no host. `None` for
    /// the nodes judged.
    pub skipped: Option<String>,
}

impl NodeFacts {
    /// The value of the node's label `key` (`metadata.labels`), if it has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        let labels = &self.shape.labels;
        let i = labels.binary_search_by(|(k, _)| (**k).cmp(key)).ok()?;
        Some(match &labels[i].1 {
            LabelValue::Text(v) => v,
            LabelValue::Name => &self.name,
        })
    }

    /// `spec.taints`.
    pub fn taints(&self) -> &[Taint] {
        &self.shape.taints
    }

    /// The OS the node's kubelet runs on (`status.nodeInfo.operatingSystem`, else the
    /// `kubernetes.io/os` label): what the kubelet compares a pod's own `kubernetes.io/os`
    /// label with.
    pub fn os(&self) -> &str {
        &self.shape.os
    }
}

/// What the nodes of one shape share: every label, the taints and the kubelet's OS. A cluster's
/// thousands of nodes fall into a few shapes, so a node list keeps each once (memory grows with
/// the shapes, not the nodes); a label whose value is the node's own name
/// (`kubernetes.io/hostname`) is kept as "the name", so it does not make a shape per node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NodeShape {
    /// Every label, sorted by key.
    labels: Box<[(Box<str>, LabelValue)]>,
    taints: Box<[Taint]>,
    os: Box<str>,
}

/// A label's value in a [`NodeShape`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum LabelValue {
    Text(Box<str>),
    /// The node's own name.
    Name,
}

impl NodeShape {
    /// The shape of the node `name` with `labels`, `taints` and kubelet `os`.
    pub fn new(
        name: &str,
        labels: BTreeMap<String, String>,
        taints: Vec<Taint>,
        os: &str,
    ) -> NodeShape {
        let value = |v: String| match v == name {
            true => LabelValue::Name,
            false => LabelValue::Text(v.into()),
        };
        NodeShape {
            labels: labels
                .into_iter()
                .map(|(k, v)| (k.into(), value(v)))
                .collect(),
            taints: taints.into(),
            os: os.into(),
        }
    }
}

#[cfg(test)]
mod tests;
