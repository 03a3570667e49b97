//! The mutant switch: planted bugs that prove the checkers catch what they claim.
//!
//! A mutant is chosen per instance (per world in simulation, never a global), so parallel
//! runs in one process can run different mutants. Every backend takes `Option<Mutant>`;
//! `None`, the default, is the correct implementation and costs one comparison per call.
//!
//! This is the switch alone: what each mutant gets wrong in one line, where it is killed and
//! which runs may plant it are the harness's catalogue (docs/campaigns.md#mutants).

use std::fmt;

/// How many acquires in a row turned away make [`Mutant::GivesUpContending`] stop asking.
pub const GIVE_UP_AFTER: u64 = 3;

/// One known-wrong variant of the system under test.
///
/// The catalogue grows with the checkers that must kill each mutant (issue "Mutants").
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[non_exhaustive]
pub enum Mutant {
    /// A takeover after expiry reuses the expired lease's token instead of advancing it, so
    /// the old and the new holder share one fencing epoch. Killed by the conformance rules
    /// `token_strictly_greater_after_expiry` and `expired_same_owner_reacquire_gets_new_token`.
    TokenNotAdvancedOnExpiry,
    /// `MemLease::acquire` checks the session in one critical section and writes the grant
    /// in another, so two acquirers can both see the session free and both be granted it.
    /// Killed by the loom suite `lease` (models/lease.rs): two live holders at once.
    AcquireCheckThenAct,
    /// `MemLease::renew` matches the owner but not the token, so a stale lease value of the
    /// same owner renews (and is handed) the owner's newer hold. Killed by the loom suite
    /// `lease`, one owner with two tasks (models/lease.rs): a renew that changes the token.
    RenewIgnoresToken,
    /// `MemLease::release` removes whatever record the session has, without comparing owner
    /// and token, so a stale release frees another owner's hold. Killed by the loom suite
    /// `lease` (models/lease.rs): a hold lost before its expiry without its own release.
    ReleaseBySessionOnly,
    /// `MemLease` reads its clock before taking its lock, so a call can decide on a reading
    /// older than the decision made just before it: a stale renew then moves the expiry back
    /// below what a live same-owner re-acquire was just told. Killed by the loom suite
    /// `lease`, one owner's two tasks and a rival (models/lease.rs): two live holders at once.
    ClockReadBeforeLock,
    /// A ledger append (`MemLedger`, and the ledger service's `DurableLedger`) ignores the
    /// expected tip and appends at the end (a blind append instead of a CAS), so a stale
    /// writer's append lands after a newer fence (field cases F1, F3). Killed by FENCE on
    /// `sims/f1-pause-longer-than-ttl.toml` (A's stale a2 lands after fence 2); the loom
    /// suites `ledger` and `journal` plant it too (models/ledger.rs, models/journal.rs).
    AppendIgnoresExpectedTip,
    /// The ledger writes a fence blind at the position the opener read (`expected + 1`)
    /// instead of by CAS: an append acknowledged between the opener's read and its fence is
    /// overwritten (field case F4). Killed by LEDGER (an acknowledged append lost) on
    /// `sims/f4-fence-compares-the-tip.toml`.
    FenceWrittenBlind,
    /// `Store::open_journal` skips the `StaleEpoch` check: a holder whose lease epoch is not
    /// above the ledger's highest fence still fences, after the newer one. Killed by FENCE
    /// (fence epochs strictly increase) on `sims/stale-open-after-suspend.toml`.
    OpenAcceptsStaleEpoch,
    /// The holder ignores its local deadline (`valid_until`) and trusts its lease until a
    /// renew call returns the loss signal (`Held`), retrying transient errors and waiting out
    /// hung calls meanwhile (field case F2). Killed by STOP on
    /// `sims/f2-renewals-black-holed.toml`.
    NoLocalDeadline,
    /// The holder counts `valid_until` from when the grant or renew reply **arrived** instead
    /// of when its request was sent, so a reply held back on the way stretches the hold past
    /// the authority's expiry. Killed by STOP on `sims/late-grant-held-one-way.toml` (a grant
    /// held 12 s one way arrives after the TTL; the holder appends on it).
    ValidityFromReceiptTime,
    /// The holder computes `valid_until` from the TTL in its own configuration (the world's
    /// `replica_ttl_ms`) instead of the TTL the authority granted: configured longer than
    /// granted, it believes its lease valid after the authority has let it go. Killed by STOP
    /// on `sims/configured-ttl-ignored.toml`.
    ClientUsesConfiguredTtl,
    /// The renewer counts a renew answered with a status the contract does not name
    /// (PERMISSION_DENIED, INTERNAL, an HTTP 403 or 5xx: [`crate::lease::LeaseError::Unexpected`])
    /// as a renewal and moves the local deadline, so the worker runs on past its validity
    /// while the authority lets the lease expire. Killed by STOP on
    /// `sims/authority-denies-renewals.toml`.
    RenewerIgnoresUnexpectedErrors,
    /// After every restart the lease service waits a full TTL of grace, whatever was left of
    /// the persisted countdown, so a series of restarts less than a TTL apart refuses grants
    /// for ever. Killed by LIVE (a grace refusal after a TTL of accumulated uptime since the
    /// newest grant) on `sims/lease-restarts-with-downtime.toml`.
    GraceResetOnRestart,
    /// The holder computes `valid_until` from the authority's `expiry` (a reading of the
    /// authority's clock) minus the margin, instead of its own send time + TTL − margin; a
    /// slow holder clock then believes the lease valid for too long. Killed by STOP on
    /// `sims/validity-from-own-clock.toml`.
    ValidityFromAuthorityExpiry,
    /// When a run ends, its renewer is neither stopped nor is the lease released (the run
    /// leaves both to the renewer, which is never told), so the session stays held by a
    /// worker that is gone. Killed by LIVE on `sims/swarm-everything.toml`.
    RenewerOutlivesWorker,
    /// Graceful shutdown releases the leases at the authority first, without invalidating the
    /// holds, and only then lets runs make their final clean-up append — which passes its
    /// validity check after the release. Killed by STOP on `sims/graceful-shutdowns.toml`.
    CleanupBeforeInvalidate,
    /// A graceful shutdown's clean-up append (`Journal::append_cleanup`) is sent without the
    /// validity check every other append makes: a holder frozen before it past its TTL still
    /// sends it. Killed by STOP on `sims/cleanup-append-after-long-pause.toml` (the ledger's
    /// fence refuses the append; only the validity line shows the decision).
    CleanupAppendSkipsValidity,
    /// After [`GIVE_UP_AFTER`] acquires in a row turned away (held elsewhere, unavailable, no
    /// answer), the service stops contending: a run waits for shutdown without asking for
    /// its lease again, its work still pending (issue 42's field case, "a lone replica that
    /// gives up"). Killed by LIVE (work still pending after the heal, docs/checks.md#live) on
    /// `sims/lone-replica-gives-up.toml`.
    GivesUpContending,
    /// The service's run-entry gate checks that a session is free in one critical section and
    /// marks it taken in another, so two runs of one session can enter together. Killed by
    /// the loom suite `gate` (models/gate.rs): two runs of a session inside at once.
    GateCheckThenEnter,
    /// `MemLease::renew` recreates a missing or released record from the lease value it is
    /// given, so a stale renew after another owner released resurrects the old holder's lease
    /// (field case F7). Killed by EXCL on `sims/f7-renew-resurrects.toml`.
    RenewRecreatesRecord,
    /// The lease service keeps its token high-water marks only in memory (never written, never
    /// restored), so after a restart it reissues low tokens (field case F5b). Killed by TOKEN
    /// on `sims/f5b-token-survives-authority-restart.toml`.
    TokenCounterInMemory,
    /// Deleting a lease record (garbage collection) drops the session's token high-water mark
    /// with it, so the next grant starts again at token 1 (field case F5a). Killed by TOKEN on
    /// `sims/f5a-token-survives-record-deletion.toml`.
    TokenDroppedWithRecord,
    /// An owner re-acquiring its own expired lease keeps the old token instead of a new one,
    /// so two holds of one owner share a fencing epoch. Killed by TOKEN on
    /// `sims/swarm-partitions.toml` seed 3 (a replica cut off from the lease service gets s1
    /// back after its own lease ran out, nobody having taken it meanwhile), and by the
    /// conformance rule `expired_same_owner_reacquire_gets_new_token`.
    ExpiredReacquireKeepsToken,
    /// The authority treats a record as live while `now <= expiry` instead of `now < expiry`:
    /// at the exact expiry instant another owner is refused. No history shows a 1 µs instant
    /// reliably; killed by the conformance rule `now_equal_to_expiry_is_expired`.
    ExpiryOffByOne,
    /// The lease service judges expiry by its wall clock, which jumps, instead of its
    /// monotonic clock: a forward wall step ends live leases early. Killed by EXCL on
    /// `sims/wall-jump-at-the-authority.toml`.
    ExpiryByWallClock,
    /// After a restart the lease service grants at once, without waiting out the grace period
    /// during which a lease granted before the crash may still be live. Killed by EXCL on
    /// `sims/f5c-restart-while-held.toml`.
    NoGracePeriod,
    /// A `KubeLease` candidate judges a held Lease expired when `renewTime +
    /// leaseDurationSeconds` is before its own **wall** clock (the seed's k8slease rule),
    /// instead of counting the duration on its monotonic clock from when it saw the object
    /// change: a candidate whose wall clock runs ahead takes a live lease over. Killed by
    /// EXPIRY (a takeover before the candidate's clock advanced a TTL) on
    /// `sims/kube-swarm-clocks.toml` (per-host wall offsets).
    ExpiryFromRenewTime,
    /// `KubeLease` sends its updates without a `resourceVersion` precondition (an
    /// unconditional update, as a merge patch is), so two candidates deciding from the same
    /// read both "win" (field case K1). Killed by EXCL on
    /// `sims/k1-two-candidates-one-read.toml`.
    UpdateWithoutResourceVersion,
    /// `KubeLease::release` deletes the Lease object instead of writing an empty holder, so
    /// the next create starts again at leaseTransitions 1 (field case K2). Killed by TOKEN on
    /// `sims/k2-delete-resets-token.toml` (the journal refuses the low epoch with
    /// `StaleEpoch`).
    DeleteOnRelease,
    /// `KubeLease::renew` writes leaseTransitions + 1 and returns that token: a token that
    /// moves without a takeover. Killed by TOKEN (a renew returns another token than it
    /// presented) on `sims/kube-swarm-clocks.toml` (K2's script never renews), and by the
    /// conformance rule `renew_keeps_token_and_extends_expiry` over `KubeLease` (tests/core).
    TransitionsBumpedOnRenew,
    /// `FlockLease::release` unlinks the session's lock file before closing it, and nobody
    /// checks after locking that the path still names the locked inode (field case F8; with
    /// that check the unlink alone would be harmless): a process already waiting on the old
    /// inode and one that creates a fresh file both get "the" lock and decide at once. Killed
    /// by the flock process test `unlink_race_never_two_holders` (two holders at once). The
    /// world's flock model cannot show it: a decision there never yields, so no process can
    /// be waiting on the old inode while the holder unlinks it
    /// (docs/world.md#flock-in-the-world).
    UnlinkOnRelease,
    /// `FlockLease` releases (unlocks the generation lock, clears the record) from whatever
    /// process calls it, not only the one that acquired: a forked child sharing the parent's
    /// open file description frees the parent's hold when it releases or exits. Killed by
    /// EXCL on `sims/flock-forked-child-releases.toml` (the flock model in the world: the
    /// child's release clears the record and replica-2 is granted beside replica-1), and on
    /// real processes by the flock process test `forked_child_that_exits_keeps_parents_hold`.
    UnlockFromAnyProcess,
    /// `FlockLease::renew` matches owner and token but never compares the record's expiry
    /// with `CLOCK_BOOTTIME`, so a holder suspended past its TTL renews as if nothing
    /// happened. Killed by EXCL (and LIN-LEASE) on `sims/flock-renew-after-expiry.toml`, the
    /// flock model in the world: the expired record's renew is granted with nobody having
    /// taken over. The swarm finds it on `sims/flock-swarm-long-holds.toml` (holders frozen
    /// past their record's expiry while their contenders are frozen too); the conformance
    /// rule `renew_after_expiry_is_held` over `FlockLease` (tests/flock) and the process test
    /// `suspended_holder_nobody_took_over_renews_held` are second witnesses on real files.
    RenewWithoutExpiryCheck,
    /// `FlockLease` rewrites the record in place (truncate, write, fsync) instead of writing a
    /// temp file and renaming it: a crash mid-write leaves a torn record and the token
    /// high-water mark is lost. Killed by the flock process test
    /// `crash_mid_record_write_keeps_the_high_water_mark`. The world's flock model cannot
    /// show it: the torn record needs a crash between the two halves of one write, inside a
    /// decision, and the world never interrupts a decision (docs/world.md#flock-in-the-world).
    RecordWrittenInPlace,
    /// `Journal::append` re-checks its lease after the ledger acknowledged the append and,
    /// when the holder's deadline passed while the call was in flight, reports the append
    /// lost (`LeaseLost`, "nothing was sent") although it committed: a definite failure that
    /// took effect, so its caller gives up (or redoes) work that is in the ledger. Killed by
    /// DEFINITE on `sims/committed-append-reply-late.toml`; the swarm finds it on
    /// `sims/swarm-held-writes.toml` (held ledger replies while a pause freezes the renewer).
    CommittedAppendReportedLost,
    /// `KubeLease` meets a 409 Conflict on a replace as a misused `retry.RetryOnConflict`
    /// does: it reads the object again only to take its new `resourceVersion` and sends the
    /// write it decided from the old read again, so a renew (or takeover, or release) decided
    /// before another candidate's takeover overwrites it: two holders (field case K3).
    /// Killed by EXCL on `sims/k3-decision-from-a-stale-read.toml`.
    ConflictRetryKeepsDecision,
    /// `EtcdLease::release` revokes the etcd lease its holder key names once the key names
    /// the caller's owner, without comparing the token (etcd #22082: the retried unlock
    /// matched the key name only), so a release retried after its first reply was lost frees
    /// the same owner's newer hold, and another owner takes the session beside it. Killed by
    /// the conformance rule `retried_release_of_own_older_hold_frees_nothing` over `EtcdLease`
    /// (tests/etcd, a real etcd).
    ReleaseMatchesOwnerOnly,
    /// `KubeLease::acquire` of an owner whose own Lease expired (by its observation; not
    /// released) keeps `leaseTransitions` instead of `+1`, so the holds before and after the
    /// expiry share one fencing token (what `expired-reacquire-keeps-token` is to the gRPC
    /// authority). Killed by TOKEN (a same-holder write that kept `leaseTransitions` after its
    /// holder's own expiry) on `sims/kube-swarm-partitions.toml` seed 3 (replica-1, cut off from
    /// the API server past its TTL with nobody contending, takes s1 back), and by the conformance rule
    /// `expired_same_owner_reacquire_gets_new_token` over `KubeLease` (tests/core).
    ExpiredReacquireKeepsTransitions,
    /// A `KubeLease` candidate reads a held Lease's `leaseDurationSeconds` as milliseconds,
    /// so it judges the lease expired a thousandth of the TTL after it saw the object change
    /// and takes a live lease over (a TTL in the wrong unit; the holder still counts its
    /// whole TTL). Killed by EXPIRY (a takeover before the candidate's clock advanced a TTL)
    /// on `sims/kube-swarm-everything.toml`.
    DurationReadAsMilliseconds,
}

