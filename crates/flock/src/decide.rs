//! The decisions of a [`FlockLease`]: each acquire, renew and release takes the session
//! lock, reads the record, judges it on `CLOCK_BOOTTIME` and writes it (docs/contracts.md#lease
//! and docs/backends.md#flocklease).
//!
//! - Acquire: a live record of another holder is Held unless that holder's generation lock
//!   can be taken (its process is gone: taken over at once); a live record of the same owner
//!   in the same process keeps its token; anything else (none, released, expired, dead
//!   holder) is a takeover with the next token above the high-water mark (the larger of the
//!   record's token and the last generation file's, so a lost or rolled-back record never
//!   lowers it). A lost record whose last generation lock is still held is Held.
//! - The record's holder is this instance only when owner, token and pid match **and** this
//!   instance holds that token's generation lock (a pid is not unique across pid namespaces).
//! - Renew: only the record's holder while live; never recreates a record.
//! - Release: only the record's holder in the process that acquired (a forked child's
//!   release is a no-op); the token stays in the record as the high-water mark.
//! - A damaged record stops every decision with [`LeaseError::Unavailable`]: no token is
//!   guessed.

use std::time::Duration;

use super::lock::{self, Probe, SessionLock, Take, unavailable};
use super::os::FlockOs;
use super::record::{self, Holder, RECORD_VERSION, Record};
use super::{FlockLease, FlockPoint, GenHold, SessionFiles};
use leasesim_core::clock::Instant;
use leasesim_core::lease::{Lease, LeaseError, Owner, SessionId};
use leasesim_core::mutant::Mutant;

/// One decision in progress: the session lock held, the record read.
struct Decision<'os> {
    files: SessionFiles,
    lock: SessionLock<'os>,
    record: Option<Record>,
}

