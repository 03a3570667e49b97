//! `leasesim live` end to end: a correct run with pauses, crashes and partitions is clean, and
//! everything it did is in its files.

use super::support;

#[test]
#[ignore = "slow: a 6 s live run and its liveness phase on real processes in real time; runs in .ci/run's slow step: cargo test --release -- --ignored"]
fn a_correct_run_with_pauses_crashes_and_partitions_is_judged_clean() {
    let _serial = support::serial();
    let dir = tempfile::tempdir().unwrap();
    let schedule = r#"{"v":1,"faults":[
          {"at_ms":1000,"fault":"pause","host":"replica-1","duration_ms":3000},
          {"at_ms":1500,"fault":"partition","a":"replica-2","b":"lease"},
          {"at_ms":2500,"fault":"crash","host":"replica-3"},
          {"at_ms":3500,"fault":"restart","host":"replica-3"},
          {"at_ms":4000,"fault":"pause","host":"ledger","duration_ms":500}
        ],"heal_at_ms":5000}"#;
    let (code, stdout, stderr) =
        support::live_with_schedule(dir.path(), schedule, &["--seed", "3", "--duration", "6s"]);
    let out = dir.path().join("out");
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        last.starts_with("verdict: clean") && last.ends_with("exit 0"),
        "{last}"
    );
    for action in [
        "sigstop replica-1",
        "sigcont replica-1",
        "partition replica-2",
        "sigkill replica-3",
        "start replica-3",
        "heal all",
    ] {
        assert!(
            stdout.contains(&format!("nemesis: {action}")),
            "{action} missing:\n{stdout}"
        );
    }
    let history = std::fs::read_to_string(out.join("history.jsonl")).unwrap();
    assert!(
        history
            .lines()
            .next()
            .unwrap()
            .contains(r#""kind":"config""#)
    );
    // 2 service starts, 2 for the pause, partition, sigkill, start, 2 for the ledger's
    // pause, heal.
    let nemesis = history.matches(r#""kind":"nemesis""#).count();
    assert!(nemesis >= 10, "{nemesis} nemesis lines:\n{history}");
    assert!(
        out.join("processes/replica-3-1.jsonl").exists(),
        "the restart is incarnation 1"
    );
    let result = support::result(&out);
    assert_eq!(result["exit_code"], 0);
    assert_eq!(support::check_verdict(&result, "FENCE"), "pass");
}

#[test]
fn a_given_fault_with_no_real_counterpart_is_refused_naming_it() {
    let _serial = support::serial();
    let dir = tempfile::tempdir().unwrap();
    let schedule = r#"{"v":1,"faults":[{"at_ms":1000,"fault":"suspend","host":"replica-1","duration_ms":3000}]}"#;
    let (code, stdout, stderr) =
        support::live_with_schedule(dir.path(), schedule, &["--seed", "1", "--duration", "5s"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("suspend"), "{stderr}");
}

/// Faults that need a hook into a real process's tasks or into the lease authority are refused
/// before anything starts (no process, no port): exit 2, each named with why.
#[test]
fn given_faults_live_mode_cannot_do_exit_2_each_named_with_why_before_any_process_starts() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = r#"{"v":1,"faults":[
          {"at_ms":500,"fault":"hold_replies","from":"lease","to":"replica-1","duration_ms":9000},
          {"at_ms":600,"fault":"authority_errors","duration_ms":3000,"status":"internal"},
          {"at_ms":700,"fault":"worker_panic","host":"replica-2","point":"before_open_check"},
          {"at_ms":800,"fault":"pause","host":"replica-1","duration_ms":3000,"at_point":"before_append_check"},
          {"at_ms":900,"fault":"stall","host":"replica-1","point":"before_cleanup_append","duration_ms":100},
          {"at_ms":1000,"fault":"pause","host":"replica-2","duration_ms":500}
        ]}"#;
    let args = ["--seed", "1", "--duration", "2s", "--timeout", "30s"];
    let (code, stdout, stderr) = support::live_with_schedule(dir.path(), schedule, &args);
    let out = dir.path().join("out");
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("live mode cannot apply 5 of this schedule's faults"),
        "{stderr}"
    );
    for (fault, why) in [
        (
            "fault 1 (hold_replies",
            "the proxy holds bytes, not HTTP/2 frames",
        ),
        (
            "fault 2 (authority_errors",
            "needs a hook in the lease authority",
        ),
        (
            "fault 3 (worker_panic",
            "fires in the task that reaches `before_open_check`",
        ),
        (
            "fault 4 (pause",
            "a pause at `before_append_check` waits for a task to reach that point",
        ),
        (
            "fault 5 (stall",
            "blocks the one task that reaches `before_cleanup_append`",
        ),
    ] {
        let named = stderr
            .split("; ")
            .find(|part| part.contains(fault))
            .unwrap_or_else(|| panic!("{fault} not named: {stderr}"));
        assert!(named.contains(why), "{fault}: {named}");
    }
    assert!(
        !stderr.contains("fault 6"),
        "a plain pause is applied: {stderr}"
    );
    assert!(!out.join("processes").exists(), "nothing was started");
}

/// Probe 2, N2: a mutant the run's processes would not plant — another backend's than
/// `--backend` — would leave the correct code running and the run clean. It is refused before
/// any process starts (exit 2; it used to run clean, or exit 3 once the lease service refused
/// it). A flock mutant on `--backend flock` is planted (tests/live/mutants.rs).
#[test]
fn a_mutant_the_runs_processes_would_not_plant_is_refused_before_any_process_starts() {
    let dir = tempfile::tempdir().unwrap();
    for (backend, mutant, message) in [
        (
            "flock",
            "no-grace-period",
            "plants its bug in the grpc backend, and this run is on flock: it would change \
             nothing (the correct code would run and pass); use --backend grpc",
        ),
        (
            "grpc",
            "unlink-on-release",
            "plants its bug in the flock backend, and this run is on grpc",
        ),
        (
            "grpc",
            "update-without-resource-version",
            "plants its bug in the kube backend, and this run is on grpc",
        ),
    ] {
        let out = dir.path().join(format!("{backend}-{mutant}"));
        let args = [
            "--seed",
            "1",
            "--backend",
            backend,
            "--mutant",
            mutant,
            "--no-faults",
            "--duration",
            "5s",
        ];
        let (code, stdout, stderr) = support::live_into(&out, &args);
        assert_eq!(code, 2, "{backend} {mutant}: {stdout}\n{stderr}");
        assert!(
            stderr.contains(&format!("--mutant {mutant}: ")) && stderr.contains(message),
            "{backend} {mutant}: {stderr}"
        );
        assert!(!out.exists(), "{backend} {mutant}: something was started");
    }
}

#[cfg(not(feature = "etcd"))]
#[test]
fn the_etcd_backend_in_a_build_without_the_etcd_feature_is_refused_saying_how_to_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (code, stdout, stderr) = support::live_into(&out, &["--backend", "etcd", "--seed", "1"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("--features etcd"), "{stderr}");
    assert!(!out.join("processes").exists(), "nothing was started");
}
