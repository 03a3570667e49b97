//! Operation lines (`"kind":"op"`): what one client called, when, and what it saw.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::record::{HistRecord, HistWriterId, Process};

/// One client operation: its call, its window in true time and on the caller's own monotonic
/// clock, and its outcome. See the module documentation for the JSON shape.
///
/// A pending operation (`complete_us` is `None`) has outcome [`Outcome::Info`], no
/// `complete_local_us` and no `result`; an operation cut off by a crash is written as
/// completed at the end of the run with outcome `info` and result [`OpResult::CutOff`].
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpLine {
    /// Unique in the history; operations are numbered in invocation order by convention.
    pub id: u64,
    /// The calling process (replica + incarnation).
    pub process: Process,
    /// The session the operation concerns (lease session and ledger name are the same).
    pub session: String,
    /// What was called, with its arguments.
    pub op: Op,
    /// True simulated time of the invocation, µs.
    pub invoke_us: u64,
    /// True simulated time of the completion, µs; `None` while pending.
    pub complete_us: Option<u64>,
    /// The caller's monotonic clock at the invocation, µs.
    pub invoke_local_us: u64,
    /// The caller's monotonic clock at the completion, µs; `None` while pending or when the
    /// caller crashed before it completed.
    pub complete_local_us: Option<u64>,
    /// `ok` (took effect as `result` says), `fail` (certainly no effect) or `info` (may or
    /// may not have taken effect).
    pub outcome: Outcome,
    /// What the caller saw; `None` while pending.
    pub result: Option<OpResult>,
}

impl OpLine {
    /// Whether the operation has not completed (`complete_us` is `None`).
    pub fn is_pending(&self) -> bool {
        self.complete_us.is_none()
    }
}

/// The call an operation made, with its typed arguments (JSON tag `type`).
///
/// Variants without arguments are empty struct variants (`LedgerTip {}`) rather than unit
/// variants so that the reader refuses stray fields on them as on every other object.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// `SessionLease::acquire(session, owner)`: `{"type":"lease_acquire","owner":{…}}`.
    LeaseAcquire {
        /// The owner asking.
        owner: Process,
    },
    /// `SessionLease::renew(lease)` with the lease value's owner and token:
    /// `{"type":"lease_renew","owner":{…},"token":3}`.
    LeaseRenew {
        /// The lease value's owner (a scripted call may present an old one).
        owner: Process,
        /// The lease value's token.
        token: u64,
    },
    /// `SessionLease::release(lease)`: `{"type":"lease_release","owner":{…},"token":3}`.
    LeaseRelease {
        /// The lease value's owner.
        owner: Process,
        /// The lease value's token.
        token: u64,
    },
    /// `Ledger::tip(session)`: `{"type":"ledger_tip"}`.
    LedgerTip {},
    /// `Ledger::append(session, expected, record)`:
    /// `{"type":"ledger_append","expected":4,"record":{…}}`.
    LedgerAppend {
        /// The tip the CAS expects; the record commits at `expected + 1`.
        expected: u64,
        /// The record to append.
        record: HistRecord,
    },
    /// `Store::open_journal` under a lease of token `epoch`:
    /// `{"type":"journal_open","epoch":3}`. The journal's writer id is in the result.
    JournalOpen {
        /// The lease token the journal fences with.
        epoch: u64,
    },
    /// `Journal::append(event)`:
    /// `{"type":"journal_append","writer_id":{…},"seq_in_writer":2}`. The pair is unique,
    /// so the event is found in the final ledger by it.
    JournalAppend {
        /// The journal appending.
        writer_id: HistWriterId,
        /// The event's number within that journal, from 1.
        seq_in_writer: u64,
    },
    /// A Kubernetes API call `KubeLease` made: a get of the session's Lease object,
    /// `{"type":"kube_get"}`. LIN-LEASE judges these calls for that backend: the Lease
    /// objects as a CAS register keyed by `resourceVersion`.
    KubeGet {},
    /// A create of the session's Lease object with this holder and `leaseTransitions`:
    /// `{"type":"kube_create","holder_identity":"replica-1#0","transitions":1}`.
    KubeCreate {
        /// `spec.holderIdentity` written (`""`: none).
        holder_identity: String,
        /// `spec.leaseTransitions` written.
        transitions: u64,
    },
    /// A replace of the session's Lease object, conditional on `expected_rv` when given:
    /// `{"type":"kube_update","expected_rv":16,"holder_identity":"","transitions":2}`.
    KubeUpdate {
        /// The `resourceVersion` of the read the write was decided from; `null`: no
        /// precondition (unconditional).
        expected_rv: Option<u64>,
        /// `spec.holderIdentity` written (`""`: none).
        holder_identity: String,
        /// `spec.leaseTransitions` written.
        transitions: u64,
    },
    /// A delete of the session's Lease object, conditional on `expected_rv` when given:
    /// `{"type":"kube_delete","expected_rv":16}`.
    KubeDelete {
        /// The `resourceVersion` precondition, if any.
        expected_rv: Option<u64>,
    },
    /// A target adapter's own read of the session's Lease object, for the token the crate
    /// does not expose: `{"type":"target_get"}`, with the results of a `kube_get`. Not a
    /// `kube_get`: the crate's own API calls are not recorded, so LIN-LEASE and LIVE must not
    /// take the adapter's reads for a recorded client's (docs/targets.md#kube-lease-manager).
    TargetGet {},
    /// A target crate's own "I lead" signal changed, as its adapter saw it:
    /// `{"type":"target_signal"}`, invoked and completed at once with result `signal`
    /// (docs/targets.md#kube-lease-manager).
    TargetSignal {},
}

