//! A typed builder for hand-built histories, through the library's own line types
//! (`leasesim::history`), so each test reads as the race it describes:
//!
//! ```ignore
//! let h = history()
//!     .config()
//!     .decides(at(0), "replica-1", grant(1, 10 * S))
//!     .decides(at(5 * S), "replica-2", grant(2, 15 * S))
//!     .build();
//! ```
//!
//! Everything happens on session `s1`; every process is incarnation 0 of its replica unless
//! named with its incarnation (`replica-2#1`, as a Lease's holder identity is); an op's
//! local times equal its true times; every grant and renew is for a 10 s TTL. The built history
//! is validated as a history file is when read.

use leasesim::check::invariants::Evidence;
use leasesim::history::{
    ClockLine, ConfigLine, Decision, DecisionLine, HistLeaseUse, HistRecord, HistWriterId, History,
    LedgerLine, Line, NemesisAction, NemesisLine, Op, OpLine, OpResult, Outcome, Phase, PhaseLine,
    Process, Refusal, Request, ValidityLine, WorkLine, WorkState, WriteLine, WriteVerb,
};

/// One second, µs.
pub const S: u64 = 1_000_000;

/// The one session of every hand-built history.
const SESSION: &str = "s1";

/// The TTL every hand-built grant and renew is for, µs.
const TTL_US: u64 = 10 * S;

/// Incarnation 0 of `replica`, or incarnation N of `replica-K#N`.
pub fn p(replica: &str) -> Process {
    match replica.split_once('#') {
        Some((name, incarnation)) => Process::new(name, incarnation.parse().unwrap()),
        None => Process::new(replica, 0),
    }
}

/// The config line of [`Builder::config`] with `replicas` and `authority` (the host whose
/// clock judges decisions; `None` for a backend without one).
fn config_line(replicas: u32, authority: Option<&str>) -> ConfigLine {
    ConfigLine {
        ttl_us: TTL_US,
        skew_margin_us: S,
        renew_interval_us: 3_333_333,
        longest_reconnect_backoff_us: 2 * S,
        grace_period_us: 10 * S,
        mutant: None,
        seed: 1,
        replicas,
        sessions: vec![SESSION.to_string()],
        authority: authority.map(str::to_owned),
    }
}

/// A history under construction: its lines in order.
#[must_use]
pub struct Builder {
    lines: Vec<Line>,
}

/// An empty history to build.
pub fn history() -> Builder {
    Builder { lines: Vec::new() }
}

impl Builder {
    fn line(mut self, line: impl Into<Line>) -> Self {
        self.lines.push(line.into());
        self
    }

    /// The run's parameters: TTL 10 s, skew margin 1 s, renew interval 3.333333 s, longest
    /// reconnect backoff 2 s, grace period 10 s, no mutant, seed 1, 2 replicas, session s1,
    /// decisions by the authority on host `lease`.
    pub fn config(self) -> Self {
        self.line(config_line(2, Some("lease")))
    }

    /// As [`Builder::config`], for a backend without an authority clock (KubeLease:
    /// `authority: null`) and 3 replicas.
    pub fn kube_config(self) -> Self {
        self.line(config_line(3, None))
    }

    /// The API server accepted `write` (on session s1's object `s1-obj`) at `at_us`.
    pub fn accepted(self, at_us: u64, write: Write) -> Self {
        self.line(WriteLine {
            host: "apiserver".to_string(),
            session: SESSION.to_string(),
            object: "s1-obj".to_string(),
            verb: write.verb,
            holder_identity: write.holder_identity,
            transitions: write.transitions,
            resource_version: write.resource_version,
            at_us,
        })
    }

    /// The nemesis did `action` at `at_us` to `host` (and `peer`, the other end of a link).
    pub fn nemesis(
        self,
        at_us: u64,
        action: NemesisAction,
        host: &str,
        peer: Option<&str>,
    ) -> Self {
        self.line(NemesisLine {
            at_us,
            host: host.to_string(),
            action,
            peer: peer.map(str::to_string),
            detail: None,
        })
    }

    /// Op `id`: `replica`'s crate changed its "I lead" signal to `leads` at `at_us` (a
    /// `target_signal`, invoked and completed at once).
    pub fn signal(self, id: u64, replica: &str, at_us: u64, leads: bool) -> Self {
        let answer = Answer {
            outcome: Outcome::Ok,
            result: OpResult::Signal { leads },
        };
        self.op(
            id,
            replica,
            span(at_us, at_us),
            Call::Kube(Op::TargetSignal {}),
            answer,
        )
    }

