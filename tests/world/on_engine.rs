//! The world on leasesim's engine (docs/world.md#the-world-on-the-engine): the same scenarios
//! as on turmoil, judged, with exact facts on who held what when; planted bugs still caught;
//! the same seed giving the same bytes.

use std::time::Duration;

use leasesim::campaign::scenario::Scenario;
use leasesim::check::Check;
use leasesim::check::judge::judge;
use leasesim::check::linearizability::Budget;
use leasesim::history::{History, Line, NemesisAction, WorkState};
use leasesim::mutant::Mutant;
use leasesim::sim::config::WorldEngine;
use leasesim::sim::runner;
use leasesim::sim::schedule::Fault;
use leasesim::sim::world::World;

use crate::support::{A1_THEN_B1_B2_B3, assert_f3_stopped_by_the_fence, ledger, ops, sims};
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
    scenario_on(WorldEngine::Engine, name, seed, mutant)
}

/// `sims/<name>.toml` with `seed` on `engine`, with `mutant` planted (or none).
fn scenario_on(engine: WorldEngine, name: &str, seed: u64, mutant: Option<Mutant>) -> History {
    let scenario = Scenario::load(&sims().join(format!("{name}.toml"))).unwrap();
    let run = scenario.resolve(seed).unwrap();
    let mut config = run.world_config().unwrap();
    config.engine = engine;
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

/// The first seed in `0..20` whose run of `sims/<profile>.toml` draws a fault `wanted` accepts.
fn first_seed_drawing(profile: &str, wanted: impl Fn(&Fault) -> bool) -> u64 {
    let scenario = Scenario::load(&sims().join(format!("{profile}.toml"))).unwrap();
    (0..20)
        .find(|&seed| {
            let run = scenario.resolve(seed).unwrap();
            run.schedule.faults.iter().any(|f| wanted(&f.fault))
        })
        .unwrap_or_else(|| panic!("{profile}: no seed in 0..20 draws the fault"))
}

/// The `nemesis` lines of `action`, as (host, true time µs).
fn nemesis(history: &History, action: NemesisAction) -> Vec<(String, u64)> {
    history
        .lines()
        .iter()
        .filter_map(|line| match line {
            Line::Nemesis(n) if n.action == action => Some((n.host.clone(), n.at_us)),
            _ => None,
        })
        .collect()
}

/// A worker panic on the engine (docs/world.md#the-world-on-the-engine): the task that reaches
/// the point panics there and the service's supervisor sees it, as on turmoil: the run ends
/// (its work dropped, its lease released) and the host's runtime, and the replica, go on.
#[test]
fn a_worker_panic_on_the_engine_ends_its_run_only_and_is_judged_clean() {
    let seed = first_seed_drawing("swarm-crashes", |f| matches!(f, Fault::WorkerPanic { .. }));
    let history = scenario_on_engine("swarm-crashes", seed, None);
    assert_eq!(violated(&history), [], "seed {seed}");
    let panics = nemesis(&history, NemesisAction::WorkerPanic);
    assert!(!panics.is_empty(), "seed {seed}: the panic never fired");
    for (host, at_us) in panics {
        let work = |state: WorkState| {
            history.lines().iter().any(|line| {
                matches!(line, Line::Work(w)
                    if w.process.replica == host && w.state == state && w.at_us >= at_us)
            })
        };
        assert!(
            work(WorkState::Dropped),
            "seed {seed}: {host}'s run at {at_us} µs"
        );
        assert!(
            work(WorkState::Taken),
            "seed {seed}: {host} took no work after its panic"
        );
    }
}

/// A fork on the engine: the forked process is a process of the flock model's host, as on
/// turmoil (docs/world.md#flock-in-the-world); its replica's host runs the fork in a task as
/// soon as the host runs. The run is judged clean, as on turmoil, and the fork is applied.
#[test]
fn a_fork_on_the_engine_is_applied_and_judged_clean_as_on_turmoil() {
    let name = "flock-swarm-processes";
    let seed = first_seed_drawing(name, |f| matches!(f, Fault::Fork { .. }));
    let history = scenario_on_engine(name, seed, None);
    assert_eq!(violated(&history), [], "seed {seed}");
    assert!(
        !nemesis(&history, NemesisAction::Fork).is_empty(),
        "seed {seed}"
    );
    let on_turmoil = scenario_on(WorldEngine::Turmoil, name, seed, None);
    assert_eq!(violated(&on_turmoil), [], "seed {seed} on turmoil");
}

/// `stale-open-after-suspend` on the engine: replica-1 reaches `after_grant_received` and its
/// host is suspended for 15 s from there (the engine's clock of it and the world's stop
/// together, at most one slice after the point; the history's `nemesis` lines give when it
/// did); replica-2 takes over and replica-1's stale open is
/// refused: nothing of replica-1's reaches the ledger. `open-accepts-stale-epoch` is caught by
/// FENCE there, as on turmoil.
#[test]
fn a_suspend_at_a_pause_point_on_the_engine_stops_the_hosts_clock_for_its_duration() {
    let name = "stale-open-after-suspend";
    let history = scenario_on_engine(name, 1, None);
    assert_eq!(violated(&history), []);
    let segments: Vec<_> = history
        .lines()
        .iter()
        .filter_map(|line| match line {
            Line::Clock(c) if c.host == "replica-1" => Some((c.from_us, c.suspended)),
            _ => None,
        })
        .collect();
    let stopped = segments.iter().position(|(_, suspended)| *suspended);
    let stopped = stopped.expect("replica-1's clock never stopped");
    assert_eq!(
        segments[stopped + 1].0 - segments[stopped].0,
        15_000_000,
        "{segments:?}"
    );
    let suspended = ("replica-1".to_owned(), segments[stopped].0);
    assert_eq!(nemesis(&history, NemesisAction::Suspend), [suspended]);
    let resumed = ("replica-1".to_owned(), segments[stopped + 1].0);
    assert_eq!(nemesis(&history, NemesisAction::Resume), [resumed]);
    assert!(
        ops(&history, "replica-1", "journal_open")
            .iter()
            .all(|op| op.invoke_us >= segments[stopped + 1].0),
        "replica-1 opened its journal while suspended"
    );
    assert_eq!(ops(&history, "replica-1", "journal_open").len(), 1);
    let ledger = ledger(&history, "s1");
    assert!(
        ledger.iter().all(|r| !r.ends_with("replica-1")),
        "{ledger:?}"
    );
    let mutant = scenario_on_engine(name, 1, Some(Mutant::OpenAcceptsStaleEpoch));
    assert!(
        violated(&mutant).contains(&Check::Fence),
        "{:?}",
        violated(&mutant)
    );
}

/// A false LIVE verdict the engine gave until it booted hosts on fresh kernels
/// (docs/world.md#the-world-on-the-engine): on `swarm-everything` seed 9 the lease service is
/// restarted after a `delay_replies` hold left half-open connections in its kernel, which kept
/// its port for ever; on a fresh kernel it binds at once, and the run is clean, as on turmoil.
#[test]
fn a_restarted_service_binds_its_port_at_once_on_the_engine() {
    let history = scenario_on_engine("swarm-everything", 9, None);
    assert_eq!(violated(&history), []);
    let restarts = nemesis(&history, NemesisAction::Restart);
    assert!(
        restarts.iter().any(|(host, _)| host == "lease"),
        "{restarts:?}"
    );
}
