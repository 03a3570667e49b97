//! The Kubernetes Lease objects KubeLease calls, as a compare-and-set register keyed by
//! `resourceVersion`, one per session (docs/backends.md#kubelease: optimistic
//! concurrency on `resourceVersion`).
//!
//! State: absent, or the object `(resourceVersion, holderIdentity, leaseTransitions)`. Per
//! call, with the response the history recorded:
//!
//! - **get** returning the object: the state is present and equal to it; `kube_not_found`:
//!   the state is absent.
//! - **create(holder, transitions)** returning the object: the state was absent, and the
//!   returned object (with the holder and transitions the create wrote) becomes the state;
//!   `kube_conflict` (409): the state was present.
//! - **update(expected_rv = Some(r), holder, transitions)** returning the object: the state is
//!   present with `resourceVersion` r, and the returned object (with the written holder and
//!   transitions, and a `resourceVersion` other than r) becomes the state; `kube_conflict`:
//!   present with a `resourceVersion` other than r. With `expected_rv = None` (an
//!   unconditional replace) an ok needs only a present object (the new `resourceVersion`
//!   differs from its). `kube_not_found`: absent.
//! - **delete(expected_rv)** returning the deleted object: present, equal to it, with
//!   `resourceVersion` `expected_rv` when given; afterwards absent. `kube_conflict`: present
//!   with another `resourceVersion`; `kube_not_found`: absent.
//! - An unknown outcome (a 5xx, a transport error, a cut-off call) may or may not take
//!   effect: taking effect, a write whose precondition holds sets the written holder and
//!   transitions with a `resourceVersion` not yet known (the first read or conditional write
//!   that names one pins it), and one whose precondition fails changes nothing. A 4xx other
//!   than 404 and 409 had no effect and is dropped before the search.

use super::Model;

/// A call on one session's Lease object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KubeInput {
    /// The session; the partition key.
    pub session: String,
    /// What was called.
    pub call: KubeCall,
}

/// The Lease API calls KubeLease makes (`kube_*` op lines).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KubeCall {
    /// Read the object.
    Get,
    /// Create it with this holder and `leaseTransitions`.
    Create {
        /// `holderIdentity` written (`""`: none).
        holder_identity: String,
        /// `leaseTransitions` written.
        transitions: u64,
    },
    /// Replace it, conditional on `expected_rv` when given.
    Update {
        /// The `resourceVersion` precondition; `None`: unconditional.
        expected_rv: Option<u64>,
        /// `holderIdentity` written.
        holder_identity: String,
        /// `leaseTransitions` written.
        transitions: u64,
    },
    /// Delete it, conditional on `expected_rv` when given.
    Delete {
        /// The `resourceVersion` precondition, if any.
        expected_rv: Option<u64>,
    },
}

/// A completed call's response.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KubeOutput {
    /// The object (read, written or deleted).
    Object(LeaseObject),
    /// 404: the object is absent.
    NotFound,
    /// 409: create of an existing object, or a stale `resourceVersion`.
    Conflict,
}

/// One version of a Lease object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LeaseObject {
    /// `metadata.resourceVersion`.
    pub resource_version: u64,
    /// `spec.holderIdentity` (`""`: none).
    pub holder_identity: String,
    /// `spec.leaseTransitions`.
    pub transitions: u64,
}

/// The register's state: the object, if present.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubeState(Option<Stored>);

/// A present object; its `resourceVersion` is `None` after a write of unknown outcome, until
/// a response names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Stored {
    resource_version: Option<u64>,
    holder_identity: String,
    transitions: u64,
}

impl Stored {
    /// Whether `object` can be this version.
    fn is(&self, object: &LeaseObject) -> bool {
        self.resource_version
            .is_none_or(|rv| rv == object.resource_version)
            && self.holder_identity == object.holder_identity
            && self.transitions == object.transitions
    }

    /// Whether the precondition `expected_rv` can hold on this version.
    fn may_match(&self, expected_rv: Option<u64>) -> bool {
        match (expected_rv, self.resource_version) {
            (Some(expected), Some(rv)) => expected == rv,
            _ => true,
        }
    }

    /// Whether the precondition `expected_rv` can fail on this version.
    fn may_mismatch(&self, expected_rv: Option<u64>) -> bool {
        match (expected_rv, self.resource_version) {
            (None, _) => false,
            (Some(expected), Some(rv)) => expected != rv,
            (Some(_), None) => true,
        }
    }

    /// Its resourceVersion for a message: `rv N`, or that it is not yet known.
    fn describe_rv(&self) -> String {
        self.resource_version
            .map_or("an rv not yet known".to_owned(), |rv| format!("rv {rv}"))
    }

    fn pinned(object: &LeaseObject) -> Stored {
        Stored {
            resource_version: Some(object.resource_version),
            holder_identity: object.holder_identity.clone(),
            transitions: object.transitions,
        }
    }
}