impl Op {
    /// The operation's name as JSON spells its `type` (e.g. `lease_acquire`).
    pub fn name(&self) -> &'static str {
        match self {
            Op::LeaseAcquire { .. } => "lease_acquire",
            Op::LeaseRenew { .. } => "lease_renew",
            Op::LeaseRelease { .. } => "lease_release",
            Op::LedgerTip {} => "ledger_tip",
            Op::LedgerAppend { .. } => "ledger_append",
            Op::JournalOpen { .. } => "journal_open",
            Op::JournalAppend { .. } => "journal_append",
            Op::KubeGet {} => "kube_get",
            Op::KubeCreate { .. } => "kube_create",
            Op::KubeUpdate { .. } => "kube_update",
            Op::KubeDelete { .. } => "kube_delete",
            Op::TargetGet {} => "target_get",
            Op::TargetSignal {} => "target_signal",
        }
    }

    /// A journal append's `(writer_id, seq_in_writer)`, which also names the ledger append of
    /// an event it made; `None` for any other operation.
    pub fn journal_append(&self) -> Option<(&HistWriterId, u64)> {
        match self {
            Op::JournalAppend {
                writer_id,
                seq_in_writer,
            } => Some((writer_id, *seq_in_writer)),
            _ => None,
        }
    }
}

/// How an operation ended, as Jepsen spells it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// `"ok"`: it took effect, as the result says.
    Ok,
    /// `"fail"`: it certainly had no effect.
    Fail,
    /// `"info"`: it may or may not have taken effect (timeout, crash, still pending).
    Info,
}

