//! `MemLease`: the reference lease authority, an ordered map behind a mutex.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;

use super::{Lease, LeaseError, Owner, SessionId, SessionLease};
use crate::clock::{Clock, Instant};
use crate::hooks::{HookSlot, Observation};
use crate::mutant::Mutant;
use std::sync::Arc;

use crate::sync::{Mutex, lock};

/// The in-process lease authority and the reference implementation of [`SessionLease`].
///
/// One mutex guards an ordered map from session to its entry; every call is one critical
/// section (check and act together), and expiry is judged on the injected clock
/// (`now >= expiry` is expired), read inside that section. Each session keeps a token
/// high-water mark that outlives release and record deletion, so tokens increase per session
/// forever.
///
/// The clock is read under the lock so that decisions are ordered as their readings are. A
/// reading taken before the lock can be older than the decision made just before it, and a
/// renew judged on it moves the expiry back below what a concurrent same-owner re-acquire
/// was just told ([`Mutant::ClockReadBeforeLock`]; the loom models in `models/lease.rs`
/// kill it).
#[derive(Debug)]
pub struct MemLease {
    clock: Arc<dyn Clock>,
    ttl: Duration,
    mutant: Option<Mutant>,
    hooks: HookSlot,
    sessions: Mutex<BTreeMap<SessionId, Entry>>,
}

#[derive(Debug, Default)]
struct Entry {
    /// Highest token ever granted for the session.
    high_water: u64,
    /// The current record, if any: it may be expired.
    record: Option<Record>,
}

#[derive(Clone, Debug)]
struct Record {
    owner: Owner,
    token: u64,
    expiry: Instant,
}

impl Record {
    fn is_live(&self, now: Instant) -> bool {
        now < self.expiry
    }
}

impl MemLease {
    /// An authority granting leases of `ttl` (must be non-zero), judging expiry on `clock`.
    ///
    /// # Panics
    /// When `ttl` is zero: such a lease would be expired the moment it is granted.
    pub fn new(clock: Arc<dyn Clock>, ttl: Duration) -> Self {
        assert!(!ttl.is_zero(), "MemLease needs a non-zero TTL");
        MemLease {
            clock,
            ttl,
            mutant: None,
            hooks: HookSlot::default(),
            sessions: Mutex::new(BTreeMap::new()),
        }
    }

    /// The same authority running `mutant` (a planted bug), or the correct code for `None`.
    pub fn with_mutant(mut self, mutant: Option<Mutant>) -> Self {
        self.mutant = mutant;
        self
    }

    /// The same authority reporting record deletions to `hooks`
    /// ([`Observation::RecordDeleted`]); none by default.
    pub fn with_hooks(mut self, hooks: HookSlot) -> Self {
        self.hooks = hooks;
        self
    }

    /// The TTL of every lease this authority grants.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The owner and token of the session's current record, live or expired, if any: for a
    /// harness recording what a release ended.
    pub fn holder(&self, session: &SessionId) -> Option<(Owner, u64)> {
        let sessions = lock(&self.sessions);
        let record = sessions.get(session)?.record.as_ref()?;
        Some((record.owner.clone(), record.token))
    }

    /// Raises the session's token high-water mark to `token` (never lowers it): an authority
    /// restoring its durable state after a restart, so no token is ever granted twice.
    pub fn restore_high_water(&self, session: &SessionId, token: u64) {
        let mut sessions = lock(&self.sessions);
        let entry = sessions.entry(session.clone()).or_default();
        entry.high_water = entry.high_water.max(token);
        debug_assert!(
            entry.high_water >= token,
            "tokens never fall (docs/contracts.md#tokens): a restored high-water mark {} is \
             below the token {token} restored",
            entry.high_water
        );
    }

    /// Deletes the session's record whatever its state (an operator deleting the object);
    /// the token high-water mark survives, so the next grant still gets a higher token.
    pub fn delete_record(&self, session: &SessionId) {
        let mut sessions = lock(&self.sessions);
        if let Some(entry) = sessions.get_mut(session)
            && entry.record.take().is_some()
        {
            self.record_deleted(session);
            self.drop_high_water(&mut sessions, session);
        }
    }

