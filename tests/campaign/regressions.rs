//! `sims/regressions/`: minimal failing runs of real bugs, saved by
//! `leasesim campaign --save-regressions`; each replays as its run file's `expect` says —
//! clean once its bug is fixed, or violating exactly the checks it expects (a planted bug's
//! run kept to prove the checks still see it).

use std::path::{Path, PathBuf};

use leasesim_testkit::{both, files_ending_in, leasesim, stderr};

use crate::support::{
    MUTANT_SCENARIO, MUTANT_SEEDS, MUTANT_VIOLATES, campaign_args, mutant_sims, repo_sims,
};

/// Replays every `*.run.json` in `dir` (sorted), each into a fresh folder; returns each file
/// with its exit code and output.
fn replay_all(dir: &Path) -> Vec<(PathBuf, Option<i32>, String)> {
    files_ending_in(dir, ".run.json")
        .into_iter()
        .map(|file| {
            let out = tempfile::tempdir().unwrap();
            let output = leasesim!().run_in(
                out.path(),
                ["replay", file.to_str().unwrap(), "--out", "replayed"],
            );
            (file, output.status.code(), both(&output))
        })
        .collect()
}

/// The checks a run file expects violated (`expect.violate`).
fn expected_violations(file: &Path) -> Vec<leasesim::check::Check> {
    leasesim::sim::runfile::RunFile::load(file)
        .unwrap_or_else(|e| panic!("{e}"))
        .expect
        .violate
}

#[test]
fn every_saved_regression_replays_as_it_expects() {
    let dir = repo_sims().join("regressions");
    assert!(
        dir.join("README.md").is_file(),
        "sims/regressions/README.md is missing"
    );
    let replayed = replay_all(&dir);
    let expecting: Vec<Vec<leasesim::check::Check>> = replayed
        .iter()
        .map(|(file, _, _)| expected_violations(file))
        .collect();
    // The folder holds at least one run that must stay clean and one whose bug must still be
    // seen, so this test can fail either way.
    assert!(expecting.iter().any(Vec::is_empty), "no clean regression");
    assert!(
        expecting.iter().any(|v| !v.is_empty()),
        "no expected violation"
    );
    for ((file, code, output), violate) in replayed.iter().zip(&expecting) {
        assert_eq!(code, &Some(0), "{} replays wrong\n{output}", file.display());
        let verdict = output
            .lines()
            .find(|line| line.starts_with("verdict: "))
            .unwrap_or_else(|| panic!("{}: no verdict\n{output}", file.display()));
        if violate.is_empty() {
            // Clean: every check it judged passed (a scripted run leaves LIVE not judged).
            assert!(
                verdict == "verdict: clean — exit 0"
                    || (verdict.starts_with("verdict: clean (not judged: ")
                        && verdict.ends_with(") — exit 0")),
                "{}: a saved regression came back: {verdict}",
                file.display()
            );
        } else {
            // Exactly the expected violations, then (a scripted run) the checks not judged.
            let expected = format!(
                "verdict: clean: violated as expected: {}",
                leasesim::check::Check::list(violate)
            );
            assert!(
                verdict == format!("{expected} — exit 0")
                    || (verdict.starts_with(&format!("{expected} (not judged: "))
                        && verdict.ends_with(") — exit 0")),
                "{}: the expected violation is no longer seen, or others came: {verdict}",
                file.display()
            );
        }
    }
}

#[test]
#[ignore = "slow: a campaign that shrinks two counterexamples in a child process (about 15 s); runs in .ci/run's slow step: cargo test --release -- --ignored"]
fn save_regressions_copies_the_minimal_run_into_the_sims_regressions_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let sims = mutant_sims(tmp.path());
    let save = campaign_args(MUTANT_SEEDS, "1", "out", &["--save-regressions"]);
    let output = leasesim!().run_in(tmp.path(), save);
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    let name = format!("{MUTANT_SCENARIO}-seed1-ledger.run.json");
    let saved = sims.join("regressions").join(&name);
    assert!(
        stderr(&output).contains(&format!("saved as sims/regressions/{name}")),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read(&saved).unwrap(),
        std::fs::read(tmp.path().join("out/shrunk").join(&name)).unwrap(),
        "the saved regression is not the minimal run"
    );
    // One minimal run per violated check.
    let mut files: Vec<String> = std::fs::read_dir(sims.join("regressions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort_unstable();
    let names: Vec<String> = MUTANT_VIOLATES
        .iter()
        .map(|check| {
            let check = check.to_lowercase();
            format!("{MUTANT_SCENARIO}-seed1-{check}.run.json")
        })
        .collect();
    assert_eq!(files, names);
    // The bug is still planted, so the replay-all check would flag every regression.
    let replayed = replay_all(&sims.join("regressions"));
    assert_eq!(replayed.len(), MUTANT_VIOLATES.len());
    for (_, code, output) in &replayed {
        assert_eq!(*code, Some(1), "{output}");
        assert!(output.contains("verdict: FAIL: "), "{output}");
    }
    let ledger = replayed.iter().find(|(file, ..)| file.ends_with(&name));
    let (_, _, output) = ledger.expect("the LEDGER regression replayed");
    assert!(output.contains("verdict: FAIL: LEDGER"), "{output}");
}
