//! Field cases F1 and F3 of `shared/cases/scenarios.md`, replayed exactly: their histories
//! show A's stale append rejected and the ledger exactly as each case says.

use std::time::Duration;

use leasesim::history::{HistRecord, History, Op, OpResult, Outcome};
use leasesim::hooks::PausePoint;
use leasesim::sim::schedule::{Fault, FaultSchedule};
use leasesim::sim::script::{Call, Script};
use leasesim::sim::world::{self, Workload, WorldConfig};

const A: &str = "replica-1";
const B: &str = "replica-2";

fn acquire(session: &str) -> Call {
    Call::Acquire {
        session: session.into(),
        name: None,
    }
}

fn open(session: &str) -> Call {
    Call::OpenJournal {
        session: session.into(),
        lease: None,
    }
}

fn append(payload: &str) -> Call {
    Call::Append {
        session: "s1".into(),
        payload: payload.into(),
    }
}

fn config(seed: u64) -> WorldConfig {
    let mut config = WorldConfig::default();
    config.seed = seed;
    config.replicas = 2;
    config.sessions = vec!["s1".into()];
    config.duration = Duration::from_secs(30);
    config
}

/// The final ledger of s1 as `fence <epoch> <replica>` / `<payload> <replica>` lines.
fn ledger(history: &History) -> Vec<String> {
    let ledger = history.final_ledger();
    let records = ledger.get("s1").cloned().unwrap_or_default();
    records
        .into_iter()
        .map(|(_, record)| match record {
            HistRecord::Fence { epoch, owner, .. } => format!("fence {epoch} {}", owner.replica),
            HistRecord::Event {
                writer_id, payload, ..
            } => {
                let payload = String::from_utf8(payload).unwrap();
                format!("{payload} {}", writer_id.owner.replica)
            }
        })
        .collect()
}

/// The result of the journal append that carried `seq_in_writer` from `replica`.
fn journal_appends(history: &History, replica: &str) -> Vec<(Outcome, OpResult)> {
    history
        .ops()
        .filter(|op| op.process.replica == replica && matches!(op.op, Op::JournalAppend { .. }))
        .map(|op| (op.outcome, op.result.clone().unwrap()))
        .collect()
}

#[test]
fn f1_a_pause_longer_than_the_ttl_ends_in_a_fenced_stale_append() {
    let schedule = FaultSchedule::new().at(
        1_500,
        Fault::Pause {
            host: A.into(),
            duration_ms: 15_000,
            at_point: Some(PausePoint::BeforeAppendSend),
        },
    );
    let script = Script::new()
        .at(0, A, acquire("s1"))
        .at(0, A, open("s1"))
        .at(0, A, append("a1"))
        .at(2_000, A, append("a2"))
        .at(12_000, B, acquire("s1"))
        .at(12_000, B, open("s1"))
        .at(12_000, B, append("b1"));
    let output = world::run(&config(1), &schedule, &Workload::Scripted(script)).unwrap();
    let history = output.history;
    if let Ok(path) = std::env::var("LEASESIM_DUMP") {
        std::fs::write(path, history.to_jsonl()).unwrap();
    }
    assert_eq!(
        ledger(&history),
        [
            "fence 1 replica-1",
            "a1 replica-1",
            "fence 2 replica-2",
            "b1 replica-2"
        ]
    );
    let a = journal_appends(&history, A);
    assert_eq!(a[0], (Outcome::Ok, OpResult::Appended { seq: 2 }));
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
    let schedule = FaultSchedule::new()
        .at(
            0,
            Fault::ClockDrift {
                host: A.into(),
                ppm: -400_000,
            },
        )
        .at(
            2_000,
            Fault::Partition {
                a: A.into(),
                b: "lease".into(),
            },
        );
    let renewer = Call::StartRenewer { lease: "s1".into() };
    let script = Script::new()
        .at(0, A, acquire("s1"))
        .at(0, A, open("s1"))
        .at(0, A, append("a1"))
        .at(0, A, renewer)
        .at(12_000, B, acquire("s1"))
        .at(12_000, B, open("s1"))
        .at(12_500, B, append("b1"))
        .at(12_500, A, append("a2"))
        .at(13_000, A, append("a3"))
        .at(13_500, B, append("b2"))
        .at(14_000, A, append("a4"))
        .at(14_500, B, append("b3"));
    let history = world::run(&config(3), &schedule, &Workload::Scripted(script))
        .unwrap()
        .history;
    if let Ok(path) = std::env::var("LEASESIM_DUMP") {
        std::fs::write(path, history.to_jsonl()).unwrap();
    }
    assert_eq!(
        ledger(&history),
        [
            "fence 1 replica-1",
            "a1 replica-1",
            "fence 2 replica-2",
            "b1 replica-2",
            "b2 replica-2",
            "b3 replica-2"
        ]
    );
    let a = journal_appends(&history, A);
    assert_eq!(a.len(), 4);
    assert_eq!(a[0], (Outcome::Ok, OpResult::Appended { seq: 2 }));
    assert!(
        matches!(a[1], (Outcome::Fail, OpResult::Fenced { expected: 2, .. })),
        "{:?}",
        a[1]
    );
    for later in &a[2..] {
        assert!(
            matches!(later, (Outcome::Fail, OpResult::Poisoned { .. })),
            "{later:?}"
        );
    }
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
