//! `sims/regressions/`: minimal failing runs of real bugs, saved by
//! `leasesim campaign --save-regressions`; each must replay clean once its bug is fixed.

use std::path::{Path, PathBuf};

use crate::support::{MUTANT_SEEDS, both, leasesim, mutant_sims, repo_sims, stderr};

/// Replays every `*.run.json` in `dir` (sorted), each into a fresh folder; returns each file
/// with its exit code and output.
fn replay_all(dir: &Path) -> Vec<(PathBuf, Option<i32>, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(".run.json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let out = tempfile::tempdir().unwrap();
            let output = leasesim(
                out.path(),
                &["replay", file.to_str().unwrap(), "--out", "replayed"],
            );
            (file, output.status.code(), both(&output))
        })
        .collect()
}

#[test]
fn every_saved_regression_replays_clean() {
    let dir = repo_sims().join("regressions");
    assert!(
        dir.join("README.md").is_file(),
        "sims/regressions/README.md is missing"
    );
    for (file, code, output) in replay_all(&dir) {
        assert_eq!(
            code,
            Some(0),
            "{} fails again: a saved regression came back\n{output}",
            file.display()
        );
    }
}

#[test]
fn save_regressions_copies_the_minimal_run_into_the_sims_regressions_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let sims = mutant_sims(tmp.path());
    let output = leasesim(
        tmp.path(),
        &[
            "campaign",
            "--sims",
            "sims",
            "--seeds",
            MUTANT_SEEDS,
            "--jobs",
            "1",
            "--no-progress",
            "--save-regressions",
            "--out",
            "out",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    let name = "swarm-freezes-seed1-token.run.json";
    let saved = sims.join("regressions").join(name);
    assert!(
        stderr(&output).contains(&format!("saved as sims/regressions/{name}")),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read(&saved).unwrap(),
        std::fs::read(tmp.path().join("out/shrunk").join(name)).unwrap(),
        "the saved regression is not the minimal run"
    );
    let files: Vec<String> = std::fs::read_dir(sims.join("regressions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, [name]);
    // The bug is still planted, so the replay-all check would flag this regression.
    let replayed = replay_all(&sims.join("regressions"));
    assert_eq!(replayed.len(), 1);
    assert_eq!(replayed[0].1, Some(1), "{}", replayed[0].2);
    assert!(
        replayed[0].2.contains("verdict: SAFETY VIOLATION: TOKEN"),
        "{}",
        replayed[0].2
    );
}
