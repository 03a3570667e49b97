//! Our `history.jsonl` (schema v1, [`leasesim_history`]) as engine operations for the ledger and
//! lease models, with unknown outcomes resolved first wherever the history shows their effect.
//!
//! # Ledger ([`check_ledger_history`], model [`CasLedger`])
//!
//! Taken: `ledger_tip` and `ledger_append` op lines (the ledger client wrapper records every
//! call the journals make, so `journal_*` lines add nothing). `ok` tips and appends and `fail`
//! conflicts are kept with their results; other `fail`s (unavailable, invalid) had no effect
//! and are dropped, as are `info` tips (a read with no answer says nothing).
//!
//! When the history has a final ledger (any `ledger` line; sessions without one are then
//! empty), an `info` append of record `r` at `expected` is resolved before the search: `r` is
//! unique (writer id + sequence in writer, or the fence's writer id), so if the final ledger
//! holds `r` at `expected + 1` the append took effect there (it becomes `ok`, appended at
//! `expected + 1`, returning by the end of the run), and otherwise it did not (dropped). One
//! final tip read per session, after everything, returns the final ledger's length. Without a
//! final ledger, `info` appends stay unknown and no final read is added.
//!
//! # Lease ([`check_lease_history`], model [`TimedLease`])
//!
//! Taken: `lease_acquire`, `lease_renew` and `lease_release` op lines: `ok` grants and
//! releases, `fail` `held` answers (they say who held the lease), `info` calls; other `fail`s
//! (unsupported, invalid) had no effect and are dropped.
//!
//! Windows are placed on the authority's monotonic clock through the `lease` host's clock
//! segments. Its boots are laid end to end into one timeline: within a boot the reading is
//! shifted by a constant (so comparisons with that boot's expiries are exact), and each boot
//! starts where the previous one ended. After a restart the authority has lost its records
//! but grants nothing until the longest lease it granted has run out on its own uptime (the
//! grace period, docs/contracts.md#the-authoritys-grace-period), which is exactly "the old record
//! has expired" on this timeline; so the model can keep the old record across the restart. A
//! history without
//! `lease` clock segments is judged with the authority's clock equal to true time.
//!
//! When the history has authority decision lines, `info` lease calls are resolved before the
//! search: decisions of kind grant / renew / release that no `ok` operation accounts for (same
//! owner, token, and expiry or token presented) are given, in time order, to the earliest
//! unresolved `info` call of the same kind and owner (and token presented) invoked before the
//! decision, which becomes `ok` with the decision's result and returns at the decision's time;
//! an `info` call left without a decision never reached a decision and is dropped (the
//! authority records a decision for every call it answers, and a call it never answered had no
//! visible effect: a grant cut off by an authority crash only raised the durable high-water
//! mark, which the model allows by accepting any larger token). Without decision lines,
//! `info` calls stay unknown.
//!
//! A `release` decision that ended a hold (`ended`), that neither an `ok` call nor an `info`
//! call accounts for, and whose owner is gone (it invokes no lease call after the decision) is
//! still an event of the authority: the hold ended. It becomes an
//! operation of the authority's own process (the last process number, named as such in
//! explanations), a release of that owner's token invoked and returning at the decision's time,
//! its window that instant on the authority's timeline; the model's release rule applies (it
//! frees the session only if that lease is the current record). flock records one by design:
//! a hold ends with its holder's processes, and the next acquire takes over at once after a
//! `release` of the dead holder's token (docs/world.md#flock-in-the-world). A `release` that
//! ended nothing (`ended: false`: a stale release, or a forked child's, which flock makes a
//! no-op) changed no record and is left out, as before.
//!
//! Unaccounted grants and renews stay left out. In a correct history of every backend each one
//! answers a call whose op line is `ok` or `info` (the gRPC services decide only on a request,
//! a flock decision runs inside its caller's call, kube has no decision lines), so only a
//! history missing op lines has one; and its decision instant is not known well enough for a
//! window of one instant: an authority that writes its store between reading its clock and
//! recording (`DurableLease`) records the decision later than `expiry − ttl`, which only the
//! call's invocation bounds. A release carries no instant the model checks, so its decision's
//! time is enough. The authority's operations are the engine's operations like any other (the
//! model and its state are unchanged): its step budget and memo cap count them alike.
//!
//! Decisions also tighten completed calls: a call answered `ok` or `held` whose window holds
//! exactly one decision of its kind, owner, token presented and answer was answered by that
//! decision, so it returns (on the engine's true-time axis and on the authority's clock) when
//! the authority recorded it, which is after the call took effect and before the reply left.
//! This matters at µs resolution: a renew refused and the release its caller sends next can
//! show the same µs as completion and invocation, which would make them concurrent.

