//! Reading and writing the fields of a Lease object.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease as LeaseObject, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};

use super::SESSION_ANNOTATION;
use leasesim_core::clock::WallTime;
use leasesim_core::lease::{LeaseError, SessionId};

/// The holder fields of a read object.
#[derive(Clone, Debug)]
pub(super) struct Held {
    /// `holderIdentity`, `""` when none.
    pub identity: String,
    /// `leaseTransitions` (0 when absent).
    pub transitions: u64,
}

impl Held {
    /// Nobody holds it (never held, or released).
    pub fn is_free(&self) -> bool {
        self.identity.is_empty()
    }

    /// Held by a live owner: the refusal naming its token.
    pub fn refusal(&self) -> LeaseError {
        LeaseError::Held {
            holder_token: Some(self.transitions),
        }
    }

    /// Refused with nobody live holding it.
    pub fn nobody() -> LeaseError {
        LeaseError::Held { holder_token: None }
    }
}

/// holderIdentity and leaseTransitions of `object` (a negative leaseTransitions, which no
/// correct writer produces, reads as 0: the next takeover writes 1).
pub(super) fn holder(object: &LeaseObject) -> Held {
    let (identity, transitions) = holder_fields(object);
    Held {
        identity,
        transitions,
    }
}

/// `holderIdentity` (`""` for none) and `leaseTransitions` (0 when absent; a negative one,
/// which no correct writer produces, reads as 0) of a Lease object: as a client reads them
/// and as the world's API server records an accepted write.
pub fn holder_fields(object: &LeaseObject) -> (String, u64) {
    let spec = object.spec.as_ref();
    let identity = spec
        .and_then(|s| s.holder_identity.clone())
        .unwrap_or_default();
    let transitions = spec
        .and_then(|s| s.lease_transitions)
        .map_or(0, |t| u64::try_from(t).unwrap_or(0));
    (identity, transitions)
}

/// `leaseDurationSeconds` of `object`, when present and positive.
pub(super) fn duration(object: &LeaseObject) -> Option<Duration> {
    let seconds = object.spec.as_ref()?.lease_duration_seconds?;
    u64::try_from(seconds)
        .ok()
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
}

/// The `duration-read-as-milliseconds` mutant's reading of `leaseDurationSeconds`: the
/// number taken as milliseconds, a thousandth of the duration the holder wrote.
pub(super) fn duration_as_millis(object: &LeaseObject) -> Option<Duration> {
    duration(object).map(|d| Duration::from_millis(d.as_secs()))
}

/// The `expiry-from-renew-time` mutant's rule (the seed's k8slease): expired when
/// `renewTime + leaseDurationSeconds < wall`, comparing another host's wall clock with ours.
pub(super) fn expired_by_renew_time(object: &LeaseObject, wall: WallTime) -> bool {
    let Some(spec) = object.spec.as_ref() else {
        return true;
    };
    let renewed_ns = spec
        .renew_time
        .as_ref()
        .or(spec.acquire_time.as_ref())
        .map_or(0, |t| t.0.as_nanosecond());
    let duration_ns = duration(object).map_or(0, |d| d.as_nanos() as i128);
    renewed_ns + duration_ns < wall.unix_ns
}

/// Checks that `object` belongs to `session` (names are hashed; a collision or a foreign
/// object must not be taken for ours).
pub(super) fn check_session(object: &LeaseObject, session: &SessionId) -> Result<(), LeaseError> {
    let stored = object
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SESSION_ANNOTATION));
    match stored {
        Some(id) if id == session.as_str() => Ok(()),
        other => Err(LeaseError::Unavailable {
            reason: format!(
                "Lease object {:?} carries {SESSION_ANNOTATION}={other:?}, not {session:?}: \
                 a name collision or an object written by someone else",
                object.metadata.name.as_deref().unwrap_or_default()
            ),
        }),
    }
}

/// `transitions` as `leaseTransitions` (an `int32`): refused past `i32::MAX`, never wrapped.
pub(super) fn transitions_i32(transitions: u64) -> Result<i32, LeaseError> {
    i32::try_from(transitions).map_err(|_| LeaseError::Unavailable {
        reason: format!(
            "leaseTransitions would reach {transitions}, past i32::MAX: the token cannot \
             advance further on this Lease object"
        ),
    })
}

/// A wall reading as a `MicroTime` (whole microseconds).
///
/// # Errors
/// [`LeaseError::Unavailable`] when the wall clock is outside the years -9999..=9999.
pub(super) fn micro_time(wall: WallTime) -> Result<MicroTime, LeaseError> {
    let micros = i64::try_from(wall.unix_ns.div_euclid(1_000)).unwrap_or(i64::MAX);
    jiff::Timestamp::from_microsecond(micros)
        .map(MicroTime)
        .map_err(|e| LeaseError::Unavailable {
            reason: format!(
                "the wall clock reads {} ns, not a Lease time: {e}",
                wall.unix_ns
            ),
        })
}

/// The holder fields one write sets.
pub(super) struct Spec<'a> {
    /// `holderIdentity` (`""`: released).
    pub holder: &'a str,
    /// `leaseTransitions`.
    pub transitions: i32,
    /// `leaseDurationSeconds`.
    pub duration_seconds: i32,
    /// The writer's wall clock: `renewTime`, and `acquireTime` on a takeover.
    pub now: MicroTime,
    /// Whether this write takes the lease over (sets `acquireTime`).
    pub takeover: bool,
}

/// A new object named `name` for `session`.
pub(super) fn new_object(name: &str, session: &SessionId, spec: &Spec<'_>) -> LeaseObject {
    let annotations = BTreeMap::from([(SESSION_ANNOTATION.to_owned(), session.to_string())]);
    LeaseObject {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(spec.holder.to_owned()),
            lease_duration_seconds: Some(spec.duration_seconds),
            lease_transitions: Some(spec.transitions),
            acquire_time: Some(spec.now.clone()),
            renew_time: Some(spec.now.clone()),
            ..LeaseSpec::default()
        }),
    }
}

/// `read` with the holder fields of `spec`, carrying `read`'s resourceVersion as the
/// precondition unless `precondition` is false (the `update-without-resource-version`
/// mutant).
pub(super) fn updated(
    read: &LeaseObject,
    session: &SessionId,
    spec: &Spec<'_>,
    precondition: bool,
) -> LeaseObject {
    let mut object = read.clone();
    if !precondition {
        object.metadata.resource_version = None;
    }
    object
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(SESSION_ANNOTATION.to_owned(), session.to_string());
    let fields = object.spec.get_or_insert_with(LeaseSpec::default);
    fields.holder_identity = Some(spec.holder.to_owned());
    fields.lease_duration_seconds = Some(spec.duration_seconds);
    fields.lease_transitions = Some(spec.transitions);
    fields.renew_time = Some(spec.now.clone());
    if spec.takeover {
        fields.acquire_time = Some(spec.now.clone());
    }
    object
}
