//! How the Machine Config Operator merges the mirror sets into a Linux node's registries.conf,
//! as openshift/runtime-utils `pkg/registries` does it (docs/mirroring.md, "Linux nodes"):
//!
//! - entries are grouped by their exact `source`; an entry without a mirror other than its
//!   source is no mirror set at all and is left out, its `mirrorSourcePolicy` too
//!   (`registries.go`, `addMirrorSets` and its "contains a real mirror" test);
//! - the digest entries of one source (IDMS **and** ICSP) are merged into one mirror list, the
//!   ITMS entries into another, each by a topological sort of "mirror before the next one,
//!   the last one before the source" over every entry's list (`topoSortRepos`; `topo.go`,
//!   `topoGraph.Sorted`), which keeps each entry's order where the entries agree and
//!   interleaves them where they do not say;
//! - the source's registry entry gets the digest mirrors (`digest-only`), then the tag mirrors
//!   (`tag-only`), and is blocked when any entry kept says `NeverContactSource`
//!   (`EditRegistriesConfig`, `updateRegistry`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::model::{Mirror, MirrorSet, PullFrom, Registry};

/// The registry entries of `conf` (registries.conf files) with the mirror sets merged in: a
/// source's entry is the registries.conf entry of that prefix when there is one, its mirrors
/// then followed by the merged ones (a mirror it already lists for the same pulls is not
/// added again).
pub(super) fn registries(
    conf: &BTreeMap<String, Registry>,
    sets: &[MirrorSet],
) -> BTreeMap<String, Registry> {
    let mut out = conf.clone();
    let mut by_source: BTreeMap<&str, Vec<&MirrorSet>> = BTreeMap::new();
    for set in sets.iter().filter(|s| has_a_real_mirror(s)) {
        by_source.entry(set.source.as_str()).or_default().push(set);
    }
    for (source, entries) in by_source {
        let reg = out
            .entry(source.to_string())
            .or_insert_with(|| new_entry(source, &entries[0].origin));
        reg.blocked |= entries.iter().any(|e| e.policy.never_contact());
        for pull_from in [PullFrom::DigestOnly, PullFrom::TagOnly] {
            let group: Vec<&MirrorSet> = entries
                .iter()
                .copied()
                .filter(|e| e.kind.pull_from() == pull_from)
                .collect();
            for mirror in merged(source, &group, pull_from) {
                let listed = reg
                    .mirrors
                    .iter()
                    .any(|m| m.location == mirror.location && m.pull_from == pull_from);
                if !listed {
                    reg.mirrors.push(mirror);
                }
            }
        }
    }
    out
}

/// The registry entry a mirror set's source gets when registries.conf has none: the source is
/// its location, or, for a wildcard (`*.example.com`), only its prefix.
fn new_entry(source: &str, origin: &str) -> Registry {
    Registry {
        prefix: source.to_string(),
        location: match source.starts_with("*.") {
            true => String::new(),
            false => source.to_string(),
        },
        blocked: false,
        mirrors: Vec::new(),
        origin: origin.to_string(),
    }
}

/// Does the entry list a mirror other than its source? (runtime-utils: an entry that does not
/// is "not really a mirror set" and is skipped, policy included.)
fn has_a_real_mirror(set: &MirrorSet) -> bool {
    set.mirrors.iter().any(|m| *m != set.source)
}

/// The mirrors of `group` (entries of one source and one kind of pull), in the merged order,
/// each with the origin of the first entry that lists it.
fn merged(source: &str, group: &[&MirrorSet], pull_from: PullFrom) -> Vec<Mirror> {
    let lists: Vec<&[String]> = group.iter().map(|e| e.mirrors.as_slice()).collect();
    topo_order(source, &lists)
        .into_iter()
        .map(|location| {
            let origin = group
                .iter()
                .find(|e| e.mirrors.contains(&location))
                .map(|e| e.origin.clone())
                .unwrap_or_default();
            Mirror {
                location,
                pull_from,
                origin,
            }
        })
        .collect()
}

/// One mirror (or the source) in the graph: its unprocessed predecessors, its successors, and
/// whether it is in the output yet.
#[derive(Default)]
struct Node {
    ins: BTreeSet<usize>,
    outs: BTreeSet<usize>,
    used: bool,
}

/// The mirror lists of one source merged as runtime-utils `topoSortRepos` does: an edge from
/// each mirror to the next, and from the last to the source unless the list names the source;
/// then `topoGraph.Sorted`: the nodes sorted by name, a FIFO queue seeded with those without a
/// predecessor (in name order); each node taken from the queue releases its successors, those
/// left without a predecessor queued in name order; when the queue runs dry with nodes left
/// (a cycle, lists that disagree), the first unused node by name is taken. The source is
/// dropped when it comes last (a node tries it last anyway).
pub(super) fn topo_order(source: &str, lists: &[&[String]]) -> Vec<String> {
    let mut names: Vec<&str> = lists
        .iter()
        .flat_map(|l| l.iter().map(String::as_str))
        .collect();
    names.push(source);
    names.sort_unstable();
    names.dedup();
    let id = |name: &str| names.binary_search(&name).unwrap_or_default();
    let mut nodes: Vec<Node> = names.iter().map(|_| Node::default()).collect();
    let mut edge = |from: usize, to: usize| {
        nodes[from].outs.insert(to);
        nodes[to].ins.insert(from);
    };
    for list in lists.iter().filter(|l| !l.is_empty()) {
        for pair in list.windows(2) {
            edge(id(&pair[0]), id(&pair[1]));
        }
        if !list.iter().any(|m| m == source) {
            edge(id(&list[list.len() - 1]), id(source));
        }
    }
    let mut queue: VecDeque<usize> = (0..names.len())
        .filter(|&n| nodes[n].ins.is_empty())
        .collect();
    let (mut order, mut next_unused) = (Vec::with_capacity(names.len()), 0);
    while order.len() < names.len() {
        let node = match queue.pop_front() {
            Some(n) if nodes[n].used => continue,
            Some(n) => n,
            None => {
                while nodes[next_unused].used {
                    next_unused += 1;
                }
                next_unused
            }
        };
        nodes[node].used = true;
        order.push(node);
        // BTreeSet: the released successors come out in name order.
        for out in nodes[node].outs.clone() {
            nodes[out].ins.remove(&node);
            if nodes[out].ins.is_empty() && !nodes[out].used {
                queue.push_back(out);
            }
        }
    }
    if order.last() == Some(&id(source)) {
        order.pop();
    }
    order.into_iter().map(|n| names[n].to_string()).collect()
}
