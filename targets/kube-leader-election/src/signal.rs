//! One session's running `LeaseLock`: the loop the crate's docs ask of its caller
//! (`try_acquire_or_renew` every renew period), its "I lead" signal (the last result) with
//! every change recorded (a `target_signal` line), and the token and validity of the
//! response that said "I lead" (docs/targets.md#kube-leader-election).

use std::sync::{Arc, Mutex};

use k8s_openapi_028::api::coordination::v1::Lease as LeaseObject;
use kube_leader_election::{Error as ElectionError, LeaseLock, LeaseLockResult};
use leasesim::clock::{Clock, Instant};
use leasesim::lease::{Owner, SessionId};
use leasesim::sim::backend::RecordedKubeCalls;
use tokio::task::JoinHandle;

use crate::Params;

/// The crate's signal as its last result left it.
pub type Seen = leasesim::sim::backend::Seen<Leadership>;

/// What the adapter grants on: the token and expiry of the leadership the signal shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Leadership {
    /// `spec.leaseTransitions` of the `Acquired` response that made the signal say "I lead"
    /// (the token of this leadership), while it does.
    pub token: Option<u64>,
    /// When the last `Acquired` lease runs out, on the replica's clock: the TTL after the call
    /// that wrote it started (its `renewTime` is the host's wall clock at or after that
    /// start).
    pub valid_until: Option<Instant>,
}

/// What one `try_acquire_or_renew` said, as the signal takes it.
#[derive(Debug)]
pub enum Answer {
    /// `Acquired(lease)`: "I lead", with the token the response carries.
    Leads { token: u64 },
    /// `NotAcquired`: another holder's lease has not expired by this host's clock.
    Held,
    /// The call failed: read as "not leading" (the crate leaves it to the caller).
    Failed(ElectionError),
}

impl Answer {
    fn from(result: Result<LeaseLockResult, ElectionError>) -> Answer {
        match result {
            Ok(LeaseLockResult::Acquired(lease)) => Answer::Leads {
                token: transitions(&lease),
            },
            Ok(LeaseLockResult::NotAcquired(_)) => Answer::Held,
            Err(error) => Answer::Failed(error),
        }
    }
}

/// `spec.leaseTransitions` of `lease` (0 when absent, as the crate creates it).
fn transitions(lease: &LeaseObject) -> u64 {
    let transitions = lease.spec.as_ref().and_then(|spec| spec.lease_transitions);
    transitions.map_or(0, |t| u64::try_from(t).unwrap_or(0))
}

/// One lock's "I lead" signal, recorded on every change.
#[derive(Debug)]
pub struct Signal {
    owner: Owner,
    session: SessionId,
    calls: Arc<RecordedKubeCalls>,
    params: Params,
    seen: Mutex<Seen>,
}

impl Signal {
    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The signal now.
    pub fn now(&self) -> Seen {
        *self.lock()
    }

    /// Takes `answer`, from a call that started at `started`; records a change of "I lead".
    fn answer(&self, answer: &Answer, started: Instant) -> Seen {
        let mut seen = self.lock();
        let leads = matches!(answer, Answer::Leads { .. });
        if leads != seen.leads {
            self.calls.signal(&self.owner, &self.session, leads);
            seen.leads = leads;
            seen.changes += 1;
            seen.state.token = None;
        }
        if let Answer::Leads { token } = answer {
            // A leadership's token is the one of the response that started it.
            seen.state.token.get_or_insert(*token);
            seen.state.valid_until = Some(started + self.params.lease_ttl);
        } else {
            seen.state.valid_until = None;
        }
        *seen
    }

    /// The caller stops believing the crate: "not leading", recorded if it was leading.
    fn stop(&self) {
        let mut seen = self.lock();
        if seen.leads {
            self.calls.signal(&self.owner, &self.session, false);
            seen.leads = false;
            seen.changes += 1;
        }
        seen.state = Leadership::default();
    }
}

/// A session's lock and, while it leads, the loop that renews it.
pub struct Running {
    /// The crate's signal.
    pub signal: Arc<Signal>,
    lock: Arc<LeaseLock>,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Running {
    /// The crate's lock prints nothing: the signal does.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("signal", &self.signal)
            .finish_non_exhaustive()
    }
}

impl Running {
    /// Makes `lock`'s first `try_acquire_or_renew` now and, if it says "I lead", starts the
    /// loop that calls it again every renew period for as long as it keeps saying so. Returns
    /// the lock and the first call's answer.
    pub async fn start(
        lock: LeaseLock,
        owner: &Owner,
        session: &SessionId,
        params: Params,
        calls: Arc<RecordedKubeCalls>,
        clock: Arc<dyn Clock>,
    ) -> (Running, Answer) {
        let signal = Arc::new(Signal {
            owner: owner.clone(),
            session: session.clone(),
            calls,
            params,
            seen: Mutex::new(Seen::default()),
        });
        let lock = Arc::new(lock);
        let started = clock.now();
        let answer = Answer::from(lock.try_acquire_or_renew().await);
        let seen = signal.answer(&answer, started);
        let task = seen
            .leads
            .then(|| tokio::spawn(renew(lock.clone(), signal.clone(), clock, params)));
        let running = Running { signal, lock, task };
        (running, answer)
    }

    /// Stops believing the crate and stops the loop (a call in flight is dropped).
    pub fn let_go(&mut self) {
        self.signal.stop();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }

    /// [`Running::let_go`], then the crate's `step_down()`, which vacates the Lease if it
    /// still names this holder.
    ///
    /// # Errors
    /// `step_down` failed (the lock was not ours by then: not an error).
    pub async fn step_down(mut self) -> Result<(), ElectionError> {
        self.let_go();
        match self.lock.step_down().await {
            Ok(()) | Err(ElectionError::ReleaseLockWhenNotLeading { .. }) => Ok(()),
            Err(error) => Err(error),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// The docs' loop: `try_acquire_or_renew` every renew period while it says "I lead"; the first
/// other answer ends it (a lock that no longer leads is driven by the world's next acquire,
/// not left to take the Lease for nobody).
async fn renew(lock: Arc<LeaseLock>, signal: Arc<Signal>, clock: Arc<dyn Clock>, params: Params) {
    loop {
        clock.sleep(params.renew_period).await;
        let started = clock.now();
        let answer = Answer::from(lock.try_acquire_or_renew().await);
        if let Answer::Failed(error) = &answer {
            tracing::debug!(%error, "kube-leader-election's renew failed");
        }
        if !signal.answer(&answer, started).leads {
            return;
        }
    }
}
