//! TOKEN — per session, every takeover grant's token exceeds every earlier grant's; a renew or
//! a live same-owner re-acquire keeps the token it had.
//!
//! Judged from the decision lines, per session in true-time order. A grant to the owner whose
//! hold is still live (unexpired on the authority's clock, not released; see [`super::excl`]
//! for how expiry is judged across restarts) is a re-acquire and must return the same token;
//! any other grant is a takeover and its token must exceed every token granted before. A
//! renew must carry the token of the current hold of its owner.
//!
//! # On `leaseTransitions` (a backend without an authority clock: KubeLease)
//!
//! Used when the config names no authority (`authority: null`) or the history has `write`
//! lines. The token is the Lease object's `leaseTransitions` (docs/backends.md#kubelease), and the
//! API server's accepted writes are the decisions. Per session, in acceptance order:
//!
//! - `leaseTransitions` never decreases across accepted writes: a create or update must not
//!   carry fewer transitions than any earlier write of the session (a delete is skipped: it
//!   removes the value). A delete followed by a create that starts again from 1 (the
//!   `delete-on-release` mutant, scenario K2) is a violation; evidence: the earlier write with
//!   the higher value and the offending one.
//! - A write that changes `holderIdentity` to a different non-empty holder (from another
//!   holder, from `""` after a release, or onto an absent object) is a takeover: it must raise
//!   `leaseTransitions` above every earlier value. Two holders with one value (scenario K1's
//!   unconditional update, the `update-without-resource-version` mutant) is a violation.
//!
//! - A takeover after expiry must raise `leaseTransitions` even for the same owner
//!   (docs/contracts.md#tokens). A write that keeps the previous write's holder P and value
//!   (a renew or a live re-acquire of P) is a violation when P decided it after its own lease
//!   had expired **by its own observation** (docs/backends.md#kubelease): P saw the previous
//!   write no later than the completion of its `ok` acquire or renew that made it, and counts
//!   `leaseDurationSeconds` (the config's TTL) on its own monotonic clock from then; so when
//!   the keeping write's acquire or renew was invoked at least a TTL (+1 µs for rounding) after
//!   that completion on P's clock, a correct P would have judged its hold expired, refused the
//!   renew, and taken the session over with `+1` (the `expired-reacquire-keeps-transitions`
//!   mutant keeps it). Each write is tied to the one call of P in flight when the server
//!   accepted it; a write no single call of P spans, or a previous write made by a call whose
//!   outcome is unknown (P may first have seen it later, by a read), is not judged.
//!
//! And on the holders' op lines:
//!
//! - a `lease_renew` that returned ok must return the token it presented (a token that moves
//!   without a takeover: the `transitions-bumped-on-renew` mutant);
//! - a live same-owner re-acquire keeps the token: an ok `lease_acquire` of P invoked inside
//!   one of P's own validity windows (see [`super::holders`]: P's lease was live on P's clock,
//!   not released, no renew answered held) must return that window's token.

use super::excl::Hold;
use super::holders::{Clocks, parse_holder, windows};
use super::stop::Margin;
use super::{
    AuthorityClock, Check, Evidence, InvariantReport, caller, decision_evidence,
    decisions_by_session, who,
};
use leasesim_history::time::seconds_us;
use leasesim_history::{
    Decision, DecisionLine, History, Op, OpLine, OpResult, Outcome, Process, WriteLine, WriteVerb,
};

/// Whether TOKEN (and EXPIRY) judge `history` on `leaseTransitions`: the config names no
/// authority, or the history has write lines.
pub(crate) fn on_transitions(history: &History) -> bool {
    history.authority_host().is_none() || history.writes().next().is_some()
}

/// Checks TOKEN over `history`: on the decision lines, or on `leaseTransitions` for a backend
/// without an authority clock (see the module documentation).
pub fn check(history: &History) -> InvariantReport {
    if on_transitions(history) {
        return check_transitions(history);
    }
    let mut report = InvariantReport::new(Check::Token);
    let clock = AuthorityClock::new(history);
    for (session, decisions) in decisions_by_session(history) {
        let mut hold: Option<Hold> = None;
        let mut highest: Option<(u64, &DecisionLine)> = None;
        for decision in decisions {
            match &decision.decision {
                Decision::Grant { token, .. } => {
                    report.checks += 1;
                    let live_same = hold.as_ref().filter(|held| {
                        held.owner == decision.owner && held.live_at(&clock, decision)
                    });
                    judge_grant(
                        &mut report,
                        history,
                        &session,
                        live_same,
                        highest,
                        decision,
                        *token,
                    );
                    if highest.is_none_or(|(top, _)| *token > top) {
                        highest = Some((*token, decision));
                    }
                }
                Decision::Renew { token, .. } => {
                    report.checks += 1;
                    judge_renew(
                        &mut report,
                        history,
                        &session,
                        hold.as_ref(),
                        decision,
                        *token,
                    );
                    if highest.is_none_or(|(top, _)| *token > top) {
                        highest = Some((*token, decision));
                    }
                }
                Decision::Release { .. } | Decision::Refuse { .. } => {}
            }
            Hold::follow(&mut hold, decision);
        }
    }
    report
}

