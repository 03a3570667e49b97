//! The mutant switch: planted bugs that prove the checkers catch what they claim.
//!
//! A mutant is chosen per instance (per world in simulation, never a global), so parallel
//! runs in one process can run different mutants. Every backend takes `Option<Mutant>`;
//! `None`, the default, is the correct implementation and costs one comparison per call.

use std::fmt;

use crate::check::Check;

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
        Mutant::RenewerOutlivesWorker,
        Mutant::CleanupBeforeInvalidate,
        Mutant::GateCheckThenEnter,
        Mutant::RenewRecreatesRecord,
        Mutant::TokenCounterInMemory,
        Mutant::TokenDroppedWithRecord,
        Mutant::ExpiredReacquireKeepsToken,
        Mutant::ExpiryOffByOne,
        Mutant::ExpiryByWallClock,
        Mutant::NoGracePeriod,
    ];

    /// The mutant named `name` ([`Mutant::name`]), if any.
    pub fn from_name(name: &str) -> Option<Mutant> {
        Mutant::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// What is wrong, in one line (`leasesim mutants`).
    pub fn describe(self) -> &'static str {
        match self {
            Mutant::TokenNotAdvancedOnExpiry => {
                "a takeover after expiry reuses the expired lease's token"
            }
            Mutant::AcquireCheckThenAct => {
                "acquire checks the session and writes the grant in two critical sections"
            }
            Mutant::RenewIgnoresToken => "renew matches the owner but not the token",
            Mutant::ReleaseBySessionOnly => {
                "release deletes the session's record without comparing owner and token"
            }
            Mutant::ClockReadBeforeLock => "the authority reads its clock before taking its lock",
            Mutant::AppendIgnoresExpectedTip => {
                "a ledger append ignores the expected tip (a blind append, not a CAS)"
            }
            Mutant::FenceWrittenBlind => {
                "a journal's fence is written blind at the tip read, not by CAS"
            }
            Mutant::OpenAcceptsStaleEpoch => {
                "opening a journal accepts an epoch not above the ledger's highest fence"
            }
            Mutant::NoLocalDeadline => {
                "the holder trusts its lease until a renew answers Held, ignoring its deadline"
            }
            Mutant::ValidityFromAuthorityExpiry => {
                "the holder's deadline is the authority's expiry reading, not its own clock"
            }
            Mutant::RenewerOutlivesWorker => {
                "a run's renewer keeps renewing after the run ended; the lease is never released"
            }
            Mutant::CleanupBeforeInvalidate => {
                "shutdown releases leases before the runs' clean-up, without invalidating them"
            }
            Mutant::GateCheckThenEnter => {
                "the run-entry gate checks and marks a session in two critical sections"
            }
            Mutant::RenewRecreatesRecord => "renew recreates a missing or released record",
            Mutant::TokenCounterInMemory => {
                "the lease service keeps its token high-water marks only in memory"
            }
            Mutant::TokenDroppedWithRecord => {
                "deleting a lease record drops the session's token high-water mark"
            }
            Mutant::ExpiredReacquireKeepsToken => {
                "an owner re-acquiring its own expired lease keeps the old token"
            }
            Mutant::ExpiryOffByOne => "a lease is live while now <= expiry (not now < expiry)",
            Mutant::ExpiryByWallClock => "the lease service judges expiry by its wall clock",
            Mutant::NoGracePeriod => "a restarted lease service grants without a grace period",
        }
    }

    /// Where the catalogue says the mutant is killed; the mutant tests assert it.
    pub fn kill(self) -> Kill {
        match self {
            Mutant::TokenNotAdvancedOnExpiry => Kill::Conformance {
                rule: "token_strictly_greater_after_expiry",
            },
            Mutant::AcquireCheckThenAct
            | Mutant::RenewIgnoresToken
            | Mutant::ClockReadBeforeLock => Kill::Loom { suite: "lease" },
            Mutant::ReleaseBySessionOnly => Kill::Scenario {
                scenario: "sims/f6-late-release.toml",
                check: Check::Excl,
                seed: 1,
            },
            Mutant::AppendIgnoresExpectedTip => Kill::Scenario {
                scenario: "sims/f1-pause-longer-than-ttl.toml",
                check: Check::Fence,
                seed: 1,
            },
            Mutant::FenceWrittenBlind => Kill::Scenario {
                scenario: "sims/f4-fence-compares-the-tip.toml",
                check: Check::Ledger,
                seed: 1,
            },
            Mutant::OpenAcceptsStaleEpoch => Kill::Scenario {
                scenario: "sims/stale-open-after-suspend.toml",
                check: Check::Fence,
                seed: 1,
            },
            Mutant::NoLocalDeadline => Kill::Scenario {
                scenario: "sims/f2-renewals-black-holed.toml",
                check: Check::Stop,
                seed: 1,
            },
            Mutant::ValidityFromAuthorityExpiry => Kill::Scenario {
                scenario: "sims/validity-from-own-clock.toml",
                check: Check::Stop,
                seed: 1,
            },
            Mutant::RenewerOutlivesWorker => Kill::Scenario {
                scenario: "sims/swarm-everything.toml",
                check: Check::Live,
                seed: 1,
            },
            Mutant::CleanupBeforeInvalidate => Kill::Scenario {
                scenario: "sims/graceful-shutdowns.toml",
                check: Check::Stop,
                seed: 1,
            },
            Mutant::GateCheckThenEnter => Kill::Loom { suite: "gate" },
            Mutant::RenewRecreatesRecord => Kill::Scenario {
                scenario: "sims/f7-renew-resurrects.toml",
                check: Check::Excl,
                seed: 1,
            },
            Mutant::TokenCounterInMemory => Kill::Scenario {
                scenario: "sims/f5b-token-survives-authority-restart.toml",
                check: Check::Token,
                seed: 1,
            },
            Mutant::TokenDroppedWithRecord => Kill::Scenario {
                scenario: "sims/f5a-token-survives-record-deletion.toml",
                check: Check::Token,
                seed: 1,
            },
            Mutant::ExpiredReacquireKeepsToken => Kill::Scenario {
                scenario: "sims/swarm-partitions.toml",
                check: Check::Token,
                seed: 3,
            },
            Mutant::ExpiryOffByOne => Kill::Conformance {
                rule: "now_equal_to_expiry_is_expired",
            },
            Mutant::ExpiryByWallClock => Kill::Scenario {
                scenario: "sims/wall-jump-at-the-authority.toml",
                check: Check::Excl,
                seed: 1,
            },
            Mutant::NoGracePeriod => Kill::Scenario {
                scenario: "sims/f5c-restart-while-held.toml",
                check: Check::Excl,
                seed: 1,
            },
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
        }
    }
}

