//! A JSON node list read as it streams (issue 33, item 17): the top-level object's `items`
//! are read one by one into the [`Node`] fields imgcheck reads (name, labels, taints,
//! cordon, `status.nodeInfo`), each handed on (to be judged) before the next is read; no
//! `serde_json::Value` of the list, nor of a node, is ever built, nor a list of [`Node`]s. A single `Node` (no `items`) is read the same way from the top
//! level. serde_json refuses nesting past 128 levels in linear time.

use std::cell::Cell;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::model::{Metadata, Node, NodesCause, NodesError, Spec, Status, is_single_node};

/// Reads the JSON node list `de` reads (`origin` names it in errors), handing each item to
/// `sink` as it is read: `None` when its nodes are those items, or the one `Node` the document
/// is.
pub(super) fn json_nodes<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
    origin: &str,
    sink: &mut dyn FnMut(Node),
) -> Result<Option<Node>, NodesError> {
    let err = |reason: String| NodesError {
        origin: origin.to_string(),
        reason,
        source: None,
    };
    let item = Cell::new(None);
    let read = TopLevel { item: &item, sink }
        .deserialize(&mut *de)
        .and_then(|top| de.end().map(|()| top));
    let top = read.map_err(|e| {
        let reason = match (e.classify(), item.get()) {
            (serde_json::error::Category::Data, Some(i)) => format!("item {i} is not a Node"),
            (serde_json::error::Category::Data, None) => {
                "not a node list (expected `oc get nodes -o json` output)".to_string()
            }
            _ => "not JSON (expected `oc get nodes -o json` output)".to_string(),
        };
        NodesError {
            source: Some(NodesCause::Json(Arc::new(e))),
            ..err(reason)
        }
    })?;
    let single = is_single_node(top.kind.as_deref(), top.items).map_err(err)?;
    Ok(single.then(|| Node {
        kind: "Node".to_string(),
        metadata: top.metadata,
        spec: top.spec,
        status: top.status,
    }))
}

/// What the top-level object holds: its `kind`, how many `items` it has (each handed to the
/// sink as it is read), and the fields of a single `Node`.
#[derive(Default)]
struct Top {
    kind: Option<String>,
    items: Option<usize>,
    metadata: Metadata,
    spec: Spec,
    status: Status,
}

/// Reads the top-level object; `item`: the index of the item being read, if any; `sink` takes
/// each item read.
struct TopLevel<'a> {
    item: &'a Cell<Option<usize>>,
    sink: &'a mut dyn FnMut(Node),
}

impl<'de> DeserializeSeed<'de> for TopLevel<'_> {
    type Value = Top;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Top, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopLevel<'_> {
    type Value = Top;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a List of Node, or a Node")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let mut top = Top::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                // A `kind` that is not a string is no kind, as a missing one.
                "kind" => {
                    top.kind = map
                        .next_value::<serde_json::Value>()?
                        .as_str()
                        .map(str::to_string)
                }
                "items" => {
                    let (item, sink) = (self.item, &mut *self.sink);
                    top.items = map.next_value_seed(Items { item, sink })?
                }
                "metadata" => top.metadata = map.next_value()?,
                "spec" => top.spec = map.next_value()?,
                "status" => top.status = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(top)
    }
}

/// Reads `items`, each as a [`Node`] handed to `sink`, and counts them (`null`: no items).
struct Items<'a> {
    item: &'a Cell<Option<usize>>,
    sink: &'a mut dyn FnMut(Node),
}

impl<'de> DeserializeSeed<'de> for Items<'_> {
    type Value = Option<usize>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Items<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an 'items' array")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut count = 0;
        loop {
            self.item.set(Some(count));
            match seq.next_element::<Node>()? {
                Some(node) => (self.sink)(node),
                None => break,
            }
            count += 1;
        }
        self.item.set(None);
        Ok(Some(count))
    }
}
