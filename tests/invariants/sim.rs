//! Histories of the simulated world (the tests may run the sim; the checkers never do): the
//! field cases F1 and F3 and twenty generated runs pass every invariant.

use std::time::Duration;

use leasesim::check::invariants::{Invariant, check_all};
use leasesim::history::History;
use leasesim::sim::generate::random_schedule;
use leasesim::sim::schedule::FaultSchedule;
use leasesim::sim::script::Script;
use leasesim::sim::world::{self, Workload, WorldConfig};

fn field_case(name: &str) -> (FaultSchedule, Script) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/sims/field-cases");
    let read = |kind: &str| std::fs::read_to_string(format!("{dir}/{name}.{kind}.json")).unwrap();
    let schedule = FaultSchedule::from_json(&read("schedule")).unwrap();
    (schedule, Script::from_json(&read("script")).unwrap())
}

fn field_config(seed: u64) -> WorldConfig {
    let mut config = WorldConfig::default();
    config.seed = seed;
    config.replicas = 2;
    config.duration = Duration::from_secs(30);
    config
}

fn assert_all_pass(what: &str, history: &History) {
    let report = check_all(history);
    assert!(report.passed(), "{what}:\n{report}");
    for invariant in Invariant::ALL {
        assert!(
            report.get(invariant).is_some(),
            "{what}: {invariant} missing"
        );
    }
}

fn field_case_passes(name: &str) {
    let (schedule, script) = field_case(name);
    let output = world::run(&field_config(1), &schedule, &Workload::Scripted(script)).unwrap();
    let report = check_all(&output.history);
    // The case exercises the safety checkers: decisions, ledger records and validity checks
    // (a scripted run has no heal marker, so LIVE does not judge it).
    for invariant in Invariant::ALL.into_iter().filter(|i| *i != Invariant::Live) {
        assert!(
            report.get(invariant).unwrap().checks > 0,
            "{name}: {invariant} ran no checks\n{report}"
        );
    }
    assert_all_pass(name, &output.history);
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
        let mut config = WorldConfig::default();
        config.seed = seed;
        config.duration = Duration::from_secs(60);
        let schedule = random_schedule(&config);
        let output = world::run(&config, &schedule, &Workload::Generated).unwrap();
        let report = check_all(&output.history);
        live_checks += report.get(Invariant::Live).unwrap().checks;
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
    let mut config = WorldConfig::default();
    config.seed = 2;
    config.duration = Duration::from_secs(60);
    config.mutant = Some(leasesim::mutant::Mutant::TokenNotAdvancedOnExpiry);
    let schedule = random_schedule(&config);
    let output = world::run(&config, &schedule, &Workload::Generated).unwrap();
    let report = check_all(&output.history);
    let token = report.get(Invariant::Token).unwrap();
    assert!(!token.passed(), "{report}");
    let violation = &token.violations[0];
    assert!(violation.message.contains("takeover"), "{violation}");
    assert_eq!(violation.evidence.len(), 2, "{violation}");
}
