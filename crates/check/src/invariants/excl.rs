//! EXCL — on the authority's monotonic clock, at most one unexpired lease per session; a stale
//! renew or release changes nothing.
//!
//! Judged from the decision lines, per session in true-time order. The last grant or renew
//! of a hold sets its expiry on the authority's clock. A grant to another owner while that
//! expiry is still ahead (and the hold was not released) is a violation; so is a renew
//! granted for a hold that is not the current live one, and a release that reports it ended
//! a hold that is not the caller's current one. A stale release is also caught by what
//! follows it: when, after a release that presented another owner or token than the current
//! hold's, the authority treats that hold as gone while it is still live and unreleased (it
//! refuses a request saying the session is free or held under another token, refuses the
//! holder's own renew, or grants its owner a new token), the stale release changed
//! something. (The world records `ended` from the correct rule, so a release that wrongly
//! frees another's hold shows up only this way.) Within one boot of the authority, readings
//! are compared directly (`now >= expiry` is expired); across a restart its clock starts
//! again, so the old expiry is placed in true time through the `lease` host's clock
//! segments (extrapolated at rate 1 past the end of its boot) and compared with the new
//! decision's true time.
//!
//! # On the holders (no decision lines: KubeLease)
//!
//! Where no authority judges expiry (KubeLease: the API server only orders writes) — and for
//! any history without decision lines — exclusivity is judged on the holders
//! (docs/checks.md#excl): no two owners' validity windows for one session (recomputed from their
//! send times, mapped to true time through the clock segments: [`super::holders`]) overlap. Each
//! ok `lease_acquire` / `lease_renew` of process P gives a window from its completion to
//! `invoke_local_us + ttl_us − margin` on P's clock (the margin: the same fraction of the granted
//! `ttl_us` as the config's `skew_margin_us` is of its `ttl_us`, [`Margin`]), cut short at P's
//! own release of that token, at the completion of a renew of it answered `held`, and at P's
//! crash.
//!
//! This holds only while the holder's slowness plus the candidate's speed stays within the
//! skew margin (±5% each at a 10% margin; a −9% holder and a +9% candidate overlap by design).
//! So each overlapping pair (the holder: the window that starts first; the candidate: the
//! other owner's) is judged only when the holder's worst slowness plus the candidate's worst
//! speed over both windows, in ppm from the clock segments (a stopped clock is −1 000 000),
//! is at most the holder's margin over its granted TTL (the config's fraction) as ppm; within
//! that bound the overlap is a violation, with both windows and their ops as evidence. An
//! overlapping pair outside the bound is counted and not judged. Each window that follows
//! another owner's window is one check when every overlap it has (none, or only judged ones)
//! was judged; when nothing could be judged EXCL says "not judged (why)", never "pass".

use super::holders::{Clocks, Window, windows};
use super::stop::Margin;
use super::{
    AuthorityClock, Check, Evidence, InvariantReport, caller, decision_evidence,
    decisions_by_session, who,
};
use crate::granted::Granted;
use leasesim_history::time::seconds_us;
use leasesim_history::{Decision, DecisionLine, History, Process, Refusal, Request};

/// A session's current hold, as the decisions so far made it.
pub(crate) struct Hold<'h> {
    /// The holder.
    pub(crate) owner: Process,
    /// Its token.
    pub(crate) token: u64,
    /// Its expiry on the authority's clock, in the boot of `set_by`.
    pub(crate) expiry_authority_us: u64,
    /// The grant or renew that set the expiry.
    pub(crate) set_by: &'h DecisionLine,
    /// Whether its holder released it.
    pub(crate) released: bool,
}

impl<'h> Hold<'h> {
    /// Follows one decision of the session: a grant or renew sets the current hold (with the
    /// expiry it acknowledged); the holder's own release (`ended`, same owner and token) marks
    /// it released; nothing else changes it.
    pub(crate) fn follow(hold: &mut Option<Hold<'h>>, decision: &'h DecisionLine) {
        if let Some(granted) = Granted::of(&decision.decision) {
            *hold = Some(Hold {
                owner: decision.owner.clone(),
                token: granted.token,
                expiry_authority_us: granted.expiry_authority_us,
                set_by: decision,
                released: false,
            });
        } else if let Decision::Release { token, ended: true } = decision.decision
            && let Some(held) = hold
            && held.owner == decision.owner
            && held.token == token
        {
            held.released = true;
        }
    }

