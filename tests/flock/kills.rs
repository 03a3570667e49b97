//! The mutant catalogue's `Kill::Process` rows: each names a process test here, which the
//! mutant must fail and the correct implementation pass.

use leasesim::mutant::Mutant;
use leasesim::mutants::{self, Kill};

use crate::support::ProcessTest;
use crate::{crash, fork, suspend, unlink};

/// The process tests a mutant can name, by name.
const PROCESS_TESTS: &[(&str, ProcessTest)] = &[
    (
        "unlink_race_never_two_holders",
        unlink::unlink_race_never_two_holders,
    ),
    (
        "forked_child_that_exits_keeps_parents_hold",
        fork::forked_child_that_exits_keeps_parents_hold,
    ),
    (
        "crash_mid_record_write_keeps_the_high_water_mark",
        crash::crash_mid_record_write_keeps_the_high_water_mark,
    ),
    (
        "suspended_holder_nobody_took_over_renews_held",
        suspend::suspended_holder_nobody_took_over_renews_held,
    ),
];

/// Process tests that kill a mutant besides the kill the catalogue names (second witnesses).
const ALSO_KILLED_BY: &[(Mutant, &str)] = &[
    (
        Mutant::RenewWithoutExpiryCheck,
        "suspended_holder_nobody_took_over_renews_held",
    ),
    // Killed by a world scenario now (the flock model); the real processes still show it.
    (
        Mutant::UnlockFromAnyProcess,
        "forked_child_that_exits_keeps_parents_hold",
    ),
];

/// The test named `name`.
fn lookup(name: &str) -> Result<ProcessTest, String> {
    PROCESS_TESTS
        .iter()
        .find(|(test, _)| *test == name)
        .map(|(_, test)| *test)
        .ok_or_else(|| format!("no process test `{name}` in tests/flock (kills.rs PROCESS_TESTS)"))
}

/// Every flock mutant whose kill is a process test fails that test, which the correct
/// implementation passes; so do the second witnesses.
#[test]
fn every_flock_kill_fails_its_test() {
    let mut pairs: Vec<(Mutant, &str)> = Mutant::ALL
        .iter()
        .filter_map(|mutant| match mutants::kill(*mutant) {
            Kill::Process { test } => Some((*mutant, test)),
            _ => None,
        })
        .collect();
    assert!(!pairs.is_empty(), "no mutant is killed by a process test");
    pairs.extend_from_slice(ALSO_KILLED_BY);
    let mut failures = Vec::new();
    for (mutant, name) in pairs {
        let test = match lookup(name) {
            Ok(test) => test,
            Err(error) => {
                failures.push(format!("{}: {error}", mutant.name()));
                continue;
            }
        };
        if let Err(error) = test(None) {
            failures.push(format!(
                "{name} fails on the correct implementation: {error}"
            ));
        }
        match test(Some(mutant)) {
            // The evidence, for `--nocapture`: the mutant must fail for the right reason.
            Err(error) => eprintln!("{} fails {name}: {error}", mutant.name()),
            Ok(()) => failures.push(format!("{} survives {name}", mutant.name())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
