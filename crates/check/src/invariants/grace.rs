//! LIVE's grace rule: a restarted authority waits out the grace period once, not once per
//! restart (docs/contracts.md#the-authoritys-grace-period: the remaining lifetime of its grants is
//! counted down with its own uptime across restarts, so "repeated restarts never extend the grace
//! beyond one TTL of accumulated uptime").
//!
//! For each grace refusal (a `decision` line refusing with `grace_period`), the checker adds
//! up the authority's uptime since its newest grant or renew before the refusal, on the
//! authority's own monotonic clock (its clock segments: a suspended or down segment adds
//! nothing, as downtime counts as zero), and requires it to be at most the TTL plus one
//! [`PERSIST_SLACK_US`] for each restart in between (a crash loses up to one persist interval
//! of the countdown's progress). Past that no grant can still be live, so the refusal keeps
//! the session from every replica for nothing: a violation. Without any grant before it, the
//! uptime counts from the start of the run. A history without decision lines or clock
//! segments of the authority is not judged by this rule.

use leasesim_history::time::seconds_us;
use leasesim_history::{ClockLine, ClockMap, Decision, History, Refusal};

use super::{Evidence, InvariantReport};

/// What one restart may add to the grace: the longest time the authority's countdown goes
/// unpersisted (`DurableLeaseConfig::grace_persist_interval`, 1 s by default), µs.
pub const PERSIST_SLACK_US: u64 = 1_000_000;

/// Judges every grace refusal of `history` into `report` (one check each).
pub fn check_grace(history: &History, report: &mut InvariantReport) {
    let (Ok(config), Some(host)) = (history.config(), history.authority_host()) else {
        return;
    };
    let Some(map) = history
        .clock_maps()
        .ok()
        .and_then(|mut maps| maps.remove(host))
    else {
        return;
    };
    let mut newest_grant_us = 0;
    for decision in history.decisions() {
        match &decision.decision {
            Decision::Grant { .. } | Decision::Renew { .. } => newest_grant_us = decision.at_us,
            Decision::Refuse {
                reason: Refusal::GracePeriod { .. },
                ..
            } => {
                report.checks += 1;
                let (uptime_us, restarts) = uptime(&map, newest_grant_us, decision.at_us);
                let bound_us = config.ttl_us + restarts * PERSIST_SLACK_US;
                if uptime_us > bound_us {
                    report.violation(
                        format!(
                            "{}: refused for the grace period at {} after {} of authority uptime \
                             since its newest grant at {} ({restarts} restarts since; at most {} \
                             of grace can be needed)",
                            decision.session,
                            seconds_us(decision.at_us),
                            seconds_us(uptime_us),
                            seconds_us(newest_grant_us),
                            seconds_us(bound_us),
                        ),
                        vec![Evidence::Decision {
                            session: decision.session.clone(),
                            owner: decision.owner.clone(),
                            at_authority_us: decision.at_authority_us,
                            at_us: decision.at_us,
                        }],
                    );
                }
            }
            _ => {}
        }
    }
}

/// The host's uptime between true times `from_us` and `to_us` on its own clock, µs, and how
/// many times it restarted in between.
fn uptime(map: &ClockMap, from_us: u64, to_us: u64) -> (u64, u64) {
    let segments = map.segments();
    let mut total = 0;
    for (i, segment) in segments.iter().enumerate() {
        let end = segments.get(i + 1).map_or(u64::MAX, |next| next.from_us);
        let (start, stop) = (segment.from_us.max(from_us), end.min(to_us));
        if start < stop && !segment.suspended {
            total += extrapolate(segment, stop) - extrapolate(segment, start);
        }
    }
    let restarts = match (map.boot_at(from_us), map.boot_at(to_us)) {
        (Some(from), Some(to)) => to.saturating_sub(from),
        (None, Some(to)) => to,
        _ => 0,
    };
    (total, restarts)
}

/// `segment`'s reading at true time `true_us`, within it or at its end (the formula of
/// [`ClockMap`]).
fn extrapolate(segment: &ClockLine, true_us: u64) -> u64 {
    if segment.suspended {
        return segment.local_from_us;
    }
    let elapsed = i128::from(true_us.saturating_sub(segment.from_us));
    let rate = 1_000_000 + i128::from(segment.drift_ppm);
    segment.local_from_us + (elapsed * rate / 1_000_000) as u64
}
