//! `FileStorage` on a temporary directory.

use std::io::{self, ErrorKind};

use super::{assert_refuses_bad_names, io_err};
use crate::storage::{FileStorage, Storage, StorageError, io_error};

fn open_in(root: &tempfile::TempDir) -> FileStorage {
    FileStorage::open(root.path().join("data")).unwrap()
}

/// A storage in `data/` of a fresh temporary directory, and the directory (keep it alive).
fn fresh() -> (tempfile::TempDir, FileStorage) {
    let root = tempfile::tempdir().unwrap();
    let storage = open_in(&root);
    (root, storage)
}

#[tokio::test]
async fn open_creates_the_directory() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("a").join("b");
    let storage = FileStorage::open(&dir).unwrap();
    assert!(dir.is_dir());
    assert_eq!(storage.dir(), dir);
    assert!(storage.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn append_sync_read_truncate_list_round_trip() {
    let (root, storage) = fresh();
    storage.append("b.log", b"hello").await.unwrap();
    storage.append("b.log", b" world").await.unwrap();
    storage.append("a.log", b"").await.unwrap();
    assert_eq!(storage.read("b.log").await.unwrap(), b"hello world");
    storage.sync("b.log").await.unwrap();
    storage.sync("a.log").await.unwrap();
    assert_eq!(storage.list().await.unwrap(), vec!["a.log", "b.log"]);
    storage.truncate("b.log", 5).await.unwrap();
    assert_eq!(storage.read("b.log").await.unwrap(), b"hello");
    storage.append("b.log", b"!").await.unwrap();
    assert_eq!(storage.read("b.log").await.unwrap(), b"hello!");
    let on_disk = std::fs::read(root.path().join("data").join("b.log")).unwrap();
    assert_eq!(on_disk, b"hello!");
}

#[tokio::test]
async fn a_reopened_storage_sees_the_files() {
    let (root, storage) = fresh();
    storage.append("f", b"abc").await.unwrap();
    storage.sync("f").await.unwrap();
    drop(storage);
    let reopened = open_in(&root);
    assert_eq!(reopened.list().await.unwrap(), vec!["f"]);
    assert_eq!(reopened.read("f").await.unwrap(), b"abc");
    reopened.append("f", b"d").await.unwrap();
    reopened.sync("f").await.unwrap();
    assert_eq!(reopened.read("f").await.unwrap(), b"abcd");
}

#[tokio::test]
async fn missing_files_read_empty_and_sync_or_truncate_to_zero_as_no_ops() {
    let (_root, storage) = fresh();
    assert_eq!(storage.read("missing").await.unwrap(), b"");
    storage.sync("missing").await.unwrap();
    storage.truncate("missing", 0).await.unwrap();
    assert!(storage.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn truncate_never_extends() {
    let (root, storage) = fresh();
    storage.append("f", b"abc").await.unwrap();
    let (file, kind, message) = io_err(storage.truncate("f", 4).await);
    assert_eq!(
        file,
        root.path().join("data").join("f").display().to_string()
    );
    assert_eq!(kind, ErrorKind::InvalidInput);
    assert_eq!(
        message,
        "truncate to 4 bytes: the file is 3 bytes long; truncate never extends a file"
    );
    assert_eq!(storage.read("f").await.unwrap(), b"abc");
    assert_eq!(
        io_err(storage.truncate("missing", 1).await).1,
        ErrorKind::InvalidInput
    );
}

#[tokio::test]
async fn invalid_names_are_refused_and_touch_nothing() {
    let (root, storage) = fresh();
    assert_refuses_bad_names(&storage).await;
    let entries = |p: &std::path::Path| std::fs::read_dir(p).unwrap().count();
    assert_eq!(entries(&root.path().join("data")), 0);
    assert_eq!(entries(root.path()), 1);
}

#[tokio::test]
async fn list_ignores_what_is_not_a_storage_file() {
    let (root, storage) = fresh();
    let dir = root.path().join("data");
    std::fs::write(dir.join(".hidden"), b"").unwrap();
    std::fs::write(dir.join("with space"), b"").unwrap();
    std::fs::create_dir(dir.join(".subdir")).unwrap();
    std::fs::write(dir.join("ok.log"), b"").unwrap();
    assert_eq!(storage.list().await.unwrap(), vec!["ok.log"]);
}

/// A directory or a symlink loop where a storage file could be would otherwise be skipped
/// (and its records lost without a word): list refuses it, naming the path.
#[cfg(unix)]
#[tokio::test]
async fn list_refuses_a_storage_name_that_is_not_a_regular_file() {
    for make in ["directory", "symlink loop", "dangling symlink"] {
        let (root, storage) = fresh();
        let path = root.path().join("data").join("s.ledger");
        match make {
            "directory" => std::fs::create_dir(&path).unwrap(),
            "symlink loop" => std::os::unix::fs::symlink(&path, &path).unwrap(),
            _ => std::os::unix::fs::symlink("missing", &path).unwrap(),
        }
        let (file, _, message) = io_err(storage.list().await);
        assert_eq!(file, path.display().to_string(), "{make}");
        assert!(message.contains("regular file"), "{make}: {message}");
    }
}

#[test]
fn open_on_a_file_names_the_path_and_the_step() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("not-a-dir");
    std::fs::write(&path, b"").unwrap();
    let (file, kind, message) = io_err(FileStorage::open(&path));
    assert_eq!(file, path.display().to_string());
    assert_eq!(kind, ErrorKind::NotADirectory);
    assert_eq!(
        message,
        "create the data directory: the path exists and is not a directory (a path component \
         is a file, not a directory: choose another data directory)"
    );
}

#[test]
fn io_errors_say_what_failed_and_how_to_fix_it() {
    let err = io_error(
        "/data/x.log",
        "fsync",
        io::Error::from(ErrorKind::PermissionDenied),
    );
    assert!(
        matches!(&err, StorageError::Io { source, .. } if source.kind() == ErrorKind::PermissionDenied)
    );
    assert_eq!(
        err.to_string(),
        "storage I/O on `/data/x.log` failed: fsync: permission denied (check that the directory \
         and its files are owned by and writable for the user running the service, or choose \
         another data directory)"
    );
}

#[tokio::test]
async fn a_poisoned_file_refuses_writes_until_reopened() {
    let (root, storage) = fresh();
    storage.append("f", b"abc").await.unwrap();
    storage.poison_for_test("f", "fsync");
    let path = root.path().join("data").join("f").display().to_string();
    let refused = (
        path,
        ErrorKind::Other,
        "refuse to write: an earlier fsync failed, so what is on disk is unknown; restart the \
         service so recovery re-reads the file"
            .to_string(),
    );
    assert_eq!(io_err(storage.append("f", b"d").await), refused);
    assert_eq!(io_err(storage.sync("f").await), refused);
    assert_eq!(io_err(storage.truncate("f", 1).await), refused);
    assert_eq!(storage.read("f").await.unwrap(), b"abc");
    storage
        .append("g", b"other files are unaffected")
        .await
        .unwrap();
    drop(storage);
    let reopened = open_in(&root);
    reopened.append("f", b"d").await.unwrap();
    reopened.sync("f").await.unwrap();
    assert_eq!(reopened.read("f").await.unwrap(), b"abcd");
}
