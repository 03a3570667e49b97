//! LIVE — once faults heal, each contended session is held by a live replica that appends
//! within TTL + grace period (if the authority restarted) + 3 renew intervals + the longest
//! reconnect backoff; and, over the whole run, no grace refusal comes after a TTL of the
//! authority's accumulated uptime since its newest grant (the grace rule, [`super::grace`]).
//!
//! The window starts at the `faults_healed` marker; the bound comes from the config line. A
//! session is judged only if some replica is still turned away late in the window: an
//! acquire of it fails (refused, unavailable, or no answer) after every lease from before the
//! heal has run out (TTL, plus the grace period if the authority restarted, plus one renew
//! interval) and before the deadline. A session nobody wants, or that a replica wanted while
//! an old lease was still running out and then left alone, says nothing about liveness (the
//! generated workload picks sessions at random and thinks between runs). A judged session
//! passes when an acknowledged `journal_append` on it completes within the bound, or when its
//! live holder hands it back (a release that ended the hold) and no acquire of it is refused
//! after that within the bound. A history without the marker is not judged; when the run ended
//! before the bound ran out, a session without such an append is inconclusive and not counted
//! as a check (a plain `leasesim run` of 60 s heals at 40 s, before a 32 s bound can run out;
//! scenario runs with a generated workload add a liveness phase so the bound always runs out).
//!
//! # For a backend whose expiry is observed by candidates (`authority: null`: KubeLease)
//!
//! The bound is TTL + 3 renew intervals + the longest reconnect backoff, with a grace period
//! of 0: the TTL term is the candidate's observation (it counts `leaseDurationSeconds` on its
//! own clock from the last change it saw), and an API server restart adds no grace, since the
//! holders, not the server, judge expiry ([`crate::history::ConfigLine::live_bound_us`] with no authority
//! restart: the config names no authority host whose restarts could count). When nobody has
//! written the object since the heal, a refusal judges the session only once its candidate has
//! watched the object's current version for a TTL and a renew interval ([`still_counting`]):
//! a candidate that first looks at the object late in the window, or cannot reach the API
//! server until then, is rightly refused until its own count runs out (kube-swarm-deletion
//! seed 11: replica-2's first look at 39 s after a heal at 24 s; seed 38: replica-3
//! partitioned from the API server until the heal, its first read after the last renew at
//! 44 s). There are no decision lines, so a hand-back is read from the API server's accepted writes: a release
//! write (an update leaving `holderIdentity` `""`, or a delete) in the window, after which no
//! `lease_acquire` of the session was answered `held`.

use super::{Check, Evidence, InvariantReport};
use crate::history::{Decision, History, Op, OpLine, OpResult, Outcome, Phase, Request, WriteVerb};
use crate::time::seconds_us;

