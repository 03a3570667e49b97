//! Field ownership (`metadata.managedFields`): which manager, by which operation, set which
//! fields of an object, and the rules of server-side apply that follow from it
//! (docs/apiserver.md#server-side-apply). The rules are those of the real server's
//! structured-merge-diff `Updater` (sigs.k8s.io/structured-merge-diff `merge/update.go`) for an
//! object without lists: a field is a path of map keys to a leaf (a scalar, a list, or an empty
//! map).
//!
//! - An **update** (create, replace, merge or strategic patch) takes every field it changes or
//!   adds for its manager's `Update` entry, from every other entry; a field it removes leaves
//!   every entry.
//! - An **apply** merges its configuration into the object; its manager's `Apply` entry
//!   becomes exactly the configuration's fields; a field the entry held before and the
//!   configuration leaves out is removed from the object unless another entry holds it; a
//!   field another entry holds whose value the apply changes is a conflict — refused unless
//!   forced, when it moves to the applier.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
use serde_json::{Map, Value};

use super::patch::merge_value;

/// The API version every entry names (a Lease is served in one version).
pub(crate) const API_VERSION: &str = "coordination.k8s.io/v1";

/// Paths no manager owns: the real server strips them from every entry
/// (k8s.io/apimachinery `pkg/util/managedfields/internal/stripmeta.go`).
const STRIPPED: [&[&str]; 11] = [
    &["apiVersion"],
    &["kind"],
    &["metadata", "name"],
    &["metadata", "namespace"],
    &["metadata", "creationTimestamp"],
    &["metadata", "selfLink"],
    &["metadata", "uid"],
    &["metadata", "clusterName"],
    &["metadata", "generation"],
    &["metadata", "managedFields"],
    &["metadata", "resourceVersion"],
];

/// A field: the map keys from the object's root to a leaf.
pub(crate) type FieldPath = Vec<String>;

/// A set of fields.
pub(crate) type FieldSet = BTreeSet<FieldPath>;

/// How a manager wrote its fields (`ManagedFieldsEntry.operation`). The order is the real
/// server's order of entries: `Apply` before `Update`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, replace, merge or strategic patch.
    Update,
}

/// One `managedFields` entry's identity: its operation and manager name.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) struct Manager {
    pub(crate) operation: Operation,
    pub(crate) name: String,
}

impl fmt::Display for Manager {
    /// As the real server names a manager in a conflict (`printManager` in k8s.io/apimachinery
    /// `pkg/util/managedfields/internal/conflict.go`; entries here have no `time`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.operation {
            Operation::Apply => write!(f, "{:?}", self.name),
            Operation::Update => write!(f, "{:?} using {API_VERSION}", self.name),
        }
    }
}

/// A field another manager owns that an apply would change.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) struct Conflict {
    pub(crate) manager: Manager,
    pub(crate) field: FieldPath,
}

/// A field as the real server prints it (`fieldpath.Path.String()`: `.spec.holderIdentity`).
pub(crate) fn field_string(field: &FieldPath) -> String {
    field.iter().map(|key| format!(".{key}")).collect()
}

/// Every entry's fields, by manager and operation.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub(crate) struct Managers(BTreeMap<Manager, FieldSet>);

impl Managers {
    /// The entries of `entries` (`metadata.managedFields`); entries without a manager name or
    /// with an unknown operation are dropped.
    pub(crate) fn decode(entries: Option<&[ManagedFieldsEntry]>) -> Managers {
        let mut managers = BTreeMap::new();
        for entry in entries.unwrap_or_default() {
            let operation = match entry.operation.as_deref() {
                Some("Apply") => Operation::Apply,
                Some("Update") => Operation::Update,
                _ => continue,
            };
            let Some(name) = entry.manager.clone() else {
                continue;
            };
            let mut fields = FieldSet::new();
            if let Some(FieldsV1(tree)) = &entry.fields_v1 {
                decode_tree(tree, &mut Vec::new(), &mut fields);
            }
            managers.insert(Manager { operation, name }, fields);
        }
        Managers(managers)
    }

