//! [`ManagedLease`]: the world's lease calls answered by kube-lease-manager's `LeaseManager`,
//! one per session, through the crate's public API only (the mapping:
//! docs/targets.md#kube-lease-manager).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::Lease as LeaseObject;
use kube::Api;
use leasesim::clock::{Clock, Instant};
use leasesim::lease::kube::recorded_get;
use leasesim::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};
use leasesim::sim::backend::{NAMESPACE, RecordedKubeCalls};

use crate::Params;
use crate::signal::{Running, Seen, Stopping};

/// A replica's lease client over kube-lease-manager: per session a `LeaseManager` whose
/// identity is the owner (`replica-N#incarnation`), on the Lease named as the session.
///
/// - `acquire` starts the session's manager if none runs (and waits for its first answer, at
///   most four call deadlines), then answers from the crate's "I lead" signal: `Held` when it
///   says no; when it says yes, the token is the Lease's `leaseTransitions` from the adapter's
///   own read (a `target_get` line: the crate exposes no token). An acquire that grants
///   nothing lets the manager go.
/// - `renew` succeeds while the signal has said "I lead" without a change since the grant.
/// - `release` drops the signal's receiver, on which the crate releases its lock on its own
///   time; the session's next manager starts only once that task has ended (at most a TTL).
///
/// A grant is valid for [`Params::granted_validity`] from the call, on the replica's clock.
pub struct ManagedLease {
    client: kube::Client,
    api: Api<LeaseObject>,
    calls: Arc<RecordedKubeCalls>,
    clock: Arc<dyn Clock>,
    params: Params,
    call_timeout: Duration,
    sessions: Mutex<BTreeMap<SessionId, Arc<tokio::sync::Mutex<Slot>>>>,
}

impl std::fmt::Debug for ManagedLease {
    /// kube's `Client` prints nothing: the parameters and the sessions do.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedLease")
            .field("params", &self.params)
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

/// One session's manager, the signal change its current grant was made on, and the manager
/// let go before it, if its task has not been joined yet.
#[derive(Debug, Default)]
struct Slot {
    running: Option<Running>,
    granted_on: Option<u64>,
    stopping: Option<Stopping>,
}

impl ManagedLease {
    /// A client over `client` (the world's transport to the API server), recording its reads
    /// and the crate's signal into `calls`, timed on the replica's `clock`; `call_timeout` is
    /// the world's deadline of one API call.
    pub fn new(
        client: kube::Client,
        calls: Arc<RecordedKubeCalls>,
        clock: Arc<dyn Clock>,
        params: Params,
        call_timeout: Duration,
    ) -> Self {
        ManagedLease {
            api: Api::namespaced(client.clone(), NAMESPACE),
            client,
            calls,
            clock,
            params,
            call_timeout,
            sessions: Mutex::new(BTreeMap::new()),
        }
    }

    fn slot(&self, session: &SessionId) -> Arc<tokio::sync::Mutex<Slot>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.entry(session.clone()).or_default().clone()
    }

    /// How long the adapter waits for a let-go manager's task: a TTL, after which its lock
    /// has lapsed anyway.
    fn stop_bound(&self) -> Duration {
        Duration::from_secs(self.params.duration_s)
    }

    /// How long a fresh manager gets to answer: the four calls the crate makes to take an
    /// orphaned Lease (a read, an apply, a patch, a read), each within the call deadline.
    fn first_answer_bound(&self) -> Duration {
        self.call_timeout * 4
    }

    /// Makes sure `owner`'s manager of `session` runs in `slot`: lets go one of another owner
    /// or one whose task ended; joins the task of the one let go before (two managers of one
    /// identity would undo each other: the old one's release would clear the new one's
    /// lock); starts one and waits for its first answer.
    async fn ensure_running(
        &self,
        slot: &mut Slot,
        session: &SessionId,
        owner: &Owner,
    ) -> Result<(), LeaseError> {
        let stale = slot
            .running
            .as_ref()
            .is_some_and(|running| running.owner != *owner || running.now().is_none());
        if stale && let Some(old) = slot.running.take() {
            slot.stopping = Some(old.let_go());
        }
        if slot.running.is_none() {
            if let Some(stopping) = slot.stopping.take()
                && let Err(error) = stopping.join(&self.clock, self.stop_bound()).await
            {
                // Whatever it says, the new manager's answer is what counts.
                tracing::debug!(%session, %error, "the previous manager's release");
            }
            let name = object_name(session)?;
            let running = Running::start(
                self.client.clone(),
                name,
                owner,
                session,
                self.params,
                self.calls.clone(),
            )
            .await?;
            let mut first = running.seen.clone();
            slot.granted_on = None;
            slot.running = Some(running);
            tokio::select! {
                _ = first.changed() => {}
                () = self.clock.sleep(self.first_answer_bound()) => {}
            }
        }
        Ok(())
    }

