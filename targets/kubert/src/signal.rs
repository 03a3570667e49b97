//! One session's running kubert `LeaseManager`: started with `spawn`, its claim judged "I lead"
//! as the crate defines it (`Claim::is_current_for` the claimant) and every change of that
//! recorded (a `target_signal` line), let go by dropping the claim's receiver, and its task
//! joined before the session's next manager starts ([`leasesim::sim::backend::SignalLease`],
//! docs/targets.md#kubert).

use std::sync::{Arc, Mutex};

use k8s_openapi_025::api::coordination::v1::Lease as LeaseObject;
use kubert::LeaseManager;
use kubert::lease::{Claim, Error as KubertError};
use leasesim::lease::{LeaseError, Owner, SessionId};
use leasesim::sim::backend::RecordedKubeCalls;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::Params;

/// The crate's signal as the adapter judged it last; its state is the latest claim the crate
/// published (`None` before its first).
pub type Seen = leasesim::sim::backend::Seen<Option<Arc<Claim>>>;

/// One manager's "I lead" signal. The crate publishes claims; whether a claim says "I lead"
/// depends on when it is asked (`is_current_for` compares its expiry with the host's wall
/// clock), so the signal is judged whenever the adapter looks — on each published claim, at
/// each claim's expiry, and at each of the world's calls — and a change is recorded when
/// seen.
#[derive(Debug)]
pub struct Signal {
    owner: Owner,
    claimant: String,
    session: SessionId,
    calls: Arc<RecordedKubeCalls>,
    seen: Mutex<Seen>,
}

impl Signal {
    fn new(owner: &Owner, session: &SessionId, calls: Arc<RecordedKubeCalls>) -> Self {
        Signal {
            owner: owner.clone(),
            claimant: owner.to_string(),
            session: session.clone(),
            calls,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// Judges `claim` (the crate's latest), or the last one seen when `None`, now; records a
    /// change of "I lead" and returns the signal as judged.
    pub fn observe(&self, claim: Option<Arc<Claim>>) -> Seen {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(claim) = claim {
            seen.state = Some(claim);
        }
        let leads = seen
            .state
            .as_ref()
            .is_some_and(|claim| claim.is_current_for(&self.claimant));
        if leads != seen.leads {
            self.calls.signal(&self.owner, &self.session, leads);
            seen.leads = leads;
            seen.changes += 1;
        }
        seen.clone()
    }
}

/// A session's running manager: the crate's task, the adapter's watcher of its claims, and
/// the signal they feed.
#[derive(Debug)]
pub struct Running {
    /// The crate's signal, judged when looked at.
    pub signal: Arc<Signal>,
    /// The crate's task (`LeaseManager::spawn`); it vacates and ends when every receiver of
    /// its claims is dropped, or ends with an error once its retries of a failed claim are
    /// spent.
    task: JoinHandle<Result<(), KubertError>>,
    /// The watcher: holds the crate's only receiver, judges each claim and each expiry.
    watcher: JoinHandle<()>,
}

impl Running {
    /// The crate's `LeaseManager::init` of Lease `name` through `api`; `None` when the Lease
    /// does not exist (404: kubert needs it to, and creates nothing).
    ///
    /// # Errors
    /// Any other failure of its read (unavailable).
    pub async fn init(
        api: kube_client::Api<LeaseObject>,
        name: &str,
    ) -> Result<Option<LeaseManager>, LeaseError> {
        match LeaseManager::init(api, name).await {
            Ok(manager) => Ok(Some(manager)),
            Err(KubertError::Api(kube_client::Error::Api(status))) if status.code == 404 => {
                Ok(None)
            }
            Err(error) => Err(unavailable("could not read the Lease", &error)),
        }
    }

    /// Starts `manager` with `spawn` for `owner`'s claimant (its first claim made before it
    /// returns), and the watcher of its claims.
    ///
    /// # Errors
    /// `spawn`'s first claim failed (unavailable).
    pub async fn spawn(
        manager: LeaseManager,
        owner: &Owner,
        session: &SessionId,
        params: Params,
        calls: Arc<RecordedKubeCalls>,
    ) -> Result<Running, LeaseError> {
        let signal = Arc::new(Signal::new(owner, session, calls));
        let (claims, task) = manager
            .spawn(owner.to_string(), params.claim_params())
            .await
            .map_err(|error| unavailable("could not claim the Lease", &error))?;
        signal.observe(Some(claims.borrow().clone()));
        let watcher = tokio::spawn(judge_claims(claims, signal.clone()));
        Ok(Running {
            signal,
            task,
            watcher,
        })
    }

    /// Whether the crate's task has ended (it no longer claims or renews).
    pub fn ended(&self) -> bool {
        self.task.is_finished()
    }

    /// Lets the manager go: drops the claims' receiver (the watcher's), on which the crate
    /// vacates the Lease if it holds it and its task ends, on its own time: the task to join.
    pub fn let_go(self) -> JoinHandle<Result<(), KubertError>> {
        self.watcher.abort();
        self.task
    }
}

/// A failure of the crate, as the world's lease call reports it.
fn unavailable(what: &str, error: &KubertError) -> LeaseError {
    LeaseError::Unavailable {
        reason: format!("kubert {what}: {error}"),
    }
}

/// Judges every claim the crate publishes, and each claim that says "I lead" again at its
/// expiry (`Claim::expire`, the crate's own wait), until the crate's task has ended and the
/// last claim no longer leads, or the watcher is aborted. tokio's watch channel keeps the
/// latest claim only: one the crate replaced before this task ran is not judged.
async fn judge_claims(mut claims: watch::Receiver<Arc<Claim>>, signal: Arc<Signal>) {
    let mut open = true;
    loop {
        let claim = claims.borrow_and_update().clone();
        let leads = signal.observe(Some(claim.clone())).leads;
        if !open && !leads {
            return;
        }
        tokio::select! {
            changed = claims.changed(), if open => open = changed.is_ok(),
            () = claim.expire(), if leads => {}
        }
    }
}