    /// Deletes the session's record if it has expired, as a garbage collector of expired
    /// records does; a live record is kept (deleting it would hand a live lease to the next
    /// acquirer, which no authority can defend against). The high-water mark survives.
    /// `now` is the authority's clock reading (a collector outside the authority's host passes
    /// it in). Returns whether it deleted.
    pub fn collect_expired_record(&self, session: &SessionId, now: Instant) -> bool {
        let mut sessions = lock(&self.sessions);
        let Some(entry) = sessions.get_mut(session) else {
            return false;
        };
        match &entry.record {
            Some(record) if !self.is_live(record, now) => {
                entry.record = None;
                self.record_deleted(session);
                self.drop_high_water(&mut sessions, session);
                true
            }
            Some(_) => {
                tracing::info!(%session, "lease record live: not collected");
                false
            }
            None => false,
        }
    }

    fn record_deleted(&self, session: &SessionId) {
        tracing::info!(%session, "lease record deleted");
        self.hooks.observe(|| Observation::RecordDeleted {
            session: session.clone(),
        });
    }

    fn grant(&self, session: &SessionId, record: &Record) -> Lease {
        let expiry = if self.mutant == Some(Mutant::ExpiryByWallClock) {
            // The record's expiry is a wall reading; the lease value still reports one on the
            // monotonic clock, as the contract says (the bug is in judging, not reporting).
            self.clock.now() + self.ttl
        } else {
            record.expiry
        };
        Lease::new(
            session.clone(),
            record.owner.clone(),
            record.token,
            expiry,
            self.ttl,
        )
    }

    /// Whether `record` is live at `now`: `now < expiry` (`now <= expiry` under
    /// [`Mutant::ExpiryOffByOne`]).
    fn is_live(&self, record: &Record, now: Instant) -> bool {
        if self.mutant == Some(Mutant::ExpiryOffByOne) {
            return now <= record.expiry;
        }
        record.is_live(now)
    }

    /// The reading expiry is judged on: the monotonic clock, or the wall clock (as if it were
    /// monotonic) under [`Mutant::ExpiryByWallClock`].
    fn now(&self) -> Instant {
        if self.mutant == Some(Mutant::ExpiryByWallClock) {
            let unix_ns = u64::try_from(self.clock.wall().unix_ns).unwrap_or(0);
            return Instant::from_origin(Duration::from_nanos(unix_ns));
        }
        self.clock.now()
    }

    /// Forgets the session's token high-water mark with its record, under
    /// [`Mutant::TokenDroppedWithRecord`] only.
    fn drop_high_water(&self, sessions: &mut BTreeMap<SessionId, Entry>, session: &SessionId) {
        if self.mutant == Some(Mutant::TokenDroppedWithRecord) {
            sessions.remove(session);
        }
    }

    /// The token for `owner`'s takeover of `entry`, whose current record (if any) has expired.
    fn takeover_token(&self, entry: &Entry, owner: &Owner) -> u64 {
        match (&entry.record, self.mutant) {
            (Some(expired), Some(Mutant::TokenNotAdvancedOnExpiry)) => expired.token,
            (Some(expired), Some(Mutant::ExpiredReacquireKeepsToken))
                if expired.owner == *owner =>
            {
                expired.token
            }
            _ => entry.high_water + 1,
        }
    }

    /// A clock reading taken before the lock, under [`Mutant::ClockReadBeforeLock`] only.
    fn read_clock_before_lock(&self) -> Option<Instant> {
        (self.mutant == Some(Mutant::ClockReadBeforeLock)).then(|| self.now())
    }

