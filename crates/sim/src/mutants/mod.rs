//! The mutants' catalogue, the harness's side of the mutant switch ([`leasesim_core::mutant`]): what
//! each planted bug gets wrong, where it is killed (a [`Check`] on a scenario, a conformance
//! rule, a flock process test or a loom suite), and which runs it may be planted in
//! (docs/campaigns.md#mutants). The switch itself stays with the system under test, which
//! knows nothing of checks.

mod about;
mod kills;

use std::fmt;

use leasesim_core::mutant::Mutant;
use leasesim_history::catalogue::Check;

/// What `mutant` gets wrong, in one line (`leasesim mutants`).
pub fn describe(mutant: Mutant) -> &'static str {
    let (_, about) = about::ABOUT
        .iter()
        .find(|(m, _)| *m == mutant)
        .expect("every mutant has a row in ABOUT (unit test `every_mutant_has_one_row`)");
    about
}

/// Where the catalogue says `mutant` is killed; the mutant tests assert it.
pub fn kill(mutant: Mutant) -> Kill {
    let (_, kill) = kills::KILLS
        .iter()
        .find(|(m, _)| *m == mutant)
        .expect("every mutant has a row in KILLS (unit test `every_mutant_has_one_row`)");
    *kill
}

/// Whether `mutant` plants its bug in code a world on `backend` runs.
pub fn applies_to(mutant: Mutant, backend: &str) -> bool {
    mutant.backend().is_none_or(|own| own == backend)
}

