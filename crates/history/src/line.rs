//! The kinds of line: [`Line`] and the payload of each kind except operations (see
//! [`super::op`]).

use serde::{Deserialize, Serialize};

use super::SCHEMA_VERSION;
use super::action::NemesisAction;
use super::op::OpLine;
use super::record::{HistRecord, Process};

/// One line of a history. JSON: `{"v":1,"kind":"<kind>", …the payload's fields in
/// declaration order…}`; the `v` is added by the writer and checked by the reader, so it does
/// not appear in these types.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Line {
    /// `"config"`: the run's parameters.
    Config(ConfigLine),
    /// `"op"`: one client operation.
    Op(OpLine),
    /// `"decision"`: one lease-authority decision.
    Decision(DecisionLine),
    /// `"validity"`: a replica judged its lease valid and goes on to send an append.
    Validity(ValidityLine),
    /// `"phase"`: a marker in the run.
    Phase(PhaseLine),
    /// `"clock"`: one segment of a host's monotonic clock.
    Clock(ClockLine),
    /// `"ledger"`: one record of the final ledger.
    Ledger(LedgerLine),
    /// `"event"`: something a host reported happening (a run cancelled on loss, a record
    /// deleted, a wall clock stepped back…): coverage counts these; checkers ignore them.
    Event(EventLine),
    /// `"write"`: one write a Kubernetes API server accepted. A backend with no authority
    /// clock has no decisions; its accepted writes stand in for them (TOKEN, EXPIRY).
    Write(WriteLine),
    /// `"nemesis"`: one action of the nemesis (a fault applied: a signal, a freeze, a partition…).
    /// The checkers ignore these; they are the evidence of what was done, and when.
    Nemesis(NemesisLine),
    /// `"work"`: a replica took a unit of work for a session, or ended one (LIVE judges
    /// that work still pending is run, docs/checks.md#live).
    Work(WorkLine),
}

impl Line {
    /// Every `kind`, in declaration order.
    pub const KINDS: [&'static str; 11] = [
        "config", "op", "decision", "validity", "phase", "clock", "ledger", "event", "write",
        "nemesis", "work",
    ];

    /// This line's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Line::Config(_) => "config",
            Line::Op(_) => "op",
            Line::Decision(_) => "decision",
            Line::Validity(_) => "validity",
            Line::Phase(_) => "phase",
            Line::Clock(_) => "clock",
            Line::Ledger(_) => "ledger",
            Line::Event(_) => "event",
            Line::Write(_) => "write",
            Line::Nemesis(_) => "nemesis",
            Line::Work(_) => "work",
        }
    }

    /// The line as one JSON object, `v` first, without a newline. Deterministic: fields in
    /// declaration order, no whitespace, integers only.
    pub fn to_json(&self) -> String {
        // Serialising these types cannot fail: every map key is a string and no type has a
        // fallible `Serialize`.
        serde_json::to_string(&Versioned::new(self)).expect("history lines always serialise")
    }
}

/// The wire form of a line: `v` first, then the line's own tag and fields.
#[derive(Serialize)]
pub(super) struct Versioned<'a> {
    v: u32,
    #[serde(flatten)]
    line: &'a Line,
}

impl<'a> Versioned<'a> {
    pub(super) fn new(line: &'a Line) -> Self {
        Versioned {
            v: SCHEMA_VERSION,
            line,
        }
    }
}

macro_rules! line_from {
    ($($payload:ident => $variant:ident),* $(,)?) => {
        $(impl From<$payload> for Line {
            fn from(payload: $payload) -> Self {
                Line::$variant(payload)
            }
        })*
    };
}

line_from!(
    ConfigLine => Config,
    OpLine => Op,
    DecisionLine => Decision,
    ValidityLine => Validity,
    PhaseLine => Phase,
    ClockLine => Clock,
    LedgerLine => Ledger,
    EventLine => Event,
    WriteLine => Write,
    WorkLine => Work,
    NemesisLine => Nemesis,
);