    /// The token: `leaseTransitions` as the adapter reads the Lease now.
    async fn read_token(&self, session: &SessionId, owner: &Owner) -> Result<u64, LeaseError> {
        let name = object_name(session)?;
        let read = recorded_get(&self.api, self.calls.as_ref(), owner, session, name).await?;
        let Some(object) = read else {
            return Err(LeaseError::Unavailable {
                reason: format!("Lease {name} is gone, though kube-lease-manager says it leads"),
            });
        };
        let transitions = object.spec.and_then(|spec| spec.lease_transitions);
        Ok(transitions.map_or(0, |t| u64::try_from(t).unwrap_or(0)))
    }

    /// `acquire` in `slot`: the manager running, its signal "I lead", the token read.
    async fn grant(
        &self,
        slot: &mut Slot,
        session: &SessionId,
        owner: &Owner,
        at: Instant,
    ) -> Result<Lease, LeaseError> {
        self.ensure_running(slot, session, owner).await?;
        let current = |slot: &Slot| slot.running.as_ref().and_then(Running::now);
        let Some(change) = leads(current(slot)) else {
            return Err(LeaseError::Held { holder_token: None });
        };
        let token = self.read_token(session, owner).await?;
        // The signal must not have moved while the adapter read the token.
        if leads(current(slot)) != Some(change) {
            return Err(LeaseError::Held { holder_token: None });
        }
        slot.granted_on = Some(change);
        Ok(self.granted(session, owner, token, at))
    }

    fn granted(&self, session: &SessionId, owner: &Owner, token: u64, at: Instant) -> Lease {
        let validity = self.params.granted_validity();
        Lease::new(
            session.clone(),
            owner.clone(),
            token,
            at + validity,
            validity,
        )
    }
}

/// The signal says "I lead" (a grant may be made on that change).
fn leads(seen: Option<Seen>) -> Option<u64> {
    seen.filter(|seen| seen.leads).map(|seen| seen.changes)
}

#[async_trait]
impl SessionLease for ManagedLease {
    /// A refused or failed acquire lets the session's manager go: nobody in the world wants
    /// that lock until the next acquire, and a manager left running would take and hold it
    /// for nobody (every other replica's acquire refused: a liveness failure of the adapter's
    /// making).
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let at = self.clock.now();
        let slot = self.slot(session);
        let mut slot = slot.lock().await;
        let granted = self.grant(&mut slot, session, owner, at).await;
        if granted.is_err()
            && let Some(running) = slot.running.take()
        {
            slot.granted_on = None;
            slot.stopping = Some(running.let_go());
        }
        granted
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let at = self.clock.now();
        let slot = self.slot(lease.session());
        let slot = slot.lock().await;
        let running = slot
            .running
            .as_ref()
            .filter(|running| running.owner == *lease.owner());
        match running.and_then(|running| leads(running.now())) {
            Some(change) if slot.granted_on == Some(change) => {
                Ok(self.granted(lease.session(), lease.owner(), lease.token(), at))
            }
            _ => Err(LeaseError::Held { holder_token: None }),
        }
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        let slot = self.slot(lease.session());
        let mut slot = slot.lock().await;
        let owned = slot
            .running
            .as_ref()
            .is_some_and(|running| running.owner == *lease.owner());
        if !owned {
            return Ok(());
        }
        slot.granted_on = None;
        if let Some(running) = slot.running.take() {
            slot.stopping = Some(running.let_go());
        }
        Ok(())
    }
}

/// The Lease object of `session`: named as the session (the crate creates it without the
/// session annotation, so the API server's `write` lines name the session by the object),
/// which must be a DNS-1123 subdomain name.
///
/// # Errors
/// [`LeaseError::InvalidSession`] naming the rule.
fn object_name(session: &SessionId) -> Result<&str, LeaseError> {
    let name = session.as_str();
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let inner = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    if name.len() <= 253 && inner && edge(name.chars().next()) && edge(name.chars().last()) {
        return Ok(name);
    }
    Err(LeaseError::InvalidSession {
        reason: format!(
            "target:kube-lease-manager names the Lease as the session, so a session must be a \
             DNS-1123 subdomain name (lowercase letters, digits, '-' and '.', starting and \
             ending with a letter or digit, at most 253 characters): {name:?} is not"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_name_their_lease_when_they_are_dns_names() {
        let name = |id: &str| object_name(&SessionId::new(id).unwrap()).map(str::to_owned);
        assert_eq!(name("s1").unwrap(), "s1");
        assert_eq!(name("orders.eu-1").unwrap(), "orders.eu-1");
        for bad in ["S1", "-s1", "s1-", "s_1", "a b"] {
            let error = name(bad).unwrap_err().to_string();
            assert!(error.contains("DNS-1123"), "{bad}: {error}");
        }
    }
}