/// TOKEN on one grant: a live re-acquire (`live_same`, the caller's own live hold) keeps its
/// token; any other grant is a takeover, whose token must be above the `highest` granted before.
fn judge_grant(
    report: &mut InvariantReport,
    history: &History,
    session: &str,
    live_same: Option<&Hold>,
    highest: Option<(u64, &DecisionLine)>,
    decision: &DecisionLine,
    token: u64,
) {
    if let Some(held) = live_same {
        if held.token != token {
            report.violation(
                format!(
                    "{session}: {}, a live re-acquire, changed its token from {} (granted to {}) to {token}",
                    caller(history, decision),
                    held.token,
                    caller(history, held.set_by)
                ),
                [
                    decision_evidence(history, held.set_by),
                    decision_evidence(history, decision),
                ]
                .concat(),
            );
        }
    } else if let Some((top, by)) = highest
        && token <= top
    {
        report.violation(
            format!(
                "{session}: {} took the session over with token {token}, not above token {top} granted earlier to {}",
                caller(history, decision),
                caller(history, by)
            ),
            [
                decision_evidence(history, by),
                decision_evidence(history, decision),
            ]
            .concat(),
        );
    }
}

/// TOKEN on one renew: it carries the token of the caller's current `hold`.
fn judge_renew(
    report: &mut InvariantReport,
    history: &History,
    session: &str,
    hold: Option<&Hold>,
    decision: &DecisionLine,
    token: u64,
) {
    if hold.is_some_and(|held| held.owner == decision.owner && held.token == token) {
        return;
    }
    let mut evidence: Vec<Evidence> = hold.iter().map(|h| Evidence::decision(h.set_by)).collect();
    evidence.extend(decision_evidence(history, decision));
    report.violation(
        format!(
            "{session}: {} was granted token {token}, not the token of its current hold{}",
            caller(history, decision),
            hold.map(|h| format!(" ({}'s token {})", who(&h.owner), h.token))
                .unwrap_or_default()
        ),
        evidence,
    );
}

/// TOKEN on `leaseTransitions` (see the module documentation).
fn check_transitions(history: &History) -> InvariantReport {
    let mut report = InvariantReport::new(Check::Token);
    let mut by_session: std::collections::BTreeMap<&str, Vec<&WriteLine>> = Default::default();
    for write in history.writes() {
        by_session.entry(&write.session).or_default().push(write);
    }
    for (session, writes) in by_session {
        judge_writes(&mut report, session, &writes);
    }
    judge_renews(&mut report, history);
    judge_reacquires(&mut report, history);
    judge_kept_after_expiry(&mut report, history);
    if report.checks == 0 {
        report.why_not_judged =
            Some("no write lines and no successful renew or re-acquire".to_string());
    }
    report
}

/// One session's accepted writes, in acceptance order.
fn judge_writes(report: &mut InvariantReport, session: &str, writes: &[&WriteLine]) {
    let mut highest: Option<&WriteLine> = None;
    let mut holder = "";
    for &write in writes {
        if write.verb == WriteVerb::Delete {
            holder = "";
            continue;
        }
        report.checks += 1;
        let takeover = !write.holder_identity.is_empty() && write.holder_identity != holder;
        if let Some(top) = highest {
            if write.transitions < top.transitions {
                report.violation(
                    format!(
                        "{session}: leaseTransitions went down from {} to {} (rv {} to rv {})",
                        top.transitions,
                        write.transitions,
                        top.resource_version,
                        write.resource_version
                    ),
                    vec![Evidence::write(top), Evidence::write(write)],
                );
            } else if takeover && write.transitions == top.transitions {
                report.violation(
                    format!(
                        "{session}: a takeover by {:?} kept leaseTransitions {}, not above the earlier value (held by {:?} at rv {})",
                        write.holder_identity,
                        write.transitions,
                        top.holder_identity,
                        top.resource_version
                    ),
                    vec![Evidence::write(top), Evidence::write(write)],
                );
            }
        }
        if highest.is_none_or(|top| write.transitions > top.transitions) {
            highest = Some(write);
        }
        holder = &write.holder_identity;
    }
}

