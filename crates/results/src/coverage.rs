//! The coverage events: named "sometimes" happenings a campaign is expected to reach
//! (docs/campaigns.md), as one type. A campaign counts them per run
//! (`campaign::coverage`); `results.jsonl`, `summary.json`, scenario files
//! (`expect.coverage`) and reports spell them by [`CoverageEvent::name`].

use std::fmt;
use std::str::FromStr;

/// The seeds within which a campaign must reach an event its scenario expects, when the
/// scenario names no other number (`expect.coverage_within_seeds`,
/// docs/campaigns.md#coverage-promises): any
/// campaign of the scenario must reach it. A campaign with fewer seeds than a scenario's
/// number that did not reach the event gets a note, not a warning; one with as many or more
/// gets the warning.
pub const DEFAULT_WITHIN_SEEDS: u64 = 1;

/// The most seeds `expect.coverage_within_seeds` may promise: a promise no campaign keeps
/// would hide a miss for good.
pub const MAX_WITHIN_SEEDS: u64 = 100_000;

/// One coverage event.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum CoverageEvent {
    /// `takeover-after-expiry`: a grant to a new owner while the previous holder never released.
    TakeoverAfterExpiry,
    /// `graceful-handover`: a release by the holder, then a grant to another owner.
    GracefulHandover,
    /// `stale-append-rejected`: an append refused by the fence (CAS) after a newer fence committed.
    StaleAppendRejected,
    /// `fence-retried`: a journal open whose fence CAS conflicted and was retried.
    FenceRetried,
    /// `renew-lost`: a renew refused or left without a reply (the lease is then lost).
    RenewLost,
    /// `run-cancelled-on-loss`: a service run cancelled because its lease was lost.
    RunCancelledOnLoss,
    /// `sticky-disable`: a service turned leasing off for good after `Unsupported`.
    StickyDisable,
    /// `ambiguous-append-resolved`: an append with an unknown outcome whose fate the writer learnt by reading back.
    AmbiguousAppendResolved,
    /// `grace-period-refusal`: the authority refused a request during its restart grace period.
    GracePeriodRefusal,
    /// `backward-wall-jump-survived`: a host's wall clock stepped backwards during the run.
    BackwardWallJumpSurvived,
    /// `authority-restart`: the lease authority restarted (a new boot of host `lease`).
    AuthorityRestart,
    /// `record-deleted`: a lease record was deleted (garbage collection) while its high-water mark stayed.
    RecordDeleted,
    /// `stale-release-ignored`: a release that ended nothing (stale owner or token).
    StaleReleaseIgnored,
    /// `stale-renew-refused`: a renew refused because the lease presented is not the current one.
    StaleRenewRefused,
    /// `lease-lost-before-append`: a journal append refused locally because the lease was already lost.
    LeaseLostBeforeAppend,
    /// `open-refused-stale-epoch`: a journal open refused because a fence with an equal or higher epoch exists.
    OpenRefusedStaleEpoch,
}

impl CoverageEvent {
    /// Every event, in report order (the order of [`Ord`] too).
    pub const ALL: [CoverageEvent; 16] = [
        CoverageEvent::TakeoverAfterExpiry,
        CoverageEvent::GracefulHandover,
        CoverageEvent::StaleAppendRejected,
        CoverageEvent::FenceRetried,
        CoverageEvent::RenewLost,
        CoverageEvent::RunCancelledOnLoss,
        CoverageEvent::StickyDisable,
        CoverageEvent::AmbiguousAppendResolved,
        CoverageEvent::GracePeriodRefusal,
        CoverageEvent::BackwardWallJumpSurvived,
        CoverageEvent::AuthorityRestart,
        CoverageEvent::RecordDeleted,
        CoverageEvent::StaleReleaseIgnored,
        CoverageEvent::StaleRenewRefused,
        CoverageEvent::LeaseLostBeforeAppend,
        CoverageEvent::OpenRefusedStaleEpoch,
    ];

