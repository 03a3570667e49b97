//! The single-writer invariants of docs/checks.md, one module each, judged over a
//! [`History`] only (never the simulation).
//!
//! - [`token`] — TOKEN: per session, a takeover's token exceeds every earlier grant's; a renew
//!   or a live same-owner re-acquire keeps its token (decision lines; for a backend without
//!   an authority clock, `leaseTransitions` over the write lines and the holders' op lines).
//! - [`excl`] — EXCL: at most one unexpired lease per session on the authority's clock; a stale
//!   renew or release changes nothing (decision lines, clock segments across restarts).
//!   Without decision lines, judged on the holders: no two owners' validity windows overlap
//!   ([`holders`]).
//! - [`expiry`] — EXPIRY: no lease ends, other than by its holder's own release, before the
//!   expiry its last acknowledged grant or renew set on the authority's clock; across
//!   restarts that clock counts uptime only (decision lines, clock segments). For KubeLease,
//!   by observation: a takeover waits a TTL on the candidate's clock (write lines).
//! - [`fence`] — FENCE: fence epochs strictly increase in each ledger; after `Fence{e}`
//!   commits, no record of a writer with a lower epoch commits (final ledger).
//! - [`ledger`] — LEDGER: each ledger is one CAS chain; every acknowledged append is in it
//!   exactly once at its acknowledged position (op lines and final ledger).
//! - [`stop`] — STOP: a replica never judges its lease valid after it observed loss or after
//!   `valid_until`, recomputed here from the op lines (validity lines).
//! - [`live`] — LIVE: after the faults heal, each contended session gets an acknowledged
//!   journal append within the bound the config line gives.
//! - [`signal`] — SIGNAL: a target crate's own "I lead" signal holds only while its lease does,
//!   and never beside another's (`target_signal` and `write` lines, classed by the `nemesis`
//!   lines).
//! - [`definite`] — DEFINITE: an operation reported `fail` did not take effect: its record is
//!   not in the final ledger, no decision in its favour answered it, no write of it was
//!   accepted (op, ledger, decision and `write` lines).
//!
//! Each checker returns an [`InvariantReport`]: how many checks it made and the
//! [`Violation`]s, each with [`Evidence`] (op ids, ledger seqs, decisions) a reviewer can look
//! up in the history.

pub mod definite;
#[cfg(test)]
mod evidence_tests;
pub mod excl;
pub mod expiry;
pub mod fence;
pub mod grace;
pub mod holders;
mod host_faults;
pub mod ledger;
pub mod live;
pub mod pending;
pub mod signal;
pub mod stop;
pub mod token;

use std::collections::BTreeMap;
use std::fmt;

pub use super::Check;
use leasesim_history::time::seconds_us;
use leasesim_history::{
    ClockMap, Decision, DecisionLine, History, Op, OpLine, Process, Request, WriteLine, WriteVerb,
};

/// One piece of evidence: something in the history a reviewer can find. It is data: the
/// report reads its op ids, instants and hosts from the fields, and the sentence a reviewer
/// reads is rendered from them by `Display` (docs/campaigns.md#evidence-is-data). In JSON
/// (`results.jsonl`) each kind is tagged by its snake_case name: `{"op":12}`,
/// `{"ledger_seq":{"session":"s1","seq":4}}`.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// An `op` line, by its id.
    Op(u64),
    /// A record of the final ledger.
    LedgerSeq {
        /// The session (ledger).
        session: String,
        /// Its position.
        seq: u64,
    },
    /// A `decision` line.
    Decision {
        /// The session decided on.
        session: String,
        /// The requester.
        owner: Process,
        /// The authority's clock when it decided, µs.
        at_authority_us: u64,
        /// True time when it decided, µs.
        at_us: u64,
    },
    /// A `validity` line.
    Validity {
        /// The replica.
        process: Process,
        /// The session.
        session: String,
        /// Its clock when it judged, µs.
        at_local_us: u64,
        /// True time when it judged, µs.
        at_us: u64,
    },
    /// A `write` line: a write the API server accepted.
    Write {
        /// The session of the Lease object.
        session: String,
        /// The verb.
        verb: WriteVerb,
        /// `holderIdentity` after the write (`""`: none).
        holder_identity: String,
        /// `leaseTransitions` after the write.
        transitions: u64,
        /// The `resourceVersion` it produced.
        resource_version: u64,
        /// True time the server accepted it, µs.
        at_us: u64,
    },
    /// A holder's validity window, recomputed from one of its `op` lines ([`holders`]).
    Window {
        /// The holder.
        process: Process,
        /// The session.
        session: String,
        /// The token (`leaseTransitions`) it holds.
        token: u64,
        /// The acquire or renew the window starts at, by its op id.
        op: u64,
        /// True time it starts, µs.
        from_us: u64,
        /// True time it ends (after any cut), µs.
        until_us: u64,
    },
}