/// What an operation's caller saw (JSON tag `type`). Which outcome goes with which result is
/// the recorder's call; the usual pairing is given on each variant. Field-less variants are
/// `{}` struct variants, as in [`Op`].
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum OpResult {
    /// Acquire or renew succeeded (`ok`):
    /// `{"type":"granted","token":3,"expiry_authority_us":…,"ttl_us":…}`.
    Granted {
        /// The fencing token.
        token: u64,
        /// Expiry on the authority's monotonic clock, µs (truncated from ns).
        expiry_authority_us: u64,
        /// The TTL the authority granted, µs.
        ttl_us: u64,
    },
    /// Release returned (`ok`; a release of someone else's hold is also a success that
    /// changes nothing): `{"type":"released"}`.
    Released {},
    /// Another live owner holds the session, or a renew's lease is no longer current
    /// (`fail`): `{"type":"held","holder_token":4}` (`null` when nobody holds it).
    Held {
        /// The live holder's token, if any.
        holder_token: Option<u64>,
    },
    /// The lease backend cannot lease at all (`fail`): `{"type":"unsupported"}`.
    Unsupported {},
    /// Transient failure. From a lease call `info` (remote backends report an unknown outcome
    /// this way); from a ledger or journal call `fail` (certainly no effect).
    Unavailable {
        /// What went wrong.
        reason: String,
    },
    /// The request was refused as malformed (`fail`).
    Invalid {
        /// What is wrong with it.
        reason: String,
    },
    /// A tip read (`ok`): `{"type":"tip","seq":4}`.
    Tip {
        /// The ledger's tip.
        seq: u64,
    },
    /// A ledger or journal append committed (`ok`) at `seq`: `{"type":"appended","seq":5}`.
    Appended {
        /// Where the record is.
        seq: u64,
    },
    /// A ledger CAS failed (`fail`): `{"type":"conflict","actual":5}`.
    Conflict {
        /// The tip the ledger had.
        actual: u64,
    },
    /// A ledger call's outcome is unknown (`info`).
    Unknown {
        /// What went wrong.
        reason: String,
    },
    /// A journal opened (`ok`): its fence committed at `fence_seq`.
    Opened {
        /// The opened journal.
        writer_id: HistWriterId,
        /// Where its fence is.
        fence_seq: u64,
    },
    /// Opening refused: the lease epoch is not above the ledger's highest fence (`fail`).
    StaleEpoch {
        /// The lease's epoch.
        epoch: u64,
        /// The highest fence epoch found.
        highest_fence: u64,
    },
    /// Opening conflicted on every attempt to commit its fence (`fail`).
    FenceContention {
        /// Attempts made.
        attempts: u32,
    },
    /// A journal append found another writer's record at `expected + 1` (`fail`; the
    /// journal is poisoned).
    Fenced {
        /// The tip the journal tracked.
        expected: u64,
        /// The tip the ledger reported.
        actual: u64,
    },
    /// A journal call's outcome stayed unknown after reading back (`info`; poisoned).
    Ambiguous {
        /// The tip the append expected.
        expected: u64,
        /// Why the outcome is unknown.
        reason: String,
    },
    /// The journal's lease is lost; nothing was sent (`fail`).
    LeaseLost {
        /// Why the lease was lost.
        cause: HistLossCause,
    },
    /// The journal was poisoned by an earlier failure; nothing was sent (`fail`).
    Poisoned {
        /// The earlier failure, as text.
        first: String,
    },
    /// The operation never completed: its process crashed or the run ended first (`info`).
    CutOff {
        /// What cut it off, e.g. `crash` or `run ended`.
        reason: String,
    },
    /// A Kubernetes call returned the Lease object (`ok`: a get, or the object a create or
    /// update wrote; a delete returns the deleted object):
    /// `{"type":"kube_object","resource_version":17,"holder_identity":"replica-2#0","transitions":2}`.
    KubeObject {
        /// Its `metadata.resourceVersion`.
        resource_version: u64,
        /// Its `spec.holderIdentity` (`""`: none).
        holder_identity: String,
        /// Its `spec.leaseTransitions`.
        transitions: u64,
    },
    /// 404 Not Found: `ok` for a get (the object is absent), `fail` for an update or delete.
    KubeNotFound {},
    /// 409 Conflict: a create of an existing name, or a stale `resourceVersion` (`fail`).
    KubeConflict {},
    /// Any other HTTP status from the server: `info` for a 5xx (it may have been applied),
    /// `fail` for a 4xx: `{"type":"kube_status","code":500,"reason":"InternalError"}`.
    KubeStatus {
        /// The HTTP status code.
        code: u16,
        /// The Kubernetes `Status.reason`, or the status text.
        reason: String,
    },
    /// The value a target crate's "I lead" signal changed to (`ok`, of a `target_signal`):
    /// `{"type":"signal","leads":true}`.
    Signal {
        /// Whether the crate now says it leads.
        leads: bool,
    },
}

/// Why a journal's lease was lost, as the journal's loss cause says (JSON tag `type`):
/// `{"type":"released"}`, `{"type":"overtaken","holder_token":4}` or
/// `{"type":"deadline","valid_until_local_us":…}`.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum HistLossCause {
    /// The holder released it.
    Released {},
    /// A renew answered Held.
    Overtaken {
        /// The new holder's token, if the authority named one.
        holder_token: Option<u64>,
    },
    /// The holder's own deadline passed without a successful renew.
    Deadline {
        /// The deadline on the holder's monotonic clock, µs.
        valid_until_local_us: u64,
    },
}

/// Whole microseconds in `d` (truncated), saturating at `u64::MAX`.
pub fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