    /// Under [`Mutant::RenewRecreatesRecord`] only: when the session has no record (never
    /// granted, deleted or released), recreates `lease`'s from the value given, extended
    /// from `now`.
    fn recreate_record(
        &self,
        sessions: &mut BTreeMap<SessionId, Entry>,
        lease: &Lease,
        now: Instant,
    ) -> Option<Lease> {
        if self.mutant != Some(Mutant::RenewRecreatesRecord) {
            return None;
        }
        let entry = sessions.entry(lease.session().clone()).or_default();
        if entry.record.is_some() {
            return None;
        }
        let record = Record {
            owner: lease.owner().clone(),
            token: lease.token(),
            expiry: now + self.ttl,
        };
        let granted = self.grant(lease.session(), &record);
        entry.record = Some(record);
        Some(granted)
    }

    /// The check half of acquire: `Held` when another owner's lease is live.
    fn decide(
        &self,
        entry: Option<&Entry>,
        owner: &Owner,
        now: Instant,
    ) -> Result<Grant, LeaseError> {
        match entry.and_then(|entry| entry.record.as_ref()) {
            Some(live) if self.is_live(live, now) && live.owner != *owner => {
                Err(LeaseError::Held {
                    holder_token: Some(live.token),
                })
            }
            Some(live) if self.is_live(live, now) => Ok(Grant::Keep(live.token)),
            _ => Ok(Grant::Takeover),
        }
    }

    /// Whether `lease` carries the token of `record` (renew's second test after the owner).
    fn token_matches(&self, record: &Record, lease: &Lease) -> bool {
        record.token == lease.token() || self.mutant == Some(Mutant::RenewIgnoresToken)
    }
}

/// What an acquire may grant, judged on the session's entry (if any) at `now`.
enum Grant {
    /// The same owner re-acquires its live lease: same token.
    Keep(u64),
    /// The session is free, expired or released: a takeover with a new token.
    Takeover,
}

