//! Durable storage for the lease and ledger services: named append-only files behind the
//! [`Storage`] trait, the framed, checksummed and chained [`log`] format both services write
//! (format version [`log::FORMAT_VERSION`]; older files are refused, not upgraded), and the
//! [`checkpoint`] of how far each log was acknowledged, which catches a log cut below that.
//!
//! Two implementations: [`MemStorage`], deterministic and crashable, for simulation (a crash
//! keeps what was synced and loses, or tears, what was not), and [`FileStorage`], a directory
//! with real `fsync`, for live use only.
//!
//! File names are checked by [`validate_name`] on every call, so no name can leave the
//! storage's directory; ids that come from outside (session ids) go through [`safe_name`].

pub mod checkpoint;
mod file;
pub mod log;
mod mem;
#[cfg(test)]
mod tests;

use std::io;

use async_trait::async_trait;

pub use file::FileStorage;
pub use mem::MemStorage;

/// Longest valid file name, in bytes.
pub const NAME_MAX_BYTES: usize = 128;

/// Longest sanitised id prefix [`safe_name`] keeps, in bytes.
pub const SAFE_NAME_PREFIX_MAX_BYTES: usize = 40;

/// Why a storage call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The file name is not acceptable (see [`validate_name`]); nothing was touched.
    #[error("invalid storage file name {name:?}: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An operating-system call failed. `file` is the full path for [`FileStorage`] (the
    /// file name for [`MemStorage`]); `source` says which operation failed, why, and, where
    /// there is one, the likely fix. After a failed append, sync or truncate the file's
    /// durable contents are unknown: [`FileStorage`] refuses further writes to it until the
    /// process restarts and recovers it with [`log::recover`].
    #[error("storage I/O on `{file}` failed: {source}")]
    Io {
        /// Which file (or directory).
        file: String,
        /// The operation, the OS error and a hint; its `kind()` is the OS error's kind.
        source: io::Error,
    },
    /// The log holds a damaged frame that is not a torn tail: truncating it could drop
    /// acknowledged records, so recovery stops instead (see [`log::recover`]).
    #[error(
        "log `{file}` is corrupt at byte {offset}: {reason}; the frames before that offset are \
         intact. Recovery refuses to drop data that may hold acknowledged records: keep a copy \
         of the file, then restore it from a replica or backup, or cut it at byte {offset} by \
         hand if losing the rest is acceptable"
    )]
    Corrupt {
        /// The storage file name.
        file: String,
        /// Byte offset of the start of the damaged frame.
        offset: u64,
        /// What is wrong with the frame.
        reason: String,
    },
    /// The log was written in a format version this code does not read (see [`log`]: version
    /// 1 files, from leasesim before the chained format, are refused, not upgraded).
    #[error(
        "log `{file}` has format version {found}; this leasesim reads only version \
         {supported}. Nothing was changed: run the leasesim that wrote it on this directory, \
         or start this one on a new, empty data directory (a new service: its tokens and \
         ledgers start over)"
    )]
    Version {
        /// The storage file name.
        file: String,
        /// The version found in the file.
        found: u32,
        /// The version this code reads ([`log::FORMAT_VERSION`]).
        supported: u32,
    },
    /// The log ends before the position its [`checkpoint`] says was acknowledged: whole
    /// frames were cut from its end (truncated, deleted, or replaced by an older copy).
    /// Starting from it would drop acknowledged records or reissue tokens, so recovery stops.
    #[error(
        "log `{file}` ends at {found}, but checkpoint `{checkpoint}` records that it was \
         acknowledged up to {expected}: the file was truncated, deleted or replaced by an \
         older copy. Nothing was changed. Restore `{file}` from a backup or replica; if \
         losing its acknowledged records is acceptable, move the whole data directory away \
         and start a new, empty service"
    )]
    BehindCheckpoint {
        /// The storage file name.
        file: String,
        /// The checkpoint file's name.
        checkpoint: String,
        /// The acknowledged position ([`log::Position::describe`]).
        expected: String,
        /// Where the file's intact frames end ([`log::Position::describe`]).
        found: String,
    },
    /// The checkpoint is missing (or empty) although logs exist: nothing can show
    /// that they still hold every acknowledged record, since a log cut at a frame boundary
    /// looks whole (reliability probe, the documented limit: 51 acknowledged records lost,
    /// tokens reissued). Recovery stops unless the operator accepts the logs as they are.
    #[error(
        "checkpoint `{checkpoint}` is missing or empty, but the data directory holds {logs}: without it \
         nothing shows that they still hold every acknowledged record (a log cut at a frame \
         boundary looks whole), so the service refuses to start and changed nothing. \
         Restore `{checkpoint}` from a backup of this data directory; or, if the logs are \
         known to be whole (or losing what was acknowledged after their last record is \
         acceptable — for the lease service that means tokens may be issued twice), start \
         once with --rebuild-checkpoint to rebuild it from the logs as they are"
    )]
    CheckpointMissing {
        /// The checkpoint file's name.
        checkpoint: String,
        /// The logs present, as a phrase (`` `a.ledger`, `b.ledger` ``).
        logs: String,
    },
    /// Another [`FileStorage`] holds the directory's lock: most likely a second service
    /// started with the same data directory. Two writers would each extend the files from
    /// their own recovered state (granting one token twice, moving acknowledged records), so
    /// the second one refuses to open; nothing was touched.
    #[error(
        "data directory `{dir}` is in use by another process (another `leasesim serve` with \
         the same --data?); two services must never share one directory: stop the other \
         process, or give this one a directory of its own"
    )]
    InUse {
        /// The directory.
        dir: String,
    },
    /// A payload given to [`log::append_frames`] cannot be framed (empty, or longer than
    /// [`log::MAX_FRAME_BYTES`]); nothing was written.
    #[error("cannot append to log `{file}`: {reason}")]
    InvalidFrame {
        /// The storage file name.
        file: String,
        /// What is wrong with the payload.
        reason: String,
    },
}

