//! What the world's tests share: the scenario folder, a scenario run from it, and a final
//! ledger as lines a test can compare.

use std::path::{Path, PathBuf};
use std::time::Duration;

use leasesim::campaign::scenario::Scenario;
use leasesim::history::{HistRecord, History};
use leasesim::sim::runfile;

/// The committed scenarios, `sims/`.
pub fn sims() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sims")
}

/// Runs `sims/<name>.toml` with `seed` (writing its history into `$LEASESIM_DUMP/` when set).
pub fn run(name: &str, seed: u64) -> History {
    let scenario = Scenario::load(&sims().join(format!("{name}.toml"))).unwrap();
    let run = scenario.resolve(seed).unwrap();
    let (history, _trace) = runfile::execute(&run, Duration::from_secs(120)).unwrap();
    if let Ok(dir) = std::env::var("LEASESIM_DUMP") {
        std::fs::write(format!("{dir}/{name}-{seed}.jsonl"), history.to_jsonl()).unwrap();
    }
    history
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
