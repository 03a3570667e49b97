//! The service layer: runs work on a session under its lease and journal.
//!
//! A run enters the session's in-process gate, then takes the lease (unless leasing is
//! sticky-disabled), opens the fenced journal and runs the caller's work while a renewer keeps
//! the lease alive. Losing the lease invalidates the journal first, then cancels the work,
//! then releases (docs/contracts.md#service). The renewer lives exactly as long as its run.

mod gate;
mod registry;
mod renewer;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::hooks::Observation;
use crate::journal::{Journal, JournalError, JournalLease, LossCause, Store};
use crate::lease::{LeaseError, SessionId};
use crate::mutant::Mutant;
use crate::sync::{AtomicBool, AtomicU64, Ordering};
use gate::Gate;
use registry::{Registration, Registry};

pub use renewer::Backoff;
pub use renewer::renew_until_lost;

/// The run-entry gate and the held-lease registry, which are internal to [`Service`]: exposed
/// only to the loom models (`models/gate.rs`) in a build with the `loom` feature.
#[cfg(feature = "loom")]
#[doc(hidden)]
pub mod model {
    pub use super::gate::{Enter, Gate, GateGuard};
    pub use super::registry::{Registration, Registry};
}

/// Settings of a [`Service`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServiceConfig {
    /// Backoff between renew attempts after transient errors.
    pub renew_backoff: Backoff,
    /// How many times a run whose journal was poisoned is restarted under a fresh lease
    /// (default 1).
    pub max_recoveries: u32,
    /// How long [`Service::shutdown`] lets runs finish their clean-up before it releases
    /// their leases anyway (default 5 s, on the service's clock).
    pub shutdown_grace: Duration,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            renew_backoff: Backoff::default(),
            max_recoveries: 1,
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

/// Why a run did not complete.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// Another replica holds the session's lease (HTTP 409 / FAILED_PRECONDITION).
    #[error("session is leased elsewhere (holder token {holder_token:?})")]
    SessionLeasedElsewhere {
        /// The holder's token, if the authority named one.
        holder_token: Option<u64>,
    },
    /// The lease was lost during the run, which was cancelled.
    #[error("run cancelled: lease lost")]
    LeaseLost {
        /// Why.
        #[source]
        cause: LossCause,
    },
    /// The lease authority failed (e.g. unavailable).
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// Opening the journal failed, or the work failed with a journal error that recovery
    /// could not get past.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The service is shutting down and starts no new runs.
    #[error("the service is shutting down")]
    ShuttingDown,
}

/// What a run's work gets: the journal and lease (absent when leasing is disabled) and the
/// shutdown signal.
#[derive(Debug)]
pub struct RunContext {
    journal: Option<Arc<Journal>>,
    shutdown: watch::Receiver<bool>,
}

impl RunContext {
    /// The session's fenced journal, or `None` when leasing is disabled (no epoch to fence
    /// with).
    pub fn journal(&self) -> Option<&Arc<Journal>> {
        self.journal.as_ref()
    }

    /// The held lease, or `None` when leasing is disabled.
    pub fn lease(&self) -> Option<&JournalLease> {
        self.journal.as_deref().map(Journal::lease)
    }

    /// Completes when the service starts a graceful shutdown: finish up (a final clean-up
    /// append is still fenced and valid) and return.
    pub async fn shutdown_requested(&self) {
        let mut rx = self.shutdown.clone();
        // The sender lives in the service, which outlives its runs.
        let _ = rx.wait_for(|stopping| *stopping).await;
    }
}

/// Runs work on sessions for one owner: gate, lease, journal, renewer, registry.
///
/// It runs the planted bug of its store ([`Store::mutant`]): it honours
/// [`Mutant::RenewerOutlivesWorker`], [`Mutant::CleanupBeforeInvalidate`] and
/// [`Mutant::GivesUpContending`].
#[derive(Debug)]
pub struct Service {
    store: Arc<Store>,
    config: ServiceConfig,
    gate: Gate,
    registry: Registry,
    leasing_disabled: AtomicBool,
    shutdown: watch::Sender<bool>,
    /// Acquires turned away in a row (what [`Mutant::GivesUpContending`] counts).
    turned_away: AtomicU64,
}