/// What kills a mutant: where the catalogue says it is detected (issue "Mutants",
/// deliverable 2). Tests assert every entry; `leasesim mutants` prints it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kill {
    /// A campaign scenario reports a violation of `check` (an invariant such as `FENCE`, or
    /// `LIN-LEASE` / `LIN-LEDGER`) on `seed`.
    Scenario {
        /// The scenario file, relative to the repository (`sims/….toml`).
        scenario: &'static str,
        /// The check that reports it.
        check: Check,
        /// The seed pinned by the kill test.
        seed: u64,
    },
    /// A rule of the lease conformance suite fails (`src/conformance.rs`), where no history
    /// can show the bug (e.g. an off-by-one at the exact expiry instant).
    Conformance {
        /// The rule's name.
        rule: &'static str,
    },
    /// A loom model fails (`models/`), for a race no simulation schedule reaches reliably.
    Loom {
        /// The suite (`lease`, `ledger`, `journal`, `gate`).
        suite: &'static str,
    },
}

/// The catalogue as text, one mutant per line: name, what is wrong, what kills it
/// (`leasesim mutants`).
pub fn catalogue() -> String {
    let width = Mutant::ALL
        .iter()
        .map(|m| m.name().len())
        .max()
        .unwrap_or(0);
    Mutant::ALL
        .iter()
        .map(|m| {
            format!(
                "{:width$}  {} — killed by {}\n",
                m.name(),
                m.describe(),
                m.kill()
            )
        })
        .collect()
}

impl fmt::Display for Kill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kill::Scenario {
                scenario,
                check,
                seed,
            } => write!(f, "{check} in {scenario} (seed {seed})"),
            Kill::Conformance { rule } => write!(f, "conformance rule {rule}"),
            Kill::Loom { suite } => write!(f, "loom suite {suite}"),
        }
    }
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
