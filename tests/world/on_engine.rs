//! The world on leasesim's engine (docs/world.md#the-world-on-the-engine): the same scenarios
//! as on turmoil, judged, with exact facts on who held what when.

use std::time::Duration;

use leasesim::check::judge::judge;
use leasesim::check::linearizability::Budget;
use leasesim::history::History;
use leasesim::sim::config::{Workload, WorldEngine};
use leasesim::sim::world::World;

use crate::world_runs::field_case;

/// Every check `history` violates.
fn violated(history: &History) -> Vec<String> {
    let judgement = judge(history, Budget::default());
    judgement
        .violated()
        .into_iter()
        .map(|check| format!("{check:?}"))
        .collect()
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

#[test]
fn a_fault_free_generated_run_on_the_engine_is_judged_clean() {
    let history = generated(WorldEngine::Engine, 1, 20);
    assert_eq!(violated(&history), Vec::<String>::new());
    assert!(history.ops().count() > 20, "{}", history.to_jsonl());
}
