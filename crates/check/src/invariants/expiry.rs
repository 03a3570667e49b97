//! EXPIRY — no lease ends, other than by its holder's own release, before its last
//! acknowledged acquire or renew + TTL on the authority's monotonic clock; wall-clock steps do
//! not move it.
//!
//! Judged from the decision lines, per session in true-time order (the same order as
//! [`super::excl`]). The current hold is the last grant or renew; its **bound** is the
//! `expiry_authority_us` that decision acknowledged (the authority's reading when it decided,
//! plus the granted TTL). A hold ends by its holder's own release (`release` with `ended: true`
//! by its owner and token); until then, while the bound is ahead, it ends **early** when the
//! authority
//! - grants the session to another owner, or to the same owner with another token (a
//!   takeover, not a live re-acquire);
//! - grants a renew of another owner's or another token's lease;
//! - refuses a request with `held` naming no holder or another token than the hold's (it
//!   says the session is free or held by someone else);
//! - refuses the holder's own renew (its owner and token) with `held` (the loss signal).
//!
//! Grace-period and transient refusals end nothing.
//!
//! "Ahead" is judged on the authority's monotonic clock only; the history has no wall-clock
//! readings, so wall-clock steps cannot move a bound. Within one boot of the authority the
//! deciding reading is compared with the bound directly (`reading >= bound` is expired).
//! Across restarts the clock starts again, and the authority's own rule applies: downtime
//! counts as zero, so a hold keeps the lifetime it had left when its boot ended
//! (`bound − the boot's last reading`), and that remainder runs down with the uptime of
//! later boots (each boot's readings from its first to its last, taken from the `lease`
//! host's clock segments). This is what the restart grace period guarantees, and is never
//! later than the true-time bound when the clock runs at rate 1; since a crashed
//! authority's clock is taken to run until its restart, the remainder can only be
//! under-counted, never over-counted, so a correct authority is never blamed. One µs per
//! restart is allowed for readings rounded to whole µs. Without clock segments every
//! reading is taken to be in one boot.
//!
//! # By observation (a backend without an authority clock: KubeLease)
//!
//! Used when TOKEN is judged on `leaseTransitions` (the config names no authority, or the
//! history has `write` lines). No authority judges expiry there: the API server only orders
//! writes, and a candidate judges the holder's lease expired **by observation**
//! (docs/backends.md#kubelease): it counts the TTL (`leaseDurationSeconds`) on its own monotonic
//! clock from the moment it last saw the object change. So "no lease ends before its last acquire
//! or renew + TTL" becomes, for the only event that ends a lease early there — a takeover write:
//!
//! A write that moves a session from a non-empty holder A to a different holder B (not one
//! after a release write, which leaves `holderIdentity` `""`, nor after a delete) is
//! legitimate only if B's monotonic clock advanced by at least the config's `ttl_us` between
//! the acceptance of the session's previous write (the last change B could have observed: A's
//! last acquire or renew wrote it, and B cannot have seen it before it was accepted) and the
//! acceptance of B's takeover write. Both `at_us` are read on B's clock in B's boot (its
//! incarnation) through its clock segments; if B's process booted after the previous write,
//! the count starts at its boot. B observed the change no earlier than its acceptance, and
//! its own takeover write reaches the server no earlier than B sent it, so a correct
//! candidate always passes, whatever the holder's clock or any wall clock does. A candidate
//! that compares `renewTime` + duration with its own wall clock instead (the seed's k8slease
//! rule, the `expiry-from-renew-time` mutant) takes over early when that wall clock runs
//! ahead, and is caught here. B is parsed from `holderIdentity` (`replica-N#incarnation`); a
//! takeover naming an unparseable identity is not judged (and said so when nothing else
//! is). Without clock segments for B's host, its clock is taken to equal true time.

use super::excl::Hold;
use super::holders::{Clocks, parse_holder};
use super::{
    AuthorityClock, Check, Evidence, InvariantReport, caller, decision_evidence,
    decisions_by_session, who,
};
use leasesim_history::time::seconds_us;
use leasesim_history::{Decision, DecisionLine, History, Refusal, Request, WriteLine, WriteVerb};

/// Checks EXPIRY over `history`: on the decision lines, or by observation for a backend
/// without an authority clock (see the module documentation).
pub fn check(history: &History) -> InvariantReport {
    if super::token::on_transitions(history) {
        return check_observed(history);
    }
    let mut report = InvariantReport::new(Check::Expiry);
    let clock = AuthorityClock::new(history);
    for (session, decisions) in decisions_by_session(history) {
        let mut hold: Option<Hold> = None;
        for decision in decisions {
            report.checks += 1;
            let ends = match &decision.decision {
                Decision::Grant { token, .. } => hold.as_ref().and_then(|held| {
                    (held.owner != decision.owner || held.token != *token)
                        .then(|| format!("{} was granted token {token}", caller(history, decision)))
                }),
                Decision::Renew { token, .. } => hold.as_ref().and_then(|held| {
                    (held.owner != decision.owner || held.token != *token)
                        .then(|| format!("{} renewed token {token}", caller(history, decision)))
                }),
                Decision::Refuse {
                    request,
                    token,
                    reason: Refusal::Held { holder_token },
                } => hold.as_ref().and_then(|held| {
                    let own_renew = *request == Request::Renew
                        && held.owner == decision.owner
                        && *token == Some(held.token);
                    let gone = *holder_token != Some(held.token);
                    (own_renew || gone).then(|| {
                        format!(
                            "{} was refused, the session said to be {}",
                            caller(history, decision),
                            match holder_token {
                                None => "free".to_string(),
                                Some(t) => format!("held with token {t}"),
                            }
                        )
                    })
                }),
                Decision::Release { .. } | Decision::Refuse { .. } => None,
            };
            if let (Some(what), Some(held)) = (ends, &hold)
                && !held.released
                && let Some(bound) = Bound::of(&clock, held, decision)
            {
                report.violation(
                    format!(
                        "{session}: {what} while {}'s token-{} lease (last set by {}) was unexpired: {}",
                        who(&held.owner),
                        held.token,
                        caller(history, held.set_by),
                        bound.explain(decision),
                    ),
                    [
                        decision_evidence(history, held.set_by),
                        decision_evidence(history, decision),
                    ]
                    .concat(),
                );
            }
            Hold::follow(&mut hold, decision);
        }
    }
    report
}