/// The one rule every entry point that plants a mutant applies before anything runs
/// (`run`, `replay`, scenario and run files, `campaign --mutant`, `live`, `serve`): a
/// mutant planted in another backend's code than the run's `backend` would change
/// nothing, and the run would pass on the correct code (docs/campaigns.md#mutants).
///
/// # Errors
/// The refusal, naming the mutant, its backend and the run's; the caller adds how to run
/// it instead.
pub fn check_planted_in(mutant: Mutant, backend: &str) -> Result<(), String> {
    if applies_to(mutant, backend) {
        return Ok(());
    }
    Err(format!(
        "mutant `{}` plants its bug in the {} backend, and this run is on {backend}: it \
         would change nothing (the correct code would run and pass)",
        mutant.name(),
        mutant.backend().unwrap_or("any"),
    ))
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
    /// A rule of the lease conformance suite fails (`crates/conformance/src/lib.rs`), where no history
    /// can show the bug (e.g. an off-by-one at the exact expiry instant).
    Conformance {
        /// The rule's name.
        rule: &'static str,
    },
    /// A process test of the flock backend fails (`tests/flock/`: real processes, real
    /// files), for a bug only real processes show (a fork, an unlinked inode, a crash).
    Process {
        /// The test's name in `tests/flock/`.
        test: &'static str,
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
                describe(*m),
                kill(*m)
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
            Kill::Process { test } => write!(f, "flock process test {test}"),
            Kill::Loom { suite } => write!(f, "loom suite {suite}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both tables list every mutant once, in catalogue order.
    #[test]
    fn every_mutant_has_one_row() {
        let in_kills: Vec<Mutant> = kills::KILLS.iter().map(|(m, _)| *m).collect();
        let in_about: Vec<Mutant> = about::ABOUT.iter().map(|(m, _)| *m).collect();
        assert_eq!(in_kills, Mutant::ALL, "KILLS");
        assert_eq!(in_about, Mutant::ALL, "ABOUT");
    }

    /// Every kill is one of the forms, and a scenario kill names a file under `sims/` (its
    /// check is a [`Check`], so it is one the campaign reports).
    #[test]
    fn every_kill_names_something_that_exists() {
        for mutant in Mutant::ALL {
            match kill(*mutant) {
                Kill::Scenario {
                    scenario,
                    check: _,
                    seed,
                } => {
                    assert!(scenario.starts_with("sims/"), "{mutant}: {scenario}");
                    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join("../..")
                        .join(scenario);
                    assert!(
                        path.is_file(),
                        "{mutant}: {} does not exist",
                        path.display()
                    );
                    assert!(seed > 0, "{mutant}: seed {seed}");
                }
                Kill::Conformance { rule } => assert!(!rule.is_empty(), "{mutant}"),
                Kill::Process { test } => assert!(!test.is_empty(), "{mutant}"),
                Kill::Loom { suite } => {
                    assert!(
                        ["lease", "ledger", "journal", "gate"].contains(&suite),
                        "{mutant}: unknown loom suite {suite}"
                    );
                }
            }
        }
    }

    /// The catalogue's kills, pinned: a changed kill must change this list too.
    #[test]
    fn the_kills_are_pinned() {
        let kills: Vec<String> = Mutant::ALL
            .iter()
            .map(|m| format!("{m}: {}", kill(*m)))
            .collect();
        assert_eq!(
            kills,
            [
                "token-not-advanced-on-expiry: conformance rule token_strictly_greater_after_expiry",
                "acquire-check-then-act: loom suite lease",
                "renew-ignores-token: loom suite lease",
                "release-by-session-only: EXCL in sims/f6-late-release.toml (seed 1)",
                "clock-read-before-lock: loom suite lease",
                "append-ignores-expected-tip: FENCE in sims/f1-pause-longer-than-ttl.toml (seed 1)",
                "fence-written-blind: LEDGER in sims/f4-fence-compares-the-tip.toml (seed 1)",
                "open-accepts-stale-epoch: FENCE in sims/stale-open-after-suspend.toml (seed 1)",
                "no-local-deadline: STOP in sims/f2-renewals-black-holed.toml (seed 1)",
                "validity-from-authority-expiry: STOP in sims/validity-from-own-clock.toml (seed 1)",
                "validity-from-receipt-time: STOP in sims/late-grant-held-one-way.toml (seed 1)",
                "client-uses-configured-ttl: STOP in sims/configured-ttl-ignored.toml (seed 1)",
                "renewer-ignores-unexpected-errors: STOP in sims/authority-denies-renewals.toml (seed 1)",
                "renewer-outlives-worker: LIVE in sims/swarm-everything.toml (seed 1)",
                "cleanup-before-invalidate: STOP in sims/graceful-shutdowns.toml (seed 1)",
                "cleanup-append-skips-validity: STOP in sims/cleanup-append-after-long-pause.toml (seed 1)",
                "gives-up-contending: LIVE in sims/lone-replica-gives-up.toml (seed 1)",
                "gate-check-then-enter: loom suite gate",
                "renew-recreates-record: EXCL in sims/f7-renew-resurrects.toml (seed 1)",
                "token-counter-in-memory: TOKEN in sims/f5b-token-survives-authority-restart.toml (seed 1)",
                "token-dropped-with-record: TOKEN in sims/f5a-token-survives-record-deletion.toml (seed 1)",
                "expired-reacquire-keeps-token: TOKEN in sims/swarm-partitions.toml (seed 3)",
                "expiry-off-by-one: conformance rule now_equal_to_expiry_is_expired",
                "expiry-by-wall-clock: EXCL in sims/wall-jump-at-the-authority.toml (seed 1)",
                "no-grace-period: EXCL in sims/f5c-restart-while-held.toml (seed 1)",
                "grace-reset-on-restart: LIVE in sims/lease-restarts-with-downtime.toml (seed 1)",
                "expiry-from-renew-time: EXPIRY in sims/kube-swarm-clocks.toml (seed 1)",
                "update-without-resource-version: EXCL in sims/k1-two-candidates-one-read.toml (seed 1)",
                "delete-on-release: TOKEN in sims/k2-delete-resets-token.toml (seed 1)",
                "transitions-bumped-on-renew: TOKEN in sims/kube-swarm-clocks.toml (seed 1)",
                "unlink-on-release: flock process test unlink_race_never_two_holders",
                "unlock-from-any-process: EXCL in sims/flock-forked-child-releases.toml (seed 1)",
                "renew-without-expiry-check: EXCL in sims/flock-renew-after-expiry.toml (seed 1)",
                "record-written-in-place: flock process test crash_mid_record_write_keeps_the_high_water_mark",
                "committed-append-reported-lost: DEFINITE in sims/committed-append-reply-late.toml (seed 1)",
                "conflict-retry-keeps-decision: EXCL in sims/k3-decision-from-a-stale-read.toml (seed 1)",
                "release-matches-owner-only: conformance rule retried_release_of_own_older_hold_frees_nothing",
                "expired-reacquire-keeps-transitions: TOKEN in sims/kube-swarm-partitions.toml (seed 3)",
                "duration-read-as-milliseconds: EXPIRY in sims/kube-swarm-everything.toml (seed 1)",
            ]
        );
    }
}