    /// Whether the hold is unexpired (ignoring release) when `decision` is made.
    pub(crate) fn unexpired_at(&self, clock: &AuthorityClock, decision: &DecisionLine) -> bool {
        if clock.boot(self.set_by) == clock.boot(decision) {
            self.expiry_authority_us > decision.at_authority_us
        } else {
            clock.true_time(self.set_by, self.expiry_authority_us) > decision.at_us
        }
    }

    /// Whether the hold is live (unexpired and not released) when `decision` is made.
    pub(crate) fn live_at(&self, clock: &AuthorityClock, decision: &DecisionLine) -> bool {
        !self.released && self.unexpired_at(clock, decision)
    }
}

/// Checks EXCL over `history`: each session's decisions are followed in true-time order, each
/// judged against the hold the decisions before it left.
pub fn check(history: &History) -> InvariantReport {
    if history.decisions().next().is_none() {
        return check_holders(history);
    }
    let mut report = InvariantReport::new(Check::Excl);
    let clock = AuthorityClock::new(history);
    for (session, decisions) in decisions_by_session(history) {
        debug_assert!(
            decisions.windows(2).all(|w| w[0].at_us <= w[1].at_us),
            "{session}: decisions are judged in true-time order"
        );
        let mut judge = SessionJudge {
            history,
            session: &session,
            clock: &clock,
            hold: None,
            stale_release: None,
        };
        for decision in decisions {
            judge.decision(&mut report, decision);
        }
    }
    report
}

/// One session's judge: the hold so far, and a pending stale release.
struct SessionJudge<'h, 'a> {
    history: &'h History,
    session: &'a str,
    clock: &'a AuthorityClock,
    hold: Option<Hold<'h>>,
    /// A release that presented another lease than the current hold, made while that hold
    /// was live: what follows shows whether it changed something.
    stale_release: Option<&'h DecisionLine>,
}

