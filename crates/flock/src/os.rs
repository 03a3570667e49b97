//! Everything [`FlockLease`](super::FlockLease) asks of the operating system, behind one trait
//! ([`FlockOs`]), so the same decisions run on real `flock(2)` ([`RealOs`]) and on the model of
//! open file descriptions the world hosts ([`super::model`], docs/world.md#flock-in-the-world).
//!
//! The calls are the ones the decisions make and nothing more: open a lock file (a new open
//! file description each time), lock and unlock it without waiting, tell whether a path still
//! names the locked file, create a generation file exclusively, list and unlink files, read
//! the record and write it (temp file + rename, or in place under the
//! `record-written-in-place` mutant), read `CLOCK_BOOTTIME`, and wait one poll of a busy lock.

use std::any::Any;
use std::fmt;
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use leasesim_core::clock::Instant;

use super::{boottime, fs};

/// One open file description: what `open(2)` returns, shared by every descriptor `dup(2)` or
/// `fork(2)` makes of it. A `flock(2)` lock belongs to it: any sharer's unlock releases the
/// lock, and so does the last close. Dropping the value closes this reference.
pub trait OpenFile: Send + fmt::Debug {
    /// `flock(LOCK_EX | LOCK_NB)`: `Ok(true)` when locked (also when this description held it
    /// already), `Ok(false)` when another description holds the file's lock.
    ///
    /// # Errors
    /// The OS error.
    fn try_lock(&self) -> io::Result<bool>;

    /// `flock(LOCK_UN)`: releases this description's lock, if it holds one.
    ///
    /// # Errors
    /// The OS error.
    fn unlock(&self) -> io::Result<()>;

    /// Whether `path` still names the file this description has open (`fstat` against
    /// `stat`: same device and inode); `Ok(false)` when `path` names nothing.
    ///
    /// # Errors
    /// The OS error of either call.
    fn is_named_by(&self, path: &Path) -> io::Result<bool>;

    /// The value itself, so an OS model can find its own descriptions (a fork's inheritance).
    fn as_any(&self) -> &dyn Any;
}

/// The operating system as [`FlockLease`](super::FlockLease) uses it: one process's view of
/// one host. Paths are the lease directory's (absolute or relative, compared as given).
pub trait FlockOs: Send + Sync + fmt::Debug {
    /// The calling process's id: only the process that acquired a hold renews or releases it.
    fn pid(&self) -> u32;

    /// `CLOCK_BOOTTIME`: the host's clock, shared by its processes and counting across a
    /// suspend. Records keep expiries on it, in µs.
    fn now(&self) -> Instant;

    /// Another reference, in this process, to the open file description `file` of the
    /// process this one was forked from: what `fork(2)` does to every descriptor.
    ///
    /// # Errors
    /// [`RealOs`]: always `Unsupported` (a real process forks with `fork(2)`, which copies
    /// its descriptors itself); a model: `file` is not one of its descriptions.
    fn inherit(&self, file: &dyn OpenFile) -> io::Result<Box<dyn OpenFile>>;

    /// Waits one poll interval (1 ms) for a busy session lock.
    ///
    /// # Errors
    /// When this OS cannot wait (the world's model: a decision runs without yielding, so a
    /// busy lock cannot be freed by waiting); the decision fails
    /// [`LeaseError::Unavailable`](leasesim_core::lease::LeaseError::Unavailable).
    fn wait_busy(&self) -> io::Result<()>;

    /// Opens `path` read-write, creating it if needed: a new open file description.
    ///
    /// # Errors
    /// The OS error; `InvalidInput` when `path` is not a regular file.
    fn open_lock(&self, path: &Path) -> io::Result<Box<dyn OpenFile>>;

    /// Creates `path`, which must not exist (`O_CREAT | O_EXCL`), and opens it.
    ///
    /// # Errors
    /// `AlreadyExists` when it exists; the OS error.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn OpenFile>>;

    /// Opens the existing file `path` read-only.
    ///
    /// # Errors
    /// `NotFound` when it does not exist; the OS error.
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn OpenFile>>;

    /// Unlinks `path` (open descriptions of it stay open, on an inode without a name).
    ///
    /// # Errors
    /// `NotFound`; the OS error.
    fn unlink(&self, path: &Path) -> io::Result<()>;

