//! [`KubertLease`]: the world's lease calls answered by kubert's `LeaseManager`, one per
//! session, through the crate's public API only (the mapping: docs/targets.md#kubert).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::{Lease as LeaseObject, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi_025::chrono;
use kube::Api;
use kubert::lease::Claim;
use leasesim::clock::{Clock, Instant};
use leasesim::lease::kube::{SESSION_ANNOTATION, object_name, recorded_create, recorded_get};
use leasesim::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};
use leasesim::sim::backend::{NAMESPACE, RecordedKubeCalls};

use crate::Params;
use crate::signal::{Running, Seen, Stopping};

/// A replica's lease client over kubert: per session a `LeaseManager` whose claimant is the
/// owner (`replica-N#incarnation`), on the Lease named as leasesim names a session's
/// (`object_name`), which the adapter creates when it is absent (kubert needs it to exist).
///
/// - `acquire` starts the session's manager if none runs (kubert's `spawn` makes its first
///   claim before it returns), then answers from the crate's "I lead" (its latest claim
///   `is_current_for` the owner): `Held` when it says no; when it says yes, the token is the
///   Lease's `leaseTransitions` from the adapter's own read (a `target_get` line: the crate
///   exposes no token), if that read names the owner as the holder. An acquire that grants
///   nothing lets the manager go.
/// - `renew` succeeds while the signal says "I lead" without a change since the grant.
/// - `release` drops the claims' receiver, on which the crate vacates the Lease on its own
///   time; the session's next manager starts only once that task has ended (at most a TTL).
///
/// A grant is valid for what is left of the crate's claim by the host's wall clock (its
/// definition of "current"), at most a TTL.
pub struct KubertLease {
    /// kube-client 1.1, for the crate.
    crate_client: kube_client::Client,
    /// kube 5, for the adapter's own calls (recorded).
    api: Api<LeaseObject>,
    calls: Arc<RecordedKubeCalls>,
    clock: Arc<dyn Clock>,
    params: Params,
    sessions: Mutex<BTreeMap<SessionId, Arc<tokio::sync::Mutex<Slot>>>>,
}