/// The run's parameters: what the checkers need to recompute bounds. Exactly one per history.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigLine {
    /// Lease TTL the authority grants, µs.
    pub ttl_us: u64,
    /// Skew margin the holder subtracts from a grant of `ttl_us` in its validity, µs; from a
    /// grant of another TTL it subtracts the same fraction of that TTL
    /// (docs/contracts.md#client-side-validity).
    pub skew_margin_us: u64,
    /// Interval between renewals, µs.
    pub renew_interval_us: u64,
    /// Longest reconnect backoff of any client, µs.
    pub longest_reconnect_backoff_us: u64,
    /// The authority's restart grace period, µs (at most one TTL).
    pub grace_period_us: u64,
    /// The planted bug, by its CLI name (e.g. `token-not-advanced-on-expiry`); `null` for the
    /// correct implementation.
    pub mutant: Option<String>,
    /// The run's master seed.
    pub seed: u64,
    /// Number of replica hosts (`replica-1` … `replica-N`).
    pub replicas: u32,
    /// The contended sessions.
    pub sessions: Vec<String>,
    /// The host whose decisions the `decision` lines are (its `clock` lines place them on
    /// its monotonic clock), or `null` for a backend with no authority clock, judged on its
    /// holders (docs/checks.md#excl). Histories written before this field existed
    /// came from the gRPC authority on host `lease`.
    #[serde(default = "default_authority")]
    pub authority: Option<String>,
}

fn default_authority() -> Option<String> {
    Some(super::hosts::LEASE.to_owned())
}

impl ConfigLine {
    /// LIVE's bound after the heal, µs: TTL + grace period (if the authority restarted) + 3
    /// renew intervals + the longest reconnect backoff (docs/checks.md#live). The
    /// world's liveness phase and the LIVE checker both take it from here.
    pub fn live_bound_us(&self, authority_restarted: bool) -> u64 {
        self.ttl_us
            + if authority_restarted {
                self.grace_period_us
            } else {
                0
            }
            + 3 * self.renew_interval_us
            + self.longest_reconnect_backoff_us
    }
}

/// One decision of the lease authority, with its monotonic reading when it decided
/// (EXCL, EXPIRY and TOKEN judge these).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionLine {
    /// The session decided on.
    pub session: String,
    /// The requesting owner.
    pub owner: Process,
    /// What the authority decided.
    pub decision: Decision,
    /// The authority's monotonic clock when it decided, µs.
    pub at_authority_us: u64,
    /// True simulated time when it decided, µs.
    pub at_us: u64,
}

/// What the authority decided (JSON tag `type`).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Decision {
    /// An acquire was granted (a takeover or a live same-owner re-acquire):
    /// `{"type":"grant","token":3,"expiry_authority_us":…,"ttl_us":…}`.
    Grant {
        /// The lease's token.
        token: u64,
        /// Expiry on the authority's monotonic clock, µs.
        expiry_authority_us: u64,
        /// The TTL granted, µs.
        ttl_us: u64,
    },
    /// A renew was granted: `{"type":"renew","token":3,"expiry_authority_us":…,"ttl_us":…}`.
    Renew {
        /// The lease's token (unchanged by a renew).
        token: u64,
        /// The new expiry on the authority's monotonic clock, µs.
        expiry_authority_us: u64,
        /// The TTL granted, µs.
        ttl_us: u64,
    },
    /// A release was answered: `{"type":"release","token":3,"ended":true}`.
    Release {
        /// The token presented.
        token: u64,
        /// Whether it ended the caller's own current hold (`false`: a stale or unknown
        /// release, which changes nothing).
        ended: bool,
    },
    /// A request was refused:
    /// `{"type":"refuse","request":"renew","token":3,"reason":{"type":"held",…}}`.
    Refuse {
        /// Which request.
        request: Request,
        /// The token presented (renew, release); `null` for an acquire.
        token: Option<u64>,
        /// Why.
        reason: Refusal,
    },
}

/// A request to the lease authority.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// `"acquire"`.
    Acquire,
    /// `"renew"`.
    Renew,
    /// `"release"`.
    Release,
}

/// Why the authority refused (JSON tag `type`).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Refusal {
    /// Another live owner holds the session, or the renewed lease is not the current one:
    /// `{"type":"held","holder_token":4}`.
    Held {
        /// The live holder's token; `null` when nobody holds the session.
        holder_token: Option<u64>,
    },
    /// The authority is in its restart grace period:
    /// `{"type":"grace_period","remaining_authority_us":…}`.
    GracePeriod {
        /// Grace left on the authority's monotonic clock, µs.
        remaining_authority_us: u64,
    },
    /// Any other transient refusal: `{"type":"unavailable","reason":"…"}`.
    Unavailable {
        /// What went wrong.
        reason: String,
    },
}

