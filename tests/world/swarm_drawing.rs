//! What the swarm profiles draw of the newer faults (issue 18, "Swarm power"): held replies,
//! authority errors, worker panics and the pause points before each validity decision are
//! drawn by the committed profiles on early seeds, and a run that has one is clean on the
//! correct implementation.

use std::time::Duration;

use leasesim::campaign::scenario::Scenario;
use leasesim::check::judge::judge;
use leasesim::check::linearizability::Budget;
use leasesim::hooks::PausePoint;
use leasesim::sim::runfile::{self, RunFile};
use leasesim::sim::schedule::Fault;

use crate::support::sims;

/// The points before each validity decision, which only swarm profiles draw.
const DECISION_POINTS: [PausePoint; 3] = [
    PausePoint::BeforeAppendCheck,
    PausePoint::BeforeOpenCheck,
    PausePoint::BeforeCleanupAppend,
];

/// The first seed in `0..20` whose run of `sims/<profile>.toml` draws a fault `wanted`
/// accepts, with that run.
fn first_drawing(profile: &str, wanted: impl Fn(&Fault) -> bool) -> (u64, RunFile) {
    let scenario = Scenario::load(&sims().join(format!("{profile}.toml"))).unwrap();
    (0..20)
        .map(|seed| (seed, scenario.resolve(seed).unwrap()))
        .find(|(_, run)| run.schedule.faults.iter().any(|f| wanted(&f.fault)))
        .unwrap_or_else(|| panic!("{profile}: no seed in 0..20 draws the fault"))
}

/// Runs `run` on the correct implementation; the names of the checks it violated.
fn violated(run: &RunFile) -> Vec<String> {
    assert_eq!(run.mutant, None, "the correct implementation");
    let (history, _) = runfile::execute(run, Duration::from_secs(120)).unwrap();
    judge(&history, Budget::default())
        .violated()
        .iter()
        .map(|check| format!("{check:?}"))
        .collect()
}

#[test]
fn swarm_delays_draws_replies_held_one_way_and_stays_clean() {
    let (seed, run) = first_drawing("swarm-delays", |f| {
        matches!(f, Fault::HoldReplies { from, to, duration_ms }
            if (from == "lease" || from == "ledger")
                && to.starts_with("replica-")
                && (10_000..=20_000).contains(duration_ms))
    });
    assert_eq!(violated(&run), Vec::<String>::new(), "seed {seed}");
}

#[test]
fn swarm_crashes_draws_a_worker_panic_at_a_worker_point_and_stays_clean() {
    let (seed, run) = first_drawing(
        "swarm-crashes",
        |f| matches!(f, Fault::WorkerPanic { point, .. } if PausePoint::WORKER.contains(point)),
    );
    assert_eq!(violated(&run), Vec::<String>::new(), "seed {seed}");
}

#[test]
fn swarm_crashes_draws_authority_errors_and_stays_clean() {
    let (seed, run) = first_drawing("swarm-crashes", |f| {
        matches!(f, Fault::AuthorityErrors { duration_ms, .. }
            if (1_000..=10_000).contains(duration_ms))
    });
    assert_eq!(violated(&run), Vec::<String>::new(), "seed {seed}");
}

#[test]
fn swarm_freezes_pause_or_stall_before_a_validity_decision_and_stay_clean() {
    let (seed, run) = first_drawing("swarm-freezes", |f| match f {
        Fault::Pause {
            at_point: Some(point),
            ..
        }
        | Fault::Stall { point, .. } => DECISION_POINTS.contains(point),
        _ => false,
    });
    assert_eq!(violated(&run), Vec::<String>::new(), "seed {seed}");
}

/// `leasesim run` without a scenario keeps its classic points: no seed's schedule names a
/// point before a validity decision (so classic seeds draw what they always drew).
#[test]
fn classic_schedules_never_draw_the_decision_points() {
    let mut config = leasesim::sim::config::WorldConfig::default();
    for seed in 0..200 {
        config.seed = seed;
        let schedule = leasesim::sim::generate::random_schedule(&config);
        for scheduled in schedule.faults {
            let point = match scheduled.fault {
                Fault::Pause { at_point, .. } => at_point,
                Fault::Stall { point, .. } => Some(point),
                _ => None,
            };
            assert!(
                point.is_none_or(|p| !DECISION_POINTS.contains(&p)),
                "seed {seed}: {point:?}"
            );
        }
    }
}

