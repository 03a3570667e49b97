//! What every target's tests share: the targets binary run in the repository, its output, what
//! a history of a target run says (leadership changes, signals), and the checks each target's
//! row of the table ([`crate::table`]) drives: its kube swarm run, `--check-determinism` on it,
//! and each finding's replay.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use leasesim::history::{History, Line, Op, OpResult};

use crate::table::Target;

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

/// The arguments of `target`'s kube swarm run.
fn swarm_run_args(target: &Target) -> Vec<String> {
    let run = &target.run;
    let backend = format!("target:{}", target.name);
    [
        "run",
        "--seed",
        run.seed,
        "--scenario",
        run.scenario,
        "--backend",
        &backend,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Runs `target`'s kube swarm run and checks it is a real contest of the crate: the verdict
/// the table expects, at least 3 leadership changes, 20 API writes and 3 changes of a crate's
/// signal to "I lead". Returns its history.
pub fn a_swarm_run_is_a_contest(target: &Target) -> History {
    let dir = tempfile::tempdir().unwrap();
    let args = swarm_run_args(target);
    let output = targets(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        dir.path(),
    );
    assert_eq!(
        output.status.code(),
        Some(target.run.exit),
        "{}",
        text(&output)
    );
    assert_eq!(verdict(&output), target.run.verdict, "{}", text(&output));
    let history = History::read_jsonl_path(dir.path().join("history.jsonl")).unwrap();
    let changes = leadership_changes(&history);
    assert!(changes >= 3, "{changes} leadership changes");
    let writes = history.writes().count();
    assert!(writes >= 20, "{writes} API writes");
    let signals = signals_to_lead(&history);
    assert!(
        signals >= 3,
        "{signals} changes of the crate's signal to \"I lead\""
    );
    history
}

/// `target`'s kube swarm run passes `--check-determinism`: a second process writes the same
/// history and trace.
pub fn its_swarm_run_passes_check_determinism(target: &Target) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = swarm_run_args(target);
    args.push("--check-determinism".to_owned());
    let output = targets(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        dir.path(),
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let identical = format!(
        "wrote identical history.jsonl and trace.jsonl for seed {}",
        target.run.seed
    );
    assert!(stdout.contains(&identical), "{stdout}");
}

/// Replays `target`'s committed finding `file` and checks it shows its violation: the exit
/// code, verdict and report the table gives.
pub fn the_finding_replays_with_its_violation(target: &Target, file: &str) {
    let finding = target.findings.iter().find(|finding| finding.file == file);
    let finding = finding.unwrap_or_else(|| panic!("no finding {file} of {}", target.name));
    let (output, line) = replay_finding(target.name, file);
    assert_eq!(
        output.status.code(),
        Some(finding.exit),
        "{}",
        text(&output)
    );
    assert_eq!(line, finding.verdict, "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    for shown in finding.shows {
        assert!(stdout.contains(shown), "{shown:?} is not in:\n{stdout}");
    }
}
