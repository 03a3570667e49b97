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
//! holders, not the server, judge expiry ([`leasesim_history::ConfigLine::live_bound_us`] with no authority
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
//!
//! A candidate's count is its incarnation's (docs/checks.md#live-for-observed-expiry): a
//! restart forgets it, and the next incarnation
//! counts again from its own first look (client-go's rule; no incarnation can know how long
//! the object went unchanged before it looked, since comparing `renewTime` with its own wall
//! clock is the `expiry-from-renew-time` mutant). So while the replicas restart faster than a
//! TTL (a generated workload's graceful shutdowns go on after the heal) nobody can take a
//! dead holder's object over: that is the observation rule's own liveness limit, not a fault
//! of the run. Unless its holder renewed the object after the heal ([`renewed_since`]: a
//! live holder, perhaps a zombie, that no watching can get past), the bound therefore counts
//! from the later of the heal and the first look of the first incarnation that still calls
//! on the session a TTL and a renew interval after it ([`watched_from`];
//! kube-swarm-slow-holders seed 2080: the holder died at 16.9 s; after the heal at 24 s the
//! replicas restarted every 1–8 s, and `replica-2#9`, the first to stay up a TTL from its
//! first look at 35.5 s, took s1 over at 45.6 s, 0.4 s before the run ended). A session no
//! incarnation watched that long before the run ended is not judged.
//!
//! # Work still pending ([`super::pending`])
//!
//! The other half: a replica with pending work for a session (a `work` line `taken` with no
//! end yet, docs/history.md#work) holds the session, ends the work or ends its incarnation
//! within the bound from the later of the heal and the take, even when nobody else wants the
//! session; a run that ended before that is inconclusive for the unit.

use std::collections::BTreeMap;

use super::{Check, Evidence, InvariantReport};
use leasesim_history::time::seconds_us;
use leasesim_history::{
    Decision, History, Op, OpLine, OpResult, Outcome, Phase, Process, Request, WriteVerb,
};

/// Whether the session was handed back within the window and nobody was turned away after:
/// a live holder that had nothing more to write released it (`ended`), and no acquire of it
/// was refused later in the window. A session stuck with a holder that neither writes nor
/// releases (a zombie) never passes this way.
fn handed_back(history: &History, session: &str, from_us: u64, to_us: u64) -> bool {
    let (releases, refusals) = if history.authority_host().is_some() {
        decided(history, session)
    } else {
        written(history, session)
    };
    let in_window = |at: &u64| (from_us..=to_us).contains(at);
    let Some(released_at) = releases.into_iter().rfind(in_window) else {
        return false;
    };
    !refusals
        .into_iter()
        .any(|at| in_window(&at) && at > released_at)
}

/// The authority's decisions on `session`: when it ended a hold on a release, and when it
/// refused an acquire (µs, in history order).
fn decided(history: &History, session: &str) -> (Vec<u64>, Vec<u64>) {
    let decisions = || history.decisions().filter(|d| d.session == session);
    let releases = decisions()
        .filter(|d| matches!(d.decision, Decision::Release { ended: true, .. }))
        .map(|d| d.at_us)
        .collect();
    let refusals = decisions()
        .filter(|d| {
            matches!(
                d.decision,
                Decision::Refuse {
                    request: Request::Acquire,
                    ..
                }
            )
        })
        .map(|d| d.at_us)
        .collect();
    (releases, refusals)
}

