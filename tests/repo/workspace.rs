//! The workspace keeps its protections for every member (docs/architecture.md#crates): the
//! lints — the determinism bans among them — and the release profile's assertions follow the
//! code into every crate, so moving code into a new crate never switches them off.

use std::fs;

use toml::Table;

use crate::tree::root;

/// The root manifest, parsed.
fn root_manifest() -> Table {
    let text = fs::read_to_string(root().join("Cargo.toml")).expect("the root Cargo.toml");
    text.parse().expect("the root Cargo.toml is TOML")
}

/// Every member's path (as written in `[workspace] members`) and its parsed manifest.
fn members() -> Vec<(String, Table)> {
    let manifest = root_manifest();
    let members = manifest["workspace"]["members"]
        .as_array()
        .expect("[workspace] members is a list");
    members
        .iter()
        .map(|member| {
            let path = member.as_str().expect("a member is a path").to_owned();
            assert!(
                !path.contains('*'),
                "list members one by one, not by glob: {path}"
            );
            let file = root().join(&path).join("Cargo.toml");
            let text =
                fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let table = text
                .parse()
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            (path, table)
        })
        .collect()
}

fn package_name(manifest: &Table) -> &str {
    manifest["package"]["name"].as_str().expect("package.name")
}

#[test]
fn every_member_takes_the_workspace_lints() {
    let without: Vec<String> = members()
        .iter()
        .filter(|(_, manifest)| {
            manifest
                .get("lints")
                .and_then(|lints| lints.get("workspace"))
                .and_then(toml::Value::as_bool)
                != Some(true)
        })
        .map(|(path, _)| path.clone())
        .collect();
    assert!(
        without.is_empty(),
        "members without `[lints] workspace = true` (the determinism bans and the lints of \
         [workspace.lints] do not reach them): {without:?}"
    );
}

#[test]
fn every_member_keeps_assertions_in_release() {
    let manifest = root_manifest();
    let overrides = manifest["profile"]["release"]["package"]
        .as_table()
        .expect("[profile.release.package.*] overrides");
    let mut missing = Vec::new();
    for (_, member) in members() {
        let name = package_name(&member);
        let on = |key: &str| {
            overrides
                .get(name)
                .and_then(|o| o.get(key))
                .and_then(toml::Value::as_bool)
                == Some(true)
        };
        if !(on("debug-assertions") && on("overflow-checks")) {
            missing.push(name.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "members without debug-assertions and overflow-checks in the release profile \
         ([profile.release.package.<name>] in the root Cargo.toml): {missing:?}"
    );
}

#[test]
fn every_override_names_a_member() {
    let names: Vec<String> = members()
        .iter()
        .map(|(_, m)| package_name(m).to_owned())
        .collect();
    let manifest = root_manifest();
    let overrides = manifest["profile"]["release"]["package"]
        .as_table()
        .expect("[profile.release.package.*] overrides");
    let stale: Vec<&String> = overrides.keys().filter(|k| !names.contains(k)).collect();
    assert!(
        stale.is_empty(),
        "release overrides for packages that are not members: {stale:?}"
    );
}
