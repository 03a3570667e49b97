//! `FlockLease`: session leases between the processes of one host, through `flock(2)` on
//! per-session files under one directory (docs/backends.md#flocklease).
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
//! The authority's clock is `CLOCK_BOOTTIME` ([`boottime`]), which every process of the host
//! reads alike and which keeps counting across a suspend. Everything the decisions ask of the
//! operating system goes through [`FlockOs`]: real `flock(2)` and files ([`RealOs`], what
//! [`FlockLease::open`] uses), or the world's model of one host's open file descriptions and
//! lease directory on the host's clock ([`model`], [`FlockLease::on`];
//! docs/world.md#flock-in-the-world).

mod decide;
pub mod driver;
mod fs;
mod lock;
pub mod model;
mod name;
mod os;
mod record;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use leasesim_core::clock::Instant;
use leasesim_core::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};
use leasesim_core::mutant::Mutant;

pub use name::PREFIX_MAX_BYTES;
pub use os::{FlockOs, OpenFile, RealOs};

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
///
/// Every call is one decision under the session lock: read the record, judge it on
/// `CLOCK_BOOTTIME`, write it (temp file + rename + fsync), unlock. The calls are
/// synchronous inside their async bodies (each file call is short; a busy session lock is
/// polled with a real 1 ms sleep): no threads, so a process using it can fork.
///
/// The generation locks this instance holds stay open in it until release or loss; they
/// are unlocked only by the process that acquired them (a forked child's copies are closed
/// without unlocking, which leaves the parent's hold in place), also on drop. Dropping the
/// `FlockLease` in the acquiring process unlocks them: its holds can then be taken over at
/// once, as after a crash (their records are left as they are).
#[derive(Debug)]
pub struct FlockLease {
    config: FlockLeaseConfig,
    /// The generation locks held, by session and token.
    gens: Mutex<BTreeMap<(SessionId, u64), GenHold>>,
    /// The operating system of the calling process (its pid, its host's files and clock).
    os: Arc<dyn FlockOs>,
}

/// A generation lock held by this instance, and the process that took it.
#[derive(Debug)]
struct GenHold {
    file: Box<dyn OpenFile>,
    pid: u32,
}

/// The files of one session under a lease directory ([`safe_name`] stems).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SessionFiles {
    /// The lease directory.
    pub dir: PathBuf,
    /// The stem, [`safe_name`] of the session.
    pub stem: String,
    /// `{stem}.lock`: the session lock.
    pub lock: PathBuf,
    /// `{stem}.record`: the record.
    pub record: PathBuf,
}

impl SessionFiles {
    /// The files of `session` under `dir`.
    pub fn of(dir: &Path, session: &SessionId) -> Self {
        let stem = safe_name(session);
        SessionFiles {
            dir: dir.to_path_buf(),
            lock: dir.join(format!("{stem}.lock")),
            record: dir.join(format!("{stem}.record")),
            stem,
        }
    }

    /// `{stem}.gen.{token}`: the generation lock of `token`.
    pub fn generation(&self, token: u64) -> PathBuf {
        lock::gen_path(&self.dir, &self.stem, token)
    }

    /// `{stem}.record.tmp`: where a record is written before it is renamed over the record.
    pub fn record_tmp(&self) -> PathBuf {
        fs::temp_path(&self.record)
    }
}

/// Longest TTL a record holds with room (about 136 years).
const TTL_MAX: Duration = Duration::from_secs(u32::MAX as u64);

impl FlockLease {
    /// A lease authority over `config.dir`.
    ///
    /// # Errors
    /// [`FlockError`] when the directory is missing or not a directory, is on a network or
    /// cluster file system (`statfs(2)` magic), or the TTL is zero, under 1 µs (the record's
    /// unit) or over about 136 years.
    pub fn open(config: FlockLeaseConfig) -> Result<Self, FlockError> {
        check_dir(&config.dir)?;
        Self::on(Arc::new(RealOs::default()), config)
    }

    /// A lease authority over `config.dir` as `os` sees it (the world's model of a host,
    /// [`model::Process`]): the directory is taken as it is (no `statfs(2)` check).
    ///
    /// # Errors
    /// [`FlockError::BadTtl`] as [`FlockLease::open`].
    pub fn on(os: Arc<dyn FlockOs>, config: FlockLeaseConfig) -> Result<Self, FlockError> {
        check_ttl(config.ttl)?;
        Ok(FlockLease {
            config,
            gens: Mutex::new(BTreeMap::new()),
            os,
        })
    }

    /// This instance as a `fork(2)` leaves it in the child whose OS is `child`: the same
    /// configuration and generation holds, each hold's open file description now also
    /// referenced by the child ([`FlockOs::inherit`]). The real driver forks the whole
    /// process instead (`leasesim flock`'s `fork` commands); this is the model's fork.
    ///
    /// # Errors
    /// The OS error of an inheritance ([`RealOs`] has none: it forks with `fork(2)`).
    pub fn forked(&self, child: Arc<dyn FlockOs>) -> std::io::Result<FlockLease> {
        let mut gens = BTreeMap::new();
        for (key, hold) in self.gens().iter() {
            let file = child.inherit(&*hold.file)?;
            gens.insert(
                key.clone(),
                GenHold {
                    file,
                    pid: hold.pid,
                },
            );
        }
        Ok(FlockLease {
            config: self.config.clone(),
            gens: Mutex::new(gens),
            os: child,
        })
    }

