//! `KubeLease`: session leases on `coordination.k8s.io/v1` Lease objects
//! (docs/backends.md#kubelease), through the kube-rs client, so the same code talks to the world's
//! simulated API server and to a real cluster.
//!
//! One Lease object per session, named [`object_name`]`(session)`, with the session id in the
//! annotation [`SESSION_ANNOTATION`]:
//! - `holderIdentity` = the owner's Display (`replica-1#0`), `""` once released;
//! - `leaseDurationSeconds` = the TTL (whole seconds);
//! - `acquireTime` / `renewTime` = the writer's wall clock (µs), for people only: nothing here
//!   compares them with a clock (that is the `expiry-from-renew-time` mutant);
//! - `leaseTransitions` = the fencing token: +1 on every takeover as the contract defines it
//!   (free, released, or expired — even for the same owner), which departs from client-go's
//!   "+1 on a change of holder"; kept on renew, on a live same-owner re-acquire and on
//!   release; a takeover that would pass `i32::MAX` is refused, never wrapped.
//!
//! Every write is decided from one read and carries that read's `resourceVersion`
//! (`Api::replace`); 409 → read again and decide again (at most [`MAX_ATTEMPTS`] reads per
//! call, then [`LeaseError::Unavailable`]): a 409 says the read the decision came from is
//! old, so the decision is thrown away with it, never re-sent under a fresh version (that is
//! the `conflict-retry-keeps-decision` mutant). Between each decision and its write the
//! candidate reaches [`PausePoint::AfterAuthorityRead`] (its hooks, [`KubeLeaseConfig::hooks`]),
//! where a harness can hold it so that the object changes under the decision
//! (docs/world.md#freezes-and-pause-points). A missing object is created (leaseTransitions 1);
//! a create that finds the name taken (409) reads again. Release replaces the holder with
//! `""`, transitions kept; the object is never deleted (deletion would reset the token).
//!
//! **Expiry is judged by observation** (client-go's rule): per session, this `KubeLease`
//! keeps the last resourceVersion it saw and the instant on its **own** monotonic clock at
//! which it first saw it (for a read: when the reply arrived; for its own write: when the
//! write was sent). A held object is expired for this candidate once it has seen the same
//! resourceVersion for `leaseDurationSeconds` (`now >= observed_at + duration` is expired). A
//! fresh `KubeLease` that has never seen the object waits the full duration from its first
//! read. The granted [`Lease`]'s `expiry` is the holder's own observation: the local send
//! time of the successful write + TTL.
//!
//! Errors: transport failures, timeouts, 429 → [`LeaseError::Unavailable`]; 5xx, 401/403 →
//! [`LeaseError::Unexpected`] (both retried while the holder's deadline lasts)
//! (with the status text: RBAC may be fixed while the process runs, and Held would be a false
//! loss signal); a 404 whose `Status` does not name the object (the API group
//! `coordination.k8s.io/v1` is not served) → [`LeaseError::Unsupported`]; a takeover that
//! would pass `i32::MAX`, or an object whose [`SESSION_ANNOTATION`] names another session (a
//! hash collision, a foreign object) → [`LeaseError::Unavailable`] saying so.
//!
//! Resource versions: opaque strings in Kubernetes, sent back verbatim. When they parse as
//! integers (etcd-backed servers, the world's) a read reply older than one already seen is
//! stale and read again, so concurrent calls of one `KubeLease` never restart a count from an
//! old version.

mod calls;
#[cfg(feature = "cluster")]
mod cluster;
mod name;
mod object;
mod observe;
#[cfg(test)]
mod tests;
mod transport;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::Lease as LeaseObject;
use kube::Api;

use calls::{Caller, Failure};
use leasesim_core::clock::{Clock, Instant};
use leasesim_core::hooks::{HookSlot, PausePoint};
use leasesim_core::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};
use leasesim_core::mutant::Mutant;
use object::Held;
use observe::Observations;

pub use calls::{
    KubeCall, KubeCalls, KubeReply, NoCalls, UNPARSED_RESOURCE_VERSION, parse_rv, recorded_create,
    recorded_get,
};
#[cfg(feature = "cluster")]
pub use cluster::ClusterError;
pub use name::{OBJECT_NAME_MAX_CHARS, object_name, session_object_name};
pub use object::holder_fields;
pub use transport::{api_base, client_over, http_over};

/// The annotation holding the full session id of a Lease object (object names are sanitised
/// and hashed; the world's API server records the session from it).
pub const SESSION_ANNOTATION: &str = "leasesim.dev/session";

/// Most reads one lease call makes while its writes keep meeting 409 Conflict.
pub const MAX_ATTEMPTS: usize = 8;

