//! Session ids that try to escape the lease directory: every file the processes create stays
//! directly inside it.

use std::path::Path;
use std::time::Duration;

use leasesim::lease::flock::driver::{Failure, Verb};

use crate::support::{Bound, Holder, granted};
use leasesim_testkit::paths_below;

/// Every entry under `root`, recursively, as paths relative to it.
fn entries(root: &Path) -> Vec<String> {
    let paths = paths_below(root);
    paths
        .iter()
        .map(|path| path.display().to_string())
        .collect()
}

/// The lease directory is `ROOT/leases`; a process acquires and releases sessions named
/// `../x`, `..`, `.`, `a/b`, `a_b`, `../../etc/passwd`, a 256-byte id and unicode ones. Each is
/// its own session (token 1); afterwards `ROOT` holds only `leases`, and `leases` only
/// regular files with plain names. A 257-byte id is refused as an invalid session.
#[test]
fn session_ids_never_escape_the_lease_directory() {
    let bound = Bound::new(Duration::from_secs(20));
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("leases");
    std::fs::create_dir(&dir).unwrap();
    let long = "x/".repeat(128);
    let ids = [
        "../x",
        "..",
        ".",
        "a/b",
        "a_b",
        "../../etc/passwd",
        long.as_str(),
        "séance-日本-🔒",
        "A/B",
    ];
    let mut a = Holder::start(&dir, "A", None, &["--ttl", "30s"], &bound).unwrap();
    for id in ids {
        let reply = a
            .call(&format!("acquire {id}"), Verb::Acquire, &bound)
            .unwrap();
        assert_eq!(granted(&a, &reply).unwrap(), 1, "{id}: {reply:?}");
        let reply = a
            .call(&format!("release {id}"), Verb::Release, &bound)
            .unwrap();
        assert!(reply.ok, "{id}: {reply:?}");
    }
    let too_long = "y".repeat(257);
    let reply = a
        .call(&format!("acquire {too_long}"), Verb::Acquire, &bound)
        .unwrap();
    assert_eq!(reply.error, Some(Failure::InvalidSession), "{reply:?}");
    assert_eq!(
        entries(root.path()).first().map(String::as_str),
        Some("leases")
    );
    for entry in &entries(root.path())[1..] {
        let name = entry
            .strip_prefix("leases/")
            .unwrap_or_else(|| panic!("{entry}"));
        let path = dir.join(name);
        assert!(path.symlink_metadata().unwrap().is_file(), "{entry}");
        let plain = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
        assert!(name.chars().all(plain), "{entry}");
    }
}