//!
//! # Kubernetes Lease objects ([`check_kube_history`], model [`KubeLeaseObjects`])
//!
//! For a backend without an authority clock (KubeLease: no decision lines), LIN-LEASE judges
//! the Lease API calls instead of the lease calls: taken are the `kube_get`, `kube_create`,
//! `kube_update` and `kube_delete` op lines, one partition per session. `ok` objects and
//! not-founds and `fail` conflicts and not-founds are kept with their results; a `fail`
//! `kube_status` (a 4xx other than 404/409) or any other `fail` had no effect and is dropped;
//! `info` calls (a 5xx, a transport error, a cut-off call) stay unknown, except creates and
//! updates the API server's `write` lines resolve.
//!
//! When the history has `write` lines (the API server records every write it accepted), an
//! `info` create or update is resolved before the search: the earliest write line of its
//! session accepted at or after its invocation, with its verb, holder and transitions (and,
//! for an update with a precondition, right after the write that produced `expected_rv`),
//! that no `ok` call (by the `resourceVersion` it returned) nor an earlier resolved call
//! accounts for, is its effect: it becomes `ok`, returning that object at the write's
//! acceptance time. An `info` create or update no write line accounts for was never
//! accepted and is dropped. `info` gets and deletes stay unknown (a read has no effect; a
//! delete's write line no longer shows the object's holder).
use std::collections::BTreeMap;

use super::engine::{Budget, Operation, Verdict, check};
use super::kube::{KubeCall, KubeInput, KubeLeaseObjects, KubeOutput, LeaseObject};
use super::lease::{AuthorityWindow, LeaseCall, LeaseInput, LeaseOutput, TimedLease};
use super::ledger::{CasLedger, LedgerCall, LedgerInput, LedgerOutput};
use super::named::Named;
use crate::granted::Granted;
use leasesim_history::{
    ClockMap, Decision, DecisionLine, HistRecord, History, HistoryError, Line, Op, OpLine,
    OpResult, Outcome, Process, Refusal, Request, WriteLine, WriteVerb,
};

/// A history's operations for one model, with where each came from and what resolution did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extracted<M, I, O> {
    /// The model to check them against.
    pub model: M,
    /// The operations, in history order (resolved ones in place), then any added final reads.
    pub ops: Vec<Operation<I, O>>,
    /// For each operation, the `id` of its op line; `None` for an added final read.
    pub op_ids: Vec<Option<u64>>,
    /// `info` operations whose effect the history shows: now `ok`.
    pub resolved: usize,
    /// `info` operations the history shows had no effect, and `fail`s with no effect: dropped.
    pub dropped: usize,
    /// `info` operations kept with an unknown outcome.
    pub unknown: usize,
}

/// The ledger history's operations, as [`check_ledger_history`] checks them (the model names
/// the replicas behind the process numbers: [`Named`]).
pub type LedgerOps = Extracted<Named<CasLedger>, LedgerInput, LedgerOutput>;
/// The lease history's operations, as [`check_lease_history`] checks them.
pub type LeaseOps = Extracted<Named<TimedLease>, LeaseInput, LeaseOutput>;

/// The Lease API calls of a kube history, as [`check_kube_history`] checks them.
pub type KubeOps = Extracted<Named<KubeLeaseObjects>, KubeInput, KubeOutput>;

/// Checks the Lease API calls (`kube_*` op lines) of `history` for linearizability against
/// the CAS register keyed by `resourceVersion` ([`KubeLeaseObjects`], one partition per
/// session; see the module documentation).
///
/// # Errors
/// The history does not [`History::validate`].
pub fn check_kube_history(history: &History, budget: Budget) -> Result<Verdict, HistoryError> {
    let extracted = kube_operations(history)?;
    Ok(check(&extracted.model, &extracted.ops, budget))
}

/// The [`KubeCall`] of a `kube_*` op line; `None` for any other op.
fn kube_call(op: &Op) -> Option<KubeCall> {
    Some(match op {
        Op::KubeGet {} => KubeCall::Get,
        Op::KubeCreate {
            holder_identity,
            transitions,
        } => KubeCall::Create {
            holder_identity: holder_identity.clone(),
            transitions: *transitions,
        },
        Op::KubeUpdate {
            expected_rv,
            holder_identity,
            transitions,
        } => KubeCall::Update {
            expected_rv: *expected_rv,
            holder_identity: holder_identity.clone(),
            transitions: *transitions,
        },
        Op::KubeDelete { expected_rv } => KubeCall::Delete {
            expected_rv: *expected_rv,
        },
        _ => return None,
    })
}

/// What becomes of a Lease API call (see the module documentation).
fn kube_fate(op: &OpLine) -> Fate<KubeOutput> {
    let output = match (&op.result, op.outcome) {
        (_, Outcome::Info) => return Fate::Unknown,
        (
            Some(OpResult::KubeObject {
                resource_version,
                holder_identity,
                transitions,
            }),
            Outcome::Ok,
        ) => KubeOutput::Object(LeaseObject {
            resource_version: *resource_version,
            holder_identity: holder_identity.clone(),
            transitions: *transitions,
        }),
        (Some(OpResult::KubeNotFound {}), _) => KubeOutput::NotFound,
        (Some(OpResult::KubeConflict {}), Outcome::Fail) => KubeOutput::Conflict,
        _ => return Fate::Dropped,
    };
    Fate::Recorded {
        output,
        ret: op.complete_us,
    }
}

/// The API server's accepted writes, for resolving `info` creates and updates.
struct AcceptedWrites<'h> {
    /// Whether the history has write lines at all.
    known: bool,
    /// Each session's write lines in acceptance order, with whether a call accounts for it.
    by_session: BTreeMap<&'h str, Vec<(&'h WriteLine, bool)>>,
}