/// A create: it succeeds on an absent object (returning what it wrote) and answers 409 Conflict
/// on a present one; of unknown outcome it may have written.
fn step_create(
    state: &KubeState,
    holder_identity: &str,
    transitions: u64,
    output: Option<&KubeOutput>,
) -> Option<KubeState> {
    let next = |s: Stored| Some(KubeState(Some(s)));
    match (state.0.as_ref(), output) {
        (None, None) => next(Stored {
            resource_version: None,
            holder_identity: holder_identity.to_owned(),
            transitions,
        }),
        (None, Some(KubeOutput::Object(object)))
            if object.holder_identity == holder_identity && object.transitions == transitions =>
        {
            next(Stored::pinned(object))
        }
        (Some(_), None | Some(KubeOutput::Conflict)) => Some(state.clone()),
        _ => None,
    }
}

/// An update of a present object: it succeeds when `expected_rv` may match (returning what it
/// wrote, at a new resourceVersion) and answers 409 Conflict when it may not.
fn step_update(
    state: &KubeState,
    expected_rv: Option<u64>,
    holder_identity: &str,
    transitions: u64,
    output: Option<&KubeOutput>,
) -> Option<KubeState> {
    let stored = state.0.as_ref()?;
    match output {
        None if stored.may_match(expected_rv) => Some(KubeState(Some(Stored {
            resource_version: None,
            holder_identity: holder_identity.to_owned(),
            transitions,
        }))),
        None => Some(state.clone()),
        Some(KubeOutput::Object(object)) => {
            let new_rv = Some(object.resource_version);
            let ok = stored.may_match(expected_rv)
                && expected_rv != new_rv
                && (stored.resource_version.is_none() || stored.resource_version != new_rv)
                && object.holder_identity == holder_identity
                && object.transitions == transitions;
            ok.then(|| KubeState(Some(Stored::pinned(object))))
        }
        Some(KubeOutput::Conflict) => stored.may_mismatch(expected_rv).then(|| state.clone()),
        Some(KubeOutput::NotFound) => None,
    }
}

/// A delete of a present object: it succeeds when `expected_rv` may match (returning the object
/// it deleted) and answers 409 Conflict when it may not.
fn step_delete(
    state: &KubeState,
    expected_rv: Option<u64>,
    output: Option<&KubeOutput>,
) -> Option<KubeState> {
    let stored = state.0.as_ref()?;
    match output {
        None if stored.may_match(expected_rv) => Some(KubeState(None)),
        None => Some(state.clone()),
        Some(KubeOutput::Object(object)) => (stored.is(object)
            && expected_rv.is_none_or(|rv| rv == object.resource_version))
        .then_some(KubeState(None)),
        Some(KubeOutput::Conflict) => stored.may_mismatch(expected_rv).then(|| state.clone()),
        Some(KubeOutput::NotFound) => None,
    }
}

/// Why an update of `stored` that returned `object` breaks optimistic concurrency.
fn reject_updated(
    stored: &Stored,
    expected_rv: Option<u64>,
    holder_identity: &str,
    transitions: u64,
    object: &LeaseObject,
) -> String {
    if !stored.may_match(expected_rv) {
        format!(
            "CAS expected rv {}, object at {}: the update must answer 409 Conflict",
            expected_rv.unwrap_or_default(),
            stored.describe_rv()
        )
    } else if object.holder_identity != holder_identity || object.transitions != transitions {
        format!(
            "an update returns what it wrote (holder {holder_identity:?}, transitions \
             {transitions}), not holder {:?} transitions {}",
            object.holder_identity, object.transitions
        )
    } else {
        format!(
            "an update gets a new resourceVersion, but returned rv {}, the one it \
             replaced",
            object.resource_version
        )
    }
}

/// The CAS register model of the Lease objects, partitioned per session.
#[derive(Clone, Copy, Debug, Default)]
pub struct KubeLeaseObjects;

impl Model for KubeLeaseObjects {
    type State = KubeState;
    type Input = KubeInput;
    type Output = KubeOutput;
    type Key = String;

    fn init(&self) -> KubeState {
        KubeState(None)
    }

    fn step(
        &self,
        state: &KubeState,
        input: &KubeInput,
        output: Option<&KubeOutput>,
    ) -> Option<KubeState> {
        let present = state.0.as_ref();
        match (&input.call, output) {
            (KubeCall::Get, None) => Some(state.clone()),
            (KubeCall::Get, Some(KubeOutput::Object(object))) => {
                present.filter(|s| s.is(object))?;
                Some(KubeState(Some(Stored::pinned(object))))
            }
            (_, Some(KubeOutput::NotFound)) => present.is_none().then(|| state.clone()),
            (
                KubeCall::Create {
                    holder_identity,
                    transitions,
                },
                output,
            ) => step_create(state, holder_identity, *transitions, output),
            (
                KubeCall::Update {
                    expected_rv,
                    holder_identity,
                    transitions,
                },
                output,
            ) => step_update(state, *expected_rv, holder_identity, *transitions, output),
            (KubeCall::Delete { expected_rv }, output) => step_delete(state, *expected_rv, output),
            (KubeCall::Get, Some(KubeOutput::Conflict)) => None,
        }
    }

