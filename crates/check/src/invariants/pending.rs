//! LIVE's other half: work a replica still has is eventually run (docs/checks.md#live).
//!
//! LIVE's contention half judges a session only when somebody is turned away; a replica that
//! stops asking while it still has work turns nobody away. So the workload says what work a
//! replica has (`work` lines, docs/history.md#work), and this rule requires that a unit of work
//! still pending after the heal is settled within LIVE's bound from the later of the heal and
//! its take: its replica **holds the session** (an acquire of it by the same process answered
//! `ok`), **ends the work** (a `ran` or `dropped` line), or **ends its incarnation** (a crash
//! of its host, or any line of a later incarnation of the same replica). Otherwise the replica
//! gave up contending with its work pending: a violation, even when nobody else wants the
//! session. When the run ended before the bound ran out, the unit is inconclusive and not
//! counted as a check. A history without the heal marker or without `work` lines is not judged
//! by this rule.

use std::collections::BTreeMap;

use leasesim_history::time::seconds_us;
use leasesim_history::{History, NemesisAction, Op, OpLine, Outcome, Process, WorkLine, WorkState};

use super::{Evidence, InvariantReport};

/// Acquires a violation names as evidence at most (the last ones the process made).
const MAX_ACQUIRES_IN_EVIDENCE: usize = 5;

/// One unit of work: its take and, if any, its end.
struct Unit<'a> {
    /// The take.
    taken: &'a WorkLine,
    /// When it ended (`ran` or `dropped`), µs; `None`: never in the history.
    ended_us: Option<u64>,
}

/// The heal, LIVE's bound and the end of the run, µs: what every unit is judged against.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    /// The `faults_healed` marker.
    pub healed_us: u64,
    /// LIVE's bound ([`leasesim_history::ConfigLine::live_bound_us`]).
    pub bound_us: u64,
    /// The `run_ended` marker (0 when absent).
    pub ended_us: u64,
}

/// The units of work of `history`: each take paired with the next end line of the same
/// process and session.
fn units(history: &History) -> Vec<Unit<'_>> {
    let mut units = Vec::new();
    let mut open: BTreeMap<(&Process, &str), usize> = BTreeMap::new();
    for line in history.work() {
        let key = (&line.process, line.session.as_str());
        match line.state {
            WorkState::Taken => {
                open.insert(key, units.len());
                units.push(Unit {
                    taken: line,
                    ended_us: None,
                });
            }
            WorkState::Ran | WorkState::Dropped => {
                if let Some(index) = open.remove(&key) {
                    units[index].ended_us = Some(line.at_us);
                }
            }
        }
    }
    units
}

/// Judges every unit of work still pending at the heal or taken after it into `report` (one
/// check each, when its bound ran out before the run ended).
pub fn check_pending(history: &History, span: Span, report: &mut InvariantReport) {
    for unit in units(history) {
        let start_us = unit.taken.at_us.max(span.healed_us);
        if unit.ended_us.is_some_and(|ended| ended <= start_us) {
            continue;
        }
        let deadline_us = start_us + span.bound_us;
        let settled = unit.ended_us.is_some_and(|ended| ended <= deadline_us)
            || held(history, unit.taken, deadline_us)
            || incarnation_ended(history, unit.taken, deadline_us);
        if settled {
            report.checks += 1;
        } else if span.ended_us >= deadline_us {
            report.checks += 1;
            let process = &unit.taken.process;
            report.violation(
                format!(
                    "{}: {process} took work for it at {} and neither held it, ended the work \
                     nor ended by {} (bound {} from {}): it stopped contending with its work \
                     pending",
                    unit.taken.session,
                    seconds_us(unit.taken.at_us),
                    seconds_us(deadline_us),
                    seconds_us(span.bound_us),
                    seconds_us(start_us),
                ),
                last_acquires(history, unit.taken, deadline_us),
            );
        }
    }
}

/// The acquires of the work's session by its process invoked from the take to
/// `deadline_us`, in history order.
fn acquires<'a>(
    history: &'a History,
    taken: &'a WorkLine,
    deadline_us: u64,
) -> impl Iterator<Item = &'a OpLine> {
    history.ops().filter(move |op| {
        op.process == taken.process
            && op.session == taken.session
            && matches!(op.op, Op::LeaseAcquire { .. })
            && (taken.at_us..=deadline_us).contains(&op.invoke_us)
    })
}

/// The evidence of a violation: the last [`MAX_ACQUIRES_IN_EVIDENCE`] [`acquires`] (none
/// when the process never asked again).
fn last_acquires(history: &History, taken: &WorkLine, deadline_us: u64) -> Vec<Evidence> {
    let all: Vec<Evidence> = acquires(history, taken, deadline_us)
        .map(|op| Evidence::Op(op.id))
        .collect();
    let skip = all.len().saturating_sub(MAX_ACQUIRES_IN_EVIDENCE);
    all.into_iter().skip(skip).collect()
}

/// Whether the work's process got the session's lease after the take, by `deadline_us`.
fn held(history: &History, taken: &WorkLine, deadline_us: u64) -> bool {
    acquires(history, taken, deadline_us)
        .any(|op| op.outcome == Outcome::Ok && op.complete_us.is_some_and(|c| c <= deadline_us))
}

/// Whether the work's incarnation ended after the take, by `deadline_us`: its host crashed,
/// or a later incarnation of the same replica left a line.
fn incarnation_ended(history: &History, taken: &WorkLine, deadline_us: u64) -> bool {
    let process = &taken.process;
    let window = taken.at_us..=deadline_us;
    let later = |other: &Process, at_us: u64| {
        other.replica == process.replica
            && other.incarnation > process.incarnation
            && at_us <= deadline_us
    };
    history.nemesis_actions().any(|n| {
        n.action == NemesisAction::Crash && n.host == process.replica && window.contains(&n.at_us)
    }) || history.ops().any(|op| later(&op.process, op.invoke_us))
        || history.work().any(|w| later(&w.process, w.at_us))
}
