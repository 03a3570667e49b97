//! `FlockLease`: session leases between the processes of one host, through `flock(2)` on
//! per-session files under one directory (DESIGN.md, "Backends").
//!
//! Files of a session, all named from its safe name ([`safe_name`]) and never unlinked while
//! they can matter:
//! - `{name}.lock`: the session lock, held only for the length of one decision (read the
//!   record, judge it, write it) by whoever decides;
//! - `{name}.record`: the token high-water mark, the holder (owner, pid) and its expiry on
//!   `CLOCK_BOOTTIME`, written by temp file + rename + fsync of the file and the directory;
//! - `{name}.gen.{token}`: the generation lock, held by the holder of `token` for as long as it
//!   holds, so a candidate that can lock it knows the holder's process is gone (SIGKILL) and
//!   takes over at once instead of after the TTL.
//!
//! Real time only: the authority's clock is `CLOCK_BOOTTIME` ([`boottime`]), which every
//! process of the host reads alike and which keeps counting across a suspend. Not in the
//! simulated world (turmoil has no flock).

pub mod driver;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::clock::Instant;
use crate::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};
use crate::mutant::Mutant;

/// How a [`FlockLease`] is set up.
#[derive(Clone, Debug)]
pub struct FlockLeaseConfig {
    /// The lease directory: it must exist and be on a local file system.
    pub dir: PathBuf,
    /// The TTL every grant carries.
    pub ttl: Duration,
    /// Longest wait for a session lock another process holds (it is held for one decision
    /// only, so a long wait means that process is stopped) before the call fails with
    /// [`LeaseError::Unavailable`].
    pub lock_wait: Duration,
    /// A planted bug, or `None` for the correct implementation.
    pub mutant: Option<Mutant>,
    /// Called at the named points of each decision (process tests pause or crash there).
    pub hooks: Option<Arc<dyn FlockHooks>>,
}

impl FlockLeaseConfig {
    /// `dir` and `ttl`, a lock wait of 2 s, no mutant, no hooks.
    pub fn new(dir: impl Into<PathBuf>, ttl: Duration) -> Self {
        FlockLeaseConfig {
            dir: dir.into(),
            ttl,
            lock_wait: Duration::from_secs(2),
            mutant: None,
            hooks: None,
        }
    }
}

/// A point inside a [`FlockLease`] decision where [`FlockHooks::at`] is called.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum FlockPoint {
    /// The session lock is held by another open file description; the call starts waiting
    /// (called once per call, on the first busy attempt).
    LockBusy,
    /// The session lock is held and the record has been read, before anything is written
    /// (F8's race window).
    RecordRead,
    /// Half of the new record's bytes have been written (to the temp file; in place under
    /// the `record-written-in-place` mutant), before the rest, the fsync and the rename.
    RecordHalfWritten,
}

/// Observer of a [`FlockLease`]'s decisions; a process test pauses (waits for a command) or
/// crashes (exits) inside [`FlockHooks::at`].
pub trait FlockHooks: Send + Sync + fmt::Debug {
    /// The decision for `session` reached `point`.
    fn at(&self, point: FlockPoint, session: &SessionId);
}

/// Why a [`FlockLease`] could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FlockError {
    /// The lease directory is missing or not a directory.
    #[error("lease directory {path}: not a directory (create it first)")]
    NotADirectory {
        /// The directory given.
        path: PathBuf,
    },
    /// The lease directory is on a network file system, where `flock(2)` is emulated or
    /// local to one client.
    #[error(
        "lease directory {path} is on a network file system ({fs}): flock leases need a local file system"
    )]
    NetworkFileSystem {
        /// The directory given.
        path: PathBuf,
        /// The file system's name.
        fs: &'static str,
    },
    /// The TTL is zero or too long for the record.
    #[error("ttl {ttl:?}: {reason}")]
    BadTtl {
        /// The TTL given.
        ttl: Duration,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An I/O error on the lease directory.
    #[error("lease directory {path}: {source}")]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// Session leases through `flock(2)` on per-session files under one directory.
#[derive(Debug)]
pub struct FlockLease {
    config: FlockLeaseConfig,
}

impl FlockLease {
    /// A lease authority over `config.dir`.
    ///
    /// # Errors
    /// [`FlockError`] when the directory is missing, on a network file system, or the TTL
    /// is zero.
    pub fn open(config: FlockLeaseConfig) -> Result<Self, FlockError> {
        let _ = &config;
        todo!("issue 15")
    }

    /// The lease directory.
    pub fn dir(&self) -> &Path {
        &self.config.dir
    }
}

/// The file-name stem of `session`: a sanitised prefix of the id (`[A-Za-z0-9_-]`, at most
/// 40 bytes) and a hash of the whole id, so it never escapes the directory and two ids never
/// share it.
pub fn safe_name(session: &SessionId) -> String {
    let _ = session;
    todo!("issue 15")
}

/// A reading of `CLOCK_BOOTTIME`, the clock every process of the host shares and that keeps
/// counting while the host is suspended: the authority's clock of a [`FlockLease`].
pub fn boottime() -> Instant {
    todo!("issue 15")
}

#[async_trait]
impl SessionLease for FlockLease {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let _ = (session, owner);
        todo!("issue 15")
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let _ = lease;
        todo!("issue 15")
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        let _ = lease;
        todo!("issue 15")
    }
}