    /// `metadata.managedFields` (`None` when no entry is left): `apiVersion`, `fieldsType:
    /// FieldsV1`, `fieldsV1` in the real server's tree shape (`{"f:spec":{"f:holderIdentity":
    /// {}}}`), `manager`, `operation`; no `time` (the server reads no clock).
    pub(crate) fn encode(&self) -> Option<Vec<ManagedFieldsEntry>> {
        let entries: Vec<_> = self
            .0
            .iter()
            .map(|(manager, fields)| ManagedFieldsEntry {
                api_version: Some(API_VERSION.to_owned()),
                fields_type: Some("FieldsV1".to_owned()),
                fields_v1: Some(FieldsV1(encode_tree(fields))),
                manager: Some(manager.name.clone()),
                operation: Some(format!("{:?}", manager.operation)),
                ..ManagedFieldsEntry::default()
            })
            .collect();
        (!entries.is_empty()).then_some(entries)
    }

    /// Records an update by `manager` from `old` (`Value::Null` for a create) to `new`.
    pub(crate) fn update(&mut self, manager: &str, old: &Value, new: &Value) {
        let (changed, removed) = changes(old, new);
        let own = Manager {
            operation: Operation::Update,
            name: manager.to_owned(),
        };
        for (other, fields) in &mut self.0 {
            if *other != own {
                fields.retain(|f| !changed.contains(f) && !removed.contains(f));
            }
        }
        let fields = self.0.entry(own).or_default();
        fields.retain(|f| !removed.contains(f));
        fields.extend(changed);
        self.0.retain(|_, fields| !fields.is_empty());
    }

    /// Applies `config` for `manager` to `live` (`Value::Null` when the object is missing);
    /// returns the new object.
    ///
    /// # Errors
    /// The conflicts, sorted, when `force` is false and the apply changes fields other entries
    /// own (nothing is changed then).
    pub(crate) fn apply(
        &mut self,
        manager: &str,
        live: &Value,
        config: &Value,
        force: bool,
    ) -> Result<Value, Vec<Conflict>> {
        let own = Manager {
            operation: Operation::Apply,
            name: manager.to_owned(),
        };
        let mut object = live.clone();
        merge_value(&mut object, config);
        let last = self.0.get(&own).cloned().unwrap_or_default();
        let applied = fields(config);
        let mut next = self.clone();
        next.0.insert(own.clone(), applied.clone());
        for field in last.difference(&applied) {
            if !next.0.values().any(|fields| fields.contains(field)) {
                remove(&mut object, field);
            }
        }
        let (changed, removed) = changes(live, &object);
        let conflicts: Vec<Conflict> = next
            .0
            .iter()
            .filter(|(other, _)| **other != own)
            .flat_map(|(other, fields)| {
                fields.intersection(&changed).map(|field| Conflict {
                    manager: other.clone(),
                    field: field.clone(),
                })
            })
            .collect();
        if !force && !conflicts.is_empty() {
            return Err(conflicts);
        }
        for (other, fields) in &mut next.0 {
            if *other != own {
                fields.retain(|f| !changed.contains(f) && !removed.contains(f));
            }
        }
        next.0.retain(|_, fields| !fields.is_empty());
        *self = next;
        Ok(object)
    }
}

/// The fields of `value` no manager is denied ([`STRIPPED`] left out).
pub(crate) fn fields(value: &Value) -> FieldSet {
    let mut found = FieldSet::new();
    collect_leaves(value, &mut Vec::new(), &mut found);
    found.retain(|field| !is_stripped(field));
    found
}

fn is_stripped(field: &FieldPath) -> bool {
    STRIPPED.iter().any(|stripped| {
        field.len() >= stripped.len() && field.iter().zip(stripped.iter()).all(|(a, b)| a == b)
    }) || field.as_slice() == ["metadata"]
}

fn collect_leaves(value: &Value, at: &mut FieldPath, found: &mut FieldSet) {
    match value {
        Value::Null => {}
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                at.push(key.clone());
                collect_leaves(child, at, found);
                at.pop();
            }
        }
        _ if !at.is_empty() => {
            found.insert(at.clone());
        }
        _ => {}
    }
}

/// The fields `new` changes or adds over `old`, and the fields of `old` it removes.
fn changes(old: &Value, new: &Value) -> (FieldSet, FieldSet) {
    let (before, after) = (fields(old), fields(new));
    let changed = after
        .iter()
        .filter(|field| !before.contains(*field) || lookup(old, field) != lookup(new, field))
        .cloned()
        .collect();
    let removed = before.difference(&after).cloned().collect();
    (changed, removed)
}