impl Evidence {
    /// The evidence naming `write`.
    pub fn write(write: &WriteLine) -> Self {
        Evidence::Write {
            session: write.session.clone(),
            verb: write.verb,
            holder_identity: write.holder_identity.clone(),
            transitions: write.transitions,
            resource_version: write.resource_version,
            at_us: write.at_us,
        }
    }

    /// The evidence naming `decision`.
    pub fn decision(decision: &DecisionLine) -> Self {
        Evidence::Decision {
            session: decision.session.clone(),
            owner: decision.owner.clone(),
            at_authority_us: decision.at_authority_us,
            at_us: decision.at_us,
        }
    }

    /// The evidence naming ledger record `seq` of `session`.
    pub fn seq(session: &str, seq: u64) -> Self {
        Evidence::LedgerSeq {
            session: session.to_string(),
            seq,
        }
    }
}

impl fmt::Display for Evidence {
    /// Each kind as a reviewer looks it up in the history (`op 12`, `ledger s1 seq 4`,
    /// `decision s1 by replica-2 at 12.004 s (authority 12.004 s)`), times as seconds with ms
    /// ([`leasesim_history::time`]; the history's own fields are µs).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Evidence::Op(id) => write!(f, "op {id}"),
            Evidence::LedgerSeq { session, seq } => write!(f, "ledger {session} seq {seq}"),
            Evidence::Decision {
                session,
                owner,
                at_authority_us,
                at_us,
            } => write!(
                f,
                "decision {session} by {owner} at {} (authority {})",
                seconds_us(*at_us),
                seconds_us(*at_authority_us)
            ),
            Evidence::Validity {
                process,
                session,
                at_local_us,
                at_us,
            } => write!(
                f,
                "validity {session} by {process} at {} (local {})",
                seconds_us(*at_us),
                seconds_us(*at_local_us)
            ),
            Evidence::Write {
                session,
                verb,
                holder_identity,
                transitions,
                resource_version,
                at_us,
            } => write!(
                f,
                "write {} {session} rv {resource_version} holder {:?} transitions {transitions} at {}",
                verb_name(*verb),
                holder_identity,
                seconds_us(*at_us)
            ),
            Evidence::Window {
                process,
                session,
                token,
                op,
                from_us,
                until_us,
            } => write!(
                f,
                "window {session} of {process} token {token} from op {op}: {}..{}",
                seconds_us(*from_us),
                seconds_us(*until_us)
            ),
        }
    }
}

/// `verb` as the history spells it.
pub(crate) fn verb_name(verb: WriteVerb) -> &'static str {
    match verb {
        WriteVerb::Create => "create",
        WriteVerb::Update => "update",
        WriteVerb::Delete => "delete",
    }
}

/// One violation of an invariant, with the evidence that proves it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Violation {
    /// The invariant violated.
    pub invariant: Check,
    /// What is wrong, in plain terms.
    pub message: String,
    /// The lines involved.
    pub evidence: Vec<Evidence>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.invariant, self.message)?;
        for (i, evidence) in self.evidence.iter().enumerate() {
            let sep = if i == 0 { " [" } else { "; " };
            write!(f, "{sep}{evidence}")?;
        }
        if !self.evidence.is_empty() {
            f.write_str("]")?;
        }
        Ok(())
    }
}

/// One invariant's result: how many checks it made, and what it found.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct InvariantReport {
    /// The invariant.
    pub invariant: Check,
    /// How many individual checks ran (decisions, records, acknowledged appends, validity
    /// lines judged).
    pub checks: u64,
    /// The violations found, in history order.
    pub violations: Vec<Violation>,
    /// Why nothing could be judged, when the checker knows better than "no such lines"
    /// (`3 overlapping pairs outside the drift bound`); read through
    /// [`InvariantReport::not_judged`].
    pub why_not_judged: Option<String>,
    /// What the check saw and classed as expected, not violated (SIGNAL's unfenced overlaps,
    /// docs/checks.md#signal): shown with the check, never a finding, never in the exit code.
    pub allowed: Vec<Violation>,
}

impl InvariantReport {
    /// An empty report for `invariant`.
    pub fn new(invariant: Check) -> Self {
        InvariantReport {
            invariant,
            checks: 0,
            violations: Vec::new(),
            why_not_judged: None,
            allowed: Vec::new(),
        }
    }