impl<'h> AcceptedWrites<'h> {
    /// The write lines of `history`, those an `ok` create or update returned (by session and
    /// `resourceVersion`) already accounted for.
    fn of(history: &'h History) -> Self {
        let mut by_session: BTreeMap<&'h str, Vec<(&'h WriteLine, bool)>> = BTreeMap::new();
        for write in history.writes() {
            by_session
                .entry(write.session.as_str())
                .or_default()
                .push((write, false));
        }
        for op in history.ops() {
            if let (
                Op::KubeCreate { .. } | Op::KubeUpdate { .. },
                Outcome::Ok,
                Some(OpResult::KubeObject {
                    resource_version, ..
                }),
            ) = (&op.op, op.outcome, &op.result)
            {
                for (write, claimed) in by_session
                    .get_mut(op.session.as_str())
                    .into_iter()
                    .flatten()
                {
                    if write.resource_version == *resource_version
                        && write.verb != WriteVerb::Delete
                    {
                        *claimed = true;
                    }
                }
            }
        }
        AcceptedWrites {
            known: !by_session.is_empty(),
            by_session,
        }
    }

    /// The fate of the `info` call `op` (see the module documentation).
    fn resolve(&mut self, op: &OpLine, call: &KubeCall) -> Fate<KubeOutput> {
        let (verb, holder, transitions, expected_rv) = match call {
            KubeCall::Create {
                holder_identity,
                transitions,
            } => (WriteVerb::Create, holder_identity, *transitions, None),
            KubeCall::Update {
                expected_rv,
                holder_identity,
                transitions,
            } => (
                WriteVerb::Update,
                holder_identity,
                *transitions,
                *expected_rv,
            ),
            KubeCall::Get | KubeCall::Delete { .. } => return Fate::Unknown,
        };
        let Some(writes) = self.by_session.get_mut(op.session.as_str()) else {
            return Fate::Dropped;
        };
        let found = (0..writes.len()).find(|&i| {
            let (write, claimed) = writes[i];
            !claimed
                && write.at_us >= op.invoke_us
                && write.verb == verb
                && write.holder_identity == *holder
                && write.transitions == transitions
                && expected_rv.is_none_or(|rv| {
                    i.checked_sub(1)
                        .is_some_and(|before| writes[before].0.resource_version == rv)
                })
        });
        let Some(i) = found else {
            return Fate::Dropped;
        };
        writes[i].1 = true;
        let write = writes[i].0;
        Fate::Resolved {
            output: KubeOutput::Object(LeaseObject {
                resource_version: write.resource_version,
                holder_identity: write.holder_identity.clone(),
                transitions: write.transitions,
            }),
            ret: write.at_us,
        }
    }
}

/// The Lease API calls of `history` as [`KubeLeaseObjects`] operations.
///
/// # Errors
/// The history does not [`History::validate`].
pub fn kube_operations(history: &History) -> Result<KubeOps, HistoryError> {
    history.validate()?;
    let mut processes = Processes::default();
    let mut out = KubeOps::empty(Named::new(KubeLeaseObjects));
    let mut writes = AcceptedWrites::of(history);
    for op in history.ops() {
        let Some(call) = kube_call(&op.op) else {
            continue;
        };
        let fate = match kube_fate(op) {
            Fate::Unknown if writes.known => writes.resolve(op, &call),
            fate => fate,
        };
        let Some(kept) = out.tally(fate) else {
            continue;
        };
        let input = KubeInput {
            session: op.session.clone(),
            call,
        };
        out.push_call(processes.id(&op.process), op, input, kept);
    }
    out.model.names = processes.names();
    Ok(out)
}

/// Checks the ledger calls of `history` for linearizability against the CAS chain model
/// ([`CasLedger`], one partition per session), after resolving unknown outcomes (see the
/// module documentation).
///
/// # Errors
/// The history does not [`History::validate`].
pub fn check_ledger_history(history: &History, budget: Budget) -> Result<Verdict, HistoryError> {
    let extracted = ledger_operations(history)?;
    Ok(check(&extracted.model, &extracted.ops, budget))
}

/// Checks the lease calls of `history` for linearizability against the timed lease model
/// ([`TimedLease`], one partition per session, expiry judged on the authority's clock), after
/// resolving unknown outcomes (see the module documentation).
///
/// # Errors
/// The history does not [`History::validate`].
pub fn check_lease_history(history: &History, budget: Budget) -> Result<Verdict, HistoryError> {
    let extracted = lease_operations(history)?;
    Ok(check(&extracted.model, &extracted.ops, budget))
}

/// Process numbers for the engine, in order of first appearance.
#[derive(Default)]
struct Processes(BTreeMap<Process, u64>);

impl Processes {
    fn id(&mut self, process: &Process) -> u64 {
        let next = self.0.len() as u64;
        *self.0.entry(process.clone()).or_insert(next)
    }

    /// Process number → the replica's name ([`Named::names`]).
    fn names(&self) -> Vec<String> {
        let mut names = vec![String::new(); self.0.len()];
        for (process, &id) in &self.0 {
            names[id as usize] = process.to_string();
        }
        names
    }
}

/// The last time anything in the history happened, µs of true time.
fn end_of_history(history: &History) -> u64 {
    history
        .lines()
        .iter()
        .map(|line| match line {
            Line::Op(op) => op.complete_us.unwrap_or(op.invoke_us).max(op.invoke_us),
            Line::Decision(d) => d.at_us,
            Line::Validity(v) => v.at_us,
            Line::Phase(p) => p.at_us,
            Line::Clock(c) => c.from_us,
            Line::Event(e) => e.at_us,
            Line::Write(w) => w.at_us,
            Line::Nemesis(n) => n.at_us,
            Line::Work(w) => w.at_us,
            Line::Config(_) | Line::Ledger(_) => 0,
        })
        .max()
        .unwrap_or(0)
}

