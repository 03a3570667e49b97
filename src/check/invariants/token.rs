//! TOKEN — per session, every takeover grant's token exceeds every earlier grant's; a renew or
//! a live same-owner re-acquire keeps the token it had.
//!
//! Judged from the decision lines, per session in true-time order. A grant to the owner whose
//! hold is still live (unexpired on the authority's clock, not released; see [`super::excl`]
//! for how expiry is judged across restarts) is a re-acquire and must return the same token;
//! any other grant is a takeover and its token must exceed every token granted before. A
//! renew must carry the token of the current hold of its owner.

use super::excl::Hold;
use super::{AuthorityClock, Check, Evidence, InvariantReport, decisions_by_session, who};
use crate::history::{Decision, DecisionLine, History};

/// Checks TOKEN over `history`.
pub fn check(history: &History) -> InvariantReport {
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
                    if let Some(held) = live_same {
                        if held.token != *token {
                            report.violation(
                                format!(
                                    "{session}: a live re-acquire by {} changed its token from {} to {token}",
                                    who(&decision.owner),
                                    held.token
                                ),
                                vec![Evidence::decision(held.set_by), Evidence::decision(decision)],
                            );
                        }
                    } else if let Some((top, by)) = highest
                        && *token <= top
                    {
                        report.violation(
                            format!(
                                "{session}: a takeover by {} got token {token}, not above the earlier grant's token {top}",
                                who(&decision.owner)
                            ),
                            vec![Evidence::decision(by), Evidence::decision(decision)],
                        );
                    }
                    if highest.is_none_or(|(top, _)| *token > top) {
                        highest = Some((*token, decision));
                    }
                }
                Decision::Renew { token, .. } => {
                    report.checks += 1;
                    match &hold {
                        Some(held) if held.owner == decision.owner && held.token == *token => {}
                        _ => {
                            let mut evidence: Vec<Evidence> =
                                hold.iter().map(|h| Evidence::decision(h.set_by)).collect();
                            evidence.push(Evidence::decision(decision));
                            report.violation(
                                format!(
                                    "{session}: a renew by {} granted token {token}, not the token of its current hold{}",
                                    who(&decision.owner),
                                    hold.as_ref()
                                        .map(|h| format!(" ({}'s token {})", who(&h.owner), h.token))
                                        .unwrap_or_default()
                                ),
                                evidence,
                            );
                        }
                    }
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
