//! The world on leasesim's engine (docs/world.md#the-world-on-the-engine): the same scenarios
//! as on turmoil, judged, with exact facts on who held what when; planted bugs still caught;
//! the same seed giving the same bytes.

use std::time::Duration;

use leasesim::campaign::scenario::Scenario;
use leasesim::check::Check;
use leasesim::check::judge::judge;
use leasesim::check::linearizability::Budget;
use leasesim::history::{History, Line};
use leasesim::mutant::Mutant;
use leasesim::sim::config::WorldEngine;
use leasesim::sim::runner;
use leasesim::sim::world::World;

use crate::support::{A1_THEN_B1_B2_B3, assert_f3_stopped_by_the_fence, ledger, sims};
use crate::world_runs::run_field_case_on;

/// Every check `history` violates.
fn violated(history: &History) -> Vec<Check> {
    judge(history, Budget::default()).violated()
}

/// A generated run of `seconds` on `engine` with `seed`, no faults.
fn generated(engine: WorldEngine, seed: u64, seconds: u64) -> History {
    World::builder()
        .seed(seed)
        .duration(Duration::from_secs(seconds))
        .engine(engine)
        .build()
        .unwrap()
        .run()
        .unwrap()
        .history
}

/// `sims/<name>.toml` with `seed` on the engine, with `mutant` planted (or none).
fn scenario_on_engine(name: &str, seed: u64, mutant: Option<Mutant>) -> History {
    let scenario = Scenario::load(&sims().join(format!("{name}.toml"))).unwrap();
    let run = scenario.resolve(seed).unwrap();
    let mut config = run.world_config().unwrap();
    config.engine = WorldEngine::Engine;
    if mutant.is_some() {
        config.mutant = mutant;
    }
    let timeout = Duration::from_secs(120);
    runner::run_with_timeout(&config, run.schedule.clone(), run.world_workload(), timeout)
        .unwrap()
        .0
}

#[test]
fn a_fault_free_generated_run_on_the_engine_is_judged_clean() {
    let history = generated(WorldEngine::Engine, 1, 20);
    assert_eq!(violated(&history), []);
    assert!(history.ops().count() > 20, "{}", history.to_jsonl());
}

/// F3 (docs/field-cases.md): A's clock runs 40 % slow from 0 s and A is cut off from the
/// lease host at 2 s. On the engine the drift reaches A's tokio clock itself; the outcome is
/// turmoil's: B takes over, A's first stale append is fenced and its later ones refused as
/// poisoned, and the ledger holds a1 then B's three appends.
#[test]
fn f3_on_the_engine_a_slow_clock_cut_off_is_stopped_by_the_fence() {
    let history =
        run_field_case_on(WorldEngine::Engine, "f3-slow-clock-cut-off-from-lease", 3).history;
    assert_eq!(ledger(&history, "s1"), A1_THEN_B1_B2_B3);
    assert_f3_stopped_by_the_fence(&history, "seed 3 on the engine");
    assert_eq!(violated(&history), []);
    let a_clock: Vec<_> = history
        .lines()
        .iter()
        .filter_map(|line| match line {
            Line::Clock(clock) if clock.host == "replica-1" => {
                Some((clock.from_us, clock.drift_ppm))
            }
            _ => None,
        })
        .collect();
    assert_eq!(a_clock, [(0, -400_000)]);
}

#[test]
fn release_by_session_only_is_caught_on_the_engine_by_excl() {
    let history = scenario_on_engine("f6-late-release", 1, Some(Mutant::ReleaseBySessionOnly));
    assert!(
        violated(&history).contains(&Check::Excl),
        "{:?}",
        violated(&history)
    );
    let correct = scenario_on_engine("f6-late-release", 1, None);
    assert_eq!(violated(&correct), []);
}

#[test]
fn the_same_seed_gives_the_same_history_bytes_on_the_engine() {
    let first = generated(WorldEngine::Engine, 7, 10).to_jsonl();
    let second = generated(WorldEngine::Engine, 7, 10).to_jsonl();
    assert_eq!(first, second);
    assert_ne!(first, generated(WorldEngine::Engine, 8, 10).to_jsonl());
}

/// F2 with `no-local-deadline`: on turmoil the hung renew keeps A believing it holds until the
/// call's 60 s deadline; on the engine TCP gives up on the cut link after its retransmissions
/// (1.2 s), so the renew fails early. STOP must still catch the planted bug.
#[test]
fn no_local_deadline_is_caught_on_the_engine_by_stop() {
    let history = scenario_on_engine("f2-renewals-black-holed", 1, Some(Mutant::NoLocalDeadline));
    assert!(
        violated(&history).contains(&Check::Stop),
        "{:?}",
        violated(&history)
    );
}
