//! `FileStorage`: one directory of real files with real `fsync`, for live use only.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use super::mem::check_truncate;
use super::{Storage, StorageError, io_error, validate_name};
use leasesim_files as regular_file;

/// The cap for one data file (`serve lease`, `serve ledger`): 16 GiB. The services hold their
/// state in memory, so this bounds what one damaged or planted file can make them allocate,
/// far above any ledger they serve.
const DATA_LIMIT: u64 = 16 * 1024 * 1024 * 1024;

/// A [`Storage`] over a directory: each storage file is a regular file of the same name.
///
/// Every call runs its blocking file-system work on tokio's blocking pool (so it needs a
/// tokio runtime), and never in simulation. `sync` is `fdatasync` (which also persists the
/// file's new length) plus an `fsync` of the directory the first time after this process
/// created the file; `truncate` is `ftruncate` + `fsync`.
///
/// Each file stays open once used, so a later `sync` reports write-back errors of earlier
/// appends. After any failed append, sync or truncate the file is *poisoned*: its durable
/// contents are unknown (a retried fsync can succeed without the lost data reaching the
/// disk), so every later write or sync of it fails until the process restarts and recovers
/// the file. `Clone` gives another handle to the same open files.
///
/// A `FileStorage` holds an exclusive advisory lock on its directory (`flock`) for as long as
/// it or any clone lives, so two services never write one directory: each would recover and
/// then extend the files on its own, granting the same token twice or moving acknowledged
/// ledger positions. The OS drops the lock when the process dies, even by `kill -9`.
#[derive(Clone, Debug)]
pub struct FileStorage {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    /// Holds the directory's exclusive lock until dropped (see [`lock_dir`]).
    _lock: File,
    /// Open files by name; each behind its own lock so one file's fsync does not hold others.
    files: Mutex<BTreeMap<String, Arc<Mutex<Handle>>>>,
}

#[derive(Debug)]
struct Handle {
    /// Opened for appending (`O_APPEND`).
    file: File,
    /// This process created the file and has not yet made its directory entry durable.
    dir_sync_pending: bool,
    /// Set by the first failed write, sync or truncate: what failed.
    poisoned: Option<String>,
}

/// Name of the file [`FileStorage::open`] creates and removes to check the directory is
/// writable; it starts with `.` so it is never a valid storage name.
const PROBE_NAME: &str = ".leasesim-write-probe";

/// Where the directory lock lives where a directory cannot be opened (not Unix); it starts
/// with `.` so it is never a valid storage name and never listed.
#[cfg(not(unix))]
const LOCK_NAME: &str = ".leasesim-lock";

impl FileStorage {
    /// Opens the storage in `dir`, creating the directory (and its parents) if missing, locks
    /// it for this storage's lifetime, and checks at once that it is writable, so a
    /// misconfigured or shared data directory fails at start rather than at the first
    /// acknowledged write. Blocks briefly (mkdir, a probe file, an fsync of the directory):
    /// call it at start-up.
    ///
    /// # Errors
    /// [`StorageError::InUse`] when another `FileStorage` (in this or another process) holds
    /// `dir`; [`StorageError::Io`] naming the directory, the step that failed and, for
    /// permission, read-only or not-a-directory errors, how to fix it.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, StorageError> {
        let dir = dir.into();
        let err = |op: &str, e| io_error(dir.display().to_string(), op, e);
        create_dir(&dir).map_err(|e| err("create the data directory", e))?;
        // Before anything else touches the directory, so a second service changes nothing.
        let lock = lock_dir(&dir)?;
        probe_writable(&dir).map_err(|e| err("create a file in the data directory", e))?;
        // Makes durable any entry a previous incarnation created but crashed before syncing.
        sync_dir(&dir).map_err(|e| err("fsync the data directory", e))?;
        let files = Mutex::new(BTreeMap::new());
        Ok(FileStorage {
            inner: Arc::new(Inner {
                dir,
                _lock: lock,
                files,
            }),
        })
    }

    /// The directory this storage lives in.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Runs `work` on the blocking pool; a panic in it becomes an I/O error on `file`.
    async fn blocking<T, F>(&self, file: &str, work: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> Result<T, StorageError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        let joined = tokio::task::spawn_blocking(move || work(&inner)).await;
        joined.unwrap_or_else(|e| {
            let path = self.inner.path(file);
            Err(io_error(
                path,
                "run the blocking file task",
                io::Error::other(e),
            ))
        })
    }
}

