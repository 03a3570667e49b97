//! One replica's [`SessionLease`] over a lease crate that says "I lead" and keeps its lease
//! itself (docs/targets.md#a-lease-from-a-crates-signal): the world's calls answered from the
//! crate's signal, once for every such target. The adapter supplies only how it drives its
//! crate ([`SignalCrate`]): how it starts the crate for an owner and a session, reads its
//! signal, takes the token, and lets it go; [`SignalLease`] keeps one crate a session and the
//! bookkeeping around it.
//!
//! - `acquire` keeps the session's crate if it runs for the owner (and the adapter keeps it:
//!   [`SignalCrate::keeps`]), else lets it go, joins the task of the one let go before (two
//!   crates of one identity would undo each other), and starts one; then grants when the
//!   signal says "I lead", with the token the adapter takes, unless the signal moved while it
//!   took it. An acquire that grants nothing lets the crate go: nobody in the world wants the
//!   lock until the next acquire, and a crate left running would take and hold it for nobody
//!   (every other replica's acquire refused: a liveness failure of the adapter's making).
//! - `renew` succeeds while the signal says "I lead" with no change since the grant (no call:
//!   the crate renews on its own).
//! - `release` lets the crate go; its task is joined before the session's next crate starts
//!   (at most a TTL, then it is aborted).

use std::collections::BTreeMap;
use std::fmt::{self, Debug, Display};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::task::JoinHandle;

use leasesim_core::clock::{Clock, Instant};
use leasesim_core::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};

/// The crate's "I lead" signal as the adapter saw it at one look.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen<S = ()> {
    /// Whether the crate says it leads.
    pub leads: bool,
    /// Changes of `leads` the adapter has seen since the crate started (each one recorded as a
    /// `target_signal` line): a grant is renewed only while this has not moved.
    pub changes: u64,
    /// What else the adapter's grant needs from this look (kubert: the latest claim;
    /// kube-leader-election: the token and expiry of its last `Acquired` response).
    pub state: S,
}

/// What a crate's task returns once it has ended.
pub type Ended<C> = Result<<C as SignalCrate>::Kept, <C as SignalCrate>::Error>;

/// How an adapter drives its lease crate for a [`SignalLease`]: one running crate a session.
#[async_trait]
pub trait SignalCrate: Send + Sync + 'static {
    /// One session's crate running for one owner: its task, the adapter's watcher, its signal.
    type Running: Send + Sync + Debug;
    /// What a look at the signal carries besides "I lead" ([`Seen::state`]).
    type State: Clone + Send + Sync + Debug;
    /// What the crate's task returns when it ends well.
    type Kept: Send + 'static;
    /// What the crate's task returns when it fails.
    type Error: Display + Send + 'static;

    /// The crate's name, for messages (`kube-lease-manager`).
    fn name(&self) -> &'static str;

    /// Starts the crate for `owner` on `session`.
    ///
    /// # Errors
    /// A session the crate cannot name a Lease by ([`LeaseError::InvalidSession`]); the crate
    /// could not start ([`LeaseError::Unavailable`]).
    async fn start(&self, session: &SessionId, owner: &Owner) -> Result<Self::Running, LeaseError>;

    /// Waits, after [`SignalCrate::start`], for a crate that answers on a task of its own to
    /// give its first answer; by default there is nothing to wait for.
    async fn first_answer(&self, running: &Self::Running) {
        let _ = running;
    }

    /// Whether `running` may serve its owner's next acquire (its task has not ended); one the
    /// adapter does not keep is let go and a fresh one started.
    fn keeps(&self, running: &Self::Running) -> bool;

    /// The signal now; `None` when the crate no longer says anything. A look may record a
    /// change of the signal the adapter had not seen yet.
    fn look(&self, running: &Self::Running) -> Option<Seen<Self::State>>;

    /// The token of the leadership `seen` shows: from the crate's own response, or the
    /// Lease's `leaseTransitions` as the adapter reads it (a `target_get` line); `None` when
    /// that read shows the crate does not lead after all.
    ///
    /// # Errors
    /// The adapter's read failed.
    async fn token(
        &self,
        session: &SessionId,
        owner: &Owner,
        seen: &Seen<Self::State>,
    ) -> Result<Option<u64>, LeaseError>;

    /// A grant's expiry and TTL on `seen`, for a call made `at` on the replica's clock: never
    /// longer than the crate's own lease surely lasts; `None` when nothing is left.
    fn validity(&self, seen: &Seen<Self::State>, at: Instant) -> Option<(Instant, Duration)>;

    /// Lets `running` go: the crate stops leading and its task ends on its own time; the task
    /// to join before the session's next crate starts, if it has one.
    fn let_go(&self, running: Self::Running) -> Option<JoinHandle<Ended<Self>>>;

    /// Lets go the crate of an acquire that granted nothing ([`SignalCrate::let_go`] by
    /// default).
    fn let_go_refused(&self, running: Self::Running) -> Option<JoinHandle<Ended<Self>>> {
        self.let_go(running)
    }

    /// Lets the crate of a released lease go ([`SignalCrate::let_go`] by default).
    ///
    /// # Errors
    /// The crate's release failed where the adapter waits for it.
    async fn release(
        &self,
        running: Self::Running,
    ) -> Result<Option<JoinHandle<Ended<Self>>>, LeaseError> {
        Ok(self.let_go(running))
    }
}