impl std::fmt::Debug for KubertLease {
    /// The clients print nothing: the parameters and the sessions do.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubertLease")
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

impl KubertLease {
    /// A client driving kubert over `crate_client` (kube-client 1.1) and making the adapter's
    /// own calls over `client` (kube 5), both on the world's transport to the API server;
    /// recording its calls and the crate's signal into `calls`, timed on the replica's `clock`.
    pub fn new(
        crate_client: kube_client::Client,
        client: kube::Client,
        calls: Arc<RecordedKubeCalls>,
        clock: Arc<dyn Clock>,
        params: Params,
    ) -> Self {
        KubertLease {
            crate_client,
            api: Api::namespaced(client, NAMESPACE),
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

    /// Makes sure `owner`'s manager of `session` runs in `slot`: lets go one of another owner
    /// or one whose task ended; joins the task of the one let go before (two managers of one
    /// claimant would undo each other: the old one's vacate would clear the new one's claim);
    /// starts one.
    async fn ensure_running(
        &self,
        slot: &mut Slot,
        session: &SessionId,
        owner: &Owner,
    ) -> Result<(), LeaseError> {
        let stale = slot
            .running
            .as_ref()
            .is_some_and(|running| running.owner != *owner || running.ended());
        if stale && let Some(old) = slot.running.take() {
            slot.stopping = Some(old.let_go());
        }
        if slot.running.is_some() {
            return Ok(());
        }
        if let Some(stopping) = slot.stopping.take()
            && let Err(error) = stopping.join(&self.clock, self.params.lease_duration).await
        {
            // Whatever it says, the new manager's answer is what counts.
            tracing::debug!(%session, %error, "the previous manager's end");
        }
        let name = object_name(session.as_str());
        let manager = match Running::init(self.crate_api(), &name).await? {
            Some(manager) => manager,
            None => {
                self.create(session, owner, &name).await?;
                Running::init(self.crate_api(), &name)
                    .await?
                    .ok_or_else(|| LeaseError::Unavailable {
                        reason: format!("Lease {name} is gone right after it was created"),
                    })?
            }
        };
        let running =
            Running::spawn(manager, owner, session, self.params, self.calls.clone()).await?;
        slot.granted_on = None;
        slot.running = Some(running);
        Ok(())
    }

    fn crate_api(&self) -> kube_client::Api<k8s_openapi_025::api::coordination::v1::Lease> {
        kube_client::Api::namespaced(self.crate_client.clone(), NAMESPACE)
    }

    /// Creates the session's Lease as kubert needs it (its docs: "The named lease resource
    /// must already have been created"; `init` refuses one without a `spec`): an empty
    /// `spec`, and the session annotation so the API server's `write` lines name the session.
    /// Recorded (a `kube_create` line); a Lease someone else created meanwhile is fine.
    async fn create(
        &self,
        session: &SessionId,
        owner: &Owner,
        name: &str,
    ) -> Result<(), LeaseError> {
        let annotations = BTreeMap::from([(SESSION_ANNOTATION.to_owned(), session.to_string())]);
        let object = LeaseObject {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                annotations: Some(annotations),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec::default()),
        };
        recorded_create(&self.api, self.calls.as_ref(), owner, session, &object)
            .await
            .map(|_| ())
    }

    /// The token: `leaseTransitions` as the adapter reads the Lease now, if the read names
    /// `owner` as the holder (`None` otherwise: the crate's claim is already stale).
    async fn read_token(
        &self,
        session: &SessionId,
        owner: &Owner,
    ) -> Result<Option<u64>, LeaseError> {
        let name = object_name(session.as_str());
        let read = recorded_get(&self.api, self.calls.as_ref(), owner, session, &name).await?;
        let Some(spec) = read.and_then(|object| object.spec) else {
            return Ok(None);
        };
        if spec.holder_identity.as_deref() != Some(owner.to_string().as_str()) {
            return Ok(None);
        }
        let transitions = spec.lease_transitions.unwrap_or(0);
        Ok(Some(u64::try_from(transitions).unwrap_or(0)))
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
        let held = LeaseError::Held { holder_token: None };
        let now = |slot: &Slot| {
            slot.running
                .as_ref()
                .map(|running| running.signal.observe(None))
        };
        let Some(before) = now(slot).filter(|seen| seen.leads) else {
            return Err(held);
        };
        let Some(token) = self.read_token(session, owner).await? else {
            return Err(held);
        };
        // The signal must not have moved while the adapter read the token.
        let Some(after) = now(slot).filter(|seen| seen.leads && seen.changes == before.changes)
        else {
            return Err(held);
        };
        slot.granted_on = Some(after.changes);
        self.granted(session, owner, token, &after, at).ok_or(held)
    }

    /// A grant on `seen`'s claim, for a call made `at`: valid from the call for what is left
    /// of the claim now by the host's wall clock (less than what was left at the call), at
    /// most a TTL; `None` when nothing is left.
    fn granted(
        &self,
        session: &SessionId,
        owner: &Owner,
        token: u64,
        seen: &Seen,
        at: Instant,
    ) -> Option<Lease> {
        let left = claim_left(seen.claim.as_deref()?)?.min(self.params.lease_duration);
        Some(Lease::new(
            session.clone(),
            owner.clone(),
            token,
            at + left,
            left,
        ))
    }
}

/// What is left of `claim` by the host's wall clock, read as kubert's `Claim::is_current`
/// reads it (`chrono::Utc::now()`, the host's clock through the interposer); `None` once it
/// has expired.
fn claim_left(claim: &Claim) -> Option<Duration> {
    let left = (claim.expiry - chrono::Utc::now()).to_std().ok()?;
    (!left.is_zero()).then_some(left)
}

#[async_trait]
impl SessionLease for KubertLease {
    /// A refused or failed acquire lets the session's manager go: nobody in the world wants
    /// the Lease until the next acquire, and a manager left running would claim and hold it
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
        let seen = running.map(|running| running.signal.observe(None));
        let renewed = seen
            .filter(|seen| seen.leads && slot.granted_on == Some(seen.changes))
            .and_then(|seen| {
                let (session, owner) = (lease.session(), lease.owner());
                self.granted(session, owner, lease.token(), &seen, at)
            });
        renewed.ok_or(LeaseError::Held { holder_token: None })
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