#[cfg(test)]
impl FileStorage {
    /// Marks `name` (already open) as if `op` had failed on it: I/O errors cannot be injected
    /// into a real file system from a test.
    pub(super) fn poison_for_test(&self, name: &str, op: &str) {
        let handle = self
            .inner
            .handle(name, false)
            .unwrap()
            .expect("file is open");
        lock(&handle).poisoned = Some(op.to_string());
    }
}

fn create_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir).map_err(|e| match e.kind() {
        // `create_dir_all` reports an existing non-directory as "File exists": say what it is.
        io::ErrorKind::AlreadyExists => io::Error::new(
            io::ErrorKind::NotADirectory,
            "the path exists and is not a directory",
        ),
        _ => e,
    })
}

/// Takes the exclusive advisory lock that keeps a second service out of `dir`; the returned
/// file holds it until closed (the OS closes it when the process dies).
fn lock_dir(dir: &Path) -> Result<File, StorageError> {
    let err = |e| io_error(dir.display().to_string(), "lock the data directory", e);
    let file = lock_target(dir).map_err(err)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StorageError::InUse {
            dir: dir.display().to_string(),
        }),
        Err(TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => {
            Err(err(io::Error::new(
                e.kind(),
                format!("{e} (the file system cannot lock files: use a local data directory)"),
            )))
        }
        Err(TryLockError::Error(e)) => Err(err(e)),
    }
}

/// The directory itself: locking it rather than a file inside leaves nothing behind and
/// nothing a storage file name or a listing could meet.
#[cfg(unix)]
fn lock_target(dir: &Path) -> io::Result<File> {
    File::open(dir)
}

/// Directories cannot be opened as files here: lock a hidden file inside instead.
#[cfg(not(unix))]
fn lock_target(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(LOCK_NAME))
}

