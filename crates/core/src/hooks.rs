//! The hooks through which a harness watches and freezes the system under test.
//!
//! The system under test calls them at fixed places; by default they do nothing (one `Option`
//! check). The simulated world installs its own to freeze a task at a named
//! [`PausePoint`] and to record what the system decided ([`Observation`]) — it reaches the
//! system under test only through these, the [`crate::clock::Clock`], the mutant switch and
//! the transport and storage it hands over (docs/world.md#injection-points).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::clock::Instant;
use crate::lease::SessionId;

/// A place where a simulated freeze can catch a task (docs/world.md#freezes-and-pause-points).
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum PausePoint {
    /// In `Journal::append`, before the lease is judged valid for an append (a clean-up
    /// append reaches [`PausePoint::BeforeCleanupAppend`] instead).
    BeforeAppendCheck,
    /// In `Journal::append` (a clean-up append too), after the lease was judged valid and
    /// before the append is sent.
    BeforeAppendSend,
    /// In `Store::open_journal`, before the lease is judged valid for each try at the fence.
    BeforeOpenCheck,
    /// In `Journal::append_cleanup` (a graceful shutdown's final append), before the lease is
    /// judged valid for it.
    BeforeCleanupAppend,
    /// In the renewer, before a renew is sent.
    BeforeRenewSend,
    /// After a grant (acquire or renew reply) is received and before it is used.
    AfterGrantReceived,
    /// At the start of each lease or ledger service handler.
    ServiceHandlerStart,
    /// In a lease client that decides from a read of the authority's state (`KubeLease`,
    /// `EtcdLease`): the read is done and the decision made from it, the write that carries
    /// the decision (a create, replace or delete; a grant, keep-alive or revoke) is not yet
    /// sent. A freeze here makes the decision stale: the authority's state may change before
    /// the write lands, which only a precondition on the read (a `resourceVersion`, a
    /// revision) can catch (docs/world.md#freezes-and-pause-points).
    AfterAuthorityRead,
}

impl PausePoint {
    /// Every pause point.
    pub const ALL: [PausePoint; 8] = [
        PausePoint::BeforeAppendCheck,
        PausePoint::BeforeAppendSend,
        PausePoint::BeforeOpenCheck,
        PausePoint::BeforeCleanupAppend,
        PausePoint::BeforeRenewSend,
        PausePoint::AfterGrantReceived,
        PausePoint::ServiceHandlerStart,
        PausePoint::AfterAuthorityRead,
    ];

    /// The points a run's work reaches (journal open, append, clean-up append) and a
    /// renewer never does: where a worker can be made to panic.
    pub const WORKER: [PausePoint; 4] = [
        PausePoint::BeforeAppendCheck,
        PausePoint::BeforeAppendSend,
        PausePoint::BeforeOpenCheck,
        PausePoint::BeforeCleanupAppend,
    ];

    /// Its name in schedule files (`before_append_send`).
    pub fn name(self) -> &'static str {
        match self {
            PausePoint::BeforeAppendCheck => "before_append_check",
            PausePoint::BeforeAppendSend => "before_append_send",
            PausePoint::BeforeOpenCheck => "before_open_check",
            PausePoint::BeforeCleanupAppend => "before_cleanup_append",
            PausePoint::BeforeRenewSend => "before_renew_send",
            PausePoint::AfterGrantReceived => "after_grant_received",
            PausePoint::ServiceHandlerStart => "service_handler_start",
            PausePoint::AfterAuthorityRead => "after_authority_read",
        }
    }
}

/// What a holder decided to use its lease for at a validity check (docs/checks.md#stop: every
/// decision to use the lease writes one).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum LeaseUse {
    /// Sending an append.
    Append,
    /// Sending a journal's fence while opening it.
    JournalOpen,
    /// Sending a graceful shutdown's final clean-up append.
    CleanupAppend,
}

/// Something the system under test decided that a checker needs to see.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Observation {
    /// A holder judged its lease valid and goes on to use it: send an append, a journal's
    /// fence or a clean-up append (STOP judges these).
    ValidityCheck {
        /// The session.
        session: SessionId,
        /// What the holder goes on to do.
        purpose: LeaseUse,
        /// The lease token the holder writes under.
        epoch: u64,
        /// The holder's monotonic clock when it judged.
        local: Instant,
        /// The deadline it judged against, as the holder computed it (checkers recompute it).
        valid_until: Instant,
    },
    /// The service cancelled a run because its lease was lost.
    RunCancelledOnLoss {
        /// The session whose run was cancelled.
        session: SessionId,
    },
    /// The service turned leasing off for good after the backend answered `Unsupported`.
    StickyDisable,
    /// The authority deleted a lease record (an operator or a collector); the session's
    /// token high-water mark stays.
    RecordDeleted {
        /// The session whose record was deleted.
        session: SessionId,
    },
}

/// Receives the system under test's pause points and observations.
#[async_trait]
pub trait Hooks: Send + Sync + fmt::Debug {
    /// Called when a task reaches `point`; a harness may hold the task here.
    async fn pause_point(&self, point: PausePoint);

    /// Called with each decision a checker needs.
    fn observe(&self, observation: Observation);
}

/// Optional hooks, as the system under test holds them: `None` costs one branch.
#[derive(Clone, Debug, Default)]
pub struct HookSlot(Option<Arc<dyn Hooks>>);

impl HookSlot {
    /// A slot holding `hooks`.
    pub fn new(hooks: Arc<dyn Hooks>) -> Self {
        HookSlot(Some(hooks))
    }

    /// Reaches `point`: waits for the harness if it holds the task there.
    pub async fn pause_point(&self, point: PausePoint) {
        if let Some(hooks) = &self.0 {
            hooks.pause_point(point).await;
        }
    }

    /// Reaches [`PausePoint::ServiceHandlerStart`]: a service handler's first step.
    pub async fn service_handler_start(&self) {
        self.pause_point(PausePoint::ServiceHandlerStart).await;
    }

    /// Reports `observation` to the harness, if any.
    pub fn observe(&self, observation: impl FnOnce() -> Observation) {
        if let Some(hooks) = &self.0 {
            hooks.observe(observation());
        }
    }
}