    /// The lease directory.
    pub fn dir(&self) -> &Path {
        &self.config.dir
    }

    /// The TTL every grant carries.
    pub fn ttl(&self) -> Duration {
        self.config.ttl
    }

    /// The files of `session` under this lease directory.
    pub fn files(&self, session: &SessionId) -> SessionFiles {
        SessionFiles::of(&self.config.dir, session)
    }

    fn is(&self, mutant: Mutant) -> bool {
        self.config.mutant == Some(mutant)
    }

    fn hook(&self, point: FlockPoint, session: &SessionId) {
        if let Some(hooks) = &self.config.hooks {
            hooks.at(point, session);
        }
    }

    fn gens(&self) -> MutexGuard<'_, BTreeMap<(SessionId, u64), GenHold>> {
        // Every critical section leaves the map consistent: a panic elsewhere does not spoil it.
        self.gens.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for FlockLease {
    fn drop(&mut self) {
        let holds = std::mem::take(&mut *self.gens());
        holds.into_values().for_each(|hold| self.let_go(hold));
    }
}

fn check_ttl(ttl: Duration) -> Result<(), FlockError> {
    let reason = if ttl.is_zero() {
        "a zero TTL would expire every lease the moment it is granted"
    } else if ttl < Duration::from_micros(1) {
        "the record counts in microseconds: use at least 1 µs"
    } else if ttl > TTL_MAX {
        "longer than the record can hold (about 136 years)"
    } else {
        return Ok(());
    };
    Err(FlockError::BadTtl { ttl, reason })
}

fn check_dir(dir: &Path) -> Result<(), FlockError> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(FlockError::NotADirectory { path: dir.into() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(FlockError::NotADirectory { path: dir.into() });
        }
        Err(source) => {
            return Err(FlockError::Io {
                path: dir.into(),
                source,
            });
        }
    }
    let f_type = fs::fs_type(dir).map_err(|source| FlockError::Io {
        path: dir.into(),
        source,
    })?;
    match fs::network_fs(f_type) {
        Some(fs) => Err(FlockError::NetworkFileSystem {
            path: dir.into(),
            fs,
        }),
        None => Ok(()),
    }
}

/// The file-name stem of `session`: `{prefix}-{hash}`, where `prefix` is the id's first 40
/// bytes with every byte outside `[A-Za-z0-9_-]` replaced by `_`, and `hash` the first 16 hex
/// digits of SHA-256 over the whole id. It has no `/`, `.` or NUL, so it never escapes the
/// directory, and ids differing only in case, in a replaced byte or past the cut get
/// different stems. Files already on disk are named by it: the mapping never changes.
pub fn safe_name(session: &SessionId) -> String {
    name::stem(session.as_str())
}

/// A reading of `CLOCK_BOOTTIME`, the clock every process of the host shares and that keeps
/// counting while the host is suspended: the authority's clock of a [`FlockLease`].
pub fn boottime() -> Instant {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    let secs = u64::try_from(now.tv_sec).unwrap_or(0);
    let nanos = u32::try_from(now.tv_nsec).unwrap_or(0);
    Instant::from_origin(Duration::new(secs, nanos))
}

impl FlockLease {
    /// The owner and token of `session`'s record when its holder is this instance in this
    /// process (owner, pid and the token's generation lock): the hold a release by this
    /// instance would end. `None` when the record is missing, damaged, released or another
    /// process's. Reads without the session lock.
    pub fn own_hold(&self, session: &SessionId) -> Option<(Owner, u64)> {
        let record = decide::read_record(&*self.os, &self.files(session), session).ok()??;
        let holder = record.holder.as_ref()?;
        let ours = holder.pid == self.os.pid() && self.holds_generation(session, record.token);
        ours.then(|| (holder.owner(), record.token))
    }

    /// The owner, token and expiry (µs on `CLOCK_BOOTTIME`) of `session`'s record's holder,
    /// whoever it is; `None` when the record is missing, damaged or released. Reads without
    /// the session lock.
    pub fn recorded_holder(&self, session: &SessionId) -> Option<(Owner, u64, u64)> {
        let record = decide::read_record(&*self.os, &self.files(session), session).ok()??;
        let holder = record.holder.as_ref()?;
        Some((holder.owner(), record.token, holder.expiry_us))
    }

    /// The OS's `CLOCK_BOOTTIME` in whole µs, the record's unit.
    fn now_us(&self) -> u64 {
        u64::try_from(self.os.now().since_origin().as_micros()).unwrap_or(u64::MAX)
    }
}

#[async_trait]
impl SessionLease for FlockLease {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        self.acquire_now(session, owner)
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        self.renew_now(lease)
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        self.release_now(lease)
    }
}

#[cfg(test)]
mod tests;