fn probe_writable(dir: &Path) -> io::Result<()> {
    let probe = dir.join(PROBE_NAME);
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    regular_file::open_regular(&mut options, &probe).map_err(|e| e.into_io())?;
    fs::remove_file(&probe)
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Directories cannot be opened for fsync here; creation durability is left to the OS.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

impl Inner {
    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// The open handle of `name`, opening the file if needed; with `create`, creating it if
    /// missing. `None` when it does not exist and `create` is false.
    fn handle(&self, name: &str, create: bool) -> Result<Option<Arc<Mutex<Handle>>>, StorageError> {
        let mut files = lock(&self.files);
        if let Some(handle) = files.get(name) {
            return Ok(Some(Arc::clone(handle)));
        }
        let Some(handle) = self.open_file(name, create)? else {
            return Ok(None);
        };
        let handle = Arc::new(Mutex::new(handle));
        files.insert(name.to_string(), Arc::clone(&handle));
        Ok(Some(handle))
    }

    /// Opens `name` for appending through [`regular_file::open_regular`]: a FIFO, device or
    /// directory planted there is refused at once instead of blocking the open for ever
    /// (reliability probe, N3).
    fn open_file(&self, name: &str, create: bool) -> Result<Option<Handle>, StorageError> {
        let path = self.dir.join(name);
        let open = |create: bool| {
            regular_file::open_regular(OpenOptions::new().append(true).create(create), &path)
        };
        let opened = match open(false) {
            Ok(file) => Some((file, false)),
            Err(e) if e.is_not_found() && create => Some((
                open(true).map_err(|e| io_error(self.path(name), "create", e.into_io()))?,
                true,
            )),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(io_error(self.path(name), "open", e.into_io())),
        };
        Ok(opened.map(|(file, created)| Handle {
            file,
            dir_sync_pending: created,
            poisoned: None,
        }))
    }

    fn list(&self) -> Result<Vec<String>, StorageError> {
        let err = |op: &str, e| io_error(self.dir.display().to_string(), op, e);
        let mut names = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(|e| err("list the data directory", e))? {
            let entry = entry.map_err(|e| err("list the data directory", e))?;
            // Names that are not storage names (probe, hidden files, backups) are not ours.
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if validate_name(&name).is_ok() {
                self.check_regular(&name)?;
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Refuses a storage name that is not a regular file (a directory, a socket, a symlink
    /// loop or a dangling symlink): the service would otherwise skip it and lose its records.
    fn check_regular(&self, name: &str) -> Result<(), StorageError> {
        let op = "check that the data file is a regular file";
        let meta = fs::metadata(self.dir.join(name)).map_err(|e| {
            let e = io::Error::new(
                e.kind(),
                format!("{e} (a symlink loop or a dangling link?)"),
            );
            io_error(self.path(name), op, e)
        })?;
        if meta.is_file() {
            return Ok(());
        }
        let kind = regular_file::FileKind::of(&meta.file_type());
        let e = io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "it is {kind}, not a regular file: the data directory holds only the \
                 service's own files; move it away, or restore the file it replaced"
            ),
        );
        Err(io_error(self.path(name), op, e))
    }

    /// Writes `bytes` to a hidden temporary file, syncs it, renames it over `name` and syncs
    /// the directory; the open handle of `name`, if any, is dropped (it is the old file).
    fn replace(&self, name: &str, bytes: &[u8]) -> Result<(), StorageError> {
        let mut files = lock(&self.files);
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let err = |op: &str, e| io_error(self.path(name), op, e);
        // A leftover temporary file (a crash mid-replace) or anything planted there goes
        // first: the temporary file is always a new one of ours, never a FIFO that blocks.
        let removed = match fs::remove_file(&tmp) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
        let written = removed
            .and_then(|()| {
                let mut options = OpenOptions::new();
                options.write(true).create_new(true);
                regular_file::open_regular(&mut options, &tmp).map_err(|e| e.into_io())
            })
            .and_then(|mut f| {
                f.write_all(bytes)?;
                f.sync_all()
            });
        written.map_err(|e| err("write the temporary file of a replace", e))?;
        fs::rename(&tmp, self.dir.join(name)).map_err(|e| err("rename over", e))?;
        files.remove(name);
        sync_dir(&self.dir).map_err(|e| err("fsync the directory after a replace", e))
    }

    fn read(&self, name: &str) -> Result<Vec<u8>, StorageError> {
        let handle = self.handle(name, false)?;
        // Holding the file's lock keeps a concurrent append from being seen half-written.
        let _guard = handle.as_ref().map(|h| lock(h));
        let path = self.dir.join(name);
        match regular_file::read_optional(&path, DATA_LIMIT) {
            Ok(bytes) => Ok(bytes.unwrap_or_default()),
            Err(e) => Err(io_error(self.path(name), "read", e.into_io())),
        }
    }

    fn append(&self, name: &str, bytes: &[u8]) -> Result<(), StorageError> {
        let handle = self.handle(name, true)?.expect("created when missing");
        let mut handle = lock(&handle);
        self.check_poison(name, &handle)?;
        let written = handle.file.write_all(bytes);
        self.poison_on_error(name, &mut handle, "append", written)
    }

    fn sync(&self, name: &str) -> Result<(), StorageError> {
        let Some(handle) = self.handle(name, false)? else {
            return Ok(());
        };
        let mut handle = lock(&handle);
        self.check_poison(name, &handle)?;
        let synced = handle.file.sync_data();
        self.poison_on_error(name, &mut handle, "fsync", synced)?;
        self.sync_entry(name, &mut handle)
    }

    fn truncate(&self, name: &str, len: u64) -> Result<(), StorageError> {
        let Some(handle) = self.handle(name, false)? else {
            return check_truncate(&self.path(name), len, 0);
        };
        let mut handle = lock(&handle);
        self.check_poison(name, &handle)?;
        let current = handle
            .file
            .metadata()
            .map_err(|e| io_error(self.path(name), "stat", e))?;
        check_truncate(&self.path(name), len, current.len())?;
        let cut = handle
            .file
            .set_len(len)
            .and_then(|()| handle.file.sync_all());
        self.poison_on_error(name, &mut handle, "truncate and fsync", cut)?;
        self.sync_entry(name, &mut handle)
    }

    /// Makes the file's directory entry durable once, after this process created it.
    fn sync_entry(&self, name: &str, handle: &mut Handle) -> Result<(), StorageError> {
        if !handle.dir_sync_pending {
            return Ok(());
        }
        let synced = sync_dir(&self.dir);
        self.poison_on_error(
            name,
            handle,
            "fsync the directory after creating the file",
            synced,
        )?;
        handle.dir_sync_pending = false;
        Ok(())
    }

    fn check_poison(&self, name: &str, handle: &Handle) -> Result<(), StorageError> {
        let Some(earlier) = &handle.poisoned else {
            return Ok(());
        };
        let e = io::Error::other(format!(
            "an earlier {earlier} failed, so what is on disk is unknown; restart the service \
             so recovery re-reads the file"
        ));
        Err(io_error(self.path(name), "refuse to write", e))
    }

    fn poison_on_error(
        &self,
        name: &str,
        handle: &mut Handle,
        op: &str,
        result: io::Result<()>,
    ) -> Result<(), StorageError> {
        result.map_err(|e| {
            handle.poisoned = Some(op.to_string());
            io_error(self.path(name), op, e)
        })
    }
}

/// Locks `mutex`, ignoring poisoning: a panic inside the blocking task cannot leave a map or
/// handle half-updated (each update is one assignment), and the file poison flag covers I/O.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[async_trait]
impl Storage for FileStorage {
    async fn list(&self) -> Result<Vec<String>, StorageError> {
        self.blocking("", |inner| inner.list()).await
    }

    async fn read(&self, file: &str) -> Result<Vec<u8>, StorageError> {
        validate_name(file)?;
        let name = file.to_string();
        self.blocking(file, move |inner| inner.read(&name)).await
    }

    async fn append(&self, file: &str, bytes: &[u8]) -> Result<(), StorageError> {
        validate_name(file)?;
        let (name, bytes) = (file.to_string(), bytes.to_vec());
        self.blocking(file, move |inner| inner.append(&name, &bytes))
            .await
    }

    async fn sync(&self, file: &str) -> Result<(), StorageError> {
        validate_name(file)?;
        let name = file.to_string();
        self.blocking(file, move |inner| inner.sync(&name)).await
    }

    async fn truncate(&self, file: &str, len: u64) -> Result<(), StorageError> {
        validate_name(file)?;
        let name = file.to_string();
        self.blocking(file, move |inner| inner.truncate(&name, len))
            .await
    }

    async fn replace(&self, file: &str, bytes: &[u8]) -> Result<(), StorageError> {
        validate_name(file)?;
        let (name, bytes) = (file.to_string(), bytes.to_vec());
        self.blocking(file, move |inner| inner.replace(&name, &bytes))
            .await
    }
}

/// The directory lock. (The other `FileStorage` tests are in `storage/tests/file.rs`.)
#[cfg(test)]
mod lock_tests {
    use super::*;

    #[tokio::test]
    async fn a_second_open_of_a_directory_in_use_is_refused_and_touches_nothing() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("data");
        let first = FileStorage::open(&dir).unwrap();
        first.append("f", b"abc").await.unwrap();
        let second = FileStorage::open(&dir);
        assert!(
            matches!(&second, Err(StorageError::InUse { dir: d }) if *d == dir.display().to_string()),
            "{second:?}"
        );
        let message = second.unwrap_err().to_string();
        assert!(message.contains("in use by another process"), "{message}");
        assert!(message.contains("stop the other process"), "{message}");
        assert_eq!(first.read("f").await.unwrap(), b"abc");
        assert_eq!(first.list().await.unwrap(), vec!["f"]);
    }

    #[test]
    fn the_lock_lives_as_long_as_the_last_clone() {
        let root = tempfile::tempdir().unwrap();
        let first = FileStorage::open(root.path()).unwrap();
        let clone = first.clone();
        drop(first);
        assert!(matches!(
            FileStorage::open(root.path()),
            Err(StorageError::InUse { .. })
        ));
        drop(clone);
        let _reopened = FileStorage::open(root.path()).unwrap();
        let entries = std::fs::read_dir(root.path()).unwrap().count();
        assert_eq!(
            entries, 0,
            "on Unix the lock is on the directory: it leaves no file"
        );
    }
}
