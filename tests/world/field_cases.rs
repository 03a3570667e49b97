//! Field cases F1 and F3 of `docs/field-cases.md`, replayed exactly: their histories
//! show A's stale append rejected and the ledger exactly as each case says.

use leasesim::history::{OpResult, Outcome};
use leasesim::sim::config::WorldEngine;
use leasesim::sim::schedule::FaultSchedule;
use leasesim::sim::script::Script;

use crate::support::{
    A1_THEN_B1, A1_THEN_B1_B2_B3, appended, assert_f3_stopped_by_the_fence, dump, ledger, outcomes,
};
use crate::world_runs::{run_field_case, run_scripted};

const A: &str = "replica-1";

#[test]
fn f1_a_pause_longer_than_the_ttl_ends_in_a_fenced_stale_append() {
    let history = run_field_case("f1-pause-longer-than-ttl", 1).history;
    dump("f1-pause-longer-than-ttl", 1, &history);
    assert_eq!(ledger(&history, "s1"), A1_THEN_B1);
    let a = outcomes(&history, A, "journal_append");
    assert_eq!(a[0], appended(2));
    assert_eq!(
        a[1],
        (
            Outcome::Fail,
            OpResult::Fenced {
                expected: 2,
                actual: 4
            }
        )
    );
}

#[test]
fn f3_a_slow_clock_cut_off_from_the_lease_service_is_stopped_by_the_fence() {
    let history = run_field_case("f3-slow-clock-cut-off-from-lease", 3).history;
    dump("f3-slow-clock-cut-off-from-lease", 3, &history);
    assert_eq!(ledger(&history, "s1"), A1_THEN_B1_B2_B3);
    assert_f3_stopped_by_the_fence(&history, "seed 3");
    // A's checks still passed on its slow clock: only the fence saved the ledger.
    let a_checks_after_takeover = history
        .validity_checks()
        .filter(|check| check.process.replica == A && check.at_us >= 12_000_000)
        .count();
    assert_eq!(
        a_checks_after_takeover, 1,
        "a2's check passed; a3 and a4 were refused as poisoned"
    );
}

/// Healing restarts what the nemesis crashed, not a replica that finished its script.
#[test]
fn the_heal_restarts_only_crashed_hosts() {
    let script = Script::from_json(
        r#"{"v":1,"calls":[{"at_ms":0,"replica":"replica-1","call":"acquire","session":"s1"}]}"#,
    )
    .unwrap();
    let schedule = FaultSchedule::from_json(
        r#"{"v":1,"faults":[{"at_ms":1000,"fault":"crash","host":"replica-2"}],"heal_at_ms":5000}"#,
    )
    .unwrap();
    let history = run_scripted(WorldEngine::Turmoil, 5, schedule, script).history;
    let acquires: Vec<String> = history
        .ops()
        .map(|op| {
            format!(
                "{}#{} {}",
                op.process.replica,
                op.process.incarnation,
                op.op.name()
            )
        })
        .collect();
    assert_eq!(acquires, ["replica-1#0 lease_acquire"]);
    let boots: Vec<(String, u64)> = history
        .clock_segments()
        .map(|c| (c.host.clone(), c.boot))
        .collect();
    assert!(
        boots.contains(&("replica-2".into(), 1)),
        "replica-2 was not restarted: {boots:?}"
    );
    assert!(
        !boots.contains(&("replica-1".into(), 1)),
        "replica-1 was restarted: {boots:?}"
    );
}