fn describe_record(record: &HistRecord) -> String {
    let writer = |w: &leasesim_history::HistWriterId| format!("{}/j{}", w.owner, w.journal);
    match record {
        HistRecord::Fence {
            epoch, writer_id, ..
        } => format!("fence epoch {epoch} of {}", writer(writer_id)),
        HistRecord::Event {
            writer_id,
            seq_in_writer,
            ..
        } => format!("event {} #{seq_in_writer}", writer(writer_id)),
    }
}

/// What became of one op line of the history.
enum Fate<O> {
    /// Kept with the result it recorded, returning at `ret` (`None`: never returned).
    Recorded { output: O, ret: Option<u64> },
    /// An `info` call whose effect the history shows: now `ok`, returning at `ret`.
    Resolved { output: O, ret: u64 },
    /// Kept with an unknown outcome.
    Unknown,
    /// Dropped: it had no effect (or the history shows it had none).
    Dropped,
}

impl<M, I, O> Extracted<M, I, O> {
    fn empty(model: M) -> Self {
        Extracted {
            model,
            ops: Vec::new(),
            op_ids: Vec::new(),
            resolved: 0,
            dropped: 0,
            unknown: 0,
        }
    }

    /// Counts `fate`; for a kept operation, its output (`None`: unknown) and return time.
    fn tally(&mut self, fate: Fate<O>) -> Option<(Option<O>, Option<u64>)> {
        match fate {
            Fate::Recorded { output, ret } => Some((Some(output), ret)),
            Fate::Resolved { output, ret } => {
                self.resolved += 1;
                Some((Some(output), Some(ret)))
            }
            Fate::Unknown => {
                self.unknown += 1;
                Some((None, None))
            }
            Fate::Dropped => {
                self.dropped += 1;
                None
            }
        }
    }

    /// Appends `op`, from the op line `id` (`None`: added by the extraction).
    fn push(&mut self, op: Operation<I, O>, id: Option<u64>) {
        self.ops.push(op);
        self.op_ids.push(id);
        debug_assert_eq!(self.ops.len(), self.op_ids.len(), "one op id per operation");
    }

    /// Appends op line `line`'s call, by `process`, with `input` and the output and return
    /// time [`Extracted::tally`] kept.
    fn push_call(
        &mut self,
        process: u64,
        line: &OpLine,
        input: I,
        (output, ret): (Option<O>, Option<u64>),
    ) {
        let op = Operation {
            process,
            input,
            output,
            call: line.invoke_us,
            ret,
        };
        self.push(op, Some(line.id));
    }
}

/// The final ledger, when the history has one (any `ledger` line).
struct FinalLedger<'h> {
    /// Whether the history has a final ledger (sessions without `ledger` lines are then
    /// empty).
    known: bool,
    /// Each session's records by position.
    records: BTreeMap<String, BTreeMap<u64, HistRecord>>,
    /// The acknowledged appends `(session, expected, record)`, and the `info` appends already
    /// resolved: only one append commits at a position, so an `info` twin of one did not.
    taken: Vec<(&'h str, u64, &'h HistRecord)>,
}

impl<'h> FinalLedger<'h> {
    fn of(history: &'h History) -> Self {
        let records = history
            .final_ledger()
            .into_iter()
            .map(|(session, records)| (session, records.into_iter().collect()))
            .collect();
        let taken = history
            .ops()
            .filter_map(|op| match (&op.op, op.outcome, &op.result) {
                (
                    Op::LedgerAppend { expected, record },
                    Outcome::Ok,
                    Some(OpResult::Appended { .. }),
                ) => Some((op.session.as_str(), *expected, record)),
                _ => None,
            })
            .collect();
        FinalLedger {
            known: history.lines().iter().any(|l| matches!(l, Line::Ledger(_))),
            records,
            taken,
        }
    }

    /// Whether an append of `record` at `expected` in `session` can have committed: without a
    /// final ledger, always; with one, only if the record is at `expected + 1`.
    fn may_commit(&self, session: &str, expected: u64, record: &HistRecord) -> bool {
        !self.known
            || self
                .records
                .get(session)
                .and_then(|records| records.get(&expected.saturating_add(1)))
                == Some(record)
    }

    /// The final ledger's length in `session`.
    fn tip(&self, session: &str) -> u64 {
        self.records
            .get(session)
            .and_then(|records| records.keys().next_back().copied())
            .unwrap_or(0)
    }
}

/// A ledger op line's call, and for an append `(expected, record, may commit)`.
type LedgerCallOf<'h> = (LedgerCall, Option<(u64, &'h HistRecord, bool)>);

/// The [`CasLedger`] call of a `ledger_tip` or `ledger_append` op line.
fn ledger_call<'h>(op: &'h OpLine, finals: &FinalLedger) -> Option<LedgerCallOf<'h>> {
    Some(match &op.op {
        Op::LedgerTip {} => (LedgerCall::Tip, None),
        Op::LedgerAppend { expected, record } => {
            let may_commit = finals.may_commit(&op.session, *expected, record);
            (
                LedgerCall::Append {
                    expected: *expected,
                    record: describe_record(record),
                    may_commit,
                },
                Some((*expected, record, may_commit)),
            )
        }
        _ => return None,
    })
}