/// A profile's `points` are the only points its pauses, stalls and worker panics are drawn
/// at (`swarm-freezes` names two; each is drawn within 20 seeds), and the run file records
/// them in `drawn.points`; a profile without `points` draws from every replica point and its
/// run file has no `points` (as before the field).
#[test]
fn a_profiles_points_are_the_only_points_it_draws_and_the_run_file_says_so() {
    let own = [
        PausePoint::BeforeAppendSend,
        PausePoint::BeforeCleanupAppend,
    ];
    let scenario = Scenario::load(&sims().join("swarm-freezes.toml")).unwrap();
    let mut drawn_at = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let run = scenario.resolve(seed).unwrap();
        assert_eq!(run.drawn.as_ref().unwrap().points, own, "seed {seed}");
        let json: serde_json::Value = serde_json::to_value(&run).unwrap();
        assert_eq!(
            json["drawn"]["points"],
            serde_json::json!(["before_append_send", "before_cleanup_append"]),
            "seed {seed}"
        );
        for scheduled in &run.schedule.faults {
            let point = match &scheduled.fault {
                Fault::Pause { at_point, .. } => *at_point,
                Fault::Stall { point, .. } => Some(*point),
                _ => None,
            };
            if let Some(point) = point {
                assert!(own.contains(&point), "seed {seed}: {point:?}");
                drawn_at.insert(point);
            }
        }
    }
    assert_eq!(drawn_at.into_iter().collect::<Vec<_>>(), own);
    let everything = Scenario::load(&sims().join("swarm-everything.toml")).unwrap();
    let run = everything.resolve(0).unwrap();
    assert_eq!(
        run.drawn.as_ref().unwrap().points,
        leasesim::sim::generate::REPLICA_POINTS
    );
    let json: serde_json::Value = serde_json::to_value(&run).unwrap();
    assert!(json["drawn"].get("points").is_none(), "{}", json["drawn"]);
}

/// `victim_chance = [1, 1]` (`swarm-slow-holders`): every seed draws a victim, records it in
/// `drawn.victim`, and every replica its faults name is the victim; over 20 seeds both
/// replicas are drawn as victims. A profile without the field has no victim, and its run
/// file no `victim` (as before the field).
#[test]
fn a_victim_seed_aims_every_fault_at_its_victim_and_the_run_file_says_so() {
    let scenario = Scenario::load(&sims().join("swarm-slow-holders.toml")).unwrap();
    let mut victims = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let run = scenario.resolve(seed).unwrap();
        let victim = run.drawn.as_ref().unwrap().victim.clone().unwrap();
        let json: serde_json::Value = serde_json::to_value(&run).unwrap();
        assert_eq!(json["drawn"]["victim"], victim.as_str(), "seed {seed}");
        for scheduled in &run.schedule.faults {
            let mut fault = scheduled.fault.clone();
            for host in fault.hosts_mut() {
                if leasesim::history::hosts::is_replica(host) {
                    assert_eq!(*host, victim, "seed {seed}: {scheduled:?}");
                }
            }
        }
        victims.insert(victim);
    }
    assert_eq!(
        victims.into_iter().collect::<Vec<_>>(),
        ["replica-1", "replica-2"]
    );
    let everything = Scenario::load(&sims().join("swarm-everything.toml")).unwrap();
    let run = everything.resolve(0).unwrap();
    assert_eq!(run.drawn.as_ref().unwrap().victim, None);
    let json: serde_json::Value = serde_json::to_value(&run).unwrap();
    assert!(json["drawn"].get("victim").is_none(), "{}", json["drawn"]);
}