#[async_trait]
impl SessionLease for MemLease {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let early = self.read_clock_before_lock();
        let mut sessions = lock(&self.sessions);
        // The clock is read inside the critical section: see `MemLease`.
        let now = early.unwrap_or_else(|| self.now());
        let grant = self.decide(sessions.get(session), owner, now)?;
        if self.mutant == Some(Mutant::AcquireCheckThenAct) {
            // The planted race: another acquire may decide on the same state before we act.
            drop(sessions);
            sessions = lock(&self.sessions);
        }
        let entry = sessions.entry(session.clone()).or_default();
        let high_water_before = entry.high_water;
        let token = match grant {
            Grant::Keep(token) => token,
            Grant::Takeover => self.takeover_token(entry, owner),
        };
        entry.high_water = entry.high_water.max(token);
        debug_assert!(
            entry.high_water >= high_water_before && entry.high_water >= token,
            "tokens never fall (docs/contracts.md#tokens): the high-water mark went from \
             {high_water_before} to {} on granting token {token}",
            entry.high_water
        );
        let record = Record {
            owner: owner.clone(),
            token,
            expiry: now + self.ttl,
        };
        debug_assert!(
            self.is_live(&record, now),
            "a grant's TTL > 0: a record is live when granted (now {now:?}, expiry {:?})",
            record.expiry
        );
        let lease = self.grant(session, &record);
        debug_assert_eq!(
            lease.token(),
            token,
            "a lease value carries the token of the record it was granted from"
        );
        entry.record = Some(record);
        Ok(lease)
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let early = self.read_clock_before_lock();
        let mut sessions = lock(&self.sessions);
        let now = early.unwrap_or_else(|| self.now());
        if let Some(recreated) = self.recreate_record(&mut sessions, lease, now) {
            return Ok(recreated);
        }
        let current = sessions
            .get_mut(lease.session())
            .and_then(|entry| entry.record.as_mut())
            .filter(|record| self.is_live(record, now));
        match current {
            Some(record) if record.owner == *lease.owner() && self.token_matches(record, lease) => {
                record.expiry = now + self.ttl;
                debug_assert!(
                    self.is_live(record, now),
                    "a grant's TTL > 0: a renewed record is live when renewed (now {now:?}, \
                     expiry {:?})",
                    record.expiry
                );
                Ok(self.grant(lease.session(), record))
            }
            other => Err(LeaseError::Held {
                holder_token: other.map(|record| record.token),
            }),
        }
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        let mut sessions = lock(&self.sessions);
        if let Some(entry) = sessions.get_mut(lease.session()) {
            let ours = entry.record.as_ref().is_some_and(|r| {
                self.mutant == Some(Mutant::ReleaseBySessionOnly)
                    || (r.owner == *lease.owner() && r.token == lease.token())
            });
            if ours {
                entry.record = None;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    const TTL: Duration = Duration::from_secs(10);

    fn lease(mutant: Option<Mutant>) -> (MemLease, ManualClock) {
        let clock = ManualClock::new();
        let lease = MemLease::new(Arc::new(clock.clone()), TTL).with_mutant(mutant);
        (lease, clock)
    }

    fn s1() -> SessionId {
        SessionId::new("s1").unwrap()
    }

    /// An authority (with `mutant`) that granted `s1` to owner `a` a TTL ago, and that lease,
    /// expired just now.
    async fn a_expired(mutant: Option<Mutant>) -> (MemLease, ManualClock, Lease) {
        let (authority, clock) = lease(mutant);
        let a = authority.acquire(&s1(), &Owner::new("a", 0)).await.unwrap();
        clock.advance(TTL);
        (authority, clock, a)
    }

    /// F7's core: A's stale renew after B released. The correct authority refuses it; the
    /// mutant hands A its token-1 lease back.
    #[tokio::test]
    async fn a_stale_renew_after_a_release_recreates_only_under_the_mutant() {
        for (mutant, recreated) in [(None, false), (Some(Mutant::RenewRecreatesRecord), true)] {
            let (authority, _, a) = a_expired(mutant).await;
            let b = authority.acquire(&s1(), &Owner::new("b", 0)).await.unwrap();
            authority.release(&b).await.unwrap();
            let renewed = authority.renew(&a).await;
            assert_eq!(renewed.is_ok(), recreated, "{mutant:?}: {renewed:?}");
            assert_eq!(authority.holder(&s1()).is_some(), recreated, "{mutant:?}");
        }
    }

    /// F5a's core: after garbage collection the next grant gets token 2, or token 1 again
    /// under the mutant.
    #[tokio::test]
    async fn collecting_a_record_drops_its_high_water_mark_only_under_the_mutant() {
        for (mutant, token) in [(None, 2), (Some(Mutant::TokenDroppedWithRecord), 1)] {
            let (authority, clock, _) = a_expired(mutant).await;
            assert!(authority.collect_expired_record(&s1(), clock.now()));
            let b = authority.acquire(&s1(), &Owner::new("b", 0)).await.unwrap();
            assert_eq!(b.token(), token, "{mutant:?}");
        }
    }

    /// The exact expiry instant: expired for the correct authority, live under the mutant.
    #[tokio::test]
    async fn the_expiry_instant_is_expired_except_under_the_off_by_one() {
        for (mutant, granted) in [(None, true), (Some(Mutant::ExpiryOffByOne), false)] {
            let (authority, _, _) = a_expired(mutant).await;
            let b = authority.acquire(&s1(), &Owner::new("b", 0)).await;
            assert_eq!(b.is_ok(), granted, "{mutant:?}: {b:?}");
        }
    }

    /// An owner re-acquiring its own expired lease gets token 2, or keeps 1 under the mutant;
    /// another owner's takeover still advances the token under it.
    #[tokio::test]
    async fn an_expired_same_owner_reacquire_keeps_its_token_only_under_the_mutant() {
        for (mutant, token) in [(None, 2), (Some(Mutant::ExpiredReacquireKeepsToken), 1)] {
            let (authority, clock, _) = a_expired(mutant).await;
            let again = authority.acquire(&s1(), &Owner::new("a", 0)).await.unwrap();
            assert_eq!(again.token(), token, "{mutant:?}");
            clock.advance(TTL);
            let b = authority.acquire(&s1(), &Owner::new("b", 0)).await.unwrap();
            assert_eq!(b.token(), token + 1, "{mutant:?}");
        }
    }
}