/// What becomes of a ledger call: `ok` tips and appends and `fail` conflicts are kept; an
/// `info` append is resolved by the final ledger when there is one (see the module docs), or
/// stays unknown; anything else had no effect.
fn ledger_fate<'h>(
    op: &'h OpLine,
    append: Option<(u64, &'h HistRecord, bool)>,
    finals: &mut FinalLedger<'h>,
    end_us: u64,
) -> Fate<LedgerOutput> {
    let recorded = |output| Fate::Recorded {
        output,
        ret: op.complete_us,
    };
    match (op.outcome, &op.result, append) {
        (Outcome::Ok, Some(OpResult::Tip { seq }), None) => recorded(LedgerOutput::Tip(*seq)),
        (Outcome::Ok, Some(OpResult::Appended { seq }), Some(_)) => {
            recorded(LedgerOutput::Appended(*seq))
        }
        (Outcome::Fail, Some(OpResult::Conflict { actual }), Some(_)) => {
            recorded(LedgerOutput::Conflict { actual: *actual })
        }
        (Outcome::Info, _, Some((expected, record, may_commit))) if finals.known => {
            let key = (op.session.as_str(), expected, record);
            if may_commit && !finals.taken.contains(&key) {
                finals.taken.push(key);
                Fate::Resolved {
                    output: LedgerOutput::Appended(expected.saturating_add(1)),
                    ret: end_us,
                }
            } else {
                Fate::Dropped
            }
        }
        (Outcome::Info, _, Some(_)) => Fate::Unknown,
        _ => Fate::Dropped,
    }
}

/// The ledger calls of `history` as [`CasLedger`] operations, unknown outcomes resolved.
///
/// # Errors
/// The history does not [`History::validate`].
pub fn ledger_operations(history: &History) -> Result<LedgerOps, HistoryError> {
    history.validate()?;
    let mut finals = FinalLedger::of(history);
    let end_us = end_of_history(history);
    let mut processes = Processes::default();
    let mut out = LedgerOps::empty(Named::new(CasLedger));
    let mut sessions: Vec<String> = finals.records.keys().cloned().collect();
    let mut calls = 0;
    for op in history.ops() {
        let Some((call, append)) = ledger_call(op, &finals) else {
            continue;
        };
        calls += 1;
        if !sessions.contains(&op.session) {
            sessions.push(op.session.clone());
        }
        let Some(kept) = out.tally(ledger_fate(op, append, &mut finals, end_us)) else {
            continue;
        };
        let input = LedgerInput {
            session: op.session.clone(),
            call,
        };
        out.push_call(processes.id(&op.process), op, input, kept);
    }
    debug_assert_eq!(
        out.ops.len() + out.dropped,
        calls,
        "every ledger call is kept or dropped"
    );
    if finals.known {
        sessions.sort();
        add_final_reads(&mut out, &finals, sessions, end_us);
    }
    out.model.names = processes.names();
    Ok(out)
}

/// One tip read per session after everything (process `u64::MAX`), returning the final
/// ledger's length.
fn add_final_reads(out: &mut LedgerOps, finals: &FinalLedger, sessions: Vec<String>, end_us: u64) {
    debug_assert!(sessions.is_sorted(), "final reads go in session order");
    for session in sessions {
        let tip = finals.tip(&session);
        let read = Operation {
            process: u64::MAX,
            input: LedgerInput {
                session,
                call: LedgerCall::Tip,
            },
            output: Some(LedgerOutput::Tip(tip)),
            call: end_us.saturating_add(1),
            ret: Some(end_us.saturating_add(1)),
        };
        out.push(read, None);
    }
}

/// One boot of the authority on the end-to-end timeline.
struct BootSpan {
    boot: u64,
    /// True time the boot's first segment starts, µs.
    from_us: u64,
    /// The clock's reading then, µs.
    first_local_us: u64,
    /// The timeline's value then, µs.
    offset_us: u64,
}

/// The authority's monotonic clock with its boots laid end to end (see the module docs).
struct Timeline {
    map: Option<ClockMap>,
    boots: Vec<BootSpan>,
}

impl Timeline {
    fn new(history: &History) -> Result<Self, HistoryError> {
        let mut maps = history.clock_maps()?;
        let Some(map) = history.authority_host().and_then(|host| maps.remove(host)) else {
            return Ok(Timeline {
                map: None,
                boots: Vec::new(),
            });
        };
        let mut boots: Vec<BootSpan> = Vec::new();
        for segment in map.segments() {
            if boots.last().is_some_and(|b| b.boot == segment.boot) {
                continue;
            }
            let offset_us = match boots.last() {
                None => 0,
                Some(previous) => {
                    let last = map
                        .local_at(segment.from_us.saturating_sub(1))
                        .unwrap_or(previous.first_local_us);
                    previous.offset_us + last.saturating_sub(previous.first_local_us)
                }
            };
            boots.push(BootSpan {
                boot: segment.boot,
                from_us: segment.from_us,
                first_local_us: segment.local_from_us,
                offset_us,
            });
        }
        Ok(Timeline {
            map: Some(map),
            boots,
        })
    }