    /// Our histories' times are µs of true time: seconds with ms.
    fn describe_time(&self, time: u64) -> String {
        leasesim_history::time::seconds_us(time)
    }

    fn key(&self, input: &KubeInput) -> String {
        input.session.clone()
    }

    fn describe_state(&self, state: &KubeState) -> String {
        match &state.0 {
            None => "absent".to_string(),
            Some(s) => format!(
                "rv {} holder {:?} transitions {}",
                s.resource_version
                    .map_or("unknown".to_string(), |rv| rv.to_string()),
                s.holder_identity,
                s.transitions
            ),
        }
    }

    /// The rule of the API server's optimistic concurrency the response breaks.
    fn describe_rejection(
        &self,
        state: &KubeState,
        input: &KubeInput,
        output: Option<&KubeOutput>,
    ) -> String {
        let Some(output) = output else {
            return "an unknown outcome is accepted in every state".to_owned();
        };
        let rv = Stored::describe_rv;
        match (&state.0, &input.call, output) {
            (None, KubeCall::Create { .. }, KubeOutput::Object(_)) => {
                "a create returns the object it wrote: holder or transitions differ".to_owned()
            }
            (None, _, KubeOutput::NotFound) => "the object is absent, as not found says".into(),
            (None, _, _) => "the object is absent: the call must answer 404 Not Found".to_owned(),
            (Some(s), _, KubeOutput::NotFound) => {
                format!("the object exists (at {}): not found is wrong", rv(s))
            }
            (Some(s), KubeCall::Get, KubeOutput::Object(object)) => format!(
                "the get returned rv {} holder {:?} transitions {}, but the object is at {} \
                 holder {:?} transitions {}",
                object.resource_version,
                object.holder_identity,
                object.transitions,
                rv(s),
                s.holder_identity,
                s.transitions
            ),
            (Some(_), KubeCall::Create { .. }, _) => {
                "the object exists: a create must answer 409 Conflict".to_owned()
            }
            (
                Some(s),
                KubeCall::Update { expected_rv, .. } | KubeCall::Delete { expected_rv },
                KubeOutput::Conflict,
            ) => {
                format!(
                    "the write expected {}, and the object is at {}: it must succeed, not answer \
                     409 Conflict",
                    expected_rv.map_or("no rv".to_owned(), |rv| format!("rv {rv}")),
                    rv(s)
                )
            }
            (
                Some(s),
                KubeCall::Update {
                    expected_rv,
                    holder_identity,
                    transitions,
                },
                KubeOutput::Object(object),
            ) => reject_updated(s, *expected_rv, holder_identity, *transitions, object),
            (Some(s), KubeCall::Delete { expected_rv }, KubeOutput::Object(_)) => {
                if s.may_match(*expected_rv) {
                    "a delete returns the object it deleted, and this is not it".to_owned()
                } else {
                    format!(
                        "CAS expected rv {}, object at {}: the delete must answer 409 Conflict",
                        expected_rv.unwrap_or_default(),
                        s.describe_rv()
                    )
                }
            }
            (Some(_), KubeCall::Get, KubeOutput::Conflict) => {
                "a get never answers 409 Conflict".to_owned()
            }
        }
    }

    fn describe_op(&self, input: &KubeInput, output: Option<&KubeOutput>) -> String {
        let rv = |rv: &Option<u64>| rv.map_or("no rv".to_string(), |rv| format!("rv {rv}"));
        let call = match &input.call {
            KubeCall::Get => format!("got {}", input.session),
            KubeCall::Create {
                holder_identity,
                transitions,
            } => format!(
                "created {} (holder {holder_identity:?}, transitions {transitions})",
                input.session
            ),
            KubeCall::Update {
                expected_rv,
                holder_identity,
                transitions,
            } => format!(
                "updated {} at {} (holder {holder_identity:?}, transitions {transitions})",
                input.session,
                rv(expected_rv)
            ),
            KubeCall::Delete { expected_rv } => {
                format!("deleted {} at {}", input.session, rv(expected_rv))
            }
        };
        let answer = match output {
            None => "unknown".to_string(),
            Some(KubeOutput::Object(o)) => format!(
                "rv {} holder {:?} transitions {}",
                o.resource_version, o.holder_identity, o.transitions
            ),
            Some(KubeOutput::NotFound) => "not found".to_string(),
            Some(KubeOutput::Conflict) => "conflict".to_string(),
        };
        format!("{call} -> {answer}")
    }
}