impl FlockLease {
    /// Takes the session lock and reads the record ([`FlockPoint::LockBusy`] if the lock is
    /// busy, [`FlockPoint::RecordRead`] once read).
    fn begin(&self, session: &SessionId) -> Result<Decision<'_>, LeaseError> {
        let files = self.files(session);
        let take = Take {
            path: &files.lock,
            wait: self.config.lock_wait,
            // The planted F8 bug is unlinking without this check: with it, the unlink is harmless.
            verify_inode: !self.is(Mutant::UnlinkOnRelease),
        };
        let lock = SessionLock::take(&*self.os, &take, || {
            self.hook(FlockPoint::LockBusy, session)
        })?;
        let record = read_record(&*self.os, &files, session)?;
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
        let mut half = || self.hook(FlockPoint::RecordHalfWritten, session);
        let written = if self.is(Mutant::RecordWrittenInPlace) {
            self.os.write_in_place(&files.record, &bytes, &mut half)
        } else {
            self.os.write_replacing(&files.record, &bytes, &mut half)
        };
        written.map_err(|(path, e)| unavailable(&path, "write lease record", e))
    }

    /// The lease value of a grant expiring at `expiry_us`.
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

    /// A TTL from `now_us`, in µs on `CLOCK_BOOTTIME`.
    fn expiry_us(&self, now_us: u64) -> u64 {
        let ttl_us = u64::try_from(self.config.ttl.as_micros()).unwrap_or(u64::MAX);
        now_us.saturating_add(ttl_us)
    }

    /// [`SessionLease::acquire`](leasesim_core::lease::SessionLease::acquire), as the module says.
    pub(super) fn acquire_now(
        &self,
        session: &SessionId,
        owner: &Owner,
    ) -> Result<Lease, LeaseError> {
        let decision = self.begin(session)?;
        let now = self.now_us();
        let pid = self.os.pid();
        if let Some(record) = &decision.record
            && let Some(holder) = &record.holder
            && holder.is_live(now)
        {
            // The holder is this instance only if it also holds the generation lock: a pid
            // alone is not unique (two pid namespaces on one host both have a pid 1).
            if holder.is(owner, pid) && self.holds_generation(session, record.token) {
                return self.extend(&decision, session, record, holder, now);
            }
            match lock::probe_gen(&*self.os, &decision.files.generation(record.token))? {
                Probe::Gone => {
                    let (token, holder) = (record.token, holder.owner());
                    tracing::info!(target: "leasesim::lease::flock::decide", %session, token, %holder, "holder's process gone: taking over");
                }
                Probe::Alive | Probe::Missing => {
                    return Err(LeaseError::Held {
                        holder_token: Some(record.token),
                    });
                }
            }
        }
        if decision.record.is_none()
            && let Some(&last) =
                lock::gen_tokens(&*self.os, &decision.files.dir, &decision.files.stem)?.last()
            && lock::probe_gen(&*self.os, &decision.files.generation(last))? == Probe::Alive
        {
            // The record is gone but the last generation's holder is alive: it still believes
            // it holds, so nobody may take over until it lets go.
            return Err(LeaseError::Held {
                holder_token: Some(last),
            });
        }
        self.take_over(&decision, session, owner, now)
    }

    /// Whether this instance, in this process, holds the generation lock of `token`.
    pub(super) fn holds_generation(&self, session: &SessionId, token: u64) -> bool {
        let pid = self.os.pid();
        self.gens()
            .get(&(session.clone(), token))
            .is_some_and(|hold| hold.pid == pid)
    }

    /// The holder keeps the lease (a live holder's re-acquire, or a renew): same token,
    /// expiry extended from `now`, its generation lock kept.
    fn extend(
        &self,
        decision: &Decision,
        session: &SessionId,
        record: &Record,
        holder: &Holder,
        now: u64,
    ) -> Result<Lease, LeaseError> {
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
        // The larger of the record's token and the last generation file's: a record lost
        // or rolled back (restored from a backup) never lowers the mark, because the current
        // token's generation file is never removed.
        let last_generation = lock::gen_tokens(&*self.os, &files.dir, &files.stem)?
            .last()
            .copied()
            .unwrap_or(0);
        let high_water = decision
            .record
            .as_ref()
            .map_or(0, |record| record.token)
            .max(last_generation);
        let (token, file) = lock::create_gen(&*self.os, &files.dir, &files.stem, high_water)?;
        let pid = self.os.pid();
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
        lock::remove_stale_gens(&*self.os, &files.dir, &files.stem, token);
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
    pub(super) fn let_go(&self, hold: GenHold) {
        let owning = hold.pid == self.os.pid() || self.is(Mutant::UnlockFromAnyProcess);
        if owning && let Err(e) = hold.file.unlock() {
            tracing::warn!(target: "leasesim::lease::flock::decide", "unlock generation lock: {e}");
        }
        drop(hold.file);
    }

    /// [`SessionLease::renew`](leasesim_core::lease::SessionLease::renew): the holder (owner, token,
    /// pid) while live; a lost lease's generation lock is let go.
    pub(super) fn renew_now(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let session = lease.session();
        let decision = self.begin(session)?;
        let now = self.now_us();
        let current = decision
            .record
            .as_ref()
            .and_then(|r| r.holder.as_ref().map(|h| (r, h)));
        if let Some((record, holder)) = current
            && record.token == lease.token()
            && holder.is(lease.owner(), self.os.pid())
            && self.holds_generation(session, record.token)
            && (holder.is_live(now) || self.is(Mutant::RenewWithoutExpiryCheck))
        {
            // `holder.is(lease.owner(), ..)`: the holder's owner is the lease's.
            return self.extend(&decision, session, record, holder, now);
        }
        self.forget_if_lost(decision.record.as_ref(), lease, now);
        Err(LeaseError::Held {
            holder_token: current
                .filter(|(_, h)| h.is_live(now))
                .map(|(r, _)| r.token),
        })
    }

    /// [`SessionLease::release`](leasesim_core::lease::SessionLease::release): the holder in the
    /// process that acquired writes the record released, then unlocks and closes its
    /// generation lock; anything else is a no-op.
    pub(super) fn release_now(&self, lease: &Lease) -> Result<(), LeaseError> {
        let session = lease.session();
        let decision = self.begin(session)?;
        let now = self.now_us();
        let any_process = self.is(Mutant::UnlockFromAnyProcess);
        let ours = decision.record.as_ref().filter(|r| {
            r.token == lease.token()
                && r.holder.as_ref().is_some_and(|h| {
                    h.is_owner(lease.owner())
                        && ((h.pid == self.os.pid() && self.holds_generation(session, r.token))
                            || any_process)
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

/// The session's record, `None` when there is none.
///
/// # Errors
/// [`LeaseError::Unavailable`] naming the file when it cannot be read or cannot be trusted.
pub(super) fn read_record(
    os: &dyn FlockOs,
    files: &SessionFiles,
    session: &SessionId,
) -> Result<Option<Record>, LeaseError> {
    let bytes = os
        .read(&files.record)
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
