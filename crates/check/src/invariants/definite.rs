//! DEFINITE — an operation reported `fail` did not take effect (Jepsen's `:fail`, a promise;
//! `info` is the outcome that may have, docs/checks.md#definite).
//!
//! Judged per `fail` op line, by kind:
//!
//! - a `journal_append` of event (writer id, `seq_in_writer`) or a `ledger_append` of record
//!   `r`: the event or record is not in the final ledger. A record is unique, so another
//!   append of the same one answered `ok` or `info` (a retry after a definite failure, an
//!   earlier try whose outcome was unknown) accounts for it, and the `fail` is not judged
//!   against it;
//! - a `lease_acquire`, `lease_renew` or `lease_release`, where the authority records its
//!   decisions: no decision in the call's favour (a grant for an acquire, a renew of the token
//!   presented, a release that ended the hold presented) answered it, i.e. was made inside its
//!   window for its owner while every call it can have answered (as
//!   [`super::cause_op`] matches them) was reported `fail`;
//! - a `kube_create`, `kube_update` or `kube_delete` (KubeLease, whose lease calls are the
//!   Lease API calls they make): the API server accepted no write of it — a `write` line inside
//!   its window with its verb, holder and `leaseTransitions`, after the write that produced the
//!   `resourceVersion` it was conditional on — unless another call of the same shape answered
//!   `ok` or `info` accounts for that write.
//!
//! A history with no `fail` op of these kinds says not judged.

use std::collections::BTreeMap;

use super::{Check, Evidence, InvariantReport, answers};
use leasesim_history::{
    Decision, DecisionLine, HistRecord, History, Op, OpLine, OpResult, Outcome, WriteLine,
    WriteVerb,
};

/// Checks DEFINITE over `history` (see the module documentation).
pub fn check(history: &History) -> InvariantReport {
    let mut report = InvariantReport::new(Check::Definite);
    check_appends(&mut report, history);
    check_lease_calls(&mut report, history);
    check_kube_writes(&mut report, history);
    if report.checks == 0 {
        report.why_not_judged = Some(
            "no journal, ledger, lease or Lease API write reported fail (with the lines that \
             judge it)"
                .to_string(),
        );
    }
    report
}

/// The records an append writes, as a test on a ledger record; `None` for another op.
fn appended_record(op: &Op) -> Option<Box<dyn Fn(&HistRecord) -> bool + '_>> {
    match op {
        Op::LedgerAppend { record, .. } => Some(Box::new(move |r: &HistRecord| r == record)),
        Op::JournalAppend {
            writer_id,
            seq_in_writer,
        } => Some(Box::new(move |r: &HistRecord| {
            matches!(r, HistRecord::Event { writer_id: w, seq_in_writer: s, .. }
                if w == writer_id && s == seq_in_writer)
        })),
        _ => None,
    }
}

/// Journal and ledger appends reported `fail`, against the final ledger.
fn check_appends(report: &mut InvariantReport, history: &History) {
    let ledger = history.final_ledger();
    let empty = Vec::new();
    for op in history.ops().filter(|op| op.outcome == Outcome::Fail) {
        let Some(writes) = appended_record(&op.op) else {
            continue;
        };
        report.checks += 1;
        let accounted = history.ops().any(|other| {
            other.id != op.id
                && other.session == op.session
                && other.outcome != Outcome::Fail
                && same_append(&other.op, &op.op)
        });
        if accounted {
            continue;
        }
        let seqs: Vec<u64> = ledger
            .get(&op.session)
            .unwrap_or(&empty)
            .iter()
            .filter(|(_, r)| writes(r))
            .map(|(seq, _)| *seq)
            .collect();
        if seqs.is_empty() {
            continue;
        }
        let mut evidence = vec![Evidence::Op(op.id)];
        evidence.extend(seqs.iter().map(|seq| Evidence::seq(&op.session, *seq)));
        report.violation(
            format!(
                "{}: op {} ({}) was reported fail ({}), a promise it did not take effect, but its \
                 record is in the final ledger at seq {seqs:?}",
                op.session,
                op.id,
                op.op.name(),
                result_name(op.result.as_ref()),
            ),
            evidence,
        );
    }
}

/// Whether two appends write the same record (the same ledger record; the same journal
/// event, by writer id and `seq_in_writer`).
fn same_append(a: &Op, b: &Op) -> bool {
    match (a, b) {
        (Op::LedgerAppend { record: x, .. }, Op::LedgerAppend { record: y, .. }) => x == y,
        (
            Op::JournalAppend {
                writer_id: w1,
                seq_in_writer: s1,
            },
            Op::JournalAppend {
                writer_id: w2,
                seq_in_writer: s2,
            },
        ) => w1 == w2 && s1 == s2,
        _ => false,
    }
}

/// The result's JSON `type`, for a message (`fenced`, `held`…).
fn result_name(result: Option<&OpResult>) -> String {
    result
        .and_then(|r| serde_json::to_value(r).ok())
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "no result".to_owned())
}

/// Whether `decision` took effect in its requester's favour, and the token it concerns when
/// the call presents one (a renew's, a release's).
fn favourable(decision: &Decision) -> Option<Option<u64>> {
    match decision {
        Decision::Grant { .. } => Some(None),
        Decision::Renew { token, .. } => Some(Some(*token)),
        Decision::Release { token, ended: true } => Some(Some(*token)),
        Decision::Release { ended: false, .. } | Decision::Refuse { .. } => None,
    }
}