fn lookup<'a>(value: &'a Value, field: &FieldPath) -> Option<&'a Value> {
    field.iter().try_fold(value, |at, key| at.get(key))
}

fn remove(value: &mut Value, field: &FieldPath) {
    let Some((last, parents)) = field.split_last() else {
        return;
    };
    let parent = parents
        .iter()
        .try_fold(value, |at, key| at.get_mut(key.as_str()));
    if let Some(Value::Object(map)) = parent {
        map.remove(last);
    }
}

/// `fieldsV1`: each key `f:<name>` a map key, `{}` a leaf, `"."` the map itself also owned.
fn encode_tree(fields: &FieldSet) -> Value {
    let mut root = Map::new();
    for field in fields {
        let mut node = &mut root;
        for key in field {
            let child = node
                .entry(format!("f:{key}"))
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(map) = child else {
                unreachable!("fieldsV1 nodes are objects")
            };
            node = map;
        }
    }
    mark_inner_leaves(&mut root, fields, &mut Vec::new());
    Value::Object(root)
}

/// A field that is also a prefix of another field keeps a `"."` member (its node is not
/// empty, so `{}` alone cannot say it is owned).
fn mark_inner_leaves(node: &mut Map<String, Value>, fields: &FieldSet, at: &mut FieldPath) {
    for (key, child) in node.iter_mut() {
        let (Some(name), Value::Object(map)) = (key.strip_prefix("f:"), child) else {
            continue;
        };
        at.push(name.to_owned());
        if !map.is_empty() && fields.contains(at) {
            map.insert(".".to_owned(), Value::Object(Map::new()));
        }
        mark_inner_leaves(map, fields, at);
        at.pop();
    }
}

fn decode_tree(tree: &Value, at: &mut FieldPath, fields: &mut FieldSet) {
    let Value::Object(map) = tree else {
        return;
    };
    if map.is_empty() && !at.is_empty() {
        fields.insert(at.clone());
    }
    for (key, child) in map {
        if key == "." {
            if !at.is_empty() {
                fields.insert(at.clone());
            }
            continue;
        }
        let name = key.strip_prefix("f:").unwrap_or(key);
        at.push(name.to_owned());
        decode_tree(child, at, fields);
        at.pop();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn path(p: &str) -> FieldPath {
        p.split('.').map(str::to_owned).collect()
    }

    #[test]
    fn fields_are_leaves_without_the_stripped_metadata() {
        let object = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "a", "resourceVersion": "3", "annotations": {"x/y": "1"}},
            "spec": {"holderIdentity": "h", "leaseDurationSeconds": 10, "renewTime": null},
        });
        let expected: FieldSet = [
            path("metadata.annotations.x/y"),
            path("spec.holderIdentity"),
            path("spec.leaseDurationSeconds"),
        ]
        .into();
        assert_eq!(fields(&object), expected);
    }

    #[test]
    fn fields_v1_round_trips_in_the_real_servers_shape() {
        let set: FieldSet = [path("spec.holderIdentity"), path("spec.renewTime")].into();
        let tree = encode_tree(&set);
        assert_eq!(
            tree,
            json!({"f:spec": {"f:holderIdentity": {}, "f:renewTime": {}}})
        );
        let mut back = FieldSet::new();
        decode_tree(&tree, &mut Vec::new(), &mut back);
        assert_eq!(back, set);
    }

    #[test]
    fn an_owned_map_with_owned_members_keeps_a_dot() {
        let set: FieldSet = [path("spec"), path("spec.holderIdentity")].into();
        let tree = encode_tree(&set);
        assert_eq!(tree, json!({"f:spec": {".": {}, "f:holderIdentity": {}}}));
        let mut back = FieldSet::new();
        decode_tree(&tree, &mut Vec::new(), &mut back);
        assert_eq!(back, set);
    }

    #[test]
    fn a_manager_is_named_as_the_real_server_names_it() {
        let apply = Manager {
            operation: Operation::Apply,
            name: "a".into(),
        };
        let update = Manager {
            operation: Operation::Update,
            name: "b".into(),
        };
        assert_eq!(apply.to_string(), "\"a\"");
        assert_eq!(update.to_string(), "\"b\" using coordination.k8s.io/v1");
        assert_eq!(
            field_string(&path("spec.holderIdentity")),
            ".spec.holderIdentity"
        );
    }
}
