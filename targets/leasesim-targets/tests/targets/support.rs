//! What every target's tests share: the targets binary run in the repository, its output, and
//! what a history of a target run says (leadership changes, signals).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use leasesim::history::{History, Line, Op, OpResult};

/// Runs `leasesim-targets args… --out out` in the repository's root.
pub fn targets(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim-targets"))
        .args(args)
        .arg("--out")
        .arg(out)
        .current_dir(repo())
        .output()
        .unwrap()
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Stdout and stderr, for assertion messages.
pub fn text(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The verdict line a run or replay prints last.
pub fn verdict(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().rfind(|line| line.starts_with("verdict:"));
    last.unwrap_or_default().to_owned()
}

/// Changes of the Lease's holder to another (non-empty) one, over every session.
pub fn leadership_changes(history: &History) -> usize {
    let mut last: std::collections::BTreeMap<&str, &str> = Default::default();
    let mut changes = 0;
    for write in history.writes() {
        let holder = write.holder_identity.as_str();
        if !holder.is_empty() && last.insert(&write.session, holder) != Some(holder) {
            changes += 1;
        }
    }
    changes
}

/// How many times a crate's signal changed to "I lead" (`target_signal` lines).
pub fn signals_to_lead(history: &History) -> usize {
    history
        .lines()
        .iter()
        .filter(|line| {
            matches!(line, Line::Op(op) if op.op == Op::TargetSignal {}
                && op.result == Some(OpResult::Signal { leads: true }))
        })
        .count()
}

/// Replays the finding `targets/<target>/findings/<file>` and returns its output and verdict.
pub fn replay_finding(target: &str, file: &str) -> (Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = format!("targets/{target}/findings/{file}");
    let output = targets(&["replay", &path], dir.path());
    let line = verdict(&output);
    (output, line)
}
