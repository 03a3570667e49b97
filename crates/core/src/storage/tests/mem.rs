//! `MemStorage`: what survives a crash and a torn write.

use std::io::ErrorKind;

use super::{assert_refuses_bad_names, io_err};
use crate::storage::{MemStorage, Storage};

async fn disk_with(file: &str, synced: &[u8], unsynced: &[u8]) -> MemStorage {
    let disk = MemStorage::new();
    disk.append(file, synced).await.unwrap();
    disk.sync(file).await.unwrap();
    disk.append(file, unsynced).await.unwrap();
    disk
}

#[tokio::test]
async fn reads_see_unsynced_bytes_before_a_crash() {
    let disk = disk_with("f", b"abc", b"def").await;
    assert_eq!(disk.read("f").await.unwrap(), b"abcdef");
}

#[tokio::test]
async fn crash_keeps_synced_and_drops_unsynced() {
    let disk = disk_with("f", b"abc", b"def").await;
    disk.crash();
    assert_eq!(disk.read("f").await.unwrap(), b"abc");
    disk.append("f", b"g").await.unwrap();
    disk.sync("f").await.unwrap();
    disk.crash();
    assert_eq!(disk.read("f").await.unwrap(), b"abcg");
}

#[tokio::test]
async fn crash_removes_files_never_synced() {
    let disk = disk_with("a", b"1", b"").await;
    disk.append("b", b"2").await.unwrap();
    assert_eq!(disk.list().await.unwrap(), vec!["a", "b"]);
    disk.crash();
    assert_eq!(disk.list().await.unwrap(), vec!["a"]);
    assert_eq!(disk.read("b").await.unwrap(), b"");
}

#[tokio::test]
async fn crash_tearing_keeps_a_prefix_of_the_unsynced_tail() {
    let disk = disk_with("f", b"abc", b"defgh").await;
    disk.crash_tearing(2);
    assert_eq!(disk.read("f").await.unwrap(), b"abcde");
    // What the torn write left is now on disk like synced data.
    disk.crash();
    assert_eq!(disk.read("f").await.unwrap(), b"abcde");
}

#[tokio::test]
async fn crash_tearing_beyond_the_tail_keeps_it_all() {
    let disk = disk_with("f", b"abc", b"de").await;
    disk.crash_tearing(10);
    assert_eq!(disk.read("f").await.unwrap(), b"abcde");
}

#[tokio::test]
async fn crash_tearing_a_never_synced_file() {
    let disk = MemStorage::new();
    disk.append("torn", b"xyz").await.unwrap();
    disk.append("empty", b"").await.unwrap();
    disk.crash_tearing(2);
    assert_eq!(disk.list().await.unwrap(), vec!["torn"]);
    assert_eq!(disk.read("torn").await.unwrap(), b"xy");
}

#[tokio::test]
async fn truncate_is_durable_and_makes_the_kept_tail_durable() {
    let disk = disk_with("f", b"abcd", b"efgh").await;
    disk.truncate("f", 6).await.unwrap();
    disk.crash();
    assert_eq!(disk.read("f").await.unwrap(), b"abcdef");
    disk.truncate("f", 2).await.unwrap();
    disk.crash();
    assert_eq!(disk.read("f").await.unwrap(), b"ab");
}

#[tokio::test]
async fn truncate_never_extends() {
    let disk = disk_with("f", b"abc", b"").await;
    let (file, kind, message) = io_err(disk.truncate("f", 4).await);
    assert_eq!((file.as_str(), kind), ("f", ErrorKind::InvalidInput));
    assert_eq!(
        message,
        "truncate to 4 bytes: the file is 3 bytes long; truncate never extends a file"
    );
    assert_eq!(disk.read("f").await.unwrap(), b"abc");
    disk.truncate("missing", 0).await.unwrap();
    assert_eq!(
        io_err(disk.truncate("missing", 1).await).1,
        ErrorKind::InvalidInput
    );
    assert!(disk.list().await.unwrap() == vec!["f"]);
}

#[tokio::test]
async fn sync_of_a_missing_file_is_a_no_op() {
    let disk = MemStorage::new();
    disk.sync("missing").await.unwrap();
    assert!(disk.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn clones_share_one_disk() {
    let disk = MemStorage::new();
    let other = disk.clone();
    disk.append("f", b"ab").await.unwrap();
    other.sync("f").await.unwrap();
    disk.append("f", b"c").await.unwrap();
    other.crash();
    assert_eq!(disk.read("f").await.unwrap(), b"ab");
}

#[tokio::test]
async fn list_is_sorted() {
    let disk = MemStorage::new();
    for name in ["b", "a.log", "B", "a"] {
        disk.append(name, b"").await.unwrap();
    }
    assert_eq!(disk.list().await.unwrap(), vec!["B", "a", "a.log", "b"]);
}

#[tokio::test]
async fn invalid_names_are_refused() {
    let disk = MemStorage::new();
    assert_refuses_bad_names(&disk).await;
    assert!(disk.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn debug_shows_sizes_not_contents() {
    let disk = disk_with("f", b"abc", b"de").await;
    assert_eq!(
        format!("{disk:?}"),
        "MemStorage { synced_unsynced_bytes: {\"f\": (3, 2)} }"
    );
}