/// Whether the session was handed back within the window and nobody was turned away after:
/// a live holder that had nothing more to write released it (`ended`), and no acquire of it
/// was refused later in the window. A session stuck with a holder that neither writes nor
/// releases (a zombie) never passes this way.
fn handed_back(history: &History, session: &str, from_us: u64, to_us: u64) -> bool {
    if history.authority_host().is_none() {
        return handed_back_by_write(history, session, from_us, to_us);
    }
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

/// [`handed_back`] for a backend without an authority clock: the last release write of the
/// session in the window (empty holder, or a delete), and no acquire answered `held` after it.
fn handed_back_by_write(history: &History, session: &str, from_us: u64, to_us: u64) -> bool {
    let in_window = |at: u64| at >= from_us && at <= to_us;
    let Some(released_at) = history
        .writes()
        .filter(|w| w.session == session && in_window(w.at_us))
        .filter(|w| w.verb == WriteVerb::Delete || w.holder_identity.is_empty())
        .map(|w| w.at_us)
        .last()
    else {
        return false;
    };
    !history.ops().any(|op| {
        op.session == session
            && matches!(op.op, Op::LeaseAcquire { .. })
            && matches!(op.result, Some(OpResult::Held { .. }))
            && op.invoke_us > released_at
            && in_window(op.invoke_us)
    })
}

/// For a backend whose expiry is observed by candidates: whether `refused` is only its
/// candidate still counting down an object nobody writes any more. A candidate counts
/// `leaseDurationSeconds` from its own first sight of a version (client-go's rule), so one that
/// first sees it late in the window, or could not reach the API server until then, is rightly
/// turned away for a TTL more: the refusal says nothing about the session until a TTL and a
/// renew interval (`wait_us`) after the first of its reads, invoked after the object's last
/// accepted write, that brought the object back. An object written since the heal has a
/// holder that is still writing (renewing, perhaps as a zombie): a refusal then counts at once.
fn still_counting(history: &History, refused: &OpLine, healed_us: u64, wait_us: u64) -> bool {
    let changed = history
        .writes()
        .filter(|w| w.session == refused.session && w.at_us < refused.invoke_us)
        .map(|w| w.at_us)
        .max();
    if changed.is_some_and(|at| at >= healed_us) {
        return false;
    }
    let changed = changed.unwrap_or(0);
    let first_sight = history
        .ops()
        .filter(|op| {
            op.session == refused.session
                && op.process == refused.process
                && matches!(op.op, Op::KubeGet {})
                && matches!(op.result, Some(OpResult::KubeObject { .. }))
                && op.invoke_us >= changed
        })
        .filter_map(|op| op.complete_us)
        .min()
        .unwrap_or(refused.invoke_us);
    refused.invoke_us <= first_sight + wait_us
}

/// Refused acquires a LIVE violation names as evidence at most (the first, in history
/// order): a replica retrying all window long would ring the timeline end to end.
const MAX_REFUSALS_IN_EVIDENCE: usize = 5;

/// Checks LIVE over `history`. A violation's evidence is the acquires of the session turned
/// away late in the window (`op N`, as the other checks name op lines), the first
/// [`MAX_REFUSALS_IN_EVIDENCE`] of them.
pub fn check(history: &History) -> InvariantReport {
    let mut report = InvariantReport::new(Check::Live);
    super::grace::check_grace(history, &mut report);
    let (Ok(config), Some(healed)) = (history.config(), history.phase_at_us(Phase::FaultsHealed))
    else {
        return report;
    };
    let restarted = history
        .clock_segments()
        .any(|segment| Some(segment.host.as_str()) == history.authority_host() && segment.boot > 0);
    let bound = config.live_bound_us(restarted);
    let deadline = healed + bound;
    let ended = history.phase_at_us(Phase::RunEnded).unwrap_or(0);
    // Every lease from before the heal has run out by then (and a restarted authority's
    // grace with it); one renew interval more lets a waiting acquirer try again.
    let settled = healed
        + config.ttl_us
        + if restarted { config.grace_period_us } else { 0 }
        + config.renew_interval_us;
    // Candidates that count expiry by watching Lease objects (KubeLease) read them with
    // `kube_get`; a backend without an authority clock and without those reads (FlockLease:
    // the kernel frees a dead holder's lock) has no observation to wait for.
    let observed = history.authority_host().is_none()
        && history.ops().any(|op| matches!(op.op, Op::KubeGet {}));
    for session in &config.sessions {
        // The acquires turned away late in the window: what judges the session, and the
        // evidence of a violation (the timeline rings them).
        let turned_away: Vec<&OpLine> = history
            .ops()
            .filter(|op| {
                &op.session == session
                    && matches!(op.op, Op::LeaseAcquire { .. })
                    && op.outcome != Outcome::Ok
                    && op.invoke_us > settled
                    && op.invoke_us <= deadline
                    && !(observed
                        && still_counting(
                            history,
                            op,
                            healed,
                            config.ttl_us + config.renew_interval_us,
                        ))
            })
            .collect();
        if turned_away.is_empty() {
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
                    "{session}: no acknowledged journal append between the heal at {} and {} (bound {})",
                    seconds_us(healed),
                    seconds_us(deadline),
                    seconds_us(bound)
                ),
                turned_away
                    .iter()
                    .take(MAX_REFUSALS_IN_EVIDENCE)
                    .map(|op| Evidence::Op(op.id))
                    .collect(),
            );
        }
    }
    report
}
