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

mod fs;
mod lock;
mod name;
mod record;

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

use crate::clock::Instant;
use crate::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};
use crate::mutant::Mutant;

use lock::{Probe, SessionLock, Take, unavailable};
use record::{Holder, RECORD_VERSION, Record};

pub use name::PREFIX_MAX_BYTES;

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
/// without unlocking, which leaves the parent's hold in place), also on drop.
#[derive(Debug)]
pub struct FlockLease {
    config: FlockLeaseConfig,
    /// The generation locks held, by session and token.
    gens: Mutex<BTreeMap<(SessionId, u64), GenHold>>,
    /// The calling process's id (`std::process::id`, a fake one in unit tests).
    pid: fn() -> u32,
}

/// A generation lock held by this instance, and the process that took it.
#[derive(Debug)]
struct GenHold {
    file: File,
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

/// One decision in progress: the session lock held, the record read.
struct Decision {
    files: SessionFiles,
    lock: SessionLock,
    record: Option<Record>,
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
        check_ttl(config.ttl)?;
        check_dir(&config.dir)?;
        Ok(FlockLease {
            config,
            gens: Mutex::new(BTreeMap::new()),
            pid: std::process::id,
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

    /// Takes the session lock and reads the record ([`FlockPoint::LockBusy`] if the lock is
    /// busy, [`FlockPoint::RecordRead`] once read).
    fn begin(&self, session: &SessionId) -> Result<Decision, LeaseError> {
        let files = self.files(session);
        let take = Take {
            path: &files.lock,
            wait: self.config.lock_wait,
            // The planted F8 bug is unlinking without this check: with it, the unlink is harmless.
            verify_inode: !self.is(Mutant::UnlinkOnRelease),
        };
        let lock = SessionLock::take(&take, || self.hook(FlockPoint::LockBusy, session))?;
        let record = read_record(&files, session)?;
        self.hook(FlockPoint::RecordRead, session);
        Ok(Decision {
            files,
            lock,
            record,
        })
    }

    /// Writes `record` over the session's record ([`FlockPoint::RecordHalfWritten`] halfway).
    fn write_record(
        &self,
        files: &SessionFiles,
        session: &SessionId,
        record: &Record,
    ) -> Result<(), LeaseError> {
        let bytes = record::encode(record);
        let half = || self.hook(FlockPoint::RecordHalfWritten, session);
        let written = if self.is(Mutant::RecordWrittenInPlace) {
            fs::write_in_place(&files.record, &bytes, half)
        } else {
            fs::write_replacing(&files.record, &bytes, half)
        };
        written.map_err(|(path, e)| unavailable(&path, "write lease record", e))
    }

    fn lease(&self, session: &SessionId, owner: &Owner, token: u64, expiry_us: u64) -> Lease {
        let expiry = Instant::from_origin(Duration::from_micros(expiry_us));
        Lease::new(
            session.clone(),
            owner.clone(),
            token,
            expiry,
            self.config.ttl,
        )
    }

    fn expiry_us(&self, now_us: u64) -> u64 {
        let ttl_us = u64::try_from(self.config.ttl.as_micros()).unwrap_or(u64::MAX);
        now_us.saturating_add(ttl_us)
    }

    fn acquire_now(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let decision = self.begin(session)?;
        let now = now_us();
        let pid = (self.pid)();
        if let Some(record) = &decision.record
            && let Some(holder) = &record.holder
            && holder.is_live(now)
        {
            if holder.is(owner, pid) {
                return self.extend(&decision, session, record, holder, now);
            }
            match lock::probe_gen(&decision.files.generation(record.token))? {
                Probe::Gone => {
                    tracing::info!(%session, token = record.token, holder = %holder.owner(), "the holder's process is gone: taking over");
                }
                Probe::Alive | Probe::Missing => {
                    return Err(LeaseError::Held {
                        holder_token: Some(record.token),
                    });
                }
            }
        }
        self.take_over(&decision, session, owner, now)
    }

    /// The live holder acquires again: same token, expiry extended, its generation lock kept.
    fn extend(
        &self,
        decision: &Decision,
        session: &SessionId,
        record: &Record,
        holder: &Holder,
        now: u64,
    ) -> Result<Lease, LeaseError> {
        self.keep_generation(&decision.files, session, record.token);
        let expiry_us = self.expiry_us(now);
        let extended = Record {
            holder: Some(Holder {
                expiry_us,
                ..holder.clone()
            }),
            ..record.clone()
        };
        self.write_record(&decision.files, session, &extended)?;
        Ok(self.lease(session, &holder.owner(), record.token, expiry_us))
    }

    /// Makes sure this instance holds the generation lock of `token`: it may be another
    /// instance in this process that does (then that one keeps it).
    fn keep_generation(&self, files: &SessionFiles, session: &SessionId, token: u64) {
        let mut gens = self.gens();
        let key = (session.clone(), token);
        if gens.contains_key(&key) {
            return;
        }
        if let Ok(file) = File::open(files.generation(token))
            && file.try_lock().is_ok()
        {
            gens.insert(
                key,
                GenHold {
                    file,
                    pid: (self.pid)(),
                },
            );
        }
    }

    /// A takeover: the next token above the high-water mark, its generation lock taken
    /// before the record naming it is written, older generation files cleaned up.
    fn take_over(
        &self,
        decision: &Decision,
        session: &SessionId,
        owner: &Owner,
        now: u64,
    ) -> Result<Lease, LeaseError> {
        let files = &decision.files;
        let high_water = match &decision.record {
            Some(record) => record.token,
            // Record lost: the current token's generation file is never removed.
            None => lock::gen_tokens(&files.dir, &files.stem)?
                .last()
                .copied()
                .unwrap_or(0),
        };
        let (token, file) = lock::create_gen(&files.dir, &files.stem, high_water)?;
        let pid = (self.pid)();
        let hold = GenHold { file, pid };
        let expiry_us = self.expiry_us(now);
        let record = Record {
            version: RECORD_VERSION,
            session: session.as_str().to_owned(),
            token,
            holder: Some(Holder {
                replica: owner.replica.clone(),
                incarnation: owner.incarnation,
                pid,
                expiry_us,
            }),
        };
        if let Err(e) = self.write_record(files, session, &record) {
            self.let_go(hold);
            return Err(e);
        }
        let lost = self.hold_only(session, token, hold);
        lost.into_iter().for_each(|hold| self.let_go(hold));
        lock::remove_stale_gens(&files.dir, &files.stem, token);
        Ok(self.lease(session, owner, token, expiry_us))
    }

    /// Records `hold` as this instance's hold of `session` and returns the ones it had for
    /// older tokens (lost: the record names `token` now).
    fn hold_only(&self, session: &SessionId, token: u64, hold: GenHold) -> Vec<GenHold> {
        let mut gens = self.gens();
        let older: Vec<(SessionId, u64)> = gens
            .range((session.clone(), 0)..(session.clone(), token))
            .map(|(key, _)| key.clone())
            .collect();
        let lost = older.iter().filter_map(|key| gens.remove(key)).collect();
        gens.insert((session.clone(), token), hold);
        lost
    }

    /// Forgets this instance's generation lock of `lease` unless the record still names it as
    /// a live hold (then someone else presented its token, or a forked child asked).
    fn forget_if_lost(&self, record: Option<&Record>, lease: &Lease, now: u64) {
        let live = record.is_some_and(|r| {
            r.token == lease.token() && r.holder.as_ref().is_some_and(|h| h.is_live(now))
        });
        if live {
            return;
        }
        let hold = self
            .gens()
            .remove(&(lease.session().clone(), lease.token()));
        if let Some(hold) = hold {
            self.let_go(hold);
        }
    }

    /// Closes a generation lock: unlocked first in the process that took it (a forked child
    /// that shares the open file description could otherwise keep it locked); only closed in
    /// any other process (unlocking there would free the parent's hold), but under
    /// [`Mutant::UnlockFromAnyProcess`].
    fn let_go(&self, hold: GenHold) {
        let owning = hold.pid == (self.pid)() || self.is(Mutant::UnlockFromAnyProcess);
        if owning && let Err(e) = hold.file.unlock() {
            tracing::warn!("unlock generation lock: {e}");
        }
        drop(hold.file);
    }

    fn renew_now(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let session = lease.session();
        let decision = self.begin(session)?;
        let now = now_us();
        let current = decision
            .record
            .as_ref()
            .and_then(|r| r.holder.as_ref().map(|h| (r, h)));
        if let Some((record, holder)) = current
            && record.token == lease.token()
            && holder.is(lease.owner(), (self.pid)())
            && (holder.is_live(now) || self.is(Mutant::RenewWithoutExpiryCheck))
        {
            let expiry_us = self.expiry_us(now);
            let renewed = Record {
                holder: Some(Holder {
                    expiry_us,
                    ..holder.clone()
                }),
                ..record.clone()
            };
            self.write_record(&decision.files, session, &renewed)?;
            return Ok(self.lease(session, lease.owner(), record.token, expiry_us));
        }
        self.forget_if_lost(decision.record.as_ref(), lease, now);
        Err(LeaseError::Held {
            holder_token: current
                .filter(|(_, h)| h.is_live(now))
                .map(|(r, _)| r.token),
        })
    }

    fn release_now(&self, lease: &Lease) -> Result<(), LeaseError> {
        let session = lease.session();
        let decision = self.begin(session)?;
        let now = now_us();
        let any_process = self.is(Mutant::UnlockFromAnyProcess);
        let ours = decision.record.as_ref().filter(|r| {
            r.token == lease.token()
                && r.holder.as_ref().is_some_and(|h| {
                    h.is_owner(lease.owner()) && (h.pid == (self.pid)() || any_process)
                })
        });
        let mut outcome = Ok(());
        if let Some(record) = ours {
            let released = Record {
                holder: None,
                ..record.clone()
            };
            outcome = self.write_record(&decision.files, session, &released);
            if outcome.is_ok() {
                let hold = self.gens().remove(&(session.clone(), lease.token()));
                hold.into_iter().for_each(|hold| self.let_go(hold));
            }
        } else {
            self.forget_if_lost(decision.record.as_ref(), lease, now);
        }
        if self.is(Mutant::UnlinkOnRelease) {
            decision.lock.unlink_and_drop();
        }
        outcome
    }
}

impl Drop for FlockLease {
    fn drop(&mut self) {
        let holds = std::mem::take(&mut *self.gens());
        holds.into_values().for_each(|hold| self.let_go(hold));
    }
}

/// The session's record, `None` when there is none.
///
/// # Errors
/// [`LeaseError::Unavailable`] naming the file when it cannot be read or cannot be trusted.
fn read_record(files: &SessionFiles, session: &SessionId) -> Result<Option<Record>, LeaseError> {
    let bytes = fs::read_if_present(&files.record)
        .map_err(|e| unavailable(&files.record, "read lease record", e))?;
    let Some(bytes) = bytes else {
        return Ok(None);
    };
    record::decode(&bytes, session.as_str())
        .map(Some)
        .map_err(|damage| {
            unavailable(
                &files.record,
                "damaged lease record",
                format_args!(
                    "{damage}; the token high-water mark cannot be trusted, so nothing is \
                     granted (no token is ever guessed or reissued). Once no process holds the \
                     session, removing the file lets the next grant take its token from the \
                     session's generation files ({}.gen.*)",
                    files.stem
                ),
            )
        })
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

/// The file-name stem of `session`: a sanitised prefix of the id (`[A-Za-z0-9_-]`, at most
/// 40 bytes) and a hash of the whole id, so it never escapes the directory and two ids never
/// share it (see [`name::stem`] for the exact mapping).
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

/// [`boottime`] in whole µs, the record's unit.
fn now_us() -> u64 {
    u64::try_from(boottime().since_origin().as_micros()).unwrap_or(u64::MAX)
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