    /// Index of the boot running at true time `true_us` (the first one before it starts).
    fn boot_index(&self, true_us: u64) -> usize {
        self.boots
            .partition_point(|b| b.from_us <= true_us)
            .saturating_sub(1)
    }

    /// Reading `local_us` of boot `index` on the timeline.
    fn place(&self, index: usize, local_us: u64) -> u64 {
        match self.boots.get(index) {
            Some(b) => b.offset_us + local_us.saturating_sub(b.first_local_us),
            None => local_us,
        }
    }

    /// The timeline at true time `true_us`.
    fn at(&self, true_us: u64) -> u64 {
        let Some(map) = &self.map else {
            return true_us;
        };
        let index = self.boot_index(true_us);
        let local = map
            .local_at(true_us)
            .unwrap_or(self.boots[index].first_local_us);
        self.place(index, local)
    }

    /// The window of an operation invoked at `invoke_us` that returned at `complete_us`
    /// (`None`: may take effect at any later time), widened by a µs each side for the
    /// truncation of true time to µs.
    fn window(&self, invoke_us: u64, complete_us: Option<u64>) -> AuthorityWindow {
        AuthorityWindow {
            from_us: self.at(invoke_us).saturating_sub(1),
            to_us: complete_us.map_or(u64::MAX, |c| self.at(c.saturating_add(1)).saturating_add(1)),
        }
    }

    /// An expiry reading from a grant made within `[invoke_us, complete_us]` on the timeline:
    /// in the boot where its decision instant (`expiry − ttl`) falls inside the window, or the
    /// boot running at completion.
    fn place_expiry(
        &self,
        invoke_us: u64,
        complete_us: u64,
        expiry_us: u64,
        ttl_us: u64,
        window: AuthorityWindow,
    ) -> u64 {
        let (first, last) = (self.boot_index(invoke_us), self.boot_index(complete_us));
        (first..=last)
            .map(|index| self.place(index, expiry_us))
            .find(|placed| {
                let at = placed.saturating_sub(ttl_us);
                at.saturating_add(1) >= window.from_us && at.saturating_sub(1) <= window.to_us
            })
            .unwrap_or_else(|| self.place(last, expiry_us))
    }
}

/// A lease op line's call, owner and (for an `ok` or a kept `fail`) known result.
fn lease_call(op: &OpLine) -> Option<(LeaseCall, &Process)> {
    match &op.op {
        Op::LeaseAcquire { owner } => Some((LeaseCall::Acquire, owner)),
        Op::LeaseRenew { owner, token } => Some((LeaseCall::Renew { token: *token }, owner)),
        Op::LeaseRelease { owner, token } => Some((LeaseCall::Release { token: *token }, owner)),
        _ => None,
    }
}

/// Whether `decision` is the authority's side of `call` by `owner` (kind, owner, token
/// presented).
fn decision_fits(decision: &DecisionLine, call: LeaseCall, owner: &Process) -> bool {
    if decision.owner != *owner {
        return false;
    }
    match (call, &decision.decision) {
        (LeaseCall::Acquire, Decision::Grant { .. })
        | (
            LeaseCall::Acquire,
            Decision::Refuse {
                request: Request::Acquire,
                ..
            },
        ) => true,
        (LeaseCall::Renew { token }, Decision::Renew { token: t, .. })
        | (LeaseCall::Release { token }, Decision::Release { token: t, .. })
        | (
            LeaseCall::Renew { token },
            Decision::Refuse {
                request: Request::Renew,
                token: Some(t),
                ..
            },
        )
        | (
            LeaseCall::Release { token },
            Decision::Refuse {
                request: Request::Release,
                token: Some(t),
                ..
            },
        ) => token == *t,
        _ => false,
    }
}

/// Whether `decision` is the one an `ok` call with `result` got.
fn decision_answers(decision: &DecisionLine, result: &OpResult) -> bool {
    if let Some(granted) = Granted::of(&decision.decision) {
        return matches!(result, OpResult::Granted { token, expiry_authority_us, .. }
            if *token == granted.token && *expiry_authority_us == granted.expiry_authority_us);
    }
    match (&decision.decision, result) {
        (Decision::Release { .. }, OpResult::Released {}) => true,
        (
            Decision::Refuse {
                reason: Refusal::Held { holder_token },
                ..
            },
            OpResult::Held { holder_token: seen },
        ) => holder_token == seen,
        _ => false,
    }
}

/// The authority's decisions by (session, owner), each list in time order.
type DecisionIndex<'h> = BTreeMap<(&'h str, &'h Process), Vec<&'h DecisionLine>>;

/// The decision that answered a completed call, when only one can have: the one decision of
/// the right kind, owner, token presented and answer made within `[invoke_us, complete_us]`
/// (every answered call has its own decision there, so a lone candidate is it).
fn own_decision<'h>(
    op: &OpLine,
    call: LeaseCall,
    owner: &Process,
    result: &OpResult,
    complete_us: u64,
    index: &DecisionIndex<'h>,
) -> Option<&'h DecisionLine> {
    let candidates = index.get(&(op.session.as_str(), owner))?;
    let mut fitting = candidates.iter().filter(|d| {
        (op.invoke_us..=complete_us).contains(&d.at_us)
            && decision_fits(d, call, owner)
            && decision_answers(d, result)
    });
    match (fitting.next(), fitting.next()) {
        (Some(only), None) => Some(*only),
        _ => None,
    }
}