/// One replica's lease over a [`SignalCrate`]: per session one running crate, the signal
/// change its current grant was made on, and the task of the crate let go before it.
pub struct SignalLease<C: SignalCrate> {
    driver: C,
    clock: Arc<dyn Clock>,
    ttl: Duration,
    sessions: Mutex<BTreeMap<SessionId, Arc<tokio::sync::Mutex<Slot<C>>>>>,
}

/// One session's crate and its owner, the signal change its current grant was made on, and
/// the task of the crate let go before it, until joined.
struct Slot<C: SignalCrate> {
    running: Option<(Owner, C::Running)>,
    granted_on: Option<u64>,
    stopping: Option<JoinHandle<Ended<C>>>,
}

impl<C: SignalCrate> Default for Slot<C> {
    fn default() -> Self {
        Slot {
            running: None,
            granted_on: None,
            stopping: None,
        }
    }
}

impl<C: SignalCrate> Debug for Slot<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slot")
            .field("running", &self.running)
            .field("granted_on", &self.granted_on)
            .field("stopping", &self.stopping.is_some())
            .finish()
    }
}

impl<C: SignalCrate> Debug for SignalLease<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignalLease")
            .field("crate", &self.driver.name())
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

impl<C: SignalCrate> SignalLease<C> {
    /// A lease driving `driver`, on the replica's `clock`; `ttl` is the world's TTL, the
    /// longest a let-go crate's task is waited for (its lock has lapsed by then anyway).
    pub fn new(driver: C, clock: Arc<dyn Clock>, ttl: Duration) -> Self {
        SignalLease {
            driver,
            clock,
            ttl,
            sessions: Mutex::new(BTreeMap::new()),
        }
    }

