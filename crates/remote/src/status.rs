//! gRPC status codes for the typed errors, both ways (docs/backends.md#the-grpc-lease-service:
//! Held ↔ FAILED_PRECONDITION, Unsupported ↔ UNIMPLEMENTED, bad fields ↔ INVALID_ARGUMENT, grace
//! period ↔ UNAVAILABLE).
//!
//! A client cannot tell a request that never left from one whose reply was lost, except
//! when the server says so: an explicit refusal carries [`REFUSED`] metadata. Everything
//! else that is not a definite answer is an unknown outcome.

use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

use super::wire::WireError;
use leasesim_core::journal::LedgerError;
use leasesim_core::lease::LeaseError;

/// Metadata key: the live holder's token, on a Held refusal.
pub const HOLDER_TOKEN: &str = "leasesim-holder-token";
/// Metadata key: the ledger's actual tip, on a CAS conflict.
pub const ACTUAL_TIP: &str = "leasesim-actual-tip";
/// Metadata key: present when the server refused without applying anything.
pub const REFUSED: &str = "leasesim-refused";

fn with_number(mut status: Status, key: &'static str, value: u64) -> Status {
    status
        .metadata_mut()
        .insert(key, MetadataValue::from(value));
    status
}

fn number(status: &Status, key: &str) -> Option<u64> {
    status.metadata().get(key)?.to_str().ok()?.parse().ok()
}

/// The status a server answers a lease error with.
pub fn from_lease_error(error: LeaseError) -> Status {
    match error {
        LeaseError::Held { holder_token } => {
            let status = Status::failed_precondition("session is held elsewhere");
            match holder_token {
                Some(token) => with_number(status, HOLDER_TOKEN, token),
                None => status,
            }
        }
        LeaseError::Unsupported => Status::unimplemented("leasing is not supported"),
        LeaseError::Unavailable { reason } => refused(reason),
        LeaseError::Unexpected { status } => Status::internal(status),
        LeaseError::InvalidSession { reason } => Status::invalid_argument(reason),
    }
}

/// The status a server answers a ledger error with.
pub fn from_ledger_error(error: LedgerError) -> Status {
    match error {
        LedgerError::Conflict { actual } => with_number(
            Status::failed_precondition(format!("CAS conflict: the tip is {actual}")),
            ACTUAL_TIP,
            actual,
        ),
        LedgerError::Unavailable { reason } => refused(reason),
        LedgerError::Unknown { reason } => Status::unavailable(reason),
        LedgerError::Invalid { reason } => Status::invalid_argument(reason),
    }
}

/// An explicit refusal: UNAVAILABLE with [`REFUSED`] metadata; nothing was applied.
pub fn refused(reason: impl Into<String>) -> Status {
    let mut status = Status::unavailable(reason);
    status
        .metadata_mut()
        .insert(REFUSED, MetadataValue::from_static("1"));
    status
}

/// A malformed request: INVALID_ARGUMENT.
pub fn invalid(error: WireError) -> Status {
    Status::invalid_argument(error.0)
}

/// The lease error a client reports for `status`. Anything not a definite answer (timeouts,
/// broken connections, UNAVAILABLE, UNKNOWN, RESOURCE_EXHAUSTED from h2's rapid-reset guard)
/// is [`LeaseError::Unavailable`]: the call may or may not have happened, and may be
/// retried. Any other code the contract does not name (PERMISSION_DENIED, INTERNAL,
/// UNAUTHENTICATED, NOT_FOUND…) is [`LeaseError::Unexpected`], retried the same way.
pub fn to_lease_error(status: &Status) -> LeaseError {
    match status.code() {
        Code::FailedPrecondition => LeaseError::Held {
            holder_token: number(status, HOLDER_TOKEN),
        },
        Code::Unimplemented => LeaseError::Unsupported,
        Code::InvalidArgument => LeaseError::InvalidSession {
            reason: status.message().to_owned(),
        },
        Code::Cancelled
        | Code::DeadlineExceeded
        | Code::Unavailable
        | Code::Unknown
        | Code::ResourceExhausted => LeaseError::Unavailable {
            reason: describe(status),
        },
        _ => LeaseError::Unexpected {
            status: describe(status),
        },
    }
}

/// The ledger error a client reports for `status`: a conflict, an explicit refusal
/// (nothing applied), or else an unknown outcome.
pub fn to_ledger_error(status: &Status) -> LedgerError {
    match (status.code(), number(status, ACTUAL_TIP)) {
        (Code::FailedPrecondition, Some(actual)) => LedgerError::Conflict { actual },
        (Code::InvalidArgument, _) => LedgerError::Invalid {
            reason: status.message().to_owned(),
        },
        _ if status.metadata().get(REFUSED).is_some() => LedgerError::Unavailable {
            reason: describe(status),
        },
        _ => LedgerError::Unknown {
            reason: describe(status),
        },
    }
}

/// Whether `status` suggests the connection is broken or stuck (a timeout, a transport
/// failure) rather than a definite answer from the server: the client then drops its channel.
pub fn connection_suspect(status: &Status) -> bool {
    let definite = status.metadata().get(REFUSED).is_some();
    !definite
        && matches!(
            status.code(),
            Code::Cancelled | Code::DeadlineExceeded | Code::Unavailable | Code::Unknown
        )
}

fn describe(status: &Status) -> String {
    format!("{:?}: {}", status.code(), status.message())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_errors_survive_the_round_trip() {
        for error in [
            LeaseError::Held {
                holder_token: Some(7),
            },
            LeaseError::Held { holder_token: None },
            LeaseError::Unsupported,
            LeaseError::InvalidSession {
                reason: "session id is empty".into(),
            },
        ] {
            assert_eq!(to_lease_error(&from_lease_error(error.clone())), error);
        }
    }

    #[test]
    fn ledger_conflicts_carry_the_actual_tip_and_refusals_are_definite() {
        let conflict = from_ledger_error(LedgerError::Conflict { actual: 9 });
        assert_eq!(
            to_ledger_error(&conflict),
            LedgerError::Conflict { actual: 9 }
        );
        let refusal = to_ledger_error(&refused("grace period"));
        assert!(
            matches!(refusal, LedgerError::Unavailable { .. }),
            "{refusal:?}"
        );
    }

    #[test]
    fn a_status_the_contract_does_not_name_is_unexpected_not_a_loss() {
        for code in [
            Code::PermissionDenied,
            Code::Internal,
            Code::Unauthenticated,
        ] {
            let error = to_lease_error(&Status::new(code, "injected"));
            assert!(
                matches!(&error, LeaseError::Unexpected { status } if status.contains("injected")),
                "{code:?}: {error:?}"
            );
        }
        let unavailable = to_lease_error(&Status::unavailable("down"));
        assert!(matches!(unavailable, LeaseError::Unavailable { .. }));
    }

    #[test]
    fn a_timeout_is_an_unknown_outcome_not_a_failure() {
        let timeout = Status::cancelled("Timeout expired");
        assert!(matches!(
            to_ledger_error(&timeout),
            LedgerError::Unknown { .. }
        ));
        assert!(matches!(
            to_lease_error(&timeout),
            LeaseError::Unavailable { .. }
        ));
    }
}
