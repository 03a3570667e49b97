//! The mutant switch: planted bugs that prove the checkers catch what they claim.
//!
//! A mutant is chosen per instance (per world in simulation, never a global), so parallel
//! runs in one process can run different mutants. Every backend takes `Option<Mutant>`;
//! `None`, the default, is the correct implementation and costs one comparison per call.

use std::fmt;

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
    /// `MemLedger::append` ignores the expected tip and appends at the end (a blind append
    /// instead of a CAS). Killed by the loom suites `ledger` (an acknowledged append not at
    /// `expected + 1`) and `journal` (a stale writer's event after a newer fence)
    /// (models/ledger.rs, models/journal.rs).
    AppendIgnoresExpectedTip,
    /// The service's run-entry gate checks that a session is free in one critical section and
    /// marks it taken in another, so two runs of one session can enter together. Killed by
    /// the loom suite `gate` (models/gate.rs): two runs of a session inside at once.
    GateCheckThenEnter,
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
        Mutant::GateCheckThenEnter,
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
            Mutant::GateCheckThenEnter => {
                "the run-entry gate checks and marks a session in two critical sections"
            }
        }
    }

    /// Where the catalogue says the mutant is killed; the mutant tests assert it.
    pub fn kill(self) -> Kill {
        match self {
            Mutant::TokenNotAdvancedOnExpiry => Kill::Conformance {
                rule: "token_strictly_greater_after_expiry",
            },
            Mutant::AcquireCheckThenAct | Mutant::RenewIgnoresToken | Mutant::ClockReadBeforeLock => {
                Kill::Loom { suite: "lease" }
            }
            Mutant::ReleaseBySessionOnly => Kill::Scenario {
                scenario: "sims/f6-late-release.toml",
                check: "EXCL",
                seed: 1,
            },
            Mutant::AppendIgnoresExpectedTip => Kill::Loom { suite: "ledger" },
            Mutant::GateCheckThenEnter => Kill::Loom { suite: "gate" },
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
            Mutant::GateCheckThenEnter => "gate-check-then-enter",
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
        check: &'static str,
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
