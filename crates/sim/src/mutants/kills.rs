//! The kill table: where each mutant is shown killed, one row per mutant.

use super::Kill;
use leasesim_core::mutant::Mutant;
use leasesim_history::catalogue::Check;

/// A kill by a campaign scenario's `check` at seed 1 (the seed every scenario kill pins unless
/// a row says otherwise).
const fn scenario(scenario: &'static str, check: Check) -> Kill {
    Kill::Scenario {
        scenario,
        check,
        seed: 1,
    }
}

/// Where each mutant is killed, one row per mutant in catalogue order ([`super::kill`] reads
/// it). Grouped by how the kill is shown: a table keeps the catalogue readable at a glance,
/// and the unit tests check that no mutant is missing or listed twice.
pub(super) const KILLS: &[(Mutant, Kill)] = &[
    (
        Mutant::TokenNotAdvancedOnExpiry,
        Kill::Conformance {
            rule: "token_strictly_greater_after_expiry",
        },
    ),
    (Mutant::AcquireCheckThenAct, Kill::Loom { suite: "lease" }),
    (Mutant::RenewIgnoresToken, Kill::Loom { suite: "lease" }),
    (
        Mutant::ReleaseBySessionOnly,
        scenario("sims/f6-late-release.toml", Check::Excl),
    ),
    (Mutant::ClockReadBeforeLock, Kill::Loom { suite: "lease" }),
    (
        Mutant::AppendIgnoresExpectedTip,
        scenario("sims/f1-pause-longer-than-ttl.toml", Check::Fence),
    ),
    (
        Mutant::FenceWrittenBlind,
        scenario("sims/f4-fence-compares-the-tip.toml", Check::Ledger),
    ),
    (
        Mutant::OpenAcceptsStaleEpoch,
        scenario("sims/stale-open-after-suspend.toml", Check::Fence),
    ),
    (
        Mutant::NoLocalDeadline,
        scenario("sims/f2-renewals-black-holed.toml", Check::Stop),
    ),
    (
        Mutant::ValidityFromAuthorityExpiry,
        scenario("sims/validity-from-own-clock.toml", Check::Stop),
    ),
    (
        Mutant::ValidityFromReceiptTime,
        scenario("sims/late-grant-held-one-way.toml", Check::Stop),
    ),
    (
        Mutant::ClientUsesConfiguredTtl,
        scenario("sims/configured-ttl-ignored.toml", Check::Stop),
    ),
    (
        Mutant::RenewerIgnoresUnexpectedErrors,
        scenario("sims/authority-denies-renewals.toml", Check::Stop),
    ),
    (
        Mutant::RenewerOutlivesWorker,
        scenario("sims/swarm-everything.toml", Check::Live),
    ),
    (
        Mutant::CleanupBeforeInvalidate,
        scenario("sims/graceful-shutdowns.toml", Check::Stop),
    ),
    (
        Mutant::CleanupAppendSkipsValidity,
        scenario("sims/cleanup-append-after-long-pause.toml", Check::Stop),
    ),
    (
        Mutant::GivesUpContending,
        scenario("sims/lone-replica-gives-up.toml", Check::Live),
    ),
    (Mutant::GateCheckThenEnter, Kill::Loom { suite: "gate" }),
    (
        Mutant::RenewRecreatesRecord,
        scenario("sims/f7-renew-resurrects.toml", Check::Excl),
    ),
    (
        Mutant::TokenCounterInMemory,
        scenario(
            "sims/f5b-token-survives-authority-restart.toml",
            Check::Token,
        ),
    ),
    (
        Mutant::TokenDroppedWithRecord,
        scenario("sims/f5a-token-survives-record-deletion.toml", Check::Token),
    ),
    (
        Mutant::ExpiredReacquireKeepsToken,
        Kill::Scenario {
            scenario: "sims/swarm-partitions.toml",
            check: Check::Token,
            seed: 3,
        },
    ),
    (
        Mutant::ExpiryOffByOne,
        Kill::Conformance {
            rule: "now_equal_to_expiry_is_expired",
        },
    ),
    (
        Mutant::ExpiryByWallClock,
        scenario("sims/wall-jump-at-the-authority.toml", Check::Excl),
    ),
    (
        Mutant::NoGracePeriod,
        scenario("sims/f5c-restart-while-held.toml", Check::Excl),
    ),
    (
        Mutant::GraceResetOnRestart,
        scenario("sims/lease-restarts-with-downtime.toml", Check::Live),
    ),
    (
        Mutant::ExpiryFromRenewTime,
        scenario("sims/kube-swarm-clocks.toml", Check::Expiry),
    ),
    (
        Mutant::UpdateWithoutResourceVersion,
        scenario("sims/k1-two-candidates-one-read.toml", Check::Excl),
    ),
    (
        Mutant::DeleteOnRelease,
        scenario("sims/k2-delete-resets-token.toml", Check::Token),
    ),
    (
        Mutant::TransitionsBumpedOnRenew,
        scenario("sims/kube-swarm-clocks.toml", Check::Token),
    ),
    (
        Mutant::UnlinkOnRelease,
        Kill::Process {
            test: "unlink_race_never_two_holders",
        },
    ),
    (
        Mutant::UnlockFromAnyProcess,
        scenario("sims/flock-forked-child-releases.toml", Check::Excl),
    ),
    (
        Mutant::RenewWithoutExpiryCheck,
        scenario("sims/flock-renew-after-expiry.toml", Check::Excl),
    ),
    (
        Mutant::RecordWrittenInPlace,
        Kill::Process {
            test: "crash_mid_record_write_keeps_the_high_water_mark",
        },
    ),
    (
        Mutant::CommittedAppendReportedLost,
        scenario("sims/committed-append-reply-late.toml", Check::Definite),
    ),
    (
        Mutant::ConflictRetryKeepsDecision,
        scenario("sims/k3-decision-from-a-stale-read.toml", Check::Excl),
    ),
    (
        Mutant::ReleaseMatchesOwnerOnly,
        Kill::Conformance {
            rule: "retried_release_of_own_older_hold_frees_nothing",
        },
    ),
    (
        Mutant::ExpiredReacquireKeepsTransitions,
        Kill::Scenario {
            scenario: "sims/kube-swarm-partitions.toml",
            check: Check::Token,
            seed: 3,
        },
    ),
    (
        Mutant::DurationReadAsMilliseconds,
        scenario("sims/kube-swarm-everything.toml", Check::Expiry),
    ),
];