    /// The names of the entries of directory `dir`, in no promised order.
    ///
    /// # Errors
    /// The OS error.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;

    /// The contents of record file `path`, `None` when it does not exist.
    ///
    /// # Errors
    /// The OS error; `InvalidData` for a file over [`fs::RECORD_MAX_BYTES`].
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>>;

    /// Writes `bytes` to `{path}.tmp`, calling `half` after the first half, then renames it
    /// over `path` (fsyncs of the file and the directory included): a crash leaves the old
    /// file or the new one whole.
    ///
    /// # Errors
    /// The first error, with the path it happened on.
    fn write_replacing(
        &self,
        path: &Path,
        bytes: &[u8],
        half: &mut dyn FnMut(),
    ) -> Result<(), (PathBuf, io::Error)>;

    /// Truncates `path` and writes `bytes` into it, calling `half` after the first half: the
    /// `record-written-in-place` mutant, which a crash mid-write leaves torn.
    ///
    /// # Errors
    /// The first error, with the path.
    fn write_in_place(
        &self,
        path: &Path,
        bytes: &[u8],
        half: &mut dyn FnMut(),
    ) -> Result<(), (PathBuf, io::Error)>;
}

/// The real operating system: `flock(2)` through std's `File::try_lock` on files opened with
/// `O_NOFOLLOW | O_NONBLOCK` (regular files only, [`fs::open_regular`]) and `O_CLOEXEC`.
#[derive(Clone, Copy, Debug)]
pub struct RealOs {
    /// The calling process's id (`std::process::id`; a fake one in unit tests).
    pub pid: fn() -> u32,
}

impl Default for RealOs {
    fn default() -> Self {
        RealOs {
            pid: std::process::id,
        }
    }
}

/// An open file description of the real OS.
#[derive(Debug)]
pub(crate) struct RealFile(pub(crate) File);

impl OpenFile for RealFile {
    fn try_lock(&self) -> io::Result<bool> {
        match self.0.try_lock() {
            Ok(()) => Ok(true),
            Err(TryLockError::WouldBlock) => Ok(false),
            Err(TryLockError::Error(e)) => Err(e),
        }
    }

    fn unlock(&self) -> io::Result<()> {
        self.0.unlock()
    }

    fn is_named_by(&self, path: &Path) -> io::Result<bool> {
        let open = rustix::fs::fstat(&self.0)?;
        match rustix::fs::stat(path) {
            Ok(named) => Ok(open.st_dev == named.st_dev && open.st_ino == named.st_ino),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// How often a busy session lock is tried again on the real OS.
const LOCK_POLL: Duration = Duration::from_millis(1);

fn real(file: io::Result<File>) -> io::Result<Box<dyn OpenFile>> {
    file.map(|f| Box::new(RealFile(f)) as Box<dyn OpenFile>)
}

impl FlockOs for RealOs {
    fn pid(&self) -> u32 {
        (self.pid)()
    }

    fn now(&self) -> Instant {
        boottime()
    }

    fn inherit(&self, _file: &dyn OpenFile) -> io::Result<Box<dyn OpenFile>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a real process inherits its descriptors through fork(2)",
        ))
    }

    fn wait_busy(&self) -> io::Result<()> {
        // Real time only, and a plain sleep: a thread or a timer task would make a process
        // that forks multi-threaded.
        #[allow(clippy::disallowed_methods)]
        std::thread::sleep(LOCK_POLL);
        Ok(())
    }

    fn open_lock(&self, path: &Path) -> io::Result<Box<dyn OpenFile>> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        real(fs::open_regular(&mut options, path))
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn OpenFile>> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create_new(true);
        real(fs::open_regular(&mut options, path))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn OpenFile>> {
        real(fs::open_regular(OpenOptions::new().read(true), path))
    }

    fn unlink(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            if let Some(name) = entry?.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
        Ok(names)
    }

    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        fs::read_if_present(path)
    }

    fn write_replacing(
        &self,
        path: &Path,
        bytes: &[u8],
        half: &mut dyn FnMut(),
    ) -> Result<(), (PathBuf, io::Error)> {
        fs::write_replacing(path, bytes, half)
    }

    fn write_in_place(
        &self,
        path: &Path,
        bytes: &[u8],
        half: &mut dyn FnMut(),
    ) -> Result<(), (PathBuf, io::Error)> {
        fs::write_in_place(path, bytes, half)
    }
}