/// The lease calls of `history` as [`TimedLease`] operations, unknown outcomes resolved.
///
/// # Errors
/// The history does not [`History::validate`].
pub fn lease_operations(history: &History) -> Result<LeaseOps, HistoryError> {
    history.validate()?;
    let timeline = Timeline::new(history)?;
    let has_decisions = history.decisions().next().is_some();
    let ops: Vec<&OpLine> = history
        .ops()
        .filter(|op| lease_call(op).is_some())
        .collect();
    let (resolution, unaccounted) = resolve_info_calls(history, &ops);
    let index = decision_index(history);
    let mut owners = Owners::default();
    let mut processes = Processes::default();
    let mut out = LeaseOps::empty(Named::new(TimedLease::default()));
    for (k, op) in ops.iter().enumerate() {
        let (call, owner) = lease_call(op).expect("filtered to lease calls");
        let fate = match (op.outcome, resolution.get(&k)) {
            (Outcome::Info, Some(decision)) => resolved_fate(op, decision, &timeline),
            (Outcome::Info, None) if has_decisions => Fate::Dropped,
            (Outcome::Info, None) => Fate::Unknown,
            _ => recorded_fate(op, call, owner, &timeline, &index),
        };
        let Some(kept) = out.tally(fate) else {
            continue;
        };
        let ret = kept.1;
        debug_assert!(
            ret.is_none_or(|ret| ret >= op.invoke_us),
            "a kept lease call returns at or after its invocation (its decision time is clamped)"
        );
        // Unknown outcome: may take effect at any later time (`ret` is `None`).
        let input = LeaseInput {
            session: op.session.clone(),
            owner: owners.id(owner),
            call,
            window: timeline.window(op.invoke_us, ret),
        };
        out.push_call(processes.id(&op.process), op, input, kept);
    }
    debug_assert_eq!(
        out.ops.len() + out.dropped,
        ops.len(),
        "every lease call is kept or dropped"
    );
    let mut names = processes.names();
    let authority = names.len() as u64;
    let gone = owners_gone(&unaccounted, &ops);
    if add_authority_releases(&mut out, &gone, authority, &mut owners, &timeline) > 0 {
        names.push(AUTHORITY.to_owned());
    }
    out.model.model = TimedLease::new(owners.list);
    out.model.names = names;
    Ok(out)
}

/// The unaccounted decisions whose owner is gone: it invokes no lease call after the
/// decision. An authority ends a hold on its own only for an owner that is gone (flock: the
/// holder's processes died); a release of a live owner's hold that no call asked for (a
/// forked child's unlock of its parent's lock, an authority that frees a hold unasked) is left
/// out, so the model still holds the lease for that owner and judges what follows.
fn owners_gone<'h>(unaccounted: &[&'h DecisionLine], ops: &[&OpLine]) -> Vec<&'h DecisionLine> {
    unaccounted
        .iter()
        .copied()
        .filter(|decision| {
            !ops.iter().any(|op| {
                op.invoke_us > decision.at_us
                    && lease_call(op).is_some_and(|(_, owner)| *owner == decision.owner)
            })
        })
        .collect()
}

/// How an explanation names the process of the authority's own operations.
const AUTHORITY: &str = "the authority (a decision no call accounts for)";

/// Appends, as operations of the authority's own process `authority`, the `release`
/// decisions that ended a hold (`ended`) and that no call accounts for: each a release of
/// that owner's token invoked and returning at the decision's time, with a one-instant window
/// there on the authority's timeline; other unaccounted decisions are left out (see the module
/// documentation). Returns how many it appended (their op ids are `None`).
fn add_authority_releases(
    out: &mut LeaseOps,
    unaccounted: &[&DecisionLine],
    authority: u64,
    owners: &mut Owners,
    timeline: &Timeline,
) -> usize {
    let before = out.ops.len();
    for decision in unaccounted {
        let Decision::Release { token, ended: true } = decision.decision else {
            continue;
        };
        let release = Operation {
            process: authority,
            input: LeaseInput {
                session: decision.session.clone(),
                owner: owners.id(&decision.owner),
                call: LeaseCall::Release { token },
                window: timeline.window(decision.at_us, Some(decision.at_us)),
            },
            output: Some(LeaseOutput::Released),
            call: decision.at_us,
            ret: Some(decision.at_us),
        };
        out.push(release, None);
    }
    out.ops.len() - before
}

/// Lease owners numbered for the model, in order of first appearance.
#[derive(Default)]
struct Owners {
    ids: BTreeMap<Process, u32>,
    list: Vec<Process>,
}

impl Owners {
    fn id(&mut self, owner: &Process) -> u32 {
        let list = &mut self.list;
        let id = *self.ids.entry(owner.clone()).or_insert_with(|| {
            list.push(owner.clone());
            (list.len() - 1) as u32
        });
        debug_assert_eq!(self.list[id as usize], *owner, "owner ids index the list");
        id
    }
}

