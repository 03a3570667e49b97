//! What the world's tests share: the scenario folder, a scenario run from it, a final
//! ledger as lines a test can compare, and input the command line must refuse.

use std::path::{Path, PathBuf};
use std::time::Duration;

use leasesim::campaign::scenario::Scenario;
use leasesim::exit::Exit;
use leasesim::history::{Decision, HistRecord, History, OpLine, OpResult, Outcome};
use leasesim::sim::config::WorldEngine;
use leasesim::sim::runfile;
use leasesim_testkit::{assert_exit, leasesim};

/// s1's final ledger when A (replica-1) fenced at token 1 and wrote a1, then B (replica-2)
/// took over at token 2, fenced and wrote b1 (A's later appends fenced off or never sent).
pub const A1_THEN_B1: [&str; 4] = [
    "fence 1 replica-1",
    "a1 replica-1",
    "fence 2 replica-2",
    "b1 replica-2",
];

/// s1's final ledger when A (replica-1) never fenced (its open refused or never sent), and B
/// (replica-2) fenced at token 2 and wrote b1.
pub const B1_AFTER_A_FENCED_NOTHING: [&str; 2] = ["fence 2 replica-2", "b1 replica-2"];

/// As [`A1_THEN_B1`], with B's appends b2 and b3 after b1.
pub const A1_THEN_B1_B2_B3: [&str; 6] = [
    "fence 1 replica-1",
    "a1 replica-1",
    "fence 2 replica-2",
    "b1 replica-2",
    "b2 replica-2",
    "b3 replica-2",
];

/// The repository's root (the `leasesim` package's folder).
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The committed scenarios, `sims/`.
pub fn sims() -> PathBuf {
    repo().join("sims")
}

/// Runs `sims/<name>.toml` with `seed` on turmoil (writing its history into `$LEASESIM_DUMP/`
/// when set).
pub fn run(name: &str, seed: u64) -> History {
    run_on(WorldEngine::Turmoil, name, seed)
}

/// Runs `sims/<name>.toml` with `seed` on `engine` (writing its history as [`run`] does, as
/// `<name>-engine-<seed>.jsonl` on leasesim's engine).
pub fn run_on(engine: WorldEngine, name: &str, seed: u64) -> History {
    let scenario = Scenario::load(&sims().join(format!("{name}.toml"))).unwrap();
    let mut run = scenario.resolve(seed).unwrap();
    run.world.engine = engine;
    let (history, _trace) = runfile::execute(&run, Duration::from_secs(120)).unwrap();
    match engine {
        WorldEngine::Turmoil => dump(name, seed, &history),
        WorldEngine::Engine => dump(&format!("{name}-engine"), seed, &history),
    }
    history
}

/// Writes `history` to `$LEASESIM_DUMP/<name>-<seed>.jsonl` when that folder is set: a
/// failing world test's history, kept to read or to give to `leasesim check`.
pub fn dump(name: &str, seed: u64, history: &History) {
    if let Ok(dir) = std::env::var("LEASESIM_DUMP") {
        std::fs::write(format!("{dir}/{name}-{seed}.jsonl"), history.to_jsonl()).unwrap();
    }
}

/// The final ledger of `session` as `fence <epoch> <replica>` / `<payload> <replica>` lines.
pub fn ledger(history: &History, session: &str) -> Vec<String> {
    let ledger = history.final_ledger();
    let records = ledger.get(session).cloned().unwrap_or_default();
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

/// The operations `op` (`lease_acquire`, `journal_append`, …) `replica` made, in order.
pub fn ops<'h>(history: &'h History, replica: &str, op: &str) -> Vec<&'h OpLine> {
    history
        .ops()
        .filter(|line| line.process.replica == replica && line.op.name() == op)
        .collect()
}

/// The outcome and result of each of [`ops`], in order.
pub fn outcomes(history: &History, replica: &str, op: &str) -> Vec<(Outcome, OpResult)> {
    let lines = ops(history, replica, op).into_iter();
    lines
        .map(|line| (line.outcome, line.result.clone().unwrap()))
        .collect()
}

/// Tokens of the grants the authority decided, in order, as `(replica, token)`.
pub fn grants(history: &History) -> Vec<(String, u64)> {
    history
        .decisions()
        .filter_map(|d| match d.decision {
            Decision::Grant { token, .. } => Some((d.owner.replica.clone(), token)),
            _ => None,
        })
        .collect()
}

/// Field case F3's appends by A (replica-1), slow-clocked and cut off from the lease service:
/// a1 acknowledged at position 2, a2 fenced off (B's fence expected position 2), a3 and a4
/// refused as poisoned. `run` (a seed, say) begins each failure's message.
pub fn assert_f3_stopped_by_the_fence(history: &History, run: &str) {
    let a = outcomes(history, "replica-1", "journal_append");
    assert_eq!(a.len(), 4, "{run}: {a:?}");
    assert_eq!(a[0], appended(2), "{run}");
    assert!(
        matches!(a[1], (Outcome::Fail, OpResult::Fenced { expected: 2, .. })),
        "{run}: {:?}",
        a[1]
    );
    for later in &a[2..] {
        assert!(
            matches!(later, (Outcome::Fail, OpResult::Poisoned { .. })),
            "{run}: {later:?}"
        );
    }
}

/// An append acknowledged at position `seq`, as [`outcomes`] lists it.
pub fn appended(seq: u64) -> (Outcome, OpResult) {
    (Outcome::Ok, OpResult::Appended { seq })
}

/// Asserts `leasesim args` exits 2 before running, with every one of `expected` in stderr.
pub fn refused(args: &[&str], expected: &[&str]) {
    let output = leasesim!().run(args);
    assert_exit(&output, i32::from(Exit::BadInput.code()), expected);
}

/// Writes `text` as `<dir>/name` and returns its path as a string.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// `leasesim run --scenario` on `text` is refused naming each of `expected`.
pub fn scenario_refused(text: &str, expected: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(dir.path(), "bad.toml", text);
    let out = dir.path().join("out");
    let args = ["run", "--scenario", &scenario, "--seed", "1", "--out"];
    refused(&[&args[..], &[out.to_str().unwrap()]].concat(), expected);
}