/// A replica judged its lease valid and goes on to use it — send an append, a journal's
/// fence, or a clean-up append (STOP judges these, recomputing the deadline from the
/// operation lines).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidityLine {
    /// The judging process.
    pub process: Process,
    /// The session.
    pub session: String,
    /// What it goes on to do: `"append"` (the default when absent), `"journal_open"`,
    /// `"cleanup_append"`.
    #[serde(default)]
    pub purpose: HistLeaseUse,
    /// The lease token it writes under.
    pub epoch: u64,
    /// Its monotonic clock when it judged, µs.
    pub at_local_us: u64,
    /// True simulated time when it judged, µs.
    pub at_us: u64,
    /// The deadline it judged against, on its own clock, µs, as the replica computed it
    /// (checkers recompute it and never trust this value).
    pub valid_until_local_us: u64,
}

/// What a holder decided to use its lease for at a validity check (docs/checks.md#stop): the
/// `purpose` of a `validity` line, as the system under test's own lease use is written.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum HistLeaseUse {
    /// Sending an append (`"append"`; the default, so older histories read as before).
    #[default]
    Append,
    /// Sending a journal's fence while opening it (`"journal_open"`).
    JournalOpen,
    /// Sending a graceful shutdown's final clean-up append (`"cleanup_append"`).
    CleanupAppend,
}

impl HistLeaseUse {
    /// What the holder went on to do, for explanations ("to open its journal").
    pub fn describe(self) -> &'static str {
        match self {
            HistLeaseUse::Append => "to append",
            HistLeaseUse::JournalOpen => "to open its journal",
            HistLeaseUse::CleanupAppend => "for its clean-up append",
        }
    }
}

/// A marker in the run.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseLine {
    /// Which marker.
    pub name: Phase,
    /// True simulated time, µs.
    pub at_us: u64,
}

/// The markers a run writes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// `"faults_healed"`: the fault schedule has ended and everything is healed (LIVE starts
    /// here).
    FaultsHealed,
    /// `"run_ended"`: the run stopped; nothing happens after it (LIVE's window ends here).
    RunEnded,
}

/// One segment of a host's monotonic clock: from true time `from_us` until the next segment
/// of the same host, its reading is `local_from_us` plus the true time elapsed since
/// `from_us` scaled by `1 + drift_ppm / 1_000_000` (rounded down), or stays at
/// `local_from_us` while `suspended`. See [`super::ClockMap`].
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockLine {
    /// The host (`lease`, `ledger`, `replica-1`, …).
    pub host: String,
    /// The host's boot, from 0, bumped at every restart (on a replica host it equals the
    /// incarnation of the process running there). A segment with a higher boot than the one
    /// before it is a restart: its clock starts again at `local_from_us`.
    pub boot: u64,
    /// True simulated time the segment starts, µs.
    pub from_us: u64,
    /// The host's monotonic reading at `from_us`, µs.
    pub local_from_us: u64,
    /// Rate error in parts per million (`+100`: the clock runs 100 µs/s fast); more than
    /// −1 000 000.
    pub drift_ppm: i64,
    /// The clock is stopped (the host is suspended or down) for the whole segment.
    pub suspended: bool,
}

/// One record of the final ledger. The records of a session appear in order of `seq`.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerLine {
    /// The ledger's name (the session).
    pub session: String,
    /// The record's position, from 1.
    pub seq: u64,
    /// The record.
    pub record: HistRecord,
}

/// Something a host reported happening that no other line shows: `{"v":1,"kind":"event",
/// "at_us":…,"host":"replica-2","event":"run_cancelled_on_loss"}`. Coverage counts these;
/// the checkers ignore them.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventLine {
    /// True simulated time it happened, µs.
    pub at_us: u64,
    /// The host it happened on (`lease`, `replica-2`, …).
    pub host: String,
    /// What happened.
    pub event: HistEvent,
}