    /// Records a violation.
    pub fn violation(&mut self, message: impl Into<String>, evidence: Vec<Evidence>) {
        self.violations.push(Violation {
            invariant: self.invariant,
            message: message.into(),
            evidence,
        });
    }

    /// Whether nothing was violated.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// Why the invariant judged nothing (`no validity lines`), when it made no check and
    /// found nothing: such a result is "not judged", never "pass".
    pub fn not_judged(&self) -> Option<String> {
        (self.checks == 0 && self.violations.is_empty()).then(|| {
            self.why_not_judged
                .clone()
                .unwrap_or_else(|| format!("no {}", judged_lines(self.invariant)))
        })
    }
}

/// What an invariant counts its checks on, in the history.
fn judged_lines(invariant: Check) -> &'static str {
    match invariant {
        Check::Token => "grant or renew decision lines",
        Check::Excl => "grant, renew or release decision lines",
        Check::Expiry => "decision lines",
        Check::Fence => "records in the final ledger",
        Check::Ledger => "final ledger and no acknowledged append",
        Check::Stop => "validity lines",
        Check::Live => "contended session to judge after the faults healed",
        Check::Signal => "target_signal lines",
        Check::Definite => "fail operations",
        Check::LinLease | Check::LinLedger => "operations",
    }
}

/// Every invariant's result over one history.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Report {
    /// One entry per invariant, in [`Check::INVARIANTS`] order.
    pub invariants: Vec<InvariantReport>,
}

impl Report {
    /// Whether every invariant held.
    pub fn passed(&self) -> bool {
        self.invariants.iter().all(InvariantReport::passed)
    }

    /// Every violation, invariant by invariant.
    pub fn violations(&self) -> impl Iterator<Item = &Violation> {
        self.invariants.iter().flat_map(|r| r.violations.iter())
    }

    /// The result for `invariant`.
    pub fn get(&self, invariant: Check) -> Option<&InvariantReport> {
        self.invariants.iter().find(|r| r.invariant == invariant)
    }
}

impl fmt::Display for Report {
    /// One line per invariant (`TOKEN: 12 checks, 0 violations`, or `EXCL: not judged (why)`),
    /// each violation indented under it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for result in &self.invariants {
            if let Some(why) = result.not_judged() {
                writeln!(f, "{}: not judged ({why})", result.invariant)?;
                continue;
            }
            let plural = |n: u64| if n == 1 { "" } else { "s" };
            let violations = result.violations.len() as u64;
            write!(
                f,
                "{}: {} check{}, {violations} violation{}",
                result.invariant,
                result.checks,
                plural(result.checks),
                plural(violations),
            )?;
            match result.allowed.len() as u64 {
                0 => writeln!(f)?,
                n => writeln!(f, ", {n} allowed (expected, not a finding)")?,
            }
            for violation in &result.violations {
                writeln!(f, "  {violation}")?;
            }
            for allowed in &result.allowed {
                writeln!(f, "  allowed: {allowed}")?;
            }
        }
        Ok(())
    }
}

/// Runs every invariant over `history`.
pub fn check_all(history: &History) -> Report {
    Report {
        invariants: vec![
            token::check(history),
            excl::check(history),
            expiry::check(history),
            fence::check(history),
            ledger::check(history),
            stop::check(history),
            live::check(history),
            signal::check(history),
            definite::check(history),
        ],
    }
}

/// Places the authority's readings in true time, across its restarts.
pub(crate) struct AuthorityClock {
    map: Option<ClockMap>,
}

impl AuthorityClock {
    pub(crate) fn new(history: &History) -> Self {
        let map = history
            .clock_maps()
            .ok()
            .and_then(|mut maps: BTreeMap<String, ClockMap>| {
                maps.remove(history.authority_host()?)
            });
        AuthorityClock { map }
    }

    /// The authority's boot when it made `decision` (0 without clock segments).
    pub(crate) fn boot(&self, decision: &DecisionLine) -> u64 {
        self.map
            .as_ref()
            .and_then(|map| map.boot_at(decision.at_us))
            .unwrap_or(0)
    }

    /// True time at which reading `local_us` of the boot `decision` was made in is reached;
    /// when that boot ended first (a restart), extrapolated at rate 1 from the decision.
    pub(crate) fn true_time(&self, decision: &DecisionLine, local_us: u64) -> u64 {
        let boot = self.boot(decision);
        self.map
            .as_ref()
            .and_then(|map| map.true_at_in_boot(boot, local_us))
            .unwrap_or_else(|| {
                decision
                    .at_us
                    .saturating_add(local_us.saturating_sub(decision.at_authority_us))
            })
    }
}

