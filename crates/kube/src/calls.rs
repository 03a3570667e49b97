//! The Lease API calls a [`super::KubeLease`] makes, each reported to a [`KubeCalls`] observer
//! (the world records them as `kube_*` operation lines), and how their errors read.

use std::fmt;

use k8s_openapi::api::coordination::v1::Lease as LeaseObject;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};

use crate::object::holder_fields;
use leasesim_core::lease::{LeaseError, Owner, SessionId};

/// The `resourceVersion` reported to [`KubeCalls`] for a version that is not a decimal `u64`.
/// Kubernetes makes resourceVersion an opaque string; the world's API server and real
/// clusters write decimal integers, but a foreign one is still sent back verbatim.
pub const UNPARSED_RESOURCE_VERSION: u64 = u64::MAX;

/// Observer of each API call (the world records them as `kube_*` op lines); does nothing by
/// default.
pub trait KubeCalls: Send + Sync + fmt::Debug {
    /// `owner`'s call about `session` is about to be sent; returns an id for
    /// [`KubeCalls::complete`].
    fn invoke(&self, owner: &Owner, session: &SessionId, call: &KubeCall) -> u64;

    /// The call `call_id` ended with `reply`.
    fn complete(&self, call_id: u64, reply: &KubeReply);
}

/// One Lease API call.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum KubeCall {
    /// `GET …/leases/{name}`.
    Get,
    /// `POST …/leases`: a new object.
    Create {
        /// The `holderIdentity` written.
        holder_identity: String,
        /// The `leaseTransitions` written.
        transitions: u64,
    },
    /// `PUT …/leases/{name}` (`Api::replace`) carrying a resourceVersion; without one, a
    /// merge `PATCH` (the API refuses an unconditional replace of a Lease with 422).
    Update {
        /// The `metadata.resourceVersion` precondition sent ([`UNPARSED_RESOURCE_VERSION`] for
        /// a non-numeric one); `None` when sent without one (an unconditional update, the
        /// `update-without-resource-version` mutant).
        expected_rv: Option<u64>,
        /// The `holderIdentity` written (`""`: none).
        holder_identity: String,
        /// The `leaseTransitions` written.
        transitions: u64,
    },
    /// `DELETE …/leases/{name}` (only the `delete-on-release` mutant deletes).
    Delete {
        /// The resourceVersion precondition sent, if any.
        expected_rv: Option<u64>,
    },
}

/// How a Lease API call ended.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum KubeReply {
    /// The object as the server returned it (for a delete: the object deleted).
    Object {
        /// Its `metadata.resourceVersion` ([`UNPARSED_RESOURCE_VERSION`] when not numeric).
        resource_version: u64,
        /// Its `holderIdentity` (`""`: none).
        holder_identity: String,
        /// Its `leaseTransitions`.
        transitions: u64,
    },
    /// 404 Not Found (reason `NotFound`).
    NotFound,
    /// 409: a stale resourceVersion (`Conflict`) or a create of an existing name
    /// (`AlreadyExists`).
    Conflict,
    /// Any other HTTP error status, with the Kubernetes `Status` reason (or its message).
    Status {
        /// The HTTP status code.
        code: u16,
        /// The reason, e.g. `Forbidden`, `InternalError`, `TooManyRequests`.
        reason: String,
    },
    /// No HTTP answer: connection refused or reset, timeout, a body that does not parse.
    Transport {
        /// What went wrong.
        reason: String,
    },
}

/// The default observer: records nothing.
#[derive(Debug, Default)]
pub struct NoCalls;

impl KubeCalls for NoCalls {
    fn invoke(&self, _: &Owner, _: &SessionId, _: &KubeCall) -> u64 {
        0
    }

    fn complete(&self, _: u64, _: &KubeReply) {}
}

/// A failed call, as the lease logic sees it.
#[derive(Debug)]
pub(super) enum Failure {
    /// 404 of the object.
    NotFound,
    /// 409 (stale resourceVersion, or the name exists).
    Conflict,
    /// Anything else: the error the lease call returns.
    Lease(LeaseError),
}

/// The API calls of one lease operation: one owner, one session, one object name.
pub(super) struct Caller<'a> {
    pub api: &'a Api<LeaseObject>,
    pub calls: &'a dyn KubeCalls,
    pub owner: &'a Owner,
    pub session: &'a SessionId,
    pub name: &'a str,
}