    /// A segment of `host`'s monotonic clock (a replica's boot is its incarnation).
    pub fn clock(self, host: &str, segment: Segment) -> Self {
        self.line(ClockLine {
            host: host.to_string(),
            boot: segment.boot,
            from_us: segment.from_us,
            local_from_us: segment.local_from_us,
            drift_ppm: segment.drift_ppm,
            suspended: segment.suspended,
        })
    }

    /// As [`Builder::op`], but the caller's clock read `invoke_local_us` at the invoke (and
    /// as much later at completion as true time).
    pub fn op_reading(
        self,
        id: u64,
        replica: &str,
        span: Span,
        invoke_local_us: u64,
        call: Call,
        answer: Answer,
    ) -> Self {
        self.line(OpLine {
            id,
            process: p(replica),
            session: SESSION.to_string(),
            op: call.by(replica),
            invoke_us: span.invoke_us,
            complete_us: Some(span.complete_us),
            invoke_local_us,
            complete_local_us: Some(invoke_local_us + (span.complete_us - span.invoke_us)),
            outcome: answer.outcome,
            result: Some(answer.result),
        })
    }

    /// The authority decides `decision` on a request by `replica`, at `when`.
    pub fn decides(self, when: When, replica: &str, decision: Decision) -> Self {
        self.line(DecisionLine {
            session: SESSION.to_string(),
            owner: p(replica),
            decision,
            at_authority_us: when.authority_us,
            at_us: when.true_us,
        })
    }

    /// A segment of the `lease` host's monotonic clock.
    pub fn lease_clock(self, segment: Segment) -> Self {
        self.line(ClockLine {
            host: "lease".to_string(),
            boot: segment.boot,
            from_us: segment.from_us,
            local_from_us: segment.local_from_us,
            drift_ppm: segment.drift_ppm,
            suspended: segment.suspended,
        })
    }

    /// Record `seq` of the final ledger.
    pub fn ledger(self, seq: u64, record: HistRecord) -> Self {
        self.line(LedgerLine {
            session: SESSION.to_string(),
            seq,
            record,
        })
    }

    /// Op `id`: `replica` calls `call` over `span` and sees `answer`; its clock reads true time.
    pub fn op(self, id: u64, replica: &str, span: Span, call: Call, answer: Answer) -> Self {
        self.op_reading(id, replica, span, span.invoke_us, call, answer)
    }

    /// A validity check.
    pub fn validity(self, check: Check) -> Self {
        self.line(ValidityLine {
            process: p(&check.replica),
            session: SESSION.to_string(),
            purpose: check.purpose,
            epoch: check.epoch,
            at_local_us: check.at_us,
            at_us: check.at_us,
            valid_until_local_us: check.claimed_valid_until_us,
        })
    }

    /// `replica` (`replica-K#N` for incarnation N) took a unit of work for s1 at `at_us`, or
    /// ended one (`state`).
    pub fn work(self, replica: &str, state: WorkState, at_us: u64) -> Self {
        self.line(WorkLine {
            process: p(replica),
            session: SESSION.to_string(),
            state,
            at_us,
        })
    }

    /// The fault schedule ended and everything healed at `at_us`.
    pub fn healed_at(self, at_us: u64) -> Self {
        self.line(PhaseLine {
            name: Phase::FaultsHealed,
            at_us,
        })
    }

    /// The run ended at `at_us`.
    pub fn run_ended_at(self, at_us: u64) -> Self {
        self.line(PhaseLine {
            name: Phase::RunEnded,
            at_us,
        })
    }

    /// The history as it stands, not validated: what a damaged file would give.
    pub fn build_unvalidated(self) -> History {
        History::from_lines("hand.jsonl", self.lines)
    }

    /// The history, validated as a history file is when read.
    pub fn build(self) -> History {
        let history = History::from_lines("hand.jsonl", self.lines);
        history.validate().expect("a hand-built history is valid");
        history
    }
}

/// When the authority decided: its monotonic reading and true time, µs.
#[derive(Clone, Copy)]
pub struct When {
    authority_us: u64,
    true_us: u64,
}