/// Named append-only files: the durable state of a service.
///
/// Each file is a byte string that only grows, except through [`Storage::truncate`]. Appended
/// bytes are visible to [`Storage::read`] at once but survive a crash only once
/// [`Storage::sync`] has returned. Every method first checks the name with [`validate_name`]
/// and fails with [`StorageError::InvalidName`] before touching anything.
///
/// Concurrent appends to one file are each applied whole but in no promised order; callers
/// serialise the writes to a file (each service has one writer per file).
#[async_trait]
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// Names of the files present, sorted bytewise (the order of `str`).
    ///
    /// # Errors
    /// [`StorageError::Io`] when the directory cannot be read.
    async fn list(&self) -> Result<Vec<String>, StorageError>;

    /// The whole contents of `file`, synced and unsynced, as this process sees them; empty
    /// when `file` does not exist.
    ///
    /// # Errors
    /// [`StorageError::InvalidName`], [`StorageError::Io`].
    async fn read(&self, file: &str) -> Result<Vec<u8>, StorageError>;

    /// Appends `bytes` at the end of `file`, creating it if missing (even for empty `bytes`).
    /// Not durable until [`Storage::sync`].
    ///
    /// # Errors
    /// [`StorageError::InvalidName`], [`StorageError::Io`]; after an I/O error the file may
    /// hold any prefix of `bytes`.
    async fn append(&self, file: &str, bytes: &[u8]) -> Result<(), StorageError>;

    /// Makes everything appended to `file` so far durable: fsync of the file, and of the
    /// directory when this process created the file. A no-op when `file` does not exist.
    ///
    /// # Errors
    /// [`StorageError::InvalidName`], [`StorageError::Io`].
    async fn sync(&self, file: &str) -> Result<(), StorageError>;

    /// Cuts `file` to its first `len` bytes, durably (everything kept is durable when it
    /// returns). Used at recovery to cut a torn tail. Truncating a missing file to 0 is a
    /// no-op.
    ///
    /// # Errors
    /// [`StorageError::InvalidName`]; [`StorageError::Io`] with kind `InvalidInput` when `len`
    /// exceeds the file's length (truncate never extends), or on an OS error.
    async fn truncate(&self, file: &str, len: u64) -> Result<(), StorageError>;

    /// Replaces the whole contents of `file` with `bytes`, atomically and durably: after a
    /// crash the file holds either its old contents or `bytes` (a temporary file, fsync,
    /// rename, fsync of the directory). Creates the file if missing.
    ///
    /// # Errors
    /// [`StorageError::InvalidName`], [`StorageError::Io`] (then the file holds its old
    /// contents or `bytes`).
    async fn replace(&self, file: &str, bytes: &[u8]) -> Result<(), StorageError>;
}

/// Checks that `name` is a valid storage file name: 1 to [`NAME_MAX_BYTES`] bytes, only ASCII
/// letters, digits, `.`, `_` and `-`, and not starting with `.`. Such a name has no path
/// separator and is never `.` or `..`, so it cannot leave the storage directory.
///
/// # Errors
/// [`StorageError::InvalidName`] saying what is wrong.
pub fn validate_name(name: &str) -> Result<(), StorageError> {
    match name_problem(name) {
        None => Ok(()),
        Some(reason) => Err(StorageError::InvalidName {
            name: name.to_string(),
            reason,
        }),
    }
}

fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("the name is empty".to_string());
    }
    if name.len() > NAME_MAX_BYTES {
        return Some(format!(
            "the name is {} bytes long; the limit is {NAME_MAX_BYTES}",
            name.len()
        ));
    }
    if name.starts_with('.') {
        return Some("the name starts with `.` (hidden files, `.` and `..`)".to_string());
    }
    let (at, bad) = name.char_indices().find(|&(_, c)| !is_name_char(c))?;
    Some(format!(
        "{bad:?} at byte {at} is not allowed: only A-Z a-z 0-9 . _ - are \
         (map external ids with `storage::safe_name`)"
    ))
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// Maps any string `id` (a session id may hold `/`, `..`, unicode…) to a valid, stable file
/// name: `<prefix>-<hash><suffix>`.
///
/// - `prefix`: `id` with every character outside `A-Z a-z 0-9 . _ -` replaced by `_`, cut to
///   [`SAFE_NAME_PREFIX_MAX_BYTES`] bytes, with a leading `.` replaced by `_`. It is there for
///   people reading a directory listing; uniqueness comes from the hash.
/// - `hash`: 16 lowercase hex digits of the 64-bit FNV-1a hash of the full UTF-8 bytes of
///   `id` (Fowler–Noll–Vo; offset basis `0xcbf29ce484222325`, prime `0x100000001b3`; see
///   <http://www.isthe.com/chongo/tech/comp/fnv/> and IETF draft-eastlake-fnv). Ids that
///   sanitise to the same prefix get different names unless their hashes collide.
/// - `suffix`: as given (e.g. `.log`), sanitised the same way and cut so the whole name fits
///   [`NAME_MAX_BYTES`]; it is meant to be a short constant.
///
/// The mapping is part of the on-disk format: it must never change across versions, or a
/// restarted service would not find its files (golden values are pinned in the tests).
/// FNV-1a is not cryptographic: someone who controls ids can construct two with the same
/// name, so a service should also store the full id inside the file and check it on read.
pub fn safe_name(id: &str, suffix: &str) -> String {
    let prefix = sanitise(id, SAFE_NAME_PREFIX_MAX_BYTES);
    let hash = format!("{:016x}", fnv1a_64(id.as_bytes()));
    debug_assert!(
        prefix.len() <= SAFE_NAME_PREFIX_MAX_BYTES && hash.len() == 16,
        "safe names: the prefix is at most SAFE_NAME_PREFIX_MAX_BYTES and the hash 16 digits"
    );
    let room = NAME_MAX_BYTES - prefix.len() - 1 - hash.len();
    let mut name = format!("{prefix}-{hash}{}", sanitise(suffix, room));
    if name.starts_with('.') {
        // Only the prefix can lead, and only with `.`: hidden files and `..` are refused.
        name.replace_range(..1, "_");
    }
    debug_assert!(
        name_problem(&name).is_none(),
        "safe names (docs/contracts.md#safe-names): {name:?} is not a valid storage name"
    );
    name
}

/// `s` with disallowed characters replaced by `_`, cut to `max_bytes` (all ASCII by then).
fn sanitise(s: &str, max_bytes: usize) -> String {
    s.chars()
        .map(|c| if is_name_char(c) { c } else { '_' })
        .take(max_bytes)
        .collect()
}

/// 64-bit FNV-1a (see [`safe_name`]): for each byte, xor it in, then multiply by the prime.
fn fnv1a_64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(PRIME)
    })
}

/// A [`StorageError::Io`] on `file` whose source names the operation `op`, keeps the OS
/// error's kind and adds a hint for the kinds an operator can fix.
pub(crate) fn io_error(file: impl Into<String>, op: &str, err: io::Error) -> StorageError {
    let hint = hint(err.kind());
    let source = io::Error::new(err.kind(), format!("{op}: {err}{hint}"));
    StorageError::Io {
        file: file.into(),
        source,
    }
}

fn hint(kind: io::ErrorKind) -> &'static str {
    match kind {
        io::ErrorKind::PermissionDenied => {
            " (check that the directory and its files are owned by and writable for the user \
             running the service, or choose another data directory)"
        }
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
            " (the disk or quota is full: free space, then restart the service)"
        }
        io::ErrorKind::ReadOnlyFilesystem => {
            " (the file system is mounted read-only: remount it read-write or choose another \
             data directory)"
        }
        io::ErrorKind::NotADirectory => {
            " (a path component is a file, not a directory: choose another data directory)"
        }
        _ => "",
    }
}