impl<'h> SessionJudge<'h, '_> {
    /// Judges `decision`, then follows it ([`Hold::follow`]).
    fn decision(&mut self, report: &mut InvariantReport, decision: &'h DecisionLine) {
        self.judge_stale_release_effect(report, decision);
        if Granted::of(&decision.decision).is_some() {
            // A new grant or renew sets the hold afresh: an earlier stale release can no
            // longer be seen to have freed it.
            self.stale_release = None;
        }
        match &decision.decision {
            Decision::Grant { token, .. } => {
                report.checks += 1;
                self.judge_grant(report, decision, *token);
            }
            Decision::Renew { token, .. } => {
                report.checks += 1;
                self.judge_renew(report, decision, *token);
            }
            Decision::Release { token, ended } => {
                report.checks += 1;
                self.judge_release(report, decision, *token, *ended);
            }
            Decision::Refuse { .. } => {}
        }
        Hold::follow(&mut self.hold, decision);
    }

    /// After a stale release, a decision showing the still-live hold gone means the release
    /// changed something.
    fn judge_stale_release_effect(
        &mut self,
        report: &mut InvariantReport,
        decision: &'h DecisionLine,
    ) {
        let (Some(held), Some(stale)) = (&self.hold, self.stale_release) else {
            return;
        };
        if !held.live_at(self.clock, decision) {
            return;
        }
        let Some(what) = shows_gone(held, decision) else {
            return;
        };
        report.violation(
            format!(
                "{}: {}, a stale release, changed something: afterwards the authority {what} while {} was unexpired and not released",
                self.session,
                caller(self.history, stale),
                self.hold_words(held),
            ),
            [
                decision_evidence(self.history, held.set_by),
                decision_evidence(self.history, stale),
                decision_evidence(self.history, decision),
            ]
            .concat(),
        );
        self.stale_release = None;
    }

    /// `replica-1's token-2 hold (from its acquire at 1.000 s (op 3); expiry 11.000 s on the
    /// authority's clock)`.
    fn hold_words(&self, held: &Hold) -> String {
        format!(
            "{}'s token-{} hold (from {}; expiry {} on the authority's clock)",
            who(&held.owner),
            held.token,
            caller(self.history, held.set_by),
            seconds_us(held.expiry_authority_us)
        )
    }

    /// A grant to another owner while the current hold is live breaks exclusivity.
    fn judge_grant(&self, report: &mut InvariantReport, decision: &DecisionLine, token: u64) {
        if let Some(held) = &self.hold
            && held.owner != decision.owner
            && held.live_at(self.clock, decision)
        {
            report.violation(
                format!(
                    "{}: {} was granted token {token} while {} was unexpired and not released",
                    self.session,
                    caller(self.history, decision),
                    self.hold_words(held),
                ),
                [
                    decision_evidence(self.history, held.set_by),
                    decision_evidence(self.history, decision),
                ]
                .concat(),
            );
        }
    }

    /// A renew may be granted only for the current live hold, of the same owner and token.
    fn judge_renew(&self, report: &mut InvariantReport, decision: &DecisionLine, token: u64) {
        let current = self.hold.as_ref().filter(|held| {
            held.owner == decision.owner
                && held.token == token
                && held.live_at(self.clock, decision)
        });
        if current.is_some() {
            return;
        }
        let mut evidence = Vec::new();
        let why = match &self.hold {
            None => "nobody held the session".to_string(),
            Some(held) => {
                evidence.push(Evidence::decision(held.set_by));
                format!(
                    "the current hold was {}'s token {} ({})",
                    who(&held.owner),
                    held.token,
                    if held.released {
                        "released"
                    } else if held.unexpired_at(self.clock, decision) {
                        "live"
                    } else {
                        "expired"
                    }
                )
            }
        };
        evidence.extend(decision_evidence(self.history, decision));
        report.violation(
            format!(
                "{}: {}, a stale renew of token {token}, was granted: {why}",
                self.session,
                caller(self.history, decision)
            ),
            evidence,
        );
    }

    /// A release that ended nothing but presented another lease than the live hold is
    /// remembered as stale (what follows judges it); a release reporting that it ended a hold
    /// must have ended the caller's own unreleased one.
    fn judge_release(
        &mut self,
        report: &mut InvariantReport,
        decision: &'h DecisionLine,
        token: u64,
        ended: bool,
    ) {
        if !ended {
            if let Some(held) = &self.hold
                && (held.owner != decision.owner || held.token != token)
                && held.live_at(self.clock, decision)
            {
                self.stale_release = self.stale_release.or(Some(decision));
            }
            return;
        }
        let own = self.hold.as_ref().is_some_and(|held| {
            held.owner == decision.owner && held.token == token && !held.released
        });
        if !own {
            let mut evidence: Vec<Evidence> = self
                .hold
                .iter()
                .map(|h| Evidence::decision(h.set_by))
                .collect();
            evidence.extend(decision_evidence(self.history, decision));
            report.violation(
                format!(
                    "{}: {}, a stale release of token {token}, reported that it ended a hold",
                    self.session,
                    caller(self.history, decision)
                ),
                evidence,
            );
        }
    }
}

/// How `decision` shows that `held` is gone, if it does: a refusal saying the session is free
/// or held under another token, a refusal of the holder's own renew, or a grant to its owner
/// under a new token.
fn shows_gone(held: &Hold, decision: &DecisionLine) -> Option<String> {
    match &decision.decision {
        Decision::Refuse {
            request,
            token,
            reason: Refusal::Held { holder_token },
        } => {
            let own_renew = *request == Request::Renew
                && held.owner == decision.owner
                && *token == Some(held.token);
            (own_renew || *holder_token != Some(held.token)).then(|| {
                format!(
                    "refused {}'s {} saying the session was {}",
                    who(&decision.owner),
                    format!("{request:?}").to_lowercase(),
                    holder_token.map_or("free".to_string(), |t| format!("held with token {t}"))
                )
            })
        }
        Decision::Grant { token, .. } if held.owner == decision.owner && held.token != *token => {
            Some(format!(
                "granted {} a new token {token}",
                who(&decision.owner)
            ))
        }
        _ => None,
    }
}