/// A renew that returned ok returns the token it presented.
fn judge_renews(report: &mut InvariantReport, history: &History) {
    for op in history.ops() {
        if let (
            Op::LeaseRenew { token, .. },
            Outcome::Ok,
            Some(OpResult::Granted { token: got, .. }),
        ) = (&op.op, op.outcome, &op.result)
        {
            report.checks += 1;
            if got != token {
                report.violation(
                    format!(
                        "{}: {}'s renew at {} (op {}) presented token {token} and was granted token {got}",
                        op.session,
                        who(&op.process),
                        seconds_us(op.invoke_us),
                        op.id
                    ),
                    vec![Evidence::Op(op.id)],
                );
            }
        }
    }
}

/// An ok acquire inside one of its caller's own live windows keeps that window's token.
fn judge_reacquires(report: &mut InvariantReport, history: &History) {
    let margin = history.config().map_or(Margin::NONE, Margin::new);
    let clocks = Clocks::new(history);
    let windows = windows(history, &clocks, margin);
    for op in history.ops() {
        let (Op::LeaseAcquire { .. }, Outcome::Ok, Some(OpResult::Granted { token, .. })) =
            (&op.op, op.outcome, &op.result)
        else {
            continue;
        };
        let live =
            windows.get(&op.session).into_iter().flatten().rfind(|w| {
                w.op.id != op.id && w.process() == &op.process && w.contains(op.invoke_us)
            });
        let Some(live) = live else {
            continue;
        };
        report.checks += 1;
        if live.token != *token {
            report.violation(
                format!(
                    "{}: {}'s acquire at {} (op {}), a live re-acquire inside its window from op {}, changed its token from {} to {token}",
                    op.session,
                    who(&op.process),
                    seconds_us(op.invoke_us),
                    op.id,
                    live.op.id,
                    live.token
                ),
                vec![
                    live.evidence(),
                    Evidence::Op(live.op.id),
                    Evidence::Op(op.id),
                ],
            );
        }
    }
}

/// A write keeping its holder and `leaseTransitions` must be decided before that holder's own
/// lease expired by its observation (see the module documentation).
fn judge_kept_after_expiry(report: &mut InvariantReport, history: &History) {
    let Ok(config) = history.config() else { return };
    let ttl_us = config.ttl_us;
    let calls = lease_calls(history);
    let mut previous: std::collections::BTreeMap<&str, &WriteLine> = Default::default();
    for write in history.writes() {
        let Some(before) = previous.insert(&write.session, write) else {
            continue;
        };
        let kept = write.verb == WriteVerb::Update
            && before.verb != WriteVerb::Delete
            && !write.holder_identity.is_empty()
            && write.holder_identity == before.holder_identity
            && write.transitions == before.transitions;
        let Some(holder) = kept.then(|| parse_holder(&write.holder_identity)).flatten() else {
            continue;
        };
        let Some(own) = calls.get(&(write.session.as_str(), holder)) else {
            continue;
        };
        let (Some(made), Some(decided)) = (
            only_call_spanning(own, before),
            only_call_spanning(own, write),
        ) else {
            continue;
        };
        let (Outcome::Ok, Some(seen_local_us)) = (made.outcome, made.complete_local_us) else {
            continue;
        };
        report.checks += 1;
        if decided.invoke_local_us > seen_local_us + ttl_us {
            report.violation(
                format!(
                    "{}: {} kept leaseTransitions {} at rv {} (op {}, invoked at {} on its clock), a TTL ({}) after it saw its own write at rv {} (op {}, done at {}): a takeover after its own expiry must raise it",
                    write.session,
                    write.holder_identity,
                    write.transitions,
                    write.resource_version,
                    decided.id,
                    seconds_us(decided.invoke_local_us),
                    seconds_us(ttl_us),
                    before.resource_version,
                    made.id,
                    seconds_us(seen_local_us),
                ),
                vec![
                    Evidence::write(before),
                    Evidence::Op(made.id),
                    Evidence::Op(decided.id),
                    Evidence::write(write),
                ],
            );
        }
    }
}

/// Every process's acquires and renews, per session.
fn lease_calls(history: &History) -> std::collections::BTreeMap<(&str, Process), Vec<&OpLine>> {
    let mut calls: std::collections::BTreeMap<(&str, Process), Vec<&OpLine>> = Default::default();
    for op in history.ops() {
        if matches!(op.op, Op::LeaseAcquire { .. } | Op::LeaseRenew { .. }) {
            calls
                .entry((op.session.as_str(), op.process.clone()))
                .or_default()
                .push(op);
        }
    }
    calls
}

/// The one call of `calls` in flight when the server accepted `write`, if exactly one was.
fn only_call_spanning<'h>(calls: &[&'h OpLine], write: &WriteLine) -> Option<&'h OpLine> {
    let mut spanning = calls.iter().copied().filter(|op| {
        op.invoke_us <= write.at_us && op.complete_us.is_none_or(|done| write.at_us <= done)
    });
    let call = spanning.next()?;
    spanning.next().is_none().then_some(call)
}