/// At true time `us`, with the authority's clock reading the same.
pub fn at(us: u64) -> When {
    reading(us, us)
}

/// At true time `true_us`, with the authority's clock reading `authority_us`.
pub fn reading(authority_us: u64, true_us: u64) -> When {
    When {
        authority_us,
        true_us,
    }
}

/// An acquire granted with `token`, expiring at `expiry_us` on the authority's clock.
pub fn grant(token: u64, expiry_us: u64) -> Decision {
    Decision::Grant {
        token,
        expiry_authority_us: expiry_us,
        ttl_us: TTL_US,
    }
}

/// A renew of `token` granted, now expiring at `expiry_us` on the authority's clock.
pub fn renew(token: u64, expiry_us: u64) -> Decision {
    Decision::Renew {
        token,
        expiry_authority_us: expiry_us,
        ttl_us: TTL_US,
    }
}

/// A release of `token` that ended the hold (`ended: true`).
pub fn release_ended(token: u64) -> Decision {
    Decision::Release { token, ended: true }
}

/// A release of `token` that ended nothing (`ended: false`: stale or unknown).
pub fn release_ending_nothing(token: u64) -> Decision {
    Decision::Release {
        token,
        ended: false,
    }
}

/// The session is free, as a refusal names its holder.
pub const FREE: Option<u64> = None;

/// Held with `token`, as a refusal names its holder.
pub fn held_by(token: u64) -> Option<u64> {
    Some(token)
}

/// An acquire refused, naming the holder's token (or [`FREE`]).
pub fn refuse_acquire(holder_token: Option<u64>) -> Decision {
    refuse(Request::Acquire, None, holder_token)
}

/// A renew of `token` refused, naming the holder's token (or [`FREE`]).
pub fn refuse_renew(token: u64, holder_token: Option<u64>) -> Decision {
    refuse(Request::Renew, Some(token), holder_token)
}

fn refuse(request: Request, token: Option<u64>, holder_token: Option<u64>) -> Decision {
    Decision::Refuse {
        request,
        token,
        reason: Refusal::Held { holder_token },
    }
}

/// A segment of the `lease` host's clock (rate 1, running unless [`Segment::suspended`]).
#[derive(Clone, Copy)]
pub struct Segment {
    boot: u64,
    from_us: u64,
    local_from_us: u64,
    drift_ppm: i64,
    suspended: bool,
}

/// Boot `boot`'s segment from true time 0, reading 0 then.
pub fn boot(boot: u64) -> Segment {
    Segment {
        boot,
        from_us: 0,
        local_from_us: 0,
        drift_ppm: 0,
        suspended: false,
    }
}

impl Segment {
    /// Starting at true time `from_us`.
    pub fn from(self, from_us: u64) -> Self {
        Segment { from_us, ..self }
    }

    /// Reading `local_from_us` when it starts.
    pub fn reads(self, local_from_us: u64) -> Self {
        Segment {
            local_from_us,
            ..self
        }
    }

    /// Running `drift_ppm` parts per million fast (negative: slow).
    pub fn drift_ppm(self, drift_ppm: i64) -> Self {
        Segment { drift_ppm, ..self }
    }

    /// Stopped for the whole segment (the host is down or suspended).
    pub fn suspended(self) -> Self {
        Segment {
            suspended: true,
            ..self
        }
    }
}

/// A fence record opening journal 1 of `replica` with `epoch`.
pub fn fence_record(epoch: u64, replica: &str) -> HistRecord {
    HistRecord::Fence {
        epoch,
        owner: p(replica),
        writer_id: journal_of(replica),
    }
}

/// Event `n` of journal 1 of `replica` (payload `00`).
pub fn event_record(replica: &str, n: u64) -> HistRecord {
    HistRecord::Event {
        writer_id: journal_of(replica),
        seq_in_writer: n,
        payload: vec![0],
    }
}

/// Journal 1 of `replica`.
fn journal_of(replica: &str) -> HistWriterId {
    HistWriterId {
        owner: p(replica),
        journal: 1,
    }
}

/// An op's window, true and local time alike, µs.
#[derive(Clone, Copy)]
pub struct Span {
    invoke_us: u64,
    complete_us: u64,
}

