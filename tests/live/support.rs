//! Shared by the live tests: one live test at a time, the binary, bounded waits.

#![allow(dead_code)]

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use leasesim_testkit::leasesim;

static SERIAL: Mutex<()> = Mutex::new(());

/// Held for the whole of a test that starts real processes: live tests run one at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// `leasesim live ARGS` run to its end (bounded by its own --timeout): exit code, stdout and
/// stderr. The orchestrator reaps its children itself; a test that kills it checks that.
pub fn live(args: &[&str]) -> (i32, String, String) {
    let output = leasesim!()
        .command()
        .arg("live")
        .args(args)
        .output()
        .expect("leasesim live runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// [`live`] with `args`, then the run folder `out` as `--out`.
pub fn live_into(out: &Path, args: &[&str]) -> (i32, String, String) {
    live(&[args, &["--out", out.to_str().unwrap()]].concat())
}

/// [`live_into`] `DIR/out` with `schedule` (its JSON) written to `DIR/schedule.json` and
/// given as `--schedule` after `args`.
pub fn live_with_schedule(dir: &Path, schedule: &str, args: &[&str]) -> (i32, String, String) {
    let file = dir.join("schedule.json");
    std::fs::write(&file, schedule).unwrap();
    let given = [args, &["--schedule", file.to_str().unwrap()]].concat();
    live_into(&dir.join("out"), &given)
}

/// The repository's `sims/live/NAME.toml`.
pub fn live_scenario(name: &str) -> String {
    format!("{}/sims/live/{name}.toml", env!("CARGO_MANIFEST_DIR"))
}

/// The `result.json` of a run folder.
pub fn result(out: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("result.json")).expect("result.json");
    serde_json::from_str(&text).expect("result.json is JSON")
}

/// The verdict of check `name` in a `result.json`.
pub fn check_verdict(result: &serde_json::Value, name: &str) -> String {
    result["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == name)
        .map(|c| c["verdict"].as_str().unwrap_or("").to_owned())
        .unwrap_or_else(|| panic!("no check {name} in {result}"))
}

/// A runtime on two worker threads with timers and I/O, for a test that talks to real
/// processes or sockets.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}
