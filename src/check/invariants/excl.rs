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

use super::{AuthorityClock, Check, Evidence, InvariantReport, decisions_by_session, who};
use crate::history::{Decision, DecisionLine, History, Process, Refusal, Request};

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
        match &decision.decision {
            Decision::Grant {
                token,
                expiry_authority_us,
                ..
            }
            | Decision::Renew {
                token,
                expiry_authority_us,
                ..
            } => {
                *hold = Some(Hold {
                    owner: decision.owner.clone(),
                    token: *token,
                    expiry_authority_us: *expiry_authority_us,
                    set_by: decision,
                    released: false,
                });
            }
            Decision::Release { token, ended: true } => {
                if let Some(held) = hold
                    && held.owner == decision.owner
                    && held.token == *token
                {
                    held.released = true;
                }
            }
            Decision::Release { .. } | Decision::Refuse { .. } => {}
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
    let mut report = InvariantReport::new(Check::Excl);
    let clock = AuthorityClock::new(history);
    for (session, decisions) in decisions_by_session(history) {
        debug_assert!(
            decisions.windows(2).all(|w| w[0].at_us <= w[1].at_us),
            "{session}: decisions are judged in true-time order"
        );
        let mut judge = SessionJudge {
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
        if matches!(
            decision.decision,
            Decision::Grant { .. } | Decision::Renew { .. }
        ) {
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
                "{}: a stale release by {} changed something: afterwards the authority {what} while {}'s lease (token {}, expiry {}us on the authority's clock) was unexpired and not released",
                self.session,
                who(&stale.owner),
                who(&held.owner),
                held.token,
                held.expiry_authority_us
            ),
            vec![
                Evidence::decision(held.set_by),
                Evidence::decision(stale),
                Evidence::decision(decision),
            ],
        );
        self.stale_release = None;
    }

    /// A grant to another owner while the current hold is live breaks exclusivity.
    fn judge_grant(&self, report: &mut InvariantReport, decision: &DecisionLine, token: u64) {
        if let Some(held) = &self.hold
            && held.owner != decision.owner
            && held.live_at(self.clock, decision)
        {
            report.violation(
                format!(
                    "{}: granted to {} (token {token}) while {}'s lease (token {}, expiry {}us on the authority's clock) was unexpired and not released",
                    self.session,
                    who(&decision.owner),
                    who(&held.owner),
                    held.token,
                    held.expiry_authority_us
                ),
                vec![Evidence::decision(held.set_by), Evidence::decision(decision)],
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
        evidence.push(Evidence::decision(decision));
        report.violation(
            format!(
                "{}: a stale renew by {} of token {token} was granted: {why}",
                self.session,
                who(&decision.owner)
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
            evidence.push(Evidence::decision(decision));
            report.violation(
                format!(
                    "{}: a stale release by {} of token {token} reported that it ended a hold",
                    self.session,
                    who(&decision.owner)
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