impl Caller<'_> {
    /// Reads the object.
    pub async fn get(&self) -> Result<LeaseObject, Failure> {
        let id = self.calls.invoke(self.owner, self.session, &KubeCall::Get);
        let result = self.api.get(self.name).await;
        self.finish(id, result)
    }

    /// Creates `object`.
    pub async fn create(&self, object: &LeaseObject) -> Result<LeaseObject, Failure> {
        let (holder_identity, transitions) = holder_fields(object);
        let call = KubeCall::Create {
            holder_identity,
            transitions,
        };
        let id = self.calls.invoke(self.owner, self.session, &call);
        let result = self.api.create(&PostParams::default(), object).await;
        self.finish(id, result)
    }

    /// Updates the object to `object`: a replace on the precondition of its
    /// `metadata.resourceVersion`, or, without one, a merge patch (an unconditional update:
    /// the Lease API refuses a replace without a resourceVersion with 422, since its strategy
    /// has `AllowUnconditionalUpdate() == false`).
    pub async fn update(&self, object: &LeaseObject) -> Result<LeaseObject, Failure> {
        let (holder_identity, transitions) = holder_fields(object);
        let call = KubeCall::Update {
            expected_rv: object.metadata.resource_version.as_deref().map(parse_rv),
            holder_identity,
            transitions,
        };
        let id = self.calls.invoke(self.owner, self.session, &call);
        let result = if object.metadata.resource_version.is_some() {
            let params = PostParams::default();
            self.api.replace(self.name, &params, object).await
        } else {
            let params = PatchParams::default();
            self.api
                .patch(self.name, &params, &Patch::Merge(object))
                .await
        };
        self.finish(id, result)
    }

    /// Deletes `read` (the object as last read), on the precondition of its resourceVersion.
    pub async fn delete(&self, read: &LeaseObject) -> Result<(), Failure> {
        let rv = read.metadata.resource_version.clone();
        let call = KubeCall::Delete {
            expected_rv: rv.as_deref().map(parse_rv),
        };
        let id = self.calls.invoke(self.owner, self.session, &call);
        let params = DeleteParams::default().preconditions(Preconditions {
            resource_version: rv,
            uid: None,
        });
        let result = self.api.delete(self.name, &params).await;
        self.finish(id, result.map(|_| read.clone())).map(|_| ())
    }

    fn finish(
        &self,
        id: u64,
        result: Result<LeaseObject, kube::Error>,
    ) -> Result<LeaseObject, Failure> {
        match result {
            Ok(object) => {
                self.calls.complete(id, &object_reply(&object));
                Ok(object)
            }
            Err(error) => {
                let (reply, failure) = classify(error);
                self.calls.complete(id, &reply);
                Err(failure)
            }
        }
    }
}

/// Reads Lease object `name` through `api` as `owner`'s call about `session`, reported to
/// `calls` as a [`KubeCall::Get`]: for a client other than [`super::KubeLease`] (a target
/// adapter's own read, docs/targets.md#kube-lease-manager).
///
/// # Errors
/// As [`super::KubeLease`]'s calls classify them: a status or transport error as
/// [`LeaseError::Unavailable`], [`LeaseError::Unexpected`] or [`LeaseError::Unsupported`]
/// (a 409, which a get never answers, as `Unavailable`). A missing object is `Ok(None)`.
pub async fn recorded_get(
    api: &Api<LeaseObject>,
    calls: &dyn KubeCalls,
    owner: &Owner,
    session: &SessionId,
    name: &str,
) -> Result<Option<LeaseObject>, LeaseError> {
    let caller = Caller {
        api,
        calls,
        owner,
        session,
        name,
    };
    match caller.get().await {
        Ok(object) => Ok(Some(object)),
        Err(Failure::NotFound) => Ok(None),
        Err(Failure::Conflict) => Err(LeaseError::Unavailable {
            reason: format!("a get of Lease {name} answered 409"),
        }),
        Err(Failure::Lease(error)) => Err(error),
    }
}

/// Creates `object` through `api` as `owner`'s call about `session`, reported to `calls` as a
/// [`KubeCall::Create`]: for a client other than [`super::KubeLease`] (a target adapter that
/// creates the Lease its crate needs, docs/targets.md#kubert). Returns the created object, or
/// `None` when the name is taken already (409 `AlreadyExists`).
///
/// # Errors
/// As [`recorded_get`]'s: a status or transport error as [`LeaseError::Unavailable`],
/// [`LeaseError::Unexpected`] or [`LeaseError::Unsupported`].
pub async fn recorded_create(
    api: &Api<LeaseObject>,
    calls: &dyn KubeCalls,
    owner: &Owner,
    session: &SessionId,
    object: &LeaseObject,
) -> Result<Option<LeaseObject>, LeaseError> {
    let name = object.metadata.name.as_deref().unwrap_or_default();
    let caller = Caller {
        api,
        calls,
        owner,
        session,
        name,
    };
    match caller.create(object).await {
        Ok(created) => Ok(Some(created)),
        Err(Failure::Conflict) => Ok(None),
        Err(Failure::NotFound) => Err(LeaseError::Unavailable {
            reason: format!("a create of Lease {name} answered 404"),
        }),
        Err(Failure::Lease(error)) => Err(error),
    }
}

/// A resourceVersion as a number for [`KubeCalls`]; [`UNPARSED_RESOURCE_VERSION`] when it is
/// not a decimal `u64`.
pub fn parse_rv(rv: &str) -> u64 {
    rv.parse().unwrap_or(UNPARSED_RESOURCE_VERSION)
}

