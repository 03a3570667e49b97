//! LIVE — once faults heal, each contended session is held by a live replica that appends
//! within TTL + grace period (if the authority restarted) + 3 renew intervals + the longest
//! reconnect backoff.
//!
//! The window starts at the `faults_healed` marker; the bound comes from the config line. A
//! session is judged only if it is contended after the heal: some replica invokes an
//! operation on it (an acquire, an open, an append…) at least one renew interval before the
//! deadline (a session no replica wants, or wants only at the very end, says nothing about
//! liveness). A judged session passes when an acknowledged `journal_append` on it completes
//! within the bound, or when its live holder hands it back (a release that ended the hold)
//! and no acquire of it is refused after that within the bound. A history without the marker is not judged; when the run ended before
//! the bound ran out, a session without such an append is inconclusive and not counted as a
//! check (a plain `leasesim run` of 60 s heals at 40 s, before a 32 s bound can run out;
//! scenario runs with a generated workload add a liveness phase so the bound always runs
//! out).

use super::{AUTHORITY_HOST, Invariant, InvariantReport};
use crate::history::{Decision, History, Op, OpResult, Outcome, Phase, Request};

/// Whether the session was handed back within the window and nobody was turned away after:
/// a live holder that had nothing more to write released it (`ended`), and no acquire of it
/// was refused later in the window. A session stuck with a holder that neither writes nor
/// releases (a zombie) never passes this way.
fn handed_back(history: &History, session: &str, from_us: u64, to_us: u64) -> bool {
    let in_window = |at: u64| at >= from_us && at <= to_us;
    let Some(released_at) = history
        .decisions()
        .filter(|d| d.session == session && in_window(d.at_us))
        .filter(|d| matches!(d.decision, Decision::Release { ended: true, .. }))
        .map(|d| d.at_us)
        .last()
    else {
        return false;
    };
    !history.decisions().any(|d| {
        d.session == session
            && in_window(d.at_us)
            && d.at_us > released_at
            && matches!(
                d.decision,
                Decision::Refuse {
                    request: Request::Acquire,
                    ..
                }
            )
    })
}

/// Checks LIVE over `history`.
pub fn check(history: &History) -> InvariantReport {
    let mut report = InvariantReport::new(Invariant::Live);
    let (Ok(config), Some(healed)) = (history.config(), history.phase_at_us(Phase::FaultsHealed))
    else {
        return report;
    };
    let restarted = history
        .clock_segments()
        .any(|segment| segment.host == AUTHORITY_HOST && segment.boot > 0);
    let bound = config.live_bound_us(restarted);
    let deadline = healed + bound;
    let ended = history.phase_at_us(Phase::RunEnded).unwrap_or(0);
    let wanted_until = deadline.saturating_sub(config.renew_interval_us);
    for session in &config.sessions {
        let contended = history.ops().any(|op| {
            &op.session == session && op.invoke_us >= healed && op.invoke_us <= wanted_until
        });
        if !contended {
            continue;
        }
        let appended = history.ops().any(|op| {
            &op.session == session
                && op.outcome == Outcome::Ok
                && matches!(op.op, Op::JournalAppend { .. })
                && matches!(op.result, Some(OpResult::Appended { .. }))
                && op.complete_us.is_some_and(|c| c >= healed && c <= deadline)
        });
        if appended || handed_back(history, session, healed, deadline) {
            report.checks += 1;
        } else if ended >= deadline {
            report.checks += 1;
            report.violation(
                format!(
                    "{session}: no acknowledged journal append between the heal at {healed}us and {deadline}us (bound {bound}us)"
                ),
                Vec::new(),
            );
        }
    }
    report
}
