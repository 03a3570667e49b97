//! Walking the clone's own text files: the sources, tests, docs and configuration a reader of
//! the repository meets, never `target/` or `.git/`.

use std::fs;
use std::path::{Path, PathBuf};

/// The clone's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Top-level entries that are build output, version control or scratch, not the repository.
const SKIPPED: [&str; 4] = [".git", "target", "runs", "reports"];

/// Extensions of files that may cite the design document or name a path.
const TEXT: [&str; 10] = [
    "rs", "md", "toml", "proto", "yml", "yaml", "cjs", "json", "sh", "",
];

/// Every text file of the repository, as (path relative to the root, contents), sorted.
/// `reports/` is skipped but for its README (the sample is generated output); files that are not
/// UTF-8 are skipped.
pub fn text_files() -> Vec<(PathBuf, String)> {
    let root = root();
    let mut found = Vec::new();
    walk(&root, &root, &mut found);
    let readme = root.join("reports/README.md");
    if let Ok(text) = fs::read_to_string(&readme) {
        found.push((PathBuf::from("reports/README.md"), text));
    }
    found.sort();
    found
}

fn walk(root: &Path, dir: &Path, found: &mut Vec<(PathBuf, String)>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let relative = path
            .strip_prefix(root)
            .expect("below the root")
            .to_path_buf();
        let top = relative
            .components()
            .next()
            .map(|c| c.as_os_str().to_owned());
        if dir == root && top.is_some_and(|t| SKIPPED.iter().any(|s| t == *s)) {
            continue;
        }
        if path.is_dir() {
            walk(root, &path, found);
        } else if is_text(&path)
            && let Ok(text) = fs::read_to_string(&path)
        {
            found.push((relative, text));
        }
    }
}

fn is_text(path: &Path) -> bool {
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    TEXT.contains(&extension) && path.file_name().is_some_and(|n| n != "Cargo.lock")
}