/// A hold's bound as placed in the boot of a later decision, when it is still ahead there.
struct Bound {
    /// The bound the last acknowledgement set, in its own boot, µs.
    expiry_us: u64,
    /// The boot of that acknowledgement.
    set_boot: u64,
    /// The boot of the later decision.
    boot: u64,
    /// The bound in the later decision's boot, µs (equal to `expiry_us` in the same boot).
    deadline_us: u64,
}

impl Bound {
    /// The bound of `held` in the boot of `decision`, when `decision`'s reading is before it.
    fn of(clock: &AuthorityClock, held: &Hold, decision: &DecisionLine) -> Option<Bound> {
        let (set_boot, boot) = (clock.boot(held.set_by), clock.boot(decision));
        let expiry_us = held.expiry_authority_us;
        let deadline_us = if set_boot >= boot {
            expiry_us
        } else {
            // Lifetime left when the granting boot ended, run down by each later boot's
            // uptime; a boot the segments do not show ends the judgement (sound: no blame).
            let (_, end) = clock.span(set_boot)?;
            let mut left = expiry_us.saturating_sub(end?);
            for between in set_boot + 1..boot {
                if let Some((start, Some(end))) = clock.span(between) {
                    left = left.saturating_sub(end.saturating_sub(start));
                } else {
                    return None;
                }
            }
            let slack = boot - set_boot;
            let left = left.checked_sub(slack).filter(|left| *left > 0)?;
            let (start, _) = clock.span(boot)?;
            start.saturating_add(left)
        };
        (decision.at_authority_us < deadline_us).then_some(Bound {
            expiry_us,
            set_boot,
            boot,
            deadline_us,
        })
    }

    /// The bound in words, against `decision`'s reading.
    fn explain(&self, decision: &DecisionLine) -> String {
        if self.set_boot == self.boot {
            format!(
                "the authority read {}, before the bound {} (last acknowledgement's expiry)",
                seconds_us(decision.at_authority_us),
                seconds_us(self.expiry_us)
            )
        } else {
            format!(
                "the authority read {} in boot {}, before the bound {} there (expiry {} \
                 in boot {}, its remaining lifetime carried over the restart as uptime)",
                seconds_us(decision.at_authority_us),
                self.boot,
                seconds_us(self.deadline_us),
                seconds_us(self.expiry_us),
                self.set_boot
            )
        }
    }
}

/// EXPIRY by observation, over the write lines (see the module documentation).
fn check_observed(history: &History) -> InvariantReport {
    let mut report = InvariantReport::new(Check::Expiry);
    let Ok(config) = history.config() else {
        report.why_not_judged = Some("no config line (no TTL to judge takeovers by)".into());
        return report;
    };
    let ttl_us = config.ttl_us;
    let clocks = Clocks::new(history);
    let mut unparsed = 0u64;
    let mut previous: std::collections::BTreeMap<&str, &WriteLine> = Default::default();
    for write in history.writes() {
        let before = previous.insert(&write.session, write);
        let Some(before) = before else { continue };
        let takeover = write.verb != WriteVerb::Delete
            && before.verb != WriteVerb::Delete
            && !before.holder_identity.is_empty()
            && !write.holder_identity.is_empty()
            && before.holder_identity != write.holder_identity;
        if !takeover {
            continue;
        }
        let Some(candidate) = parse_holder(&write.holder_identity) else {
            unparsed += 1;
            continue;
        };
        report.checks += 1;
        let booted = clocks.boot_start(&candidate).unwrap_or(0);
        let from_us = before.at_us.max(booted);
        let waited_us = clocks
            .reading(&candidate, write.at_us)
            .saturating_sub(clocks.reading(&candidate, from_us));
        if waited_us < ttl_us {
            report.violation(
                format!(
                    "{}: {} took the lease over from {:?} at {} (rv {}) after its clock advanced only {} since {} (TTL {})",
                    write.session,
                    write.holder_identity,
                    before.holder_identity,
                    seconds_us(write.at_us),
                    write.resource_version,
                    seconds_us(waited_us),
                    if from_us > before.at_us {
                        format!("it booted at {}", seconds_us(from_us))
                    } else {
                        format!("the previous write at {}", seconds_us(before.at_us))
                    },
                    seconds_us(ttl_us)
                ),
                vec![Evidence::write(before), Evidence::write(write)],
            );
        }
    }
    if report.checks == 0 {
        report.why_not_judged = Some(if unparsed > 0 {
            format!("{unparsed} takeover writes name a holder that is not replica-N#incarnation")
        } else {
            "no takeover of a held lease among the write lines".to_string()
        });
    }
    report
}