impl Service {
    /// A service acting through `store`.
    pub fn new(store: Arc<Store>) -> Self {
        Service {
            store,
            config: ServiceConfig::default(),
            gate: Gate::default(),
            registry: Registry::default(),
            leasing_disabled: AtomicBool::new(false),
            shutdown: watch::channel(false).0,
            turned_away: AtomicU64::new(0),
        }
    }

    /// The same service with `config`.
    pub fn with_config(mut self, config: ServiceConfig) -> Self {
        self.config = config;
        self
    }

    /// Whether leasing is off for good because the backend answered `Unsupported`.
    pub fn leasing_disabled(&self) -> bool {
        self.leasing_disabled.load(Ordering::SeqCst)
    }

    /// Runs `work` on `session`: waits for the session's gate, acquires the lease, opens the
    /// journal and calls `work` while the renewer keeps the lease. When the work returns,
    /// panics or is cancelled (this future dropped), renewing stops and the lease is
    /// released. If the work fails with a journal error that poisons the journal, the lease
    /// is released and the work restarted under a fresh lease (new token), up to
    /// `max_recoveries` times.
    ///
    /// # Errors
    /// [`RunError::SessionLeasedElsewhere`] when another owner holds the lease;
    /// [`RunError::LeaseLost`] when the lease was lost mid-run (the work was cancelled);
    /// [`RunError::Lease`] for authority failures; [`RunError::Journal`] when opening fails
    /// or recovery gives up; [`RunError::ShuttingDown`].
    ///
    /// # Panics
    /// Re-raises a panic of `work`, after releasing the lease.
    pub async fn run<T, F, Fut>(&self, session: &SessionId, mut work: F) -> Result<T, RunError>
    where
        F: FnMut(RunContext) -> Fut,
        Fut: Future<Output = Result<T, JournalError>>,
    {
        if *self.shutdown.borrow() {
            return Err(RunError::ShuttingDown);
        }
        let _gate = self.gate.enter(session).await;
        // A run that waited at the gate while shutdown began must not take a lease now.
        if *self.shutdown.borrow() {
            return Err(RunError::ShuttingDown);
        }
        let mut recoveries = 0;
        loop {
            if self.leasing_disabled() {
                return Ok(work(self.context(None)).await?);
            }
            if self.gave_up() {
                self.context(None).shutdown_requested().await;
                return Err(RunError::ShuttingDown);
            }
            let acquired = self.store.acquire_lease(session).await;
            self.count_turned_away(acquired.is_ok());
            let lease = match acquired {
                Ok(lease) => lease,
                Err(LeaseError::Held { holder_token }) => {
                    return Err(RunError::SessionLeasedElsewhere { holder_token });
                }
                Err(LeaseError::Unsupported) => {
                    self.disable_leasing();
                    continue;
                }
                Err(other) => return Err(other.into()),
            };
            match self.run_leased(lease, &mut work).await {
                Err(RunError::Journal(error))
                    if error.poisons() && recoveries < self.config.max_recoveries =>
                {
                    recoveries += 1;
                    debug_assert!(
                        recoveries <= self.config.max_recoveries,
                        "a run re-acquires at most max_recoveries times (docs/contracts.md#service)"
                    );
                    tracing::info!(%session, %error, recoveries, "journal poisoned; re-acquiring");
                }
                outcome => return outcome,
            }
        }
    }