/// The swarm alone kills `fence-written-blind` (issue 18): on `swarm-slow-holders` seed 9 the
/// victim, its clock slow and its renewals cut, still appends when the other replica takes
/// the session over; one append commits between the new holder's tip read and its fence.
/// The correct implementation retries the fence and breaks nothing; the mutant writes the
/// fence blind over the committed append, which LEDGER sees lost.
#[test]
fn swarm_slow_holders_seed_9_kills_fence_written_blind_and_the_correct_fence_retries() {
    let scenario = Scenario::load(&sims().join("swarm-slow-holders.toml")).unwrap();
    let run = scenario.resolve(9).unwrap();
    assert_eq!(violated(&run), Vec::<String>::new());
    let (history, _) = runfile::execute(&run, Duration::from_secs(120)).unwrap();
    let coverage = leasesim::campaign::coverage::coverage(&history);
    assert!(coverage["fence-retried"] >= 1, "{coverage:?}");
    let mut planted = run.clone();
    planted.mutant = Some(
        leasesim::mutant::Mutant::FenceWrittenBlind
            .name()
            .to_owned(),
    );
    let (history, _) = runfile::execute(&planted, Duration::from_secs(120)).unwrap();
    let violated = judge(&history, Budget::default()).violated();
    assert!(
        violated.contains(&leasesim::check::catalogue::Check::Ledger),
        "{violated:?}"
    );
}

/// The swarm alone kills `committed-append-reported-lost` (issue 43): on `swarm-held-writes`
/// seed 1 the holder's append waits on a held ledger acknowledgement while a pause freezes its
/// renewer; the acknowledgement arrives after the holder's deadline. The correct journal
/// answers the committed append `ok` and breaks nothing; the mutant, re-checking its lease
/// after the write, answers `fail` for an event that is in the ledger, which DEFINITE alone
/// sees.
#[test]
fn swarm_held_writes_seed_1_kills_committed_append_reported_lost_and_the_correct_one_is_clean() {
    let scenario = Scenario::load(&sims().join("swarm-held-writes.toml")).unwrap();
    let run = scenario.resolve(1).unwrap();
    assert_eq!(violated(&run), Vec::<String>::new());
    let mut planted = run.clone();
    planted.mutant = Some(
        leasesim::mutant::Mutant::CommittedAppendReportedLost
            .name()
            .to_owned(),
    );
    let (history, _) = runfile::execute(&planted, Duration::from_secs(120)).unwrap();
    assert_eq!(
        judge(&history, Budget::default()).violated(),
        [leasesim::check::catalogue::Check::Definite]
    );
}

/// The swarm alone kills `renew-without-expiry-check` (issue 43): on `flock-swarm-long-holds`
/// seed 4 suspends and pauses of 1–3 TTLs overlap on all three replicas, so the holders of s1
/// and s2 are suspended past their records' expiry on the host's CLOCK_BOOTTIME while nobody
/// can take over, and renew when they resume. The correct `FlockLease` refuses those renews
/// (`stale-renew-refused`) and breaks nothing; the mutant grants them, which EXCL sees.
#[test]
fn flock_swarm_long_holds_seed_4_kills_renew_without_expiry_check_and_the_correct_one_refuses() {
    let scenario = Scenario::load(&sims().join("flock-swarm-long-holds.toml")).unwrap();
    let run = scenario.resolve(4).unwrap();
    assert_eq!(violated(&run), Vec::<String>::new());
    let (history, _) = runfile::execute(&run, Duration::from_secs(120)).unwrap();
    let coverage = leasesim::campaign::coverage::coverage(&history);
    assert!(coverage["stale-renew-refused"] >= 1, "{coverage:?}");
    let mut planted = run.clone();
    planted.mutant = Some(
        leasesim::mutant::Mutant::RenewWithoutExpiryCheck
            .name()
            .to_owned(),
    );
    let (history, _) = runfile::execute(&planted, Duration::from_secs(120)).unwrap();
    let violated = judge(&history, Budget::default()).violated();
    assert!(
        violated.contains(&leasesim::check::catalogue::Check::Excl),
        "{violated:?}"
    );
}