impl Mutant {
    /// Every mutant, in catalogue order.
    pub const ALL: &'static [Mutant] = &[
        Mutant::TokenNotAdvancedOnExpiry,
        Mutant::AcquireCheckThenAct,
        Mutant::RenewIgnoresToken,
        Mutant::ReleaseBySessionOnly,
        Mutant::ClockReadBeforeLock,
        Mutant::AppendIgnoresExpectedTip,
        Mutant::FenceWrittenBlind,
        Mutant::OpenAcceptsStaleEpoch,
        Mutant::NoLocalDeadline,
        Mutant::ValidityFromAuthorityExpiry,
        Mutant::ValidityFromReceiptTime,
        Mutant::ClientUsesConfiguredTtl,
        Mutant::RenewerIgnoresUnexpectedErrors,
        Mutant::RenewerOutlivesWorker,
        Mutant::CleanupBeforeInvalidate,
        Mutant::CleanupAppendSkipsValidity,
        Mutant::GivesUpContending,
        Mutant::GateCheckThenEnter,
        Mutant::RenewRecreatesRecord,
        Mutant::TokenCounterInMemory,
        Mutant::TokenDroppedWithRecord,
        Mutant::ExpiredReacquireKeepsToken,
        Mutant::ExpiryOffByOne,
        Mutant::ExpiryByWallClock,
        Mutant::NoGracePeriod,
        Mutant::GraceResetOnRestart,
        Mutant::ExpiryFromRenewTime,
        Mutant::UpdateWithoutResourceVersion,
        Mutant::DeleteOnRelease,
        Mutant::TransitionsBumpedOnRenew,
        Mutant::UnlinkOnRelease,
        Mutant::UnlockFromAnyProcess,
        Mutant::RenewWithoutExpiryCheck,
        Mutant::RecordWrittenInPlace,
        Mutant::CommittedAppendReportedLost,
        Mutant::ConflictRetryKeepsDecision,
        Mutant::ReleaseMatchesOwnerOnly,
        Mutant::ExpiredReacquireKeepsTransitions,
        Mutant::DurationReadAsMilliseconds,
    ];

    /// The mutant's place in [`Mutant::ALL`] (0-based): detection tables are in this order,
    /// and `--shard` deals the mutants out by it.
    pub fn position(self) -> usize {
        Mutant::ALL
            .iter()
            .position(|m| *m == self)
            .expect("Mutant::ALL lists every variant")
    }

    /// The mutant named `name` ([`Mutant::name`]), if any.
    pub fn from_name(name: &str) -> Option<Mutant> {
        Mutant::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// The mutant named `name`, for a command line.
    ///
    /// # Errors
    /// A message listing every name, when none is `name`.
    pub fn parse(name: &str) -> Result<Mutant, String> {
        Mutant::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = Mutant::ALL.iter().map(|m| m.name()).collect();
            format!(
                "unknown mutant `{name}`; the mutants are {}",
                names.join(", ")
            )
        })
    }

    /// The one built-in backend whose code the mutant plants its bug in (`grpc`: the lease
    /// authority behind the gRPC service; `kube`: `KubeLease`; `flock`: `FlockLease`; `etcd`:
    /// `EtcdLease`), or `None` for a bug in the
    /// journal, the ledger or the service layer, which every backend runs. A mutant run on
    /// another backend would change nothing and pass: run files refuse it.
    pub fn backend(self) -> Option<&'static str> {
        match self {
            Mutant::TokenNotAdvancedOnExpiry
            | Mutant::AcquireCheckThenAct
            | Mutant::RenewIgnoresToken
            | Mutant::ReleaseBySessionOnly
            | Mutant::ClockReadBeforeLock
            | Mutant::RenewRecreatesRecord
            | Mutant::TokenCounterInMemory
            | Mutant::TokenDroppedWithRecord
            | Mutant::ExpiredReacquireKeepsToken
            | Mutant::ExpiryOffByOne
            | Mutant::ExpiryByWallClock
            | Mutant::NoGracePeriod
            | Mutant::GraceResetOnRestart => Some("grpc"),
            Mutant::ExpiryFromRenewTime
            | Mutant::UpdateWithoutResourceVersion
            | Mutant::DeleteOnRelease
            | Mutant::TransitionsBumpedOnRenew
            | Mutant::ConflictRetryKeepsDecision
            | Mutant::ExpiredReacquireKeepsTransitions
            | Mutant::DurationReadAsMilliseconds => Some("kube"),
            Mutant::UnlinkOnRelease
            | Mutant::UnlockFromAnyProcess
            | Mutant::RenewWithoutExpiryCheck
            | Mutant::RecordWrittenInPlace => Some("flock"),
            Mutant::ReleaseMatchesOwnerOnly => Some("etcd"),
            Mutant::AppendIgnoresExpectedTip
            | Mutant::FenceWrittenBlind
            | Mutant::OpenAcceptsStaleEpoch
            | Mutant::NoLocalDeadline
            | Mutant::ValidityFromAuthorityExpiry
            | Mutant::ValidityFromReceiptTime
            | Mutant::RenewerIgnoresUnexpectedErrors
            | Mutant::RenewerOutlivesWorker
            | Mutant::CleanupBeforeInvalidate
            | Mutant::GateCheckThenEnter
            | Mutant::ClientUsesConfiguredTtl
            | Mutant::CleanupAppendSkipsValidity
            | Mutant::CommittedAppendReportedLost
            | Mutant::GivesUpContending => None,
        }
    }

    /// The mutant's CLI name (kebab case, e.g. `token-not-advanced-on-expiry`).
    pub fn name(self) -> &'static str {
        match self {
            Mutant::TokenNotAdvancedOnExpiry => "token-not-advanced-on-expiry",
            Mutant::AcquireCheckThenAct => "acquire-check-then-act",
            Mutant::RenewIgnoresToken => "renew-ignores-token",
            Mutant::ReleaseBySessionOnly => "release-by-session-only",
            Mutant::ClockReadBeforeLock => "clock-read-before-lock",
            Mutant::AppendIgnoresExpectedTip => "append-ignores-expected-tip",
            Mutant::FenceWrittenBlind => "fence-written-blind",
            Mutant::OpenAcceptsStaleEpoch => "open-accepts-stale-epoch",
            Mutant::NoLocalDeadline => "no-local-deadline",
            Mutant::ValidityFromAuthorityExpiry => "validity-from-authority-expiry",
            Mutant::ValidityFromReceiptTime => "validity-from-receipt-time",
            Mutant::RenewerIgnoresUnexpectedErrors => "renewer-ignores-unexpected-errors",
            Mutant::RenewerOutlivesWorker => "renewer-outlives-worker",
            Mutant::CleanupBeforeInvalidate => "cleanup-before-invalidate",
            Mutant::GateCheckThenEnter => "gate-check-then-enter",
            Mutant::RenewRecreatesRecord => "renew-recreates-record",
            Mutant::TokenCounterInMemory => "token-counter-in-memory",
            Mutant::TokenDroppedWithRecord => "token-dropped-with-record",
            Mutant::ExpiredReacquireKeepsToken => "expired-reacquire-keeps-token",
            Mutant::ExpiryOffByOne => "expiry-off-by-one",
            Mutant::ExpiryByWallClock => "expiry-by-wall-clock",
            Mutant::NoGracePeriod => "no-grace-period",
            Mutant::GraceResetOnRestart => "grace-reset-on-restart",
            Mutant::ExpiryFromRenewTime => "expiry-from-renew-time",
            Mutant::UpdateWithoutResourceVersion => "update-without-resource-version",
            Mutant::DeleteOnRelease => "delete-on-release",
            Mutant::TransitionsBumpedOnRenew => "transitions-bumped-on-renew",
            Mutant::UnlinkOnRelease => "unlink-on-release",
            Mutant::UnlockFromAnyProcess => "unlock-from-any-process",
            Mutant::RenewWithoutExpiryCheck => "renew-without-expiry-check",
            Mutant::RecordWrittenInPlace => "record-written-in-place",
            Mutant::ClientUsesConfiguredTtl => "client-uses-configured-ttl",
            Mutant::CleanupAppendSkipsValidity => "cleanup-append-skips-validity",
            Mutant::CommittedAppendReportedLost => "committed-append-reported-lost",
            Mutant::GivesUpContending => "gives-up-contending",
            Mutant::ConflictRetryKeepsDecision => "conflict-retry-keeps-decision",
            Mutant::ReleaseMatchesOwnerOnly => "release-matches-owner-only",
            Mutant::ExpiredReacquireKeepsTransitions => "expired-reacquire-keeps-transitions",
            Mutant::DurationReadAsMilliseconds => "duration-read-as-milliseconds",
        }
    }
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
