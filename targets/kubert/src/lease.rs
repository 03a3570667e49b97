//! [`KubertLease`]: the world's lease calls answered by kubert's `LeaseManager`, one per
//! session, through the crate's public API only ([`KubertManagers`]; the mapping:
//! docs/targets.md#kubert).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::{Lease as LeaseObject, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi_025::chrono;
use kube::Api;
use kubert::lease::{Claim, Error as KubertError};
use leasesim::clock::Instant;
use leasesim::lease::kube::{SESSION_ANNOTATION, object_name, recorded_create, recorded_get};
use leasesim::lease::{LeaseError, Owner, SessionId};
use leasesim::sim::backend::{Ended, NAMESPACE, RecordedKubeCalls, Seen, SignalCrate, SignalLease};
use tokio::task::JoinHandle;

use crate::Params;
use crate::signal::Running;

/// A replica's lease client over kubert ([`SignalLease`] over [`KubertManagers`]).
pub type KubertLease = SignalLease<KubertManagers>;

/// kubert as a [`KubertLease`] drives it: per session a `LeaseManager` whose claimant is the
/// owner (`replica-N#incarnation`), on the Lease named as leasesim names a session's
/// (`object_name`), which the adapter creates when it is absent (kubert needs it to exist).
///
/// - A manager is started with `spawn`, which makes its first claim before it returns; "I
///   lead" is the crate's own definition (its latest claim `is_current_for` the owner).
/// - The token is the Lease's `leaseTransitions` from the adapter's own read (a `target_get`
///   line: the crate exposes no token), if that read names the owner as the holder.
/// - A manager is let go by dropping the claims' receiver, on which the crate vacates the
///   Lease on its own time.
///
/// A grant is valid for what is left of the crate's claim by the host's wall clock (its
/// definition of "current"), at most a TTL.
pub struct KubertManagers {
    /// kube-client 1.1, for the crate.
    crate_client: kube_client::Client,
    /// kube 5, for the adapter's own calls (recorded).
    api: Api<LeaseObject>,
    calls: Arc<RecordedKubeCalls>,
    params: Params,
}

impl std::fmt::Debug for KubertManagers {
    /// The clients print nothing: the parameters do.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubertManagers")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl KubertManagers {
    /// Managers driving kubert over `crate_client` (kube-client 1.1) and making the adapter's
    /// own calls over `client` (kube 5), both on the world's transport to the API server;
    /// recording its calls and the crate's signal into `calls`.
    pub fn new(
        crate_client: kube_client::Client,
        client: kube::Client,
        calls: Arc<RecordedKubeCalls>,
        params: Params,
    ) -> Self {
        KubertManagers {
            crate_client,
            api: Api::namespaced(client, NAMESPACE),
            calls,
            params,
        }
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
}

#[async_trait]
impl SignalCrate for KubertManagers {
    type Running = Running;
    type State = Option<Arc<Claim>>;
    type Kept = ();
    type Error = KubertError;

    fn name(&self) -> &'static str {
        "kubert"
    }

    /// `LeaseManager::init` of the session's Lease (created first when `init` finds none),
    /// then `spawn`.
    async fn start(&self, session: &SessionId, owner: &Owner) -> Result<Running, LeaseError> {
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
        Running::spawn(manager, owner, session, self.params, self.calls.clone()).await
    }

    fn keeps(&self, running: &Running) -> bool {
        !running.ended()
    }

    fn look(&self, running: &Running) -> Option<Seen<Option<Arc<Claim>>>> {
        Some(running.signal.observe(None))
    }

    /// `leaseTransitions` as the adapter reads the Lease now, if the read names `owner` as
    /// the holder (`None` otherwise: the crate's claim is already stale).
    async fn token(
        &self,
        session: &SessionId,
        owner: &Owner,
        _seen: &Seen<Option<Arc<Claim>>>,
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

    /// Valid from the call for what is left of `seen`'s claim now by the host's wall clock
    /// (less than what was left at the call), at most a TTL.
    fn validity(
        &self,
        seen: &Seen<Option<Arc<Claim>>>,
        at: Instant,
    ) -> Option<(Instant, Duration)> {
        let left = claim_left(seen.state.as_deref()?)?.min(self.params.lease_duration);
        Some((at + left, left))
    }

    fn let_go(&self, running: Running) -> Option<JoinHandle<Ended<Self>>> {
        Some(running.let_go())
    }
}

/// What is left of `claim` by the host's wall clock, read as kubert's `Claim::is_current`
/// reads it (`chrono::Utc::now()`, the host's clock through the interposer); `None` once it
/// has expired.
fn claim_left(claim: &Claim) -> Option<Duration> {
    let left = (claim.expiry - chrono::Utc::now()).to_std().ok()?;
    (!left.is_zero()).then_some(left)
}
