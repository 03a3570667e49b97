//! Histories of the simulated world (the tests may run the sim; the checkers never do): the
//! field cases F1 and F3 and twenty generated runs pass every invariant.

use leasesim::check::invariants::{Check, Evidence, check_all};
use leasesim::history::History;
use leasesim::mutant::Mutant;
use leasesim::sim::schedule::{Fault, FaultSchedule};

use crate::world_runs::{run_field_case, run_random, run_scheduled};

fn assert_all_pass(what: &str, history: &History) {
    let report = check_all(history);
    assert!(report.passed(), "{what}:\n{report}");
    for invariant in Check::INVARIANTS {
        assert!(
            report.get(invariant).is_some(),
            "{what}: {invariant} missing"
        );
    }
}

fn field_case_passes(name: &str) {
    let output = run_field_case(name, 1);
    let report = check_all(&output.history);
    // The case exercises the safety checkers: decisions, ledger records and validity checks
    // (a scripted run has no heal marker, so LIVE does not judge it; our own lease has no
    // signal of its own for SIGNAL to judge).
    let unjudged = [Check::Live, Check::Signal];
    for invariant in Check::INVARIANTS
        .into_iter()
        .filter(|i| !unjudged.contains(i))
    {
        assert!(
            report.get(invariant).unwrap().checks > 0,
            "{name}: {invariant} ran no checks\n{report}"
        );
    }
    assert_all_pass(name, &output.history);
}

#[test]
fn a_run_of_the_world_leaves_only_what_it_lacks_not_judged() {
    use leasesim::check::judge::judge;
    use leasesim::check::linearizability::Budget;
    let output = run_field_case("f1-pause-longer-than-ttl", 1);
    let judgement = judge(&output.history, Budget::default());
    // A scripted run has no heal marker: LIVE has nothing to judge; nor has SIGNAL, with no
    // target crate's signal.
    assert_eq!(
        judgement.not_judged(),
        [Check::Live, Check::Signal],
        "{judgement}"
    );
    assert!(
        judgement
            .to_string()
            .lines()
            .any(|l| l.starts_with("LIVE: not judged (")),
        "{judgement}"
    );
}

#[test]
fn f1_passes_every_invariant() {
    field_case_passes("f1-pause-longer-than-ttl");
}

#[test]
fn f3_passes_every_invariant() {
    field_case_passes("f3-slow-clock-cut-off-from-lease");
}

#[test]
fn generated_seeds_1_to_20_pass_every_invariant() {
    let mut failures = Vec::new();
    let mut live_checks = 0;
    for seed in 1..=20 {
        let output = run_random(seed, 60, None);
        let report = check_all(&output.history);
        live_checks += report.get(Check::Live).unwrap().checks;
        if !report.passed() {
            failures.push(format!("seed {seed}:\n{report}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(live_checks > 0, "LIVE judged none of the generated runs");
}

/// A planted bug is caught: with `token-not-advanced-on-expiry`, seed 2's takeover after
/// expiry reuses the expired lease's token, and TOKEN names both grants.
#[test]
fn the_token_not_advanced_on_expiry_mutant_is_caught_by_token() {
    let output = run_random(2, 60, Some(Mutant::TokenNotAdvancedOnExpiry));
    let report = check_all(&output.history);
    let token = report.get(Check::Token).unwrap();
    assert!(!token.passed(), "{report}");
    let violation = &token.violations[0];
    assert!(
        violation.message.contains("took the session over"),
        "{violation}"
    );
    // Each decision comes with the op line of the call it answered.
    assert_eq!(violation.evidence.len(), 4, "{violation}");
    assert!(
        matches!(violation.evidence[0], Evidence::Op(_)),
        "{violation}"
    );
}

/// A planted bug is caught: with `release-by-session-only`, seed 2's replica-2 makes a stale
/// release at 49.4 s that frees replica-3's live token 12 (the world records that release as
/// not ending anything: `ended` follows the correct rule). EXCL blames the stale release by
/// what followed it (replica-3's renew refused as "free"), then replica-2's grant of token 13
/// over the live token 12; EXPIRY the early end of token 12.
#[test]
fn the_release_by_session_only_mutant_is_caught_by_excl_and_expiry() {
    let output = run_random(2, 60, Some(Mutant::ReleaseBySessionOnly));
    let report = check_all(&output.history);
    let excl = report.get(Check::Excl).unwrap();
    assert_eq!(excl.violations.len(), 2, "{report}");
    let violation = &excl.violations[0];
    assert!(
        violation.message.contains("replica-2's release at ")
            && violation
                .message
                .contains(", a stale release, changed something"),
        "{violation}"
    );
    // The hold, the stale release and the decision after it, each with its call's op line.
    assert_eq!(violation.evidence.len(), 6, "{violation}");
    let takeover = &excl.violations[1].message;
    assert!(
        takeover.contains("replica-2's acquire at ")
            && takeover.contains("was granted token 13 while replica-3's token-12 hold"),
        "{takeover}"
    );
    let expiry = report.get(Check::Expiry).unwrap();
    assert!(!expiry.passed(), "{report}");
    assert!(
        expiry.violations[0]
            .message
            .contains("replica-3's token-12 lease"),
        "{report}"
    );
}

/// Wall-clock steps (an hour forward on the authority, back on a replica, then a large
/// offset) change no decision: every invariant, EXPIRY included, holds.
#[test]
fn wall_clock_steps_break_no_invariant() {
    let hour = 3_600_000;
    let schedule = FaultSchedule::new()
        .at(
            5_000,
            Fault::WallJump {
                host: "lease".into(),
                delta_ms: hour,
            },
        )
        .at(
            12_000,
            Fault::WallJump {
                host: "replica-1".into(),
                delta_ms: -hour,
            },
        )
        .at(
            20_000,
            Fault::WallOffset {
                host: "lease".into(),
                offset_ms: -24 * hour,
            },
        )
        .heal_at(30_000);
    let output = run_scheduled(3, 60, schedule);
    let report = check_all(&output.history);
    assert!(report.get(Check::Expiry).unwrap().checks > 0, "{report}");
    assert_all_pass("wall-clock steps", &output.history);
}

/// Repeated authority restarts: leases granted before each restart stay protected by the
/// grace period, so EXPIRY (remaining lifetime carried over as uptime) and every other
/// invariant hold.
#[test]
fn authority_restarts_break_no_invariant() {
    for seed in [1, 4] {
        let schedule = FaultSchedule::new()
            .at(
                4_000,
                Fault::LeaseServiceRestarts {
                    every_ms: 6_000,
                    count: 3,
                    downtime_ms: None,
                },
            )
            .heal_at(30_000);
        let output = run_scheduled(seed, 60, schedule);
        let restarted = output
            .history
            .clock_segments()
            .any(|segment| segment.host == "lease" && segment.boot >= 3);
        assert!(
            restarted,
            "seed {seed}: the authority did not restart three times"
        );
        assert_all_pass(&format!("restarts, seed {seed}"), &output.history);
    }
}