    fn slot(&self, session: &SessionId) -> Arc<tokio::sync::Mutex<Slot<C>>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.entry(session.clone()).or_default().clone()
    }

    /// Makes sure `owner`'s crate of `session` runs in `slot`: lets go one of another owner or
    /// one the adapter does not keep; joins the task of the one let go before; starts one and
    /// waits for its first answer.
    async fn ensure_running(
        &self,
        slot: &mut Slot<C>,
        session: &SessionId,
        owner: &Owner,
    ) -> Result<(), LeaseError> {
        let stale = slot
            .running
            .as_ref()
            .is_some_and(|(of, running)| of != owner || !self.driver.keeps(running));
        if stale && let Some((_, old)) = slot.running.take() {
            slot.stopping = self.driver.let_go(old);
        }
        if slot.running.is_some() {
            return Ok(());
        }
        if let Some(stopping) = slot.stopping.take()
            && let Err(error) = self.join(stopping).await
        {
            // Whatever it says, the new crate's answer is what counts.
            tracing::debug!(target: "leasesim::sim::backend::signal_lease", %session, %error, "the previous crate's release");
        }
        let running = self.driver.start(session, owner).await?;
        slot.granted_on = None;
        let (_, running) = slot.running.insert((owner.clone(), running));
        self.driver.first_answer(running).await;
        Ok(())
    }

    /// Waits for a let-go crate's `task` to end, at most a TTL on the replica's clock, then
    /// aborts it.
    ///
    /// # Errors
    /// The task ended with an error, panicked, or outlasted the TTL.
    async fn join(&self, mut task: JoinHandle<Ended<C>>) -> Result<(), String> {
        let name = self.driver.name();
        let joined = tokio::select! {
            joined = &mut task => joined,
            () = self.clock.sleep(self.ttl) => {
                task.abort();
                return Err(format!(
                    "{name}'s task did not end within {} ms of being let go; aborted",
                    self.ttl.as_millis()
                ));
            }
        };
        match joined {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(format!("{name}'s task ended with an error: {error}")),
            Err(error) => Err(format!("{name}'s task failed: {error}")),
        }
    }

    /// The signal of the crate in `slot` now.
    fn look(&self, slot: &Slot<C>) -> Option<Seen<C::State>> {
        let (_, running) = slot.running.as_ref()?;
        self.driver.look(running)
    }

    /// `acquire` in `slot`: the crate running, its signal "I lead", the token taken, the
    /// signal unmoved meanwhile.
    async fn grant(
        &self,
        slot: &mut Slot<C>,
        session: &SessionId,
        owner: &Owner,
        at: Instant,
    ) -> Result<Lease, LeaseError> {
        self.ensure_running(slot, session, owner).await?;
        let held = || LeaseError::Held { holder_token: None };
        let Some(before) = self.look(slot).filter(|seen| seen.leads) else {
            return Err(held());
        };
        let Some(token) = self.driver.token(session, owner, &before).await? else {
            return Err(held());
        };
        let unmoved = |seen: &Seen<C::State>| seen.leads && seen.changes == before.changes;
        let Some(after) = self.look(slot).filter(unmoved) else {
            return Err(held());
        };
        slot.granted_on = Some(after.changes);
        self.granted(session, owner, token, &after, at)
            .ok_or_else(held)
    }

    fn granted(
        &self,
        session: &SessionId,
        owner: &Owner,
        token: u64,
        seen: &Seen<C::State>,
        at: Instant,
    ) -> Option<Lease> {
        let (expires, ttl) = self.driver.validity(seen, at)?;
        Some(Lease::new(
            session.clone(),
            owner.clone(),
            token,
            expires,
            ttl,
        ))
    }
}

#[async_trait]
impl<C: SignalCrate> SessionLease for SignalLease<C> {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let at = self.clock.now();
        let slot = self.slot(session);
        let mut slot = slot.lock().await;
        let granted = self.grant(&mut slot, session, owner, at).await;
        if granted.is_err()
            && let Some((_, running)) = slot.running.take()
        {
            slot.granted_on = None;
            slot.stopping = self.driver.let_go_refused(running);
        }
        granted
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let at = self.clock.now();
        let slot = self.slot(lease.session());
        let slot = slot.lock().await;
        let running = slot.running.as_ref().filter(|(of, _)| of == lease.owner());
        let seen = running.and_then(|(_, running)| self.driver.look(running));
        seen.filter(|seen| seen.leads && slot.granted_on == Some(seen.changes))
            .and_then(|seen| {
                let (session, owner) = (lease.session(), lease.owner());
                self.granted(session, owner, lease.token(), &seen, at)
            })
            .ok_or(LeaseError::Held { holder_token: None })
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        let slot = self.slot(lease.session());
        let mut slot = slot.lock().await;
        let owned = slot
            .running
            .as_ref()
            .is_some_and(|(of, _)| of == lease.owner());
        if !owned {
            return Ok(());
        }
        slot.granted_on = None;
        if let Some((_, running)) = slot.running.take() {
            slot.stopping = self.driver.release(running).await?;
        }
        Ok(())
    }
}
