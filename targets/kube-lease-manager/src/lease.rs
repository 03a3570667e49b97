//! [`ManagedLease`]: the world's lease calls answered by kube-lease-manager's `LeaseManager`,
//! one per session, through the crate's public API only ([`LeaseManagers`]; the mapping:
//! docs/targets.md#kube-lease-manager).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::Lease as LeaseObject;
use kube::Api;
use kube_lease_manager::{LeaseManager, LeaseManagerError};
use leasesim::clock::{Clock, Instant};
use leasesim::lease::kube::{recorded_get, session_object_name};
use leasesim::lease::{LeaseError, Owner, SessionId};
use leasesim::sim::backend::{Ended, NAMESPACE, RecordedKubeCalls, Seen, SignalCrate, SignalLease};
use tokio::task::JoinHandle;

use crate::signal::Running;
use crate::{NAME, Params};

/// A replica's lease client over kube-lease-manager ([`SignalLease`] over [`LeaseManagers`]).
pub type ManagedLease = SignalLease<LeaseManagers>;

/// kube-lease-manager as a [`ManagedLease`] drives it: per session a `LeaseManager` whose
/// identity is the owner (`replica-N#incarnation`), on the Lease named as the session.
///
/// - A manager is started with `watch()` (`AutoCreate`: the crate creates the Lease), and
///   `acquire` waits for its signal's first answer, at most four call deadlines.
/// - The token is the Lease's `leaseTransitions` from the adapter's own read (a `target_get`
///   line: the crate exposes no token).
/// - A manager is let go by dropping its signal's receiver, on which the crate releases its
///   lock on its own time.
///
/// A grant is valid for [`Params::granted_validity`] from the call, on the replica's clock.
pub struct LeaseManagers {
    client: kube::Client,
    api: Api<LeaseObject>,
    calls: Arc<RecordedKubeCalls>,
    clock: Arc<dyn Clock>,
    params: Params,
    call_timeout: Duration,
}

impl std::fmt::Debug for LeaseManagers {
    /// kube's `Client` prints nothing: the parameters do.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseManagers")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl LeaseManagers {
    /// Managers over `client` (the world's transport to the API server), recording the
    /// adapter's reads and the crate's signal into `calls`, timed on the replica's `clock`;
    /// `call_timeout` is the world's deadline of one API call.
    pub fn new(
        client: kube::Client,
        calls: Arc<RecordedKubeCalls>,
        clock: Arc<dyn Clock>,
        params: Params,
        call_timeout: Duration,
    ) -> Self {
        LeaseManagers {
            api: Api::namespaced(client.clone(), NAMESPACE),
            client,
            calls,
            clock,
            params,
            call_timeout,
        }
    }

    /// How long a fresh manager gets to answer: the four calls the crate makes to take an
    /// orphaned Lease (a read, an apply, a patch, a read), each within the call deadline.
    fn first_answer_bound(&self) -> Duration {
        self.call_timeout * 4
    }
}

#[async_trait]
impl SignalCrate for LeaseManagers {
    type Running = Running;
    type State = ();
    type Kept = LeaseManager;
    type Error = LeaseManagerError;

    fn name(&self) -> &'static str {
        "kube-lease-manager"
    }

    async fn start(&self, session: &SessionId, owner: &Owner) -> Result<Running, LeaseError> {
        let name = session_object_name(NAME, session)?;
        let client = self.client.clone();
        Running::start(
            client,
            name,
            owner,
            session,
            self.params,
            self.calls.clone(),
        )
        .await
    }

    async fn first_answer(&self, running: &Running) {
        let mut first = running.seen.clone();
        tokio::select! {
            _ = first.changed() => {}
            () = self.clock.sleep(self.first_answer_bound()) => {}
        }
    }

    fn keeps(&self, running: &Running) -> bool {
        running.now().is_some()
    }

    fn look(&self, running: &Running) -> Option<Seen> {
        running.now()
    }

    /// `leaseTransitions` as the adapter reads the Lease now.
    async fn token(
        &self,
        session: &SessionId,
        owner: &Owner,
        _seen: &Seen,
    ) -> Result<Option<u64>, LeaseError> {
        let name = session_object_name(NAME, session)?;
        let read = recorded_get(&self.api, self.calls.as_ref(), owner, session, name).await?;
        let Some(object) = read else {
            return Err(LeaseError::Unavailable {
                reason: format!("Lease {name} is gone, though kube-lease-manager says it leads"),
            });
        };
        let transitions = object.spec.and_then(|spec| spec.lease_transitions);
        Ok(Some(
            transitions.map_or(0, |t| u64::try_from(t).unwrap_or(0)),
        ))
    }

    fn validity(&self, _seen: &Seen, at: Instant) -> Option<(Instant, Duration)> {
        let validity = self.params.granted_validity();
        Some((at + validity, validity))
    }

    fn let_go(&self, running: Running) -> Option<JoinHandle<Ended<Self>>> {
        Some(running.let_go())
    }
}
