//! [`ElectionLease`]: the world's lease calls answered by kube-leader-election's `LeaseLock`,
//! one per session, through the crate's public API only (the mapping:
//! docs/targets.md#kube-leader-election).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use kube_leader_election::{LeaseLock, LeaseLockParams};
use leasesim::clock::Clock;
use leasesim::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};
use leasesim::sim::backend::{NAMESPACE, RecordedKubeCalls};

use crate::Params;
use crate::signal::{Answer, Running, Seen};

/// A replica's lease client over kube-leader-election: per session a `LeaseLock` whose
/// `holder_id` is the owner (`replica-N#incarnation`), on the Lease named as the session
/// (the crate creates it when absent).
///
/// - `acquire` drops the session's lock if one runs, makes a fresh lock's first
///   `try_acquire_or_renew` and answers from it: `Acquired(lease)` grants, the token being
///   that response's `spec.leaseTransitions`, and starts the docs' loop (the call again every
///   renew period while it says "I lead"); `NotAcquired` is `Held`; an error is
///   `Unavailable` (and "not leading").
/// - `renew` succeeds while the signal has said "I lead" without a change since the grant,
///   valid until the TTL after the start of the call that wrote the last renewal.
/// - `release` stops the loop and calls `step_down()`.
pub struct ElectionLease {
    client: kube4::Client,
    calls: Arc<RecordedKubeCalls>,
    clock: Arc<dyn Clock>,
    params: Params,
    sessions: Mutex<BTreeMap<SessionId, Arc<tokio::sync::Mutex<Slot>>>>,
}

impl std::fmt::Debug for ElectionLease {
    /// kube's `Client` prints nothing: the parameters and the sessions do.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElectionLease")
            .field("params", &self.params)
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

/// One session's lock and the signal change its current grant was made on.
#[derive(Debug, Default)]
struct Slot {
    running: Option<Running>,
    granted_on: Option<u64>,
}

impl ElectionLease {
    /// A client driving the crate over `client` (kube 4, the world's transport to the API
    /// server), recording the crate's signal into `calls`, timed on the replica's `clock`.
    pub fn new(
        client: kube4::Client,
        calls: Arc<RecordedKubeCalls>,
        clock: Arc<dyn Clock>,
        params: Params,
    ) -> Self {
        ElectionLease {
            client,
            calls,
            clock,
            params,
            sessions: Mutex::new(BTreeMap::new()),
        }
    }

    fn slot(&self, session: &SessionId) -> Arc<tokio::sync::Mutex<Slot>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.entry(session.clone()).or_default().clone()
    }

    /// The crate's lock of `session` for `owner`.
    fn lock(&self, session: &SessionId, owner: &Owner) -> Result<LeaseLock, LeaseError> {
        let params = LeaseLockParams {
            lease_name: object_name(session)?.to_owned(),
            holder_id: owner.to_string(),
            lease_ttl: self.params.lease_ttl,
        };
        Ok(LeaseLock::new(self.client.clone(), NAMESPACE, params))
    }

    /// A grant on `seen`, for what is left of its last renewal; `None` once that has run out.
    fn granted(&self, session: &SessionId, owner: &Owner, token: u64, seen: Seen) -> Option<Lease> {
        let until = seen.valid_until?;
        let now = self.clock.now();
        let left = until.saturating_duration_since(now);
        (!left.is_zero()).then(|| Lease::new(session.clone(), owner.clone(), token, until, left))
    }
}

#[async_trait]
impl SessionLease for ElectionLease {
    /// A lock that does not lead keeps no loop: nobody in the world wants the Lease until the
    /// next acquire, and a loop left running would take and hold it for nobody.
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let lock = self.lock(session, owner)?;
        let slot = self.slot(session);
        let mut slot = slot.lock().await;
        slot.granted_on = None;
        if let Some(old) = slot.running.take() {
            // The fresh call below renews what the old lock held, if anything.
            let _ = old.stop(false).await;
        }
        let (running, answer) = Running::start(
            lock,
            owner,
            session,
            self.params,
            self.calls.clone(),
            self.clock.clone(),
        )
        .await;
        let seen = running.signal.now();
        let granted = match answer {
            Answer::Leads { .. } => seen
                .token
                .and_then(|token| self.granted(session, owner, token, seen))
                .ok_or(LeaseError::Held { holder_token: None }),
            Answer::Held => Err(LeaseError::Held { holder_token: None }),
            Answer::Failed(error) => Err(LeaseError::Unavailable {
                reason: format!("kube-leader-election: {error}"),
            }),
        };
        if granted.is_ok() {
            slot.granted_on = Some(seen.changes);
            slot.running = Some(running);
        }
        granted
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let slot = self.slot(lease.session());
        let slot = slot.lock().await;
        let running = slot
            .running
            .as_ref()
            .filter(|running| running.owner == *lease.owner());
        let seen = running.map(|running| running.signal.now());
        seen.filter(|seen| seen.leads && slot.granted_on == Some(seen.changes))
            .and_then(|seen| self.granted(lease.session(), lease.owner(), lease.token(), seen))
            .ok_or(LeaseError::Held { holder_token: None })
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
        let Some(running) = slot.running.take() else {
            return Ok(());
        };
        running
            .stop(true)
            .await
            .map_err(|error| LeaseError::Unavailable {
                reason: format!("kube-leader-election's step_down: {error}"),
            })
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
            "target:kube-leader-election names the Lease as the session, so a session must be a \
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