/// How a [`KubeLease`] is set up.
#[derive(Clone, Debug)]
pub struct KubeLeaseConfig {
    /// The namespace of the Lease objects (a DNS-1123 label).
    pub namespace: String,
    /// The TTL written as `leaseDurationSeconds`: whole seconds, 1 s to `i32::MAX` s.
    pub ttl: Duration,
    /// The candidate's and holder's own clock: expiry by observation and `Lease.expiry` are
    /// judged on its monotonic readings; `acquireTime` / `renewTime` come from its wall.
    pub clock: Arc<dyn Clock>,
    /// A planted bug, or `None` for the correct implementation.
    pub mutant: Option<Mutant>,
    /// Observer of every API call; `None` records nothing.
    pub calls: Option<Arc<dyn KubeCalls>>,
    /// The harness's hooks: [`PausePoint::AfterAuthorityRead`] is reached between every
    /// decision and its write. The default slot (none) costs one branch per write.
    pub hooks: HookSlot,
}

/// Why a [`KubeLeaseConfig`] was refused.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KubeConfigError {
    /// `leaseDurationSeconds` is a whole number of seconds.
    #[error(
        "TTL {ttl:?} is not a whole number of seconds; a Kubernetes Lease's leaseDurationSeconds \
         is an integer (use e.g. 10s)"
    )]
    TtlNotWholeSeconds {
        /// The TTL given.
        ttl: Duration,
    },
    /// A zero TTL would be expired the moment it is granted.
    #[error("TTL is zero; a Kubernetes Lease needs leaseDurationSeconds >= 1")]
    TtlZero,
    /// `leaseDurationSeconds` is an `int32`.
    #[error("TTL {ttl:?} is longer than leaseDurationSeconds can hold (i32::MAX seconds)")]
    TtlTooLong {
        /// The TTL given.
        ttl: Duration,
    },
    /// The namespace is not a DNS-1123 label.
    #[error("namespace `{namespace}` is not a DNS-1123 label ({reason})")]
    BadNamespace {
        /// The namespace given.
        namespace: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// Session leases on Kubernetes Lease objects (see the module docs for every rule).
#[derive(Debug)]
pub struct KubeLease {
    api: Api<LeaseObject>,
    ttl: Duration,
    ttl_seconds: i32,
    clock: Arc<dyn Clock>,
    mutant: Option<Mutant>,
    calls: Arc<dyn KubeCalls>,
    hooks: HookSlot,
    observations: Observations,
}

impl KubeLease {
    /// A backend writing Lease objects in `config.namespace` through `client`.
    ///
    /// # Errors
    /// [`KubeConfigError`] when the TTL is not whole seconds, is zero or exceeds `i32::MAX`
    /// seconds, or the namespace is not a DNS-1123 label.
    pub fn new(client: kube::Client, config: KubeLeaseConfig) -> Result<Self, KubeConfigError> {
        let ttl_seconds = ttl_seconds(config.ttl)?;
        check_namespace(&config.namespace)?;
        Ok(KubeLease {
            api: Api::namespaced(client, &config.namespace),
            ttl: config.ttl,
            ttl_seconds,
            clock: config.clock,
            mutant: config.mutant,
            calls: config.calls.unwrap_or_else(|| Arc::new(NoCalls)),
            hooks: config.hooks,
            observations: Observations::default(),
        })
    }

    /// The TTL every lease is granted for.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn caller<'a>(&'a self, owner: &'a Owner, session: &'a SessionId, name: &'a str) -> Caller<'a> {
        Caller {
            api: &self.api,
            calls: &*self.calls,
            owner,
            session,
            name,
        }
    }

    /// Reads the session's object and notes the observation: `Ok(Read::Stale)` when the reply
    /// is older than what this candidate already saw (decide nothing from it; read again).
    async fn read(&self, call: &Caller<'_>) -> Result<Read, LeaseError> {
        match call.get().await {
            Ok(read) => {
                object::check_session(&read, call.session)?;
                if self.observations.saw(call.session, &read, self.clock.now()) {
                    Ok(Read::Object(Box::new(read)))
                } else {
                    Ok(Read::Stale)
                }
            }
            Err(Failure::NotFound) => Ok(Read::Missing),
            Err(Failure::Conflict) => Err(LeaseError::Unavailable {
                reason: "Kubernetes API answered 409 to a read".to_owned(),
            }),
            Err(Failure::Lease(error)) => Err(error),
        }
    }

    /// Whether `read` (held by someone) has expired for this candidate.
    fn expired(&self, session: &SessionId, read: &LeaseObject) -> bool {
        if self.mutant == Some(Mutant::ExpiryFromRenewTime) {
            return object::expired_by_renew_time(read, self.clock.wall());
        }
        let duration = if self.mutant == Some(Mutant::DurationReadAsMilliseconds) {
            object::duration_as_millis(read)
        } else {
            object::duration(read)
        }
        .unwrap_or(self.ttl);
        self.observations
            .expired(session, read, duration, self.clock.now())
    }

    /// Sends `write` (create when `read` is `None`, else replace) and, on success, notes it
    /// as seen at the send time and returns the lease it grants. The decision was made:
    /// reaches [`PausePoint::AfterAuthorityRead`] first.
    async fn write(
        &self,
        call: &Caller<'_>,
        read: Option<&LeaseObject>,
        write: LeaseObject,
        token: u64,
    ) -> Result<Lease, Failure> {
        self.hooks.pause_point(PausePoint::AfterAuthorityRead).await;
        let sent = self.clock.now();
        let written = match read {
            None => call.create(&write).await?,
            Some(_) => self.replace(call, write).await?,
        };
        self.observations.saw(call.session, &written, sent);
        Ok(self.granted(call, token, sent))
    }

    /// Replaces the object with `write`, which carries the `resourceVersion` of the read it
    /// was decided from. Under [`Mutant::ConflictRetryKeepsDecision`] only, a 409 is met as a
    /// misused `retry.RetryOnConflict` meets it: read the object again for its
    /// `resourceVersion` alone and send the same write (decided from the old read) again, up
    /// to [`MAX_ATTEMPTS`] sends.
    async fn replace(
        &self,
        call: &Caller<'_>,
        mut write: LeaseObject,
    ) -> Result<LeaseObject, Failure> {
        let mut outcome = call.update(&write).await;
        if self.mutant != Some(Mutant::ConflictRetryKeepsDecision) {
            return outcome;
        }
        for _ in 1..MAX_ATTEMPTS {
            if !matches!(outcome, Err(Failure::Conflict)) {
                break;
            }
            write.metadata.resource_version = call.get().await?.metadata.resource_version;
            self.hooks.pause_point(PausePoint::AfterAuthorityRead).await;
            outcome = call.update(&write).await;
        }
        outcome
    }

    fn granted(&self, call: &Caller<'_>, token: u64, sent: Instant) -> Lease {
        Lease::new(
            call.session.clone(),
            call.owner.clone(),
            token,
            sent + self.ttl,
            self.ttl,
        )
    }

    /// The object to write for `owner` holding with `transitions`, from `read`.
    fn object_for(
        &self,
        call: &Caller<'_>,
        read: Option<&LeaseObject>,
        holder: &str,
        transitions: u64,
        takeover: bool,
    ) -> Result<LeaseObject, LeaseError> {
        let spec = object::Spec {
            holder,
            transitions: object::transitions_i32(transitions)?,
            duration_seconds: self.ttl_seconds,
            now: object::micro_time(self.clock.wall())?,
            takeover,
        };
        let precondition = self.mutant != Some(Mutant::UpdateWithoutResourceVersion);
        Ok(match read {
            None => object::new_object(call.name, call.session, &spec),
            Some(read) => object::updated(read, call.session, &spec, precondition),
        })
    }

    /// One decision of acquire from one read: `Ok(Some)` granted, `Ok(None)` read again.
    async fn try_acquire(&self, call: &Caller<'_>) -> Result<Option<Lease>, LeaseError> {
        let read = match self.read(call).await? {
            Read::Stale => return Ok(None),
            Read::Missing => None,
            Read::Object(read) => Some(*read),
        };
        let owner = call.owner.to_string();
        let (token, takeover) = match &read {
            None => (1, true),
            Some(read) => match object::holder(read) {
                held if held.is_free() || self.expired(call.session, read) => {
                    let keeps = self.mutant == Some(Mutant::ExpiredReacquireKeepsTransitions)
                        && !held.is_free()
                        && held.identity == owner;
                    let token = if keeps {
                        held.transitions
                    } else {
                        next_token(held.transitions)?
                    };
                    (token, true)
                }
                held if held.identity == owner => (held.transitions, false),
                // One of this candidate's own calls took it over after this read: the
                // refusal must name that holder, not the one read.
                _ if self.observations.superseded(call.session, read) => return Ok(None),
                held => return Err(held.refusal()),
            },
        };
        let write = self.object_for(call, read.as_ref(), &owner, token, takeover)?;
        retry_on_conflict(self.write(call, read.as_ref(), write, token).await)
    }

    /// One decision of renew from one read.
    async fn try_renew(
        &self,
        call: &Caller<'_>,
        lease: &Lease,
    ) -> Result<Option<Lease>, LeaseError> {
        let read = match self.read(call).await? {
            Read::Stale => return Ok(None),
            Read::Missing => return Err(Held::nobody()),
            Read::Object(read) => *read,
        };
        let held = object::holder(&read);
        let expired = held.is_free() || self.expired(call.session, &read);
        let ours = held.identity == call.owner.to_string() && held.transitions == lease.token();
        if expired || !ours {
            return Err(if expired {
                Held::nobody()
            } else {
                held.refusal()
            });
        }
        let token = if self.mutant == Some(Mutant::TransitionsBumpedOnRenew) {
            next_token(held.transitions)?
        } else {
            held.transitions
        };
        let write = self.object_for(call, Some(&read), &held.identity, token, false)?;
        retry_on_conflict(self.write(call, Some(&read), write, token).await)
    }

    /// One decision of release from one read: `Ok(true)` done, `Ok(false)` read again.
    async fn try_release(&self, call: &Caller<'_>, lease: &Lease) -> Result<bool, LeaseError> {
        let read = match self.read(call).await? {
            Read::Stale => return Ok(false),
            Read::Missing => return Ok(true),
            Read::Object(read) => *read,
        };
        let held = object::holder(&read);
        if held.identity != call.owner.to_string() || held.transitions != lease.token() {
            return Ok(true);
        }
        self.hooks.pause_point(PausePoint::AfterAuthorityRead).await;
        let sent = self.clock.now();
        let outcome = if self.mutant == Some(Mutant::DeleteOnRelease) {
            call.delete(&read).await.map(|()| None)
        } else {
            let write = self.object_for(call, Some(&read), "", held.transitions, false)?;
            self.replace(call, write).await.map(Some)
        };
        match outcome {
            Ok(written) => {
                if let Some(written) = written {
                    self.observations.saw(call.session, &written, sent);
                }
                Ok(true)
            }
            Err(Failure::Conflict | Failure::NotFound) => Ok(false),
            Err(Failure::Lease(error)) => Err(error),
        }
    }
}

