//! [`ElectionLease`]: the world's lease calls answered by kube-leader-election's `LeaseLock`,
//! one per session, through the crate's public API only ([`LeaseLocks`]; the mapping:
//! docs/targets.md#kube-leader-election).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use kube_leader_election::{LeaseLock, LeaseLockParams};
use leasesim::clock::{Clock, Instant};
use leasesim::lease::kube::session_object_name;
use leasesim::lease::{LeaseError, Owner, SessionId};
use leasesim::sim::backend::{Ended, NAMESPACE, RecordedKubeCalls, SignalCrate, SignalLease};
use tokio::task::JoinHandle;

use crate::signal::{Answer, Leadership, Running, Seen};
use crate::{NAME, Params};

/// A replica's lease client over kube-leader-election ([`SignalLease`] over [`LeaseLocks`]).
pub type ElectionLease = SignalLease<LeaseLocks>;

/// kube-leader-election as an [`ElectionLease`] drives it: per session a `LeaseLock` whose
/// `holder_id` is the owner (`replica-N#incarnation`), on the Lease named as the session (the
/// crate creates it when absent).
///
/// - Every acquire takes a fresh lock (the one before is dropped: its fresh call renews what
///   the old one held) and answers from its first `try_acquire_or_renew`: `Acquired(lease)`
///   grants, the token being that response's `spec.leaseTransitions`, and starts the docs'
///   loop (the call again every renew period while it says "I lead"); `NotAcquired` is
///   `Held`; an error is `Unavailable`. A lock that does not lead keeps no loop.
/// - A grant is valid until the TTL after the start of the call that wrote the last renewal.
/// - A released lock stops its loop and calls `step_down()`.
pub struct LeaseLocks {
    client: kube4::Client,
    calls: Arc<RecordedKubeCalls>,
    clock: Arc<dyn Clock>,
    params: Params,
}

impl std::fmt::Debug for LeaseLocks {
    /// kube's `Client` prints nothing: the parameters do.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseLocks")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl LeaseLocks {
    /// Locks over `client` (kube 4, the world's transport to the API server), recording the
    /// crate's signal into `calls`, timed on the replica's `clock`.
    pub fn new(
        client: kube4::Client,
        calls: Arc<RecordedKubeCalls>,
        clock: Arc<dyn Clock>,
        params: Params,
    ) -> Self {
        LeaseLocks {
            client,
            calls,
            clock,
            params,
        }
    }

    /// The crate's lock of `session` for `owner`.
    fn lock(&self, session: &SessionId, owner: &Owner) -> Result<LeaseLock, LeaseError> {
        let params = LeaseLockParams {
            lease_name: session_object_name(NAME, session)?.to_owned(),
            holder_id: owner.to_string(),
            lease_ttl: self.params.lease_ttl,
        };
        Ok(LeaseLock::new(self.client.clone(), NAMESPACE, params))
    }
}

#[async_trait]
impl SignalCrate for LeaseLocks {
    type Running = Running;
    type State = Leadership;
    type Kept = ();
    type Error = Infallible;

    fn name(&self) -> &'static str {
        "kube-leader-election"
    }

    /// A fresh lock and its first `try_acquire_or_renew`; an error of that call is
    /// `Unavailable` (and "not leading").
    async fn start(&self, session: &SessionId, owner: &Owner) -> Result<Running, LeaseError> {
        let lock = self.lock(session, owner)?;
        let (calls, clock) = (self.calls.clone(), self.clock.clone());
        let (running, answer) =
            Running::start(lock, owner, session, self.params, calls, clock).await;
        match answer {
            Answer::Failed(error) => Err(LeaseError::Unavailable {
                reason: format!("kube-leader-election: {error}"),
            }),
            Answer::Leads { .. } | Answer::Held => Ok(running),
        }
    }

    /// Never: every acquire makes a fresh call on a fresh lock.
    fn keeps(&self, _running: &Running) -> bool {
        false
    }

    fn look(&self, running: &Running) -> Option<Seen> {
        Some(running.signal.now())
    }

    /// The token of the `Acquired` response that started the leadership.
    async fn token(
        &self,
        _session: &SessionId,
        _owner: &Owner,
        seen: &Seen,
    ) -> Result<Option<u64>, LeaseError> {
        Ok(seen.state.token)
    }

    /// Until the last renewal runs out, for what is left of it now; `None` once it has.
    fn validity(&self, seen: &Seen, _at: Instant) -> Option<(Instant, Duration)> {
        let until = seen.state.valid_until?;
        let left = until.saturating_duration_since(self.clock.now());
        (!left.is_zero()).then_some((until, left))
    }

    fn let_go(&self, mut running: Running) -> Option<JoinHandle<Ended<Self>>> {
        running.let_go();
        None
    }

    /// A lock whose first answer was not a grant is dropped as it is (its loop, if any,
    /// aborted).
    fn let_go_refused(&self, running: Running) -> Option<JoinHandle<Ended<Self>>> {
        drop(running);
        None
    }

    /// Stops the loop, then `step_down()`: a Lease no longer ours is not an error.
    async fn release(
        &self,
        running: Running,
    ) -> Result<Option<JoinHandle<Ended<Self>>>, LeaseError> {
        running
            .step_down()
            .await
            .map(|()| None)
            .map_err(|error| LeaseError::Unavailable {
                reason: format!("kube-leader-election's step_down: {error}"),
            })
    }
}
