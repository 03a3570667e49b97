//! What each mutant gets wrong, in one line (`leasesim mutants`).

use leasesim_core::mutant::Mutant;

/// One line per mutant in catalogue order ([`super::describe`] reads it; the unit tests check
/// that no mutant is missing or listed twice).
pub(super) const ABOUT: &[(Mutant, &str)] = &[
    (
        Mutant::TokenNotAdvancedOnExpiry,
        "a takeover after expiry reuses the expired lease's token",
    ),
    (
        Mutant::AcquireCheckThenAct,
        "acquire checks the session and writes the grant in two critical sections",
    ),
    (
        Mutant::RenewIgnoresToken,
        "renew matches the owner but not the token",
    ),
    (
        Mutant::ReleaseBySessionOnly,
        "release deletes the session's record without comparing owner and token",
    ),
    (
        Mutant::ClockReadBeforeLock,
        "the authority reads its clock before taking its lock",
    ),
    (
        Mutant::AppendIgnoresExpectedTip,
        "a ledger append ignores the expected tip (a blind append, not a CAS)",
    ),
    (
        Mutant::FenceWrittenBlind,
        "a journal's fence is written blind at the tip read, not by CAS",
    ),
    (
        Mutant::OpenAcceptsStaleEpoch,
        "opening a journal accepts an epoch not above the ledger's highest fence",
    ),
    (
        Mutant::NoLocalDeadline,
        "the holder trusts its lease until a renew answers Held, ignoring its deadline",
    ),
    (
        Mutant::ValidityFromAuthorityExpiry,
        "the holder's deadline is the authority's expiry reading, not its own clock",
    ),
    (
        Mutant::ValidityFromReceiptTime,
        "the holder's deadline counts from when the reply arrived, not when it was sent",
    ),
    (
        Mutant::ClientUsesConfiguredTtl,
        "the holder's deadline uses its configured TTL, not the TTL granted",
    ),
    (
        Mutant::RenewerIgnoresUnexpectedErrors,
        "the renewer counts a renew answered with an unexpected status as renewed",
    ),
    (
        Mutant::RenewerOutlivesWorker,
        "a run's renewer keeps renewing after the run ended; the lease is never released",
    ),
    (
        Mutant::CleanupBeforeInvalidate,
        "shutdown releases leases before the runs' clean-up, without invalidating them",
    ),
    (
        Mutant::CleanupAppendSkipsValidity,
        "a clean-up append is sent without the validity check",
    ),
    (
        Mutant::GivesUpContending,
        "after 3 acquires in a row turned away the service stops asking, its work pending",
    ),
    (
        Mutant::GateCheckThenEnter,
        "the run-entry gate checks and marks a session in two critical sections",
    ),
    (
        Mutant::RenewRecreatesRecord,
        "renew recreates a missing or released record",
    ),
    (
        Mutant::TokenCounterInMemory,
        "the lease service keeps its token high-water marks only in memory",
    ),
    (
        Mutant::TokenDroppedWithRecord,
        "deleting a lease record drops the session's token high-water mark",
    ),
    (
        Mutant::ExpiredReacquireKeepsToken,
        "an owner re-acquiring its own expired lease keeps the old token",
    ),
    (
        Mutant::ExpiryOffByOne,
        "a lease is live while now <= expiry (not now < expiry)",
    ),
    (
        Mutant::ExpiryByWallClock,
        "the lease service judges expiry by its wall clock",
    ),
    (
        Mutant::NoGracePeriod,
        "a restarted lease service grants without a grace period",
    ),
    (
        Mutant::GraceResetOnRestart,
        "every restart of the lease service waits a full TTL of grace",
    ),
    (
        Mutant::ExpiryFromRenewTime,
        "a Kubernetes Lease is judged expired by renewTime + duration against the wall clock",
    ),
    (
        Mutant::UpdateWithoutResourceVersion,
        "Kubernetes Lease updates are sent without a resourceVersion precondition",
    ),
    (
        Mutant::DeleteOnRelease,
        "release deletes the Kubernetes Lease object, resetting leaseTransitions",
    ),
    (
        Mutant::TransitionsBumpedOnRenew,
        "a Kubernetes Lease renew bumps leaseTransitions and returns the new token",
    ),
    (
        Mutant::UnlinkOnRelease,
        "a flock release unlinks the session's lock file",
    ),
    (
        Mutant::UnlockFromAnyProcess,
        "a flock release unlocks from any process, a forked child included",
    ),
    (
        Mutant::RenewWithoutExpiryCheck,
        "a flock renew never compares the record's expiry with CLOCK_BOOTTIME",
    ),
    (
        Mutant::RecordWrittenInPlace,
        "the flock record is rewritten in place instead of temp file + rename",
    ),
    (
        Mutant::CommittedAppendReportedLost,
        "a journal append that committed is reported lost when the deadline passed in flight",
    ),
    (
        Mutant::ConflictRetryKeepsDecision,
        "a Kubernetes Lease write met by 409 is sent again, decision kept, at the new version",
    ),
    (
        Mutant::ReleaseMatchesOwnerOnly,
        "an etcd release matches the holder key's owner, not its token",
    ),
    (
        Mutant::ExpiredReacquireKeepsTransitions,
        "a kube re-acquire of the owner's own expired Lease keeps leaseTransitions",
    ),
    (
        Mutant::DurationReadAsMilliseconds,
        "a kube candidate reads leaseDurationSeconds as milliseconds",
    ),
];