fn object_reply(object: &LeaseObject) -> KubeReply {
    let (holder_identity, transitions) = holder_fields(object);
    KubeReply::Object {
        resource_version: object
            .metadata
            .resource_version
            .as_deref()
            .map_or(UNPARSED_RESOURCE_VERSION, parse_rv),
        holder_identity,
        transitions,
    }
}

/// What a kube error means: the reply to record and the failure to act on.
///
/// - 404 with reason `NotFound` and details naming the object → the object does not exist.
///   Any other 404 (a plain-text `404 page not found`, or "the server could not find the
///   requested resource" without a name: `coordination.k8s.io/v1` is not served at all) →
///   [`LeaseError::Unsupported`]: this backend cannot lease on that server.
/// - 409 → conflict (stale resourceVersion, or the name exists).
/// - 401 / 403 / 5xx → [`LeaseError::Unexpected`] naming the status (RBAC is fixed by an
///   operator, and may be fixed while the process runs; Held would be a false loss signal):
///   retried as a transient error while the holder's deadline lasts.
/// - 429, any other status, transport errors and timeouts → [`LeaseError::Unavailable`].
pub(super) fn classify(error: kube::Error) -> (KubeReply, Failure) {
    match error {
        kube::Error::Api(status) => {
            let names_object = status.details.as_ref().is_some_and(|d| !d.name.is_empty());
            classify_status(status.code, &status.reason, &status.message, names_object)
        }
        other => {
            let reason = other.to_string();
            let failure = Failure::Lease(LeaseError::Unavailable {
                reason: format!("Kubernetes API call failed: {reason}"),
            });
            (KubeReply::Transport { reason }, failure)
        }
    }
}

/// `names_object`: the `Status` details name an object (a real API server's 404 for a missing
/// Lease always does; its 404 for a path it does not serve does not).
fn classify_status(
    code: u16,
    reason: &str,
    message: &str,
    names_object: bool,
) -> (KubeReply, Failure) {
    match (code, reason) {
        (404, "NotFound") if names_object => (KubeReply::NotFound, Failure::NotFound),
        (409, _) => (KubeReply::Conflict, Failure::Conflict),
        _ => {
            let text = if reason.is_empty() { message } else { reason };
            let reply = KubeReply::Status {
                code,
                reason: text.to_owned(),
            };
            let answered = format!("Kubernetes API answered {code} {text}: {message}");
            let failure = match code {
                404 => LeaseError::Unsupported,
                401 | 403 | 500..=599 => LeaseError::Unexpected { status: answered },
                _ => LeaseError::Unavailable { reason: answered },
            };
            (reply, Failure::Lease(failure))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_versions_parse_as_decimal_or_the_sentinel() {
        assert_eq!(parse_rv("42"), 42);
        assert_eq!(parse_rv("abc"), UNPARSED_RESOURCE_VERSION);
        assert_eq!(parse_rv(""), UNPARSED_RESOURCE_VERSION);
        assert_eq!(parse_rv("-1"), UNPARSED_RESOURCE_VERSION);
    }

    #[test]
    fn statuses_map_to_the_lease_errors_the_contract_names() {
        assert!(matches!(
            classify_status(404, "NotFound", "leases \"x\" not found", true),
            (KubeReply::NotFound, Failure::NotFound)
        ));
        assert!(matches!(
            classify_status(
                404,
                "NotFound",
                "the server could not find the requested resource",
                false
            ),
            (
                KubeReply::Status { code: 404, .. },
                Failure::Lease(LeaseError::Unsupported)
            )
        ));
        assert!(matches!(
            classify_status(404, "", "404 page not found", false),
            (
                KubeReply::Status { code: 404, .. },
                Failure::Lease(LeaseError::Unsupported)
            )
        ));
        assert!(matches!(
            classify_status(409, "AlreadyExists", "", true),
            (KubeReply::Conflict, Failure::Conflict)
        ));
        for (code, reason) in [
            (403, "Forbidden"),
            (401, "Unauthorized"),
            (429, "TooManyRequests"),
            (500, "InternalError"),
            (503, "ServiceUnavailable"),
        ] {
            let (reply, failure) = classify_status(code, reason, "details", false);
            assert_eq!(
                reply,
                KubeReply::Status {
                    code,
                    reason: reason.to_owned()
                }
            );
            // 429 asks to come back later; the others are statuses the contract does not
            // name. Both are retried while the holder's deadline lasts.
            let text = match (code, failure) {
                (429, Failure::Lease(LeaseError::Unavailable { reason: text })) => text,
                (401 | 403 | 500 | 503, Failure::Lease(LeaseError::Unexpected { status })) => {
                    status
                }
                (_, other) => panic!("{code} {reason} → {other:?}"),
            };
            assert!(
                text.contains(reason) && text.contains(&code.to_string()),
                "{text}"
            );
        }
    }
}