impl AuthorityClock {
    /// The readings boot `boot` ran between: its first segment's starting reading and, when a
    /// later boot followed, the reading its last segment reached when that boot began (the
    /// clock of a crashed authority may run on until the restart, so this can count some
    /// downtime as uptime). `None` without clock segments or for a boot they do not show.
    pub(crate) fn span(&self, boot: u64) -> Option<(u64, Option<u64>)> {
        let segments = self.map.as_ref()?.segments();
        let first = segments.iter().position(|s| s.boot == boot)?;
        let start = segments[first].local_from_us;
        let next = segments[first..].iter().position(|s| s.boot != boot);
        let end = next.map(|n| {
            let (last, next) = (&segments[first + n - 1], &segments[first + n]);
            if last.suspended {
                last.local_from_us
            } else {
                let elapsed = i128::from(next.from_us.saturating_sub(last.from_us));
                let advanced = elapsed * (1_000_000 + i128::from(last.drift_ppm)) / 1_000_000;
                u64::try_from(i128::from(last.local_from_us) + advanced).unwrap_or(u64::MAX)
            }
        });
        Some((start, end))
    }
}

/// `decisions` sorted by true time, keeping line order among equal times.
pub(crate) fn decisions_by_session(history: &History) -> BTreeMap<String, Vec<&DecisionLine>> {
    let mut by_session: BTreeMap<String, Vec<&DecisionLine>> = BTreeMap::new();
    for decision in history.decisions() {
        by_session
            .entry(decision.session.clone())
            .or_default()
            .push(decision);
    }
    for decisions in by_session.values_mut() {
        decisions.sort_by_key(|d| d.at_us);
    }
    by_session
}

/// `process` as every output names it: `replica-1`, or `replica-1#2` from its first restart
/// on ([`Process`]'s `Display`).
pub(crate) fn who(process: &Process) -> String {
    process.to_string()
}

/// The lease call `decision` answered: an op line of its session whose call presents the
/// decision's owner, of the decision's kind (an acquire for a grant, a renew for a renew, a
/// release for a release, either for a refusal), invoked no later than the decision and not
/// completed before it; the first by position in the history.
pub(crate) fn cause_op<'h>(history: &'h History, decision: &DecisionLine) -> Option<&'h OpLine> {
    history.ops().find(|op| {
        op.session == decision.session
            && answers(&op.op, &decision.decision, &decision.owner)
            && op.invoke_us <= decision.at_us
            && op.complete_us.is_none_or(|done| done >= decision.at_us)
    })
}

/// Whether call `op` can be the request `decision` answered for `owner`.
pub(crate) fn answers(op: &Op, decision: &Decision, owner: &Process) -> bool {
    let kind = match decision {
        Decision::Grant { .. } => Request::Acquire,
        Decision::Renew { .. } => Request::Renew,
        Decision::Release { .. } => Request::Release,
        Decision::Refuse { request, .. } => *request,
    };
    match (op, kind) {
        (Op::LeaseAcquire { owner: by }, Request::Acquire)
        | (Op::LeaseRenew { owner: by, .. }, Request::Renew)
        | (Op::LeaseRelease { owner: by, .. }, Request::Release) => by == owner,
        _ => false,
    }
}

/// The call `decision` answered, for a message: `replica-2's acquire at 12.004 s (op 57)` —
/// its host, the call, when it was sent and its op id; without an op line for it (a
/// history from elsewhere), `replica-2's acquire (decided at 12.004 s)`.
pub(crate) fn caller(history: &History, decision: &DecisionLine) -> String {
    let call = match &decision.decision {
        Decision::Grant { .. } => "acquire",
        Decision::Renew { .. } => "renew",
        Decision::Release { .. } => "release",
        Decision::Refuse { request, .. } => match request {
            Request::Acquire => "acquire",
            Request::Renew => "renew",
            Request::Release => "release",
        },
    };
    match cause_op(history, decision) {
        Some(op) => format!(
            "{}'s {call} at {} (op {})",
            op.process,
            seconds_us(op.invoke_us),
            op.id
        ),
        None => format!(
            "{}'s {call} (decided at {})",
            decision.owner,
            seconds_us(decision.at_us)
        ),
    }
}

/// The evidence of `decision`: the op line of the call it answered, when there is one, then
/// the decision line.
pub(crate) fn decision_evidence(history: &History, decision: &DecisionLine) -> Vec<Evidence> {
    cause_op(history, decision)
        .map(|op| Evidence::Op(op.id))
        .into_iter()
        .chain([Evidence::decision(decision)])
        .collect()
}
