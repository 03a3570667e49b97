//! `leasesim run` as a user meets it: the seed and options first, the replay command last,
//! identical bytes from separate processes, and exit codes CI can use.

use std::process::{Command, Output};

fn leasesim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_run_prints_its_seed_first_and_its_replay_command_last() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let output = leasesim(&["run", "--seed", "7", "--duration", "20s", "--out", dir]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "SEED=7");
    assert_eq!(
        *lines.last().unwrap(),
        "replay: leasesim run --seed 7 --replicas 3 --duration 20s"
    );
    for file in [
        "history.jsonl",
        "trace.jsonl",
        "schedule.json",
        "result.json",
    ] {
        assert!(out.path().join(file).is_file(), "{file} missing");
    }
}

#[test]
fn twenty_seeds_give_identical_bytes_in_separate_processes() {
    let out = tempfile::tempdir().unwrap();
    for seed in 1..=20 {
        let dir = out.path().join(seed.to_string());
        let seed = seed.to_string();
        let args = [
            "run",
            "--seed",
            &seed,
            "--duration",
            "30s",
            "--check-determinism",
            "--out",
        ];
        let output = Command::new(env!("CARGO_BIN_EXE_leasesim"))
            .args(args)
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "seed {seed}: {}",
            text(&output.stderr)
        );
        let first = std::fs::read(dir.join("first/history.jsonl")).unwrap();
        assert!(first.len() > 10_000, "seed {seed} wrote almost no history");
    }
}

#[test]
fn a_run_past_its_wall_clock_timeout_is_a_harness_error_naming_the_seed() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let output = leasesim(&[
        "run",
        "--seed",
        "99",
        "--duration",
        "1h",
        "--timeout",
        "1ms",
        "--out",
        dir,
    ]);
    assert_eq!(output.status.code(), Some(3));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("seed 99 did not finish within 1ms"),
        "{stderr}"
    );
    assert!(
        stderr.contains("replay: leasesim run --seed 99"),
        "{stderr}"
    );
}

#[test]
fn bad_schedules_and_scripts_exit_2_saying_what_is_wrong() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let schedule = out.path().join("schedule.json");
    std::fs::write(
        &schedule,
        r#"{"v":1,"faults":[{"at_ms":5,"fault":"crash","host":"replica-9"}]}"#,
    )
    .unwrap();
    let output = leasesim(&[
        "run",
        "--seed",
        "1",
        "--schedule",
        schedule.to_str().unwrap(),
        "--out",
        dir,
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("unknown host `replica-9`"),
        "{}",
        text(&output.stderr)
    );

    std::fs::write(&schedule, "{\"v\":1,\n\"faults\": [oops]}").unwrap();
    let output = leasesim(&[
        "run",
        "--seed",
        "1",
        "--schedule",
        schedule.to_str().unwrap(),
        "--out",
        dir,
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("line 2"),
        "{}",
        text(&output.stderr)
    );

    let script = out.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"v":1,"calls":[{"at_ms":0,"replica":"replica-7","call":"acquire","session":"s1"}]}"#,
    )
    .unwrap();
    let output = leasesim(&[
        "run",
        "--seed",
        "1",
        "--script",
        script.to_str().unwrap(),
        "--out",
        dir,
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("replica-7"),
        "{}",
        text(&output.stderr)
    );
}
