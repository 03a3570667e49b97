//! Faults aimed at a session's holder (docs/world.md#faults-aimed-at-the-holder): a schedule's
//! `"target": {"holder": "s1"}` strikes the replica holding s1 when the fault strikes, as the
//! authority decided (gRPC) or the API server's object says (kube); the history's
//! `aim_at_holder` line and the fault's own line name it; the run replays byte for byte.

use std::path::Path;
use std::time::Duration;

use leasesim::campaign::scenario::Scenario;
use leasesim::history::{Decision, History, Line, NemesisAction, NemesisLine};
use leasesim::sim::runfile::{self, RunFile};

use crate::support::write;

const TIMEOUT: Duration = Duration::from_secs(120);

/// When the aimed pause strikes, ms.
const STRIKE_MS: u64 = 12_000;

/// A scenario of three replicas contending for s1 on `backend`, whose one fault is a 3 s
/// pause at [`STRIKE_MS`] of the replica holding s1 then (replica-1, the replica it names,
/// if nobody does).
fn scenario(dir: &Path, backend: &str) -> Scenario {
    write(
        dir,
        "aimed.schedule.json",
        &format!(
            r#"{{"v":1,"faults":[{{"at_ms":{STRIKE_MS},"fault":"pause","host":"replica-1","duration_ms":3000,"target":{{"holder":"s1"}}}}]}}"#
        ),
    );
    let text = format!(
        "v = 1\nabout = \"a pause aimed at s1's holder\"\n\n[world]\nbackend = \
         \"{backend}\"\nreplicas = 3\nsessions = [\"s1\"]\nduration_s = 30\n\n[faults]\n\
         schedule = \"aimed.schedule.json\"\n"
    );
    Scenario::load(Path::new(&write(dir, "aimed.toml", &text))).unwrap()
}

/// s1's holder after the lines before the aim line, as the history shows it: the owner of
/// the latest grant or renewal (gRPC), or the replica of the latest write's
/// `holderIdentity` (kube); nobody after a release that ended the hold or an emptied holder.
fn holder_before(history: &History, aim: &NemesisLine) -> Option<String> {
    let mut holder = None;
    for line in history.lines() {
        match line {
            Line::Nemesis(n) if n == aim => return holder,
            Line::Decision(d) if d.session == "s1" => match d.decision {
                Decision::Grant { .. } | Decision::Renew { .. } => {
                    holder = Some(d.owner.replica.clone())
                }
                Decision::Release { ended: true, .. } => holder = None,
                _ => {}
            },
            Line::Write(w) if w.session == "s1" => {
                let replica = w.holder_identity.split('#').next().unwrap_or_default();
                holder = (!replica.is_empty()).then(|| replica.to_owned());
            }
            _ => {}
        }
    }
    panic!("the aim line {aim:?} is not in the history")
}

/// The replica the aimed pause struck, after asserting the history says so consistently:
/// one `aim_at_holder` line at [`STRIKE_MS`] naming s1's holder then (replica-1 if nobody),
/// and the pause on that replica at that time.
fn struck(history: &History, what: &str) -> String {
    let aims: Vec<&NemesisLine> = history
        .nemesis_actions()
        .filter(|n| n.action == NemesisAction::AimAtHolder)
        .collect();
    let [aim] = aims[..] else {
        panic!("{what}: one aim line expected, got {aims:?}");
    };
    assert_eq!(aim.at_us, STRIKE_MS * 1_000, "{what}");
    let (expected, detail) = match holder_before(history, aim) {
        Some(holder) => (holder, "holder of s1"),
        None => (
            "replica-1".to_owned(),
            "nobody holds s1: the schedule's replica",
        ),
    };
    assert_eq!(
        (aim.host.as_str(), aim.detail.as_deref()),
        (expected.as_str(), Some(detail)),
        "{what}"
    );
    let paused: Vec<&str> = history
        .nemesis_actions()
        .filter(|n| n.action == NemesisAction::Pause)
        .map(|n| n.host.as_str())
        .collect();
    assert_eq!(
        paused,
        [expected.as_str()],
        "{what}: the pause strikes the holder"
    );
    expected
}

/// On both backends, over seeds 1..=6, the pause strikes the replica holding s1 when it
/// strikes — a holder other than the replica the schedule names at least once, so the
/// target, not the name, chose it.
#[test]
fn a_fault_aimed_at_the_holder_strikes_the_replica_holding_the_session_then() {
    let dir = tempfile::tempdir().unwrap();
    for backend in ["grpc", "kube"] {
        let scenario = scenario(dir.path(), backend);
        let mut struck_others = 0;
        for seed in 1..=6 {
            let run = scenario.resolve(seed).unwrap();
            let (history, _) = runfile::execute(&run, TIMEOUT).unwrap();
            let replica = struck(&history, &format!("{backend} seed {seed}"));
            struck_others += usize::from(replica != "replica-1");
        }
        assert!(
            struck_others > 0,
            "{backend}: every strike fell on the replica the schedule names"
        );
    }
}

/// A run with an aimed fault replays byte for byte from its run file, which keeps the
/// target.
#[test]
fn a_run_with_a_fault_aimed_at_the_holder_replays_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let run = scenario(dir.path(), "grpc").resolve(3).unwrap();
    let (first, second) = (dir.path().join("first"), dir.path().join("second"));
    runfile::execute_to(&run, &first, TIMEOUT).unwrap();
    let saved = RunFile::load(&first.join("run.json")).unwrap();
    assert_eq!(saved, run);
    assert!(saved.schedule.faults[0].target.is_some());
    runfile::execute_to(&saved, &second, TIMEOUT).unwrap();
    for file in ["history.jsonl", "trace.jsonl", "run.json", "schedule.json"] {
        let [a, b] = [&first, &second].map(|dir| std::fs::read(dir.join(file)).unwrap());
        assert!(a == b, "{file} differs on replay");
    }
    let history = std::fs::read_to_string(first.join("history.jsonl")).unwrap();
    assert!(history.contains(r#""action":"aim_at_holder""#));
}
