//! Every path below a folder, as the test binaries that check what a command left on disk
//! (`campaign`, `flock`) list it, written once. Each includes this file with `#[path]`
//! (docs/testing.md#helpers-written-once).

use std::path::{Path, PathBuf};

/// Every file and folder below `root`, recursively, as paths relative to it, sorted. Panics
/// when a folder cannot be listed (a test's own temporary folder).
pub fn paths_below(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            found.push(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
    found.sort();
    found
}
