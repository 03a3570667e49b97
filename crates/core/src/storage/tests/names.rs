//! File-name validation and `safe_name`.

use super::{bad_names, invalid_name};
use crate::storage::{FileStorage, Storage, fnv1a_64, safe_name, validate_name};

#[test]
fn valid_names_are_accepted() {
    for name in ["a", "x.log", "A-b_c.9", "-dash", &"n".repeat(128)] {
        assert!(validate_name(name).is_ok(), "{name:?} should be valid");
    }
}

#[test]
fn invalid_names_are_refused_with_their_reason() {
    for (name, reason) in bad_names() {
        assert_eq!(
            invalid_name(validate_name(&name)),
            (name, reason.to_string())
        );
    }
}

#[test]
fn non_ascii_and_control_characters_are_refused() {
    let (_, reason) = invalid_name(validate_name("caf\u{e9}"));
    assert_eq!(
        reason,
        "'\u{e9}' at byte 3 is not allowed: only A-Z a-z 0-9 . _ - are (map external ids with \
         `storage::safe_name`)"
    );
    let (_, reason) = invalid_name(validate_name("a\0b"));
    assert!(
        reason.starts_with("'\\0' at byte 1 is not allowed"),
        "{reason}"
    );
}

#[test]
fn invalid_name_display_says_name_and_reason() {
    let err = validate_name("a/b").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid storage file name \"a/b\": '/' at byte 1 is not allowed: only A-Z a-z 0-9 . _ - \
         are (map external ids with `storage::safe_name`)"
    );
}

/// Published FNV-1a 64 test vectors (draft-eastlake-fnv, appendix C; isthe.com test suite).
#[test]
fn fnv1a_64_matches_published_vectors() {
    assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a_64(b"foobar"), 0x8594_4171_f739_67e8);
}

/// The mapping is an on-disk format: these must never change (cross-checked against an
/// independent Python implementation of FNV-1a 64 when they were pinned).
#[test]
fn safe_name_golden_values() {
    assert_eq!(
        safe_name("session-1", ".log"),
        "session-1-1688595dcf49184d.log"
    );
    assert_eq!(
        safe_name("../../etc/passwd", ".log"),
        "_._.._etc_passwd-2bef2c0bbbdefdfa.log"
    );
    assert_eq!(
        safe_name("caf\u{e9}/\u{1f600} x", ".hwm"),
        "caf____x-c5043e7f87db8e9b.hwm"
    );
}

#[test]
fn ids_with_the_same_prefix_get_different_names() {
    // `/`, `?` and `é` all sanitise to `_`.
    let names = [
        safe_name("a/b", ".log"),
        safe_name("a?b", ".log"),
        safe_name("a\u{e9}b", ".log"),
    ];
    assert!(names.iter().all(|n| n.starts_with("a_b-")), "{names:?}");
    assert_ne!(names[0], names[1]);
    assert_ne!(names[1], names[2]);
    assert_ne!(names[0], names[2]);
    // Ids equal in their first 40 bytes share a prefix too.
    let long = "x".repeat(40);
    let (a, b) = (
        safe_name(&format!("{long}A"), ""),
        safe_name(&format!("{long}B"), ""),
    );
    assert_eq!(a[..41], b[..41]);
    assert_ne!(a, b);
}

#[test]
fn safe_name_is_always_valid() {
    let long = "\u{1f600}".repeat(300);
    let ids = [
        "",
        ".",
        "..",
        "...x",
        "-",
        "/",
        "\0",
        "a\nb",
        "\u{202e}",
        long.as_str(),
    ];
    for id in ids {
        for suffix in ["", ".log", "/../../x", &"s".repeat(200)] {
            let name = safe_name(id, suffix);
            assert!(
                validate_name(&name).is_ok(),
                "{id:?} + {suffix:?} gave {name:?}"
            );
        }
    }
    assert_eq!(safe_name("..", ".log"), "_.-07da1a07b4a03f2d.log");
    assert_eq!(safe_name(&long, ".log").len(), 40 + 1 + 16 + 4);
}

#[tokio::test]
async fn path_traversal_id_stays_inside_the_directory() {
    let root = tempfile::tempdir().unwrap();
    let storage = FileStorage::open(root.path().join("data")).unwrap();
    let name = safe_name("../../etc/passwd", ".log");
    storage.append(&name, b"x").await.unwrap();
    storage.sync(&name).await.unwrap();
    assert_eq!(storage.list().await.unwrap(), vec![name.clone()]);
    assert_eq!(
        std::fs::read(root.path().join("data").join(&name)).unwrap(),
        b"x"
    );
    let outside: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside, vec![std::ffi::OsString::from("data")]);
}