/// The lease calls `decision` can have answered: those of its session, kind, owner (and token
/// presented) whose window holds it.
fn answered_by<'h>(history: &'h History, decision: &DecisionLine) -> Vec<&'h OpLine> {
    let token = favourable(&decision.decision).flatten();
    history
        .ops()
        .filter(|op| {
            op.session == decision.session
                && answers(&op.op, &decision.decision, &decision.owner)
                && op.invoke_us <= decision.at_us
                && op.complete_us.is_none_or(|done| done >= decision.at_us)
                && token.is_none_or(|t| presented(&op.op) == Some(t))
        })
        .collect()
}

/// The token a renew or release presents.
fn presented(op: &Op) -> Option<u64> {
    match op {
        Op::LeaseRenew { token, .. } | Op::LeaseRelease { token, .. } => Some(*token),
        _ => None,
    }
}

/// Lease calls reported `fail` against the authority's decisions.
fn check_lease_calls(report: &mut InvariantReport, history: &History) {
    if history.authority_host().is_none() || history.decisions().next().is_none() {
        return;
    }
    report.checks += history
        .ops()
        .filter(|op| op.outcome == Outcome::Fail && presented_or_acquire(&op.op))
        .count() as u64;
    for decision in history.decisions() {
        if favourable(&decision.decision).is_none() {
            continue;
        }
        let calls = answered_by(history, decision);
        if calls.is_empty() || calls.iter().any(|op| op.outcome != Outcome::Fail) {
            continue;
        }
        let call = calls[0];
        report.violation(
            format!(
                "{}: {}'s {} (op {}) was reported fail ({}), a promise it did not take effect, \
                 but the authority decided it in its favour",
                decision.session,
                call.process,
                call.op.name(),
                call.id,
                result_name(call.result.as_ref()),
            ),
            calls
                .iter()
                .map(|op| Evidence::Op(op.id))
                .chain([Evidence::decision(decision)])
                .collect(),
        );
    }
}

/// Whether `op` is a lease call.
fn presented_or_acquire(op: &Op) -> bool {
    matches!(
        op,
        Op::LeaseAcquire { .. } | Op::LeaseRenew { .. } | Op::LeaseRelease { .. }
    )
}

/// Lease API writes reported `fail` against the API server's accepted writes.
fn check_kube_writes(report: &mut InvariantReport, history: &History) {
    if history.writes().next().is_none() {
        return;
    }
    let mut by_session: BTreeMap<&str, Vec<&WriteLine>> = BTreeMap::new();
    for write in history.writes() {
        by_session.entry(&write.session).or_default().push(write);
    }
    for op in history.ops().filter(|op| op.outcome == Outcome::Fail) {
        if !is_kube_write(&op.op) {
            continue;
        }
        report.checks += 1;
        let writes = by_session.get(op.session.as_str()).map_or(&[][..], |w| w);
        let landed: Vec<&WriteLine> = (0..writes.len())
            .filter(|&i| wrote(op, writes, i))
            .filter(|&i| !accounted_write(history, op, writes, i))
            .map(|i| writes[i])
            .collect();
        let Some(first) = landed.first() else {
            continue;
        };
        report.violation(
            format!(
                "{}: {}'s {} (op {}) was reported fail ({}), a promise it did not take effect, \
                 but the API server accepted its write (rv {})",
                op.session,
                op.process,
                op.op.name(),
                op.id,
                result_name(op.result.as_ref()),
                first.resource_version
            ),
            vec![Evidence::Op(op.id), Evidence::write(first)],
        );
    }
}

/// Whether `op` writes a Lease object.
fn is_kube_write(op: &Op) -> bool {
    matches!(
        op,
        Op::KubeCreate { .. } | Op::KubeUpdate { .. } | Op::KubeDelete { .. }
    )
}

/// Whether `writes[i]` (one session's accepted writes, in order) can be `op`'s: inside its
/// window, of its verb, holder and `leaseTransitions`, and right after the write that produced
/// the `resourceVersion` it was conditional on.
fn wrote(op: &OpLine, writes: &[&WriteLine], i: usize) -> bool {
    let write = writes[i];
    let in_window =
        op.invoke_us <= write.at_us && op.complete_us.is_none_or(|done| write.at_us <= done);
    let previous = writes[..i]
        .iter()
        .rev()
        .find(|w| w.object == write.object)
        .map(|w| w.resource_version);
    let shape = match &op.op {
        Op::KubeCreate {
            holder_identity,
            transitions,
        } => {
            write.verb == WriteVerb::Create
                && write.holder_identity == *holder_identity
                && write.transitions == *transitions
        }
        Op::KubeUpdate {
            expected_rv,
            holder_identity,
            transitions,
        } => {
            write.verb == WriteVerb::Update
                && write.holder_identity == *holder_identity
                && write.transitions == *transitions
                && expected_rv.is_none_or(|rv| previous == Some(rv))
        }
        Op::KubeDelete { expected_rv } => {
            write.verb == WriteVerb::Delete
                && expected_rv.is_none_or(|rv| write.resource_version == rv)
        }
        _ => false,
    };
    in_window && shape
}

/// Whether another call than `op`, answered `ok` or `info`, can have made `writes[i]`.
fn accounted_write(history: &History, op: &OpLine, writes: &[&WriteLine], i: usize) -> bool {
    history.ops().any(|other| {
        other.id != op.id
            && other.session == op.session
            && other.outcome != Outcome::Fail
            && is_kube_write(&other.op)
            && wrote(other, writes, i)
    })
}