/// Invoked at `invoke_us`, completed at `complete_us`.
pub fn span(invoke_us: u64, complete_us: u64) -> Span {
    Span {
        invoke_us,
        complete_us,
    }
}

/// What an op calls; the owner or journal it presents is its own replica's.
pub enum Call {
    /// `lease_acquire`.
    Acquire,
    /// `lease_renew` presenting `token`.
    Renew { token: u64 },
    /// `ledger_append` of `record` at `expected`.
    LedgerAppend { expected: u64, record: HistRecord },
    /// `journal_append` of event `seq_in_writer` by journal 1.
    JournalAppend { seq_in_writer: u64 },
    /// `lease_release` presenting `token`.
    Release { token: u64 },
    /// A Lease API call (or a target adapter's own call).
    Kube(Op),
}

/// A release of the replica's lease with `token`.
pub fn release_lease(token: u64) -> Call {
    Call::Release { token }
}

/// `kube_get`.
pub fn kube_get() -> Call {
    Call::Kube(Op::KubeGet {})
}

/// `kube_create` of `holder` with `transitions`.
pub fn kube_create(holder: &str, transitions: u64) -> Call {
    Call::Kube(Op::KubeCreate {
        holder_identity: holder.to_string(),
        transitions,
    })
}

/// `kube_update` at `expected_rv` (`None`: unconditional) to `holder` with `transitions`.
pub fn kube_update(expected_rv: Option<u64>, holder: &str, transitions: u64) -> Call {
    Call::Kube(Op::KubeUpdate {
        expected_rv,
        holder_identity: holder.to_string(),
        transitions,
    })
}

/// A write the API server accepted, as a `write` line shows it.
pub struct Write {
    verb: WriteVerb,
    holder_identity: String,
    transitions: u64,
    resource_version: u64,
}

/// A create of the object, now held by `holder` (`""`: none) with `transitions`, at `rv`.
pub fn created(holder: &str, transitions: u64, rv: u64) -> Write {
    write(WriteVerb::Create, holder, transitions, rv)
}

/// An update of the object, now held by `holder` (`""`: released) with `transitions`, at `rv`.
pub fn updated(holder: &str, transitions: u64, rv: u64) -> Write {
    write(WriteVerb::Update, holder, transitions, rv)
}

/// A delete of the object at `rv` (it had `transitions`).
pub fn deleted(transitions: u64, rv: u64) -> Write {
    write(WriteVerb::Delete, "", transitions, rv)
}

fn write(verb: WriteVerb, holder: &str, transitions: u64, rv: u64) -> Write {
    Write {
        verb,
        holder_identity: holder.to_string(),
        transitions,
        resource_version: rv,
    }
}

/// An acquire.
pub fn acquire() -> Call {
    Call::Acquire
}

/// A renew of the replica's lease with `token`.
pub fn renew_lease(token: u64) -> Call {
    Call::Renew { token }
}

/// A ledger append of `record` at expected tip `expected`.
pub fn ledger_append(expected: u64, record: HistRecord) -> Call {
    Call::LedgerAppend { expected, record }
}

/// Event `seq_in_writer` appended by the replica's journal 1.
pub fn journal_append(seq_in_writer: u64) -> Call {
    Call::JournalAppend { seq_in_writer }
}

impl Call {
    fn by(self, replica: &str) -> Op {
        match self {
            Call::Acquire => Op::LeaseAcquire { owner: p(replica) },
            Call::Renew { token } => Op::LeaseRenew {
                owner: p(replica),
                token,
            },
            Call::LedgerAppend { expected, record } => Op::LedgerAppend { expected, record },
            Call::JournalAppend { seq_in_writer } => Op::JournalAppend {
                writer_id: journal_of(replica),
                seq_in_writer,
            },
            Call::Release { token } => Op::LeaseRelease {
                owner: p(replica),
                token,
            },
            Call::Kube(op) => op,
        }
    }
}

/// What an op's caller saw.
pub struct Answer {
    outcome: Outcome,
    result: OpResult,
}

/// `ok`: granted `token` for `ttl_us` (expiry reading 0: STOP never reads it).
pub fn granted(token: u64, ttl_us: u64) -> Answer {
    Answer {
        outcome: Outcome::Ok,
        result: OpResult::Granted {
            token,
            expiry_authority_us: 0,
            ttl_us,
        },
    }
}