    /// Counts an acquire turned away in a row, or starts again at 0 after a grant.
    fn count_turned_away(&self, granted: bool) {
        if granted {
            self.turned_away.store(0, Ordering::SeqCst);
        } else {
            self.turned_away.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// [`Mutant::GivesUpContending`]: whether the service has stopped asking for leases.
    fn gave_up(&self) -> bool {
        self.store.mutant() == Some(Mutant::GivesUpContending)
            && self.turned_away.load(Ordering::SeqCst) >= crate::mutant::GIVE_UP_AFTER
    }

    /// One leased attempt: renewer, journal, work; releases the lease however it ends.
    async fn run_leased<T, F, Fut>(&self, lease: JournalLease, work: &mut F) -> Result<T, RunError>
    where
        F: FnMut(RunContext) -> Fut,
        Fut: Future<Output = Result<T, JournalError>>,
    {
        let mut hold = Hold {
            lease: lease.clone(),
            renewer: tokio::spawn(renewer::renew_until_lost(
                lease.clone(),
                self.config.renew_backoff,
            )),
            _registration: self.registry.register(&lease),
            released: false,
            outlives: self.store.mutant() == Some(Mutant::RenewerOutlivesWorker),
        };
        let outcome = match self.store.open_journal(&lease).await {
            Ok(journal) => {
                let work = AssertUnwindSafe(work(self.context(Some(Arc::new(journal)))));
                tokio::select! {
                    biased;
                    cause = lease.lost() => {
                        tracing::info!(session = %lease.session(), %cause, "run cancelled: lease lost");
                        self.store.hooks().observe(|| Observation::RunCancelledOnLoss {
                            session: lease.session(),
                        });
                        Ok(Err(RunError::LeaseLost { cause }))
                    }
                    done = work.catch_unwind() => done.map(|r| r.map_err(RunError::from)),
                }
            }
            Err(error) => Ok(Err(error.into())),
        };
        hold.release().await;
        outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }

    fn context(&self, journal: Option<Arc<Journal>>) -> RunContext {
        RunContext {
            journal,
            shutdown: self.shutdown.subscribe(),
        }
    }

    fn disable_leasing(&self) {
        if !self.leasing_disabled.swap(true, Ordering::SeqCst) {
            tracing::info!(
                "lease backend does not support leasing; running without leases from now on"
            );
            self.store.hooks().observe(|| Observation::StickyDisable);
        }
    }

    /// Graceful shutdown: refuses new runs, tells running work to finish
    /// ([`RunContext::shutdown_requested`]), waits up to `shutdown_grace` for the runs to
    /// end, then releases every lease still held, so a survivor can take over at once
    /// instead of after a TTL. Each lease is released exactly once.
    pub async fn shutdown(&self) {
        if self.store.mutant() == Some(Mutant::CleanupBeforeInvalidate) {
            // The mutant: every lease is released at the authority first, without
            // invalidating its hold, and only then are the runs told to clean up.
            for lease in self.registry.held() {
                if let Err(error) = lease.release_at_authority().await {
                    tracing::warn!(session = %lease.session(), %error, "release at shutdown failed");
                }
            }
        }
        self.shutdown.send_replace(true);
        let clock = self.store.clock().clone();
        let deadline = clock.now() + self.config.shutdown_grace;
        self.registry.release_all(&clock, deadline).await;
    }
}

/// A run's hold on its lease: stops the renewer and releases when the run ends, including
/// when the run's future is dropped (then the release runs in a task of its own, so that the
/// cancellation cannot cancel it).
struct Hold {
    lease: JournalLease,
    renewer: JoinHandle<LossCause>,
    _registration: Registration,
    released: bool,
    /// [`Mutant::RenewerOutlivesWorker`]: the run's end neither stops the renewer nor
    /// releases (the renewer was meant to, and is never told), so the lease stays held.
    outlives: bool,
}

impl Hold {
    async fn release(&mut self) {
        if self.outlives {
            self.released = true;
            return;
        }
        self.renewer.abort();
        if let Err(error) = self.lease.release().await {
            tracing::warn!(session = %self.lease.session(), %error, "release failed; the lease will expire");
        }
        debug_assert!(
            self.lease.loss().is_some(),
            "a released hold is lost to its holder before the run ends (docs/contracts.md#service)"
        );
        self.released = true;
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if self.outlives {
            return;
        }
        self.renewer.abort();
        if self.released {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let lease = self.lease.clone();
            runtime.spawn(async move { lease.release().await });
        }
    }
}
