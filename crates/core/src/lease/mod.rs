//! Session leases with fencing tokens: the [`Lease`] value, the [`SessionLease`] contract and
//! its backends.
//!
//! The contract (docs/contracts.md#lease): one live owner per session; the token advances on every
//! takeover and is strictly increasing per session forever; renew never recreates a record;
//! release only removes the caller's own hold. The conformance suite (`leasesim-conformance`,
//! docs/contracts.md#conformance-suite) checks a backend against every rule.
//!
//! [`MemLease`] is the reference backend; the others (the lease service's durable authority and
//! its gRPC driver, `flock(2)`, Kubernetes Lease objects, etcd) build on this contract outside
//! the system under test's crate (docs/backends.md).

mod mem;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;

use crate::clock::Instant;

pub use mem::MemLease;

/// Longest session id accepted, in bytes.
pub const SESSION_ID_MAX_BYTES: usize = 256;

/// The name of a session: non-empty, at most [`SESSION_ID_MAX_BYTES`] bytes of UTF-8, no
/// control characters. Backends that use it in file or object names map it to a safe name.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(String);

impl SessionId {
    /// Checks and wraps `id`.
    ///
    /// # Errors
    /// [`LeaseError::InvalidSession`] when `id` is empty, too long or has control characters.
    pub fn new(id: impl Into<String>) -> Result<Self, LeaseError> {
        let id = id.into();
        let reason = if id.is_empty() {
            "session id is empty".to_string()
        } else if id.len() > SESSION_ID_MAX_BYTES {
            format!(
                "session id is {} bytes long; the limit is {SESSION_ID_MAX_BYTES}",
                id.len()
            )
        } else if id.chars().any(char::is_control) {
            "session id contains a control character".to_string()
        } else {
            return Ok(SessionId(id));
        };
        Err(LeaseError::InvalidSession { reason })
    }

    /// The id as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// One incarnation of one process: a replica id plus an incarnation number bumped at every
/// restart, so a restarted replica is a new owner.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Owner {
    /// Stable name of the replica, e.g. `replica-1`.
    pub replica: String,
    /// Restart counter of the replica, from 0.
    pub incarnation: u64,
}

impl Owner {
    /// Incarnation `incarnation` of `replica`.
    pub fn new(replica: impl Into<String>, incarnation: u64) -> Self {
        Owner {
            replica: replica.into(),
            incarnation,
        }
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.replica, self.incarnation)
    }
}

/// A granted lease: an immutable value returned by acquire and renew. Callers keep the value
/// they were last given and pass it back to renew and release.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Lease {
    session: SessionId,
    owner: Owner,
    token: u64,
    expiry: Instant,
    ttl: Duration,
}

impl Lease {
    /// A lease of `session` to `owner` with fencing `token`, expiring at `expiry` on the
    /// authority's monotonic clock, granted for `ttl`.
    pub fn new(
        session: SessionId,
        owner: Owner,
        token: u64,
        expiry: Instant,
        ttl: Duration,
    ) -> Self {
        Lease {
            session,
            owner,
            token,
            expiry,
            ttl,
        }
    }

    /// The leased session.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// The holder.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The fencing token (epoch): strictly greater than every earlier holder's.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// When the authority will consider the lease expired, on the **authority's** monotonic
    /// clock. A holder never judges validity by it (see [`crate::journal::JournalLease`]).
    pub fn expiry(&self) -> Instant {
        self.expiry
    }

    /// The TTL the authority granted; the holder's local validity is computed from it.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }
}

/// Why a lease call did not succeed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum LeaseError {
    /// Another owner holds the session (acquire), or the caller's lease is no longer the
    /// current live one (renew): the loss signal. `holder_token` is the live holder's token,
    /// `None` when nobody holds the session now.
    #[error("session is held elsewhere (holder token {holder_token:?})")]
    Held {
        /// Token of the live holder, if any.
        holder_token: Option<u64>,
    },
    /// The backend cannot lease at all; callers disable leasing for the process.
    #[error("the lease backend does not support leasing")]
    Unsupported,
    /// A transient failure (timeout, connection refused, authority in its restart grace
    /// period): the call may be retried. Distinct from [`LeaseError::Held`].
    #[error("lease authority unavailable: {reason}")]
    Unavailable {
        /// What went wrong, for logs.
        reason: String,
    },
    /// The authority answered with a status the contract does not name (gRPC
    /// PERMISSION_DENIED, INTERNAL…; an HTTP 401, 403 or 5xx from an API server): neither a
    /// grant nor the loss signal, and the call's outcome is unknown. Callers treat it as
    /// [`LeaseError::Unavailable`]: a renewer retries it only while its local deadline lasts,
    /// and never counts it as a success (docs/contracts.md#service).
    #[error("lease authority answered an unexpected status: {status}")]
    Unexpected {
        /// The status as answered, for logs (e.g. `PermissionDenied: …`).
        status: String,
    },
    /// The session id is not acceptable (see [`SessionId::new`]).
    #[error("invalid session id: {reason}")]
    InvalidSession {
        /// What is wrong with it.
        reason: String,
    },
}

/// A lease authority: grants, renews and releases session leases.
///
/// Every method is cancel-safe in the sense that a dropped call has either happened or not;
/// remote backends report an unknown outcome as [`LeaseError::Unavailable`].
///
/// # Definite errors (docs/checks.md#definite)
///
/// [`LeaseError::Held`], [`LeaseError::InvalidSession`] and [`LeaseError::Unsupported`] are
/// definite: a backend returns them only when the call took no effect (nothing granted,
/// renewed or released), and the history records them as `fail`, which DEFINITE holds a run to.
/// [`LeaseError::Unavailable`] (a timeout, a broken connection, a grace-period refusal) and
/// [`LeaseError::Unexpected`] are not: the call may have taken effect, and the history records
/// them as `info`. A backend that cannot tell whether a request was applied answers one of
/// those two, never a definite error.
#[async_trait]
pub trait SessionLease: Send + Sync + fmt::Debug {
    /// Grants `session` to `owner` when it is free, expired (`now >= expiry`), or held by the
    /// same owner and still live (then the token is kept).
    ///
    /// # Errors
    /// [`LeaseError::Held`] when another live owner holds it; [`LeaseError::Unsupported`],
    /// [`LeaseError::Unavailable`].
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError>;

    /// Extends `lease` by a TTL from now, keeping its token.
    ///
    /// # Errors
    /// [`LeaseError::Held`] unless `lease` is the session's current live lease (same owner,
    /// same token, not expired); renew never recreates a record.
    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError>;

    /// Ends `lease` if it is still the session's current one (same owner and token);
    /// otherwise does nothing. Idempotent.
    ///
    /// # Errors
    /// Only transient ones ([`LeaseError::Unavailable`]).
    async fn release(&self, lease: &Lease) -> Result<(), LeaseError>;
}