/// EXCL on the holders' validity windows (see the module documentation).
fn check_holders(history: &History) -> InvariantReport {
    let mut report = InvariantReport::new(Check::Excl);
    let Ok(config) = history.config() else {
        report.why_not_judged =
            Some("no decision lines, and no config line to recompute the holders' windows".into());
        return report;
    };
    let clocks = Clocks::new(history);
    let margin = Margin::new(config);
    let mut outside = 0u64;
    let mut followers = 0u64;
    for windows in windows(history, &clocks, margin).values() {
        for (j, candidate) in windows.iter().enumerate() {
            let earlier = windows[..j]
                .iter()
                .filter(|held| held.process() != candidate.process());
            let mut follows = false;
            let mut judged = true;
            for held in earlier {
                follows = true;
                // Overlap needs a positive length: `held` starts first, so from the
                // candidate's start to the earlier end. A grant that arrives past its own
                // deadline gives an empty window, which overlaps nothing.
                if held.until_us.min(candidate.until_us) <= candidate.from_us {
                    continue;
                }
                match within_drift_bound(&clocks, held, candidate, margin) {
                    Err(_) => {
                        outside += 1;
                        judged = false;
                    }
                    Ok(bound) => overlap(&mut report, held, candidate, &bound),
                }
            }
            if follows {
                followers += 1;
                if judged {
                    report.checks += 1;
                }
            }
        }
    }
    if report.checks == 0 && report.violations.is_empty() {
        report.why_not_judged = Some(if outside > 0 {
            format!(
                "no decision lines; all {outside} overlapping pairs of holders' windows have drift outside the skew margin"
            )
        } else if history.authority_host().is_some() {
            // A backend with an authority that recorded no decisions: nothing it decided.
            return report;
        } else {
            debug_assert_eq!(followers, 0, "a judged follower is a check");
            "no decision lines, and no two owners' validity windows for one session".to_string()
        });
    }
    report
}

/// The pair's drift in words, when within the bound (`Ok`) or not (`Err`).
fn within_drift_bound(
    clocks: &Clocks,
    held: &Window,
    candidate: &Window,
    margin: Margin,
) -> Result<String, String> {
    let from_us = held.from_us.min(candidate.from_us);
    let to_us = held.until_us.max(candidate.until_us);
    let (holder_slowest, _) = clocks.drift_range(held.process(), from_us, to_us);
    let (_, candidate_fastest) = clocks.drift_range(candidate.process(), from_us, to_us);
    let spread = i128::from((-holder_slowest).max(0)) + i128::from(candidate_fastest.max(0));
    let held_margin_us = margin.of(held.ttl_us);
    let bound = i128::from(held_margin_us) * 1_000_000 / i128::from(held.ttl_us.max(1));
    let words = format!(
        "holder's slowness {}ppm + candidate's speed {}ppm, bound {bound}ppm (skew margin {} of TTL {})",
        (-holder_slowest).max(0),
        candidate_fastest.max(0),
        seconds_us(held_margin_us),
        seconds_us(held.ttl_us)
    );
    if spread <= bound {
        Ok(words)
    } else {
        Err(words)
    }
}

/// Records the overlap of two owners' windows, judged within the drift bound.
fn overlap(report: &mut InvariantReport, held: &Window, candidate: &Window, bound: &str) {
    let from_us = held.from_us.max(candidate.from_us);
    let until_us = held.until_us.min(candidate.until_us);
    report.violation(
        format!(
            "{}: {}'s window (token {}{}, from its {} at {} (op {})) and {}'s window (token {}{}, from its {} at {} (op {})) overlap from {} to {} ({}; {bound})",
            held.op.session,
            who(held.process()),
            held.token,
            held.cut_words(),
            held.op.op.name().trim_start_matches("lease_"),
            seconds_us(held.op.invoke_us),
            held.op.id,
            who(candidate.process()),
            candidate.token,
            candidate.cut_words(),
            candidate.op.op.name().trim_start_matches("lease_"),
            seconds_us(candidate.op.invoke_us),
            candidate.op.id,
            seconds_us(from_us),
            seconds_us(until_us),
            seconds_us(until_us - from_us)
        ),
        vec![
            held.evidence(),
            Evidence::Op(held.op.id),
            candidate.evidence(),
            Evidence::Op(candidate.op.id),
        ],
    );
}