/// What an [`EventLine`] reports.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistEvent {
    /// `"run_cancelled_on_loss"`: the service cancelled a run because its lease was lost.
    RunCancelledOnLoss,
    /// `"sticky_disable"`: the service turned leasing off for good after `Unsupported`.
    StickyDisable,
    /// `"record_deleted"`: the authority deleted a lease record (its high-water mark stays).
    RecordDeleted,
    /// `"backward_wall_jump"`: the nemesis stepped the host's wall clock backwards.
    BackwardWallJump,
}

/// A replica incarnation took a unit of work for a session, or ended one:
/// `{"v":1,"kind":"work","process":{"replica":"replica-1","incarnation":0},"session":"s1",
/// "state":"taken","at_us":…}`.
///
/// A generated workload's unit of work is one run ([`WorkState::Taken`] as it starts, then
/// [`WorkState::Ran`] or [`WorkState::Dropped`] as it ends); between the two the replica has
/// pending work for the session and should keep asking for its lease (LIVE,
/// docs/checks.md#live). A take with no end line: the incarnation or the run ended first.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkLine {
    /// The replica incarnation whose work it is.
    pub process: Process,
    /// The session the work is for.
    pub session: String,
    /// Taken, or how it ended.
    pub state: WorkState,
    /// True time it was taken or ended, µs.
    pub at_us: u64,
}

/// What a [`WorkLine`] says of its unit of work.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkState {
    /// `"taken"`: the replica took it; it is pending until an end line of the same process
    /// and session.
    Taken,
    /// `"ran"`: the replica held the session and ran the work to its end.
    Ran,
    /// `"dropped"`: the replica let it go unrun (the session was leased elsewhere, the lease
    /// service did not answer, the lease was lost, the worker panicked, a shutdown began).
    Dropped,
}

/// One write a Kubernetes API server accepted, in the order it accepted them:
/// `{"v":1,"kind":"write","host":"apiserver","session":"s1","object":"s1-3f2a…","verb":"update",
/// "holder_identity":"replica-2#0","transitions":2,"resource_version":17,"at_us":…}`.
///
/// The server orders writes by `resourceVersion` but judges no expiry, so these lines are
/// what TOKEN (on `leaseTransitions`) and EXPIRY (by observation) judge for such a backend
/// (docs/backends.md#kubelease).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteLine {
    /// The server's host (`apiserver`).
    pub host: String,
    /// The session the object leases (from the object's session annotation).
    pub session: String,
    /// The object's `metadata.name`.
    pub object: String,
    /// What was written.
    pub verb: WriteVerb,
    /// `spec.holderIdentity` after the write (an owner as `replica-N#incarnation`); `""` when
    /// empty or absent (released, or deleted).
    pub holder_identity: String,
    /// `spec.leaseTransitions` after the write (0 when absent).
    pub transitions: u64,
    /// The `resourceVersion` the write produced (a delete: the deleted object's).
    pub resource_version: u64,
    /// True simulated time the server accepted it, µs.
    pub at_us: u64,
}

/// The verb of an accepted [`WriteLine`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteVerb {
    /// `"create"`: the object did not exist.
    Create,
    /// `"update"`: a replace of an existing object (with or without a `resourceVersion`
    /// precondition).
    Update,
    /// `"delete"`: the object is gone (and with it its `leaseTransitions`).
    Delete,
}

/// One action of the nemesis (live mode's or the simulated world's), in
/// true time:
/// `{"v":1,"kind":"nemesis","at_us":5000123,"host":"replica-1","action":"sigstop",
/// "peer":null,"detail":"pause for 5000 ms"}`. A link action names both ends
/// (`"host":"replica-2","peer":"lease","action":"partition"`). The checkers ignore these
/// lines; they say what was done to the hosts, and when.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NemesisLine {
    /// True time the action was applied, µs.
    pub at_us: u64,
    /// The host acted on (`lease`, `ledger`, `replica-1`, …; `all` for a heal).
    pub host: String,
    /// What was done.
    pub action: NemesisAction,
    /// The other end of a link action (the service, or the receiver of a one-way cut).
    pub peer: Option<String>,
    /// Human-readable particulars (`pause for 5000 ms`, `boot 1 on 127.0.0.1:40123`).
    pub detail: Option<String>,
}