    /// The event's name (`takeover-after-expiry`, …).
    pub fn name(self) -> &'static str {
        match self {
            CoverageEvent::TakeoverAfterExpiry => "takeover-after-expiry",
            CoverageEvent::GracefulHandover => "graceful-handover",
            CoverageEvent::StaleAppendRejected => "stale-append-rejected",
            CoverageEvent::FenceRetried => "fence-retried",
            CoverageEvent::RenewLost => "renew-lost",
            CoverageEvent::RunCancelledOnLoss => "run-cancelled-on-loss",
            CoverageEvent::StickyDisable => "sticky-disable",
            CoverageEvent::AmbiguousAppendResolved => "ambiguous-append-resolved",
            CoverageEvent::GracePeriodRefusal => "grace-period-refusal",
            CoverageEvent::BackwardWallJumpSurvived => "backward-wall-jump-survived",
            CoverageEvent::AuthorityRestart => "authority-restart",
            CoverageEvent::RecordDeleted => "record-deleted",
            CoverageEvent::StaleReleaseIgnored => "stale-release-ignored",
            CoverageEvent::StaleRenewRefused => "stale-renew-refused",
            CoverageEvent::LeaseLostBeforeAppend => "lease-lost-before-append",
            CoverageEvent::OpenRefusedStaleEpoch => "open-refused-stale-epoch",
        }
    }

    /// What the event means, in one line.
    pub fn about(self) -> &'static str {
        match self {
            CoverageEvent::TakeoverAfterExpiry => {
                "a grant to a new owner while the previous holder never released"
            }
            CoverageEvent::GracefulHandover => {
                "a release by the holder, then a grant to another owner"
            }
            CoverageEvent::StaleAppendRejected => {
                "an append refused by the fence (CAS) after a newer fence committed"
            }
            CoverageEvent::FenceRetried => {
                "a journal open whose fence CAS conflicted and was retried"
            }
            CoverageEvent::RenewLost => {
                "a renew refused or left without a reply (the lease is then lost)"
            }
            CoverageEvent::RunCancelledOnLoss => {
                "a service run cancelled because its lease was lost"
            }
            CoverageEvent::StickyDisable => {
                "a service turned leasing off for good after `Unsupported`"
            }
            CoverageEvent::AmbiguousAppendResolved => {
                "an append with an unknown outcome whose fate the writer learnt by reading back"
            }
            CoverageEvent::GracePeriodRefusal => {
                "the authority refused a request during its restart grace period"
            }
            CoverageEvent::BackwardWallJumpSurvived => {
                "a host's wall clock stepped backwards during the run"
            }
            CoverageEvent::AuthorityRestart => {
                "the lease authority restarted (a new boot of host `lease`)"
            }
            CoverageEvent::RecordDeleted => {
                "a lease record was deleted (garbage collection) while its high-water mark stayed"
            }
            CoverageEvent::StaleReleaseIgnored => {
                "a release that ended nothing (stale owner or token)"
            }
            CoverageEvent::StaleRenewRefused => {
                "a renew refused because the lease presented is not the current one"
            }
            CoverageEvent::LeaseLostBeforeAppend => {
                "a journal append refused locally because the lease was already lost"
            }
            CoverageEvent::OpenRefusedStaleEpoch => {
                "a journal open refused because a fence with an equal or higher epoch exists"
            }
        }
    }

    /// Every name, comma-separated, in report order: for error messages.
    pub fn names() -> String {
        CoverageEvent::ALL.map(CoverageEvent::name).join(", ")
    }

    /// The position of the event named `name` in report order, if it is one.
    pub fn position(name: &str) -> Option<usize> {
        CoverageEvent::ALL.iter().position(|e| e.name() == name)
    }
}

impl fmt::Display for CoverageEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a coverage event's: [`CoverageEvent::from_str`]'s error.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error(
    "unknown coverage event `{name}`; the events are {}",
    CoverageEvent::names()
)]
pub struct UnknownEvent {
    /// The name given.
    pub name: String,
}

impl FromStr for CoverageEvent {
    type Err = UnknownEvent;

    /// Reads an event from its exact [`CoverageEvent::name`].
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        CoverageEvent::position(name)
            .map(|i| CoverageEvent::ALL[i])
            .ok_or_else(|| UnknownEvent {
                name: name.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::CoverageEvent;

    #[test]
    fn names_round_trip_and_are_unique() {
        for (i, event) in CoverageEvent::ALL.into_iter().enumerate() {
            assert_eq!(event.name().parse::<CoverageEvent>(), Ok(event));
            assert_eq!(CoverageEvent::position(event.name()), Some(i));
            assert!(!event.about().is_empty());
        }
        let mut sorted = CoverageEvent::ALL;
        sorted.sort();
        assert_eq!(sorted, CoverageEvent::ALL, "Ord is report order");
        assert_eq!(CoverageEvent::ALL.len(), 16);
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_list() {
        let error = "takeover".parse::<CoverageEvent>().unwrap_err().to_string();
        assert!(
            error.starts_with("unknown coverage event `takeover`; the events are takeover-after-expiry, graceful-handover,"),
            "{error}"
        );
    }
}