/// The authority's grant, renew and release decisions in time order (refusals change no
/// record, so no `info` call is resolved by one), less those an `ok` call accounts for: each
/// `ok` call, in history order, takes the first unused decision of its session, kind, owner,
/// token presented and answer made at or after its invocation.
fn unmatched_decisions<'h>(history: &'h History, ops: &[&OpLine]) -> Vec<&'h DecisionLine> {
    let mut decisions: Vec<&DecisionLine> = history
        .decisions()
        .filter(|d| !matches!(d.decision, Decision::Refuse { .. }))
        .collect();
    decisions.sort_by_key(|d| d.at_us);
    let mut used = vec![false; decisions.len()];
    for op in ops {
        let (Outcome::Ok, Some(result)) = (op.outcome, &op.result) else {
            continue;
        };
        let (call, owner) = lease_call(op).expect("filtered to lease calls");
        let found = (0..decisions.len()).find(|&i| {
            let d = decisions[i];
            !used[i]
                && d.session == op.session
                && d.at_us >= op.invoke_us
                && decision_fits(d, call, owner)
                && decision_answers(d, result)
        });
        if let Some(i) = found {
            used[i] = true;
        }
    }
    decisions
        .into_iter()
        .zip(used)
        .filter_map(|(decision, used)| (!used).then_some(decision))
        .collect()
}

/// Op index (into `ops`) → the decision that resolves that `info` call, and the decisions no
/// call accounts for: the unmatched decisions, in time order, each go to the earliest-invoked
/// unresolved `info` call of the same session, kind, owner and token presented invoked by the
/// decision; those no such call is left for are returned, in time order.
fn resolve_info_calls<'h>(
    history: &'h History,
    ops: &[&OpLine],
) -> (BTreeMap<usize, &'h DecisionLine>, Vec<&'h DecisionLine>) {
    let decisions = unmatched_decisions(history, ops);
    debug_assert!(
        decisions.is_sorted_by_key(|d| d.at_us),
        "decisions are handed out in time order"
    );
    let mut resolution: BTreeMap<usize, &DecisionLine> = BTreeMap::new();
    let mut unaccounted = Vec::new();
    for decision in decisions {
        let candidate = ops
            .iter()
            .enumerate()
            .filter(|(k, op)| {
                op.outcome == Outcome::Info
                    && !resolution.contains_key(k)
                    && op.session == decision.session
                    && op.invoke_us <= decision.at_us
                    && lease_call(op)
                        .is_some_and(|(call, owner)| decision_fits(decision, call, owner))
            })
            .min_by_key(|(k, op)| (op.invoke_us, *k))
            .map(|(k, _)| k);
        match candidate {
            Some(k) => {
                resolution.insert(k, decision);
            }
            None => unaccounted.push(decision),
        }
    }
    (resolution, unaccounted)
}

/// Every decision by (session, owner), each list in history order.
fn decision_index(history: &History) -> DecisionIndex<'_> {
    let mut index: DecisionIndex = BTreeMap::new();
    for decision in history.decisions() {
        index
            .entry((decision.session.as_str(), &decision.owner))
            .or_default()
            .push(decision);
    }
    index
}

/// An `info` call resolved by `decision`: `ok` with the decision's result, returning when the
/// authority recorded it.
fn resolved_fate(op: &OpLine, decision: &DecisionLine, timeline: &Timeline) -> Fate<LeaseOutput> {
    debug_assert_eq!(op.outcome, Outcome::Info, "only info calls are resolved");
    let ret = decision.at_us.max(op.invoke_us);
    let index = timeline.boot_index(decision.at_us);
    let output = match Granted::of(&decision.decision) {
        Some(granted) => LeaseOutput::Granted {
            token: granted.token,
            expiry_us: timeline.place(index, granted.expiry_authority_us),
            ttl_us: granted.ttl_us,
        },
        None => LeaseOutput::Released,
    };
    Fate::Resolved { output, ret }
}

/// A completed `ok` or `fail` call, kept with its result when it is a grant, a release or a
/// `held` answer; anything else (and a call without completion) had no effect.
fn recorded_fate(
    op: &OpLine,
    call: LeaseCall,
    owner: &Process,
    timeline: &Timeline,
    index: &DecisionIndex,
) -> Fate<LeaseOutput> {
    let (Some(result), Some(complete_us)) = (&op.result, op.complete_us) else {
        return Fate::Dropped;
    };
    // The call took effect by the time the authority recorded its decision: when that
    // decision is known, the call returns then (µs truncation can make a call's completion
    // equal the next call's invocation; the decision, recorded before the reply was sent,
    // keeps them apart).
    let ret = own_decision(op, call, owner, result, complete_us, index)
        .map_or(complete_us, |d| d.at_us.clamp(op.invoke_us, complete_us));
    let window = timeline.window(op.invoke_us, Some(ret));
    let output = match (op.outcome, result) {
        (
            Outcome::Ok,
            OpResult::Granted {
                token,
                expiry_authority_us,
                ttl_us,
            },
        ) => LeaseOutput::Granted {
            token: *token,
            expiry_us: timeline.place_expiry(
                op.invoke_us,
                complete_us,
                *expiry_authority_us,
                *ttl_us,
                window,
            ),
            ttl_us: *ttl_us,
        },
        (Outcome::Ok, OpResult::Released {}) => LeaseOutput::Released,
        (Outcome::Fail, OpResult::Held { holder_token }) => LeaseOutput::Held {
            holder_token: *holder_token,
        },
        _ => return Fate::Dropped,
    };
    Fate::Recorded {
        output,
        ret: Some(ret),
    }
}