/// What one read found.
enum Read {
    /// 404: no object.
    Missing,
    /// The object, at a version not older than any seen before.
    Object(Box<LeaseObject>),
    /// A reply older than what was already seen: decide nothing, read again.
    Stale,
}

/// A write's outcome as a decision step: granted, read again (409, or the object vanished),
/// or failed.
fn retry_on_conflict(outcome: Result<Lease, Failure>) -> Result<Option<Lease>, LeaseError> {
    match outcome {
        Ok(lease) => Ok(Some(lease)),
        Err(Failure::Conflict | Failure::NotFound) => Ok(None),
        Err(Failure::Lease(error)) => Err(error),
    }
}

/// The token of a takeover from `transitions`: one more, refused past `i32::MAX`.
fn next_token(transitions: u64) -> Result<u64, LeaseError> {
    let next = transitions + 1;
    object::transitions_i32(next)?;
    Ok(next)
}

fn gave_up() -> LeaseError {
    LeaseError::Unavailable {
        reason: format!(
            "Kubernetes Lease writes met 409 Conflict {MAX_ATTEMPTS} times in a row; try again"
        ),
    }
}

#[async_trait]
impl SessionLease for KubeLease {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let name = object_name(session.as_str());
        let call = self.caller(owner, session, &name);
        for _ in 0..MAX_ATTEMPTS {
            if let Some(lease) = self.try_acquire(&call).await? {
                return Ok(lease);
            }
        }
        Err(gave_up())
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let name = object_name(lease.session().as_str());
        let call = self.caller(lease.owner(), lease.session(), &name);
        for _ in 0..MAX_ATTEMPTS {
            if let Some(renewed) = self.try_renew(&call, lease).await? {
                return Ok(renewed);
            }
        }
        Err(gave_up())
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        let name = object_name(lease.session().as_str());
        let call = self.caller(lease.owner(), lease.session(), &name);
        for _ in 0..MAX_ATTEMPTS {
            if self.try_release(&call, lease).await? {
                return Ok(());
            }
        }
        Err(gave_up())
    }
}

/// `ttl` as `leaseDurationSeconds`.
fn ttl_seconds(ttl: Duration) -> Result<i32, KubeConfigError> {
    if ttl.is_zero() {
        return Err(KubeConfigError::TtlZero);
    }
    if ttl.subsec_nanos() != 0 {
        return Err(KubeConfigError::TtlNotWholeSeconds { ttl });
    }
    i32::try_from(ttl.as_secs()).map_err(|_| KubeConfigError::TtlTooLong { ttl })
}

/// A namespace must be a DNS-1123 label: 1–63 of `[a-z0-9-]`, alphanumeric at both ends.
fn check_namespace(namespace: &str) -> Result<(), KubeConfigError> {
    let bad = |reason| KubeConfigError::BadNamespace {
        namespace: namespace.to_owned(),
        reason,
    };
    let bytes = namespace.as_bytes();
    let edge = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if bytes.is_empty() || bytes.len() > 63 {
        return Err(bad("1 to 63 characters"));
    }
    if !bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
    {
        return Err(bad("only a-z, 0-9 and -"));
    }
    if !edge(bytes.first()) || !edge(bytes.last()) {
        return Err(bad("must start and end with a letter or digit"));
    }
    Ok(())
}