/// `fail`: held by another lease with `holder_token`.
pub fn held(holder_token: u64) -> Answer {
    Answer {
        outcome: Outcome::Fail,
        result: OpResult::Held {
            holder_token: Some(holder_token),
        },
    }
}

/// `fail`: the journal was fenced (another writer's record at `expected + 1`).
pub fn fenced(expected: u64) -> Answer {
    Answer {
        outcome: Outcome::Fail,
        result: OpResult::Fenced {
            expected,
            actual: expected + 1,
        },
    }
}

/// `fail`: the ledger's CAS found tip `actual`.
pub fn conflict(actual: u64) -> Answer {
    Answer {
        outcome: Outcome::Fail,
        result: OpResult::Conflict { actual },
    }
}

/// `fail`: the ledger was unavailable (nothing written).
pub fn ledger_unavailable() -> Answer {
    Answer {
        outcome: Outcome::Fail,
        result: OpResult::Unavailable {
            reason: "connection refused".to_string(),
        },
    }
}

/// `info`: the ledger call's outcome is unknown.
pub fn unknown() -> Answer {
    Answer {
        outcome: Outcome::Info,
        result: OpResult::Unknown {
            reason: "timed out".to_string(),
        },
    }
}

/// `info`: the lease service did not answer (`reason` says why).
pub fn unavailable() -> Answer {
    Answer {
        outcome: Outcome::Info,
        result: OpResult::Unavailable {
            reason: "deadline exceeded".to_string(),
        },
    }
}

/// `ok`: released.
pub fn released() -> Answer {
    Answer {
        outcome: Outcome::Ok,
        result: OpResult::Released {},
    }
}

/// `ok`: the Lease object at `rv`, held by `holder` with `transitions`.
pub fn kube_object(rv: u64, holder: &str, transitions: u64) -> Answer {
    Answer {
        outcome: Outcome::Ok,
        result: OpResult::KubeObject {
            resource_version: rv,
            holder_identity: holder.to_string(),
            transitions,
        },
    }
}

/// `fail`: 409 Conflict.
pub fn kube_conflict() -> Answer {
    Answer {
        outcome: Outcome::Fail,
        result: OpResult::KubeConflict {},
    }
}

/// `info`: a 503 from the server (it may have been applied).
pub fn kube_unavailable() -> Answer {
    Answer {
        outcome: Outcome::Info,
        result: OpResult::KubeStatus {
            code: 503,
            reason: "ServiceUnavailable".to_string(),
        },
    }
}

/// `ok`: appended at `seq`.
pub fn appended(seq: u64) -> Answer {
    Answer {
        outcome: Outcome::Ok,
        result: OpResult::Appended { seq },
    }
}

/// A validity check by `replica` of its lease of `epoch`, at local = true time `at_us`.
pub struct Check {
    replica: String,
    purpose: HistLeaseUse,
    epoch: u64,
    at_us: u64,
    claimed_valid_until_us: u64,
}

/// `replica` judges its lease of `epoch` valid (at 0, claiming nothing, until set).
pub fn judges_valid(replica: &str, epoch: u64) -> Check {
    Check {
        replica: replica.to_string(),
        purpose: HistLeaseUse::Append,
        epoch,
        at_us: 0,
        claimed_valid_until_us: 0,
    }
}

impl Check {
    /// Deciding to use the lease for `purpose` (an append unless set).
    pub fn to(self, purpose: HistLeaseUse) -> Self {
        Check { purpose, ..self }
    }

    /// At local = true time `at_us`.
    pub fn at(self, at_us: u64) -> Self {
        Check { at_us, ..self }
    }

    /// Claiming the lease valid until `until_us` on its own clock (checkers recompute that and
    /// never trust it).
    pub fn claiming_until(self, until_us: u64) -> Self {
        Check {
            claimed_valid_until_us: until_us,
            ..self
        }
    }
}

/// The evidence naming a write of s1's object the API server accepted at `at_us`: `verb`, to
/// `holder` with `transitions`, producing `rv`.
pub fn accepted_write(
    verb: WriteVerb,
    holder: &str,
    transitions: u64,
    rv: u64,
    at_us: u64,
) -> Evidence {
    Evidence::Write {
        session: SESSION.to_string(),
        verb,
        holder_identity: holder.into(),
        transitions,
        resource_version: rv,
        at_us,
    }
}