/// [`decided`] for a backend without an authority clock: the release writes of `session`
/// (empty holder, or a delete), and the invocations of its acquires answered `held` (µs, in
/// history order).
fn written(history: &History, session: &str) -> (Vec<u64>, Vec<u64>) {
    let releases = history
        .writes()
        .filter(|w| w.session == session)
        .filter(|w| w.verb == WriteVerb::Delete || w.holder_identity.is_empty())
        .map(|w| w.at_us)
        .collect();
    let refusals = history
        .ops()
        .filter(|op| op.session == session && matches!(op.op, Op::LeaseAcquire { .. }))
        .filter(|op| matches!(op.result, Some(OpResult::Held { .. })))
        .map(|op| op.invoke_us)
        .collect();
    (releases, refusals)
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

/// LIVE's window for one session: from the heal (or, for a backend whose expiry is observed
/// by candidates, the first look of a watcher that stays up: [`watched_from`]) to the
/// deadline, and when refusals in it start to count.
struct Window {
    /// The heal, µs (appends count from here).
    healed_us: u64,
    /// Where the bound counts from, µs: the heal, or a watcher's first look after it.
    start_us: u64,
    /// Refused acquires count after this, µs: every lease from before the window has run out.
    settled_us: u64,
    /// The end of the window, µs.
    deadline_us: u64,
}

/// What judges every session of one history: the heal, the bound, and how expiry is judged.
struct Setting {
    healed_us: u64,
    bound_us: u64,
    ended_us: u64,
    ttl_us: u64,
    renew_interval_us: u64,
    /// Every lease from before the heal has run out this long after it (TTL, the grace
    /// period if the authority restarted, one renew interval for a waiting acquirer to try
    /// again).
    settle_us: u64,
    /// Candidates count expiry by watching Lease objects (KubeLease reads them with
    /// `kube_get`); a backend without an authority clock and without those reads (FlockLease:
    /// the kernel frees a dead holder's lock) has no observation to wait for.
    observed: bool,
}

impl Setting {
    fn of(history: &History) -> Option<Setting> {
        let (Ok(config), Some(healed_us)) =
            (history.config(), history.phase_at_us(Phase::FaultsHealed))
        else {
            return None;
        };
        let restarted = history.clock_segments().any(|segment| {
            Some(segment.host.as_str()) == history.authority_host() && segment.boot > 0
        });
        Some(Setting {
            healed_us,
            bound_us: config.live_bound_us(restarted),
            ended_us: history.phase_at_us(Phase::RunEnded).unwrap_or(0),
            ttl_us: config.ttl_us,
            renew_interval_us: config.renew_interval_us,
            settle_us: config.ttl_us
                + if restarted { config.grace_period_us } else { 0 }
                + config.renew_interval_us,
            observed: history.authority_host().is_none()
                && history.ops().any(|op| matches!(op.op, Op::KubeGet {})),
        })
    }

    /// How long a candidate watches an object it first sees before its count can have run
    /// out and an acquire tried again, µs (a TTL on its own clock, inside the skew margin, and
    /// a renew interval).
    fn watch_us(&self) -> u64 {
        self.ttl_us + self.renew_interval_us
    }

    /// `session`'s window, or `None` when no candidate stayed up to watch its object for a
    /// whole [`Setting::watch_us`] (observed expiry only): nothing could take it over.
    fn window(&self, history: &History, session: &str) -> Option<Window> {
        let start_us = if self.observed && !renewed_since(history, session, self.healed_us) {
            watched_from(history, session, self.healed_us, self.watch_us())?.max(self.healed_us)
        } else {
            self.healed_us
        };
        let settle_us = if self.observed {
            self.watch_us()
        } else {
            self.settle_us
        };
        Some(Window {
            healed_us: self.healed_us,
            start_us,
            settled_us: start_us + settle_us,
            deadline_us: start_us + self.bound_us,
        })
    }
}

/// Whether `session`'s object was renewed at or after the heal: written with the holder it
/// already had (or, as its first write, with any holder), rather than taken over by a new
/// one. Its holder is then alive and still writing (perhaps as a zombie that renews without
/// appending): the session is stuck on it however the candidates watch, so the bound counts
/// from the heal.
fn renewed_since(history: &History, session: &str, healed_us: u64) -> bool {
    let mut holder: Option<&str> = None;
    for write in history.writes().filter(|w| w.session == session) {
        let kept =
            !write.holder_identity.is_empty() && holder.is_none_or(|h| h == write.holder_identity);
        if kept && write.at_us >= healed_us {
            return true;
        }
        holder = Some(&write.holder_identity);
    }
    false
}

/// For a backend whose expiry is observed by candidates: when the first candidate that
/// watched `session`'s object long enough to take it over began to watch, µs. A candidate
/// counts `leaseDurationSeconds` from its own first look, and a restart forgets it (the next
/// incarnation starts again from its own first look), so with restarts faster than the TTL
/// nobody can take over a dead holder's object, whatever LIVE's bound says. An incarnation's
/// watch starts at its first successful read of the object invoked after the object's last
/// write before the heal (an earlier read saw a version that changed since), and counts when
/// the incarnation still calls on the session `watch_us` later (its last operation on it
/// ends then or after: it stayed up, and still wanted the session). `None` when no
/// incarnation did.
fn watched_from(history: &History, session: &str, healed_us: u64, watch_us: u64) -> Option<u64> {
    let changed_us = history
        .writes()
        .filter(|w| w.session == session && w.at_us < healed_us)
        .map(|w| w.at_us)
        .max()
        .unwrap_or(0);
    let mut first_look: BTreeMap<&Process, u64> = BTreeMap::new();
    let mut last_seen: BTreeMap<&Process, u64> = BTreeMap::new();
    for op in history.ops().filter(|op| op.session == session) {
        let end_us = op.complete_us.unwrap_or(op.invoke_us);
        let seen = last_seen.entry(&op.process).or_insert(end_us);
        *seen = (*seen).max(end_us);
        if matches!(op.op, Op::KubeGet {})
            && matches!(op.result, Some(OpResult::KubeObject { .. }))
            && op.invoke_us >= changed_us
            && let Some(complete_us) = op.complete_us
        {
            let look = first_look.entry(&op.process).or_insert(complete_us);
            *look = (*look).min(complete_us);
        }
    }
    first_look
        .into_iter()
        .filter(|(process, look_us)| last_seen[process] >= look_us + watch_us)
        .map(|(_, look_us)| look_us)
        .min()
}

/// Checks LIVE over `history`. A violation's evidence is the acquires of the session turned
/// away late in the window (`op N`, as the other checks name op lines), the first
/// [`MAX_REFUSALS_IN_EVIDENCE`] of them.
pub fn check(history: &History) -> InvariantReport {
    let mut report = InvariantReport::new(Check::Live);
    super::grace::check_grace(history, &mut report);
    let Some(setting) = Setting::of(history) else {
        return report;
    };
    let Ok(config) = history.config() else {
        return report;
    };
    let span = super::pending::Span {
        healed_us: setting.healed_us,
        bound_us: setting.bound_us,
        ended_us: setting.ended_us,
    };
    super::pending::check_pending(history, span, &mut report);
    for session in &config.sessions {
        if let Some(window) = setting.window(history, session) {
            check_session(history, &setting, session, &window, &mut report);
        }
    }
    report
}

/// Judges one session over its window into `report`: a check when some acquire of it was
/// turned away late in the window, a violation when neither an append nor a hand-back
/// answered it by the deadline (and the run reached the deadline).
fn check_session(
    history: &History,
    setting: &Setting,
    session: &String,
    window: &Window,
    report: &mut InvariantReport,
) {
    // The acquires turned away late in the window: what judges the session, and the
    // evidence of a violation (the timeline rings them).
    let turned_away: Vec<&OpLine> = history
        .ops()
        .filter(|op| {
            &op.session == session
                && matches!(op.op, Op::LeaseAcquire { .. })
                && op.outcome != Outcome::Ok
                && op.invoke_us > window.settled_us
                && op.invoke_us <= window.deadline_us
                && !(setting.observed
                    && still_counting(history, op, window.healed_us, setting.watch_us()))
        })
        .collect();
    if turned_away.is_empty() {
        return;
    }
    let appended = history.ops().any(|op| {
        &op.session == session
            && op.outcome == Outcome::Ok
            && matches!(op.op, Op::JournalAppend { .. })
            && matches!(op.result, Some(OpResult::Appended { .. }))
            && op
                .complete_us
                .is_some_and(|c| c >= window.healed_us && c <= window.deadline_us)
    });
    if appended || handed_back(history, session, window.healed_us, window.deadline_us) {
        report.checks += 1;
    } else if setting.ended_us >= window.deadline_us {
        report.checks += 1;
        report.violation(
            format!(
                "{session}: no acknowledged journal append between the heal at {}{} and {} \
                 (bound {})",
                seconds_us(window.healed_us),
                if window.start_us > window.healed_us {
                    format!(
                        " (the first candidate to watch its object long enough looked at {})",
                        seconds_us(window.start_us)
                    )
                } else {
                    String::new()
                },
                seconds_us(window.deadline_us),
                seconds_us(setting.bound_us)
            ),
            turned_away
                .iter()
                .take(MAX_REFUSALS_IN_EVIDENCE)
                .map(|op| Evidence::Op(op.id))
                .collect(),
        );
    }
}
