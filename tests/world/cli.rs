//! `leasesim run` as a user meets it: the seed and options first, the replay command last,
//! identical bytes from separate processes, and exit codes CI can use.

use leasesim_testkit::{assert_exit, leasesim, text};

use crate::support::{refused, write};

#[test]
fn a_run_prints_its_seed_first_and_its_replay_command() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let output = leasesim!().run(["run", "--seed", "7", "--duration", "20s", "--out", dir]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "SEED=7");
    // The replay command follows the run, with the flags that resolve to the same run file;
    // the checks' verdict comes last.
    let replay = format!("replay: leasesim replay {dir}/run.json");
    assert!(lines.contains(&replay.as_str()), "{stdout}");
    assert!(
        lines.contains(&"   or: leasesim run --seed 7 --duration 20s"),
        "{stdout}"
    );
    assert!(lines.last().unwrap().starts_with("verdict: "), "{stdout}");
    for file in [
        "run.json",
        "history.jsonl",
        "trace.jsonl",
        "schedule.json",
        "result.json",
    ] {
        assert!(out.path().join(file).is_file(), "{file} missing");
    }
}

/// `leasesim run --check-determinism` of `seeds`, each in two fresh processes: exit 0, and
/// a history of more than 10 kB each time.
fn identical_bytes_in_separate_processes(seeds: std::ops::RangeInclusive<u64>) {
    let out = tempfile::tempdir().unwrap();
    for seed in seeds {
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
        let output = leasesim!().command().args(args).arg(&dir).output().unwrap();
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

/// A world still running when its wall-clock limit passes is a harness error naming the seed
/// (a limit this short is refused on the command line: see the next test).
#[test]
fn two_seeds_give_identical_bytes_in_separate_processes() {
    identical_bytes_in_separate_processes(1..=2);
}

#[test]
#[ignore = "slow: 40 worlds of 30 s in 40 processes; runs in .ci/run's slow step: cargo test --release -- --ignored"]
fn twenty_seeds_give_identical_bytes_in_separate_processes() {
    identical_bytes_in_separate_processes(1..=20);
}

#[test]
fn a_run_past_its_wall_clock_timeout_is_a_harness_error_naming_the_seed() {
    let mut request = leasesim::campaign::request::RunRequest::new(99);
    request.duration = std::time::Duration::from_secs(3600);
    let run = request.resolve().unwrap();
    let error = leasesim::sim::runfile::execute(&run, std::time::Duration::from_millis(1))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("seed 99 did not finish within 1ms of wall-clock time (a hang)"),
        "{error}"
    );
}

/// Probe 2, N9: `--timeout` shorter than the run can take is refused before it runs (exit 2),
/// never reported as a hang.
#[test]
fn a_timeout_the_run_cannot_meet_is_refused_before_it_runs() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let output = leasesim!().run([
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
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("--timeout 1ms: the run reaches 3600 s of simulated time"),
        "{stderr}"
    );
    assert!(!out.path().join("run.json").exists());
}

#[test]
fn bad_schedules_and_scripts_exit_2_saying_what_is_wrong() {
    refused_before_the_run(
        "--schedule",
        r#"{"v":1,"faults":[{"at_ms":5,"fault":"crash","host":"replica-9"}]}"#,
        "unknown host `replica-9`",
    );
    refused_before_the_run("--schedule", "{\"v\":1,\n\"faults\": [oops]}", "line 2");
    refused_before_the_run(
        "--script",
        r#"{"v":1,"calls":[{"at_ms":0,"replica":"replica-7","call":"acquire","session":"s1"}]}"#,
        "replica-7",
    );
}

/// Faults out of range, each with what its refusal says.
const OUT_OF_RANGE_FAULTS: [(&str, &str); 10] = [
    (
        r#"{"at_ms":0,"fault":"clock_drift","host":"replica-1","ppm":-2000000}"#,
        "drift must be",
    ),
    (
        r#"{"at_ms":0,"fault":"link_flaps","a":"replica-1","b":"lease","fail_ppm":4000000000}"#,
        "fail_ppm",
    ),
    (
        r#"{"at_ms":0,"fault":"latency","a":"replica-1","b":"lease","latency_ms":18446744073709551615,"jitter_ms":5}"#,
        "latency + jitter",
    ),
    (
        r#"{"at_ms":0,"fault":"lease_service_restarts","every_ms":1,"count":4294967295}"#,
        "count must be",
    ),
    (
        r#"{"at_ms":0,"fault":"delay_replies","from":"lease","to":"replica-1","delay_ms":18446744073709551615}"#,
        "a duration must be",
    ),
    (
        r#"{"at_ms":0,"fault":"wall_jump","host":"replica-1","delta_ms":9223372036854775807}"#,
        "wall-clock step",
    ),
    (
        r#"{"at_ms":0,"fault":"stall","host":"replica-1","point":"service_handler_start","duration_ms":5}"#,
        "never reaches",
    ),
    (
        r#"{"at_ms":0,"fault":"partition","a":"lease","b":"lease"}"#,
        "two different hosts",
    ),
    (
        r#"{"at_ms":0,"fault":"worker_panic","host":"replica-1","point":"before_renew_send"}"#,
        "a worker panics only where a run's work goes",
    ),
    (
        r#"{"at_ms":0,"fault":"worker_panic","host":"lease","point":"before_append_send"}"#,
        "never reaches",
    ),
];

/// Script calls that name what does not exist, each with what its refusal says.
const DANGLING_SCRIPT_CALLS: [(&str, &str); 4] = [
    (
        r#"{"at_ms":0,"replica":"replica-1","call":"acquire","session":"zz"}"#,
        "unknown session `zz`",
    ),
    (
        r#"{"at_ms":0,"replica":"replica-1","call":"release","lease":"nothing"}"#,
        "never acquired",
    ),
    (
        r#"{"at_ms":0,"replica":"replica-1","call":"append","session":"s1","payload":"x"}"#,
        "never opened",
    ),
    (
        r#"{"at_ms":0,"replica":"replica-1","call":"shutdown"},{"at_ms":5,"replica":"replica-1","call":"acquire","session":"s1"}"#,
        "comes after its shutdown at 0 ms; a replica that shut down makes no more calls",
    ),
];

// Each hostile document is refused before the run with exit 2 and a message naming what is
// wrong (a panic deep in the simulation would abort with no seed).

#[test]
fn out_of_range_faults_exit_2() {
    for (fault, expected) in OUT_OF_RANGE_FAULTS {
        let schedule = format!(r#"{{"v":1,"faults":[{fault}]}}"#);
        refused_before_the_run("--schedule", &schedule, expected);
    }
}

#[test]
fn a_fault_after_the_heal_exits_2() {
    let late =
        r#"{"v":1,"faults":[{"at_ms":10000,"fault":"isolate","host":"lease"}],"heal_at_ms":5000}"#;
    refused_before_the_run("--schedule", late, "comes after heal_at_ms");
}

#[test]
fn dangling_script_references_exit_2() {
    for (call, expected) in DANGLING_SCRIPT_CALLS {
        let script = format!(r#"{{"v":1,"calls":[{call}]}}"#);
        refused_before_the_run("--script", &script, expected);
    }
}

/// Runs with `document` passed as `flag` and asserts exit 2 with `expected` in the message.
/// `leasesim run --seed 1 FLAG FILE --out DIR/out`, with `document` written to `FILE` in a
/// fresh folder `DIR`, is refused before the run naming `expected`.
fn refused_before_the_run(flag: &str, document: &str, expected: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "document.json", document);
    let out = dir.path().join("out");
    let args = [
        "run",
        "--seed",
        "1",
        flag,
        &file,
        "--out",
        out.to_str().unwrap(),
    ];
    refused(&args, &[expected]);
}

#[test]
fn an_out_folder_that_cannot_be_created_exits_2_before_the_run() {
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let output = leasesim!().run([
        "run",
        "--seed",
        "1",
        "--duration",
        "1h",
        "--out",
        file.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("--out"),
        "{}",
        text(&output.stderr)
    );
}

/// The `config` line of the history in `dir`.
fn config_line(dir: &std::path::Path) -> String {
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
    history.lines().next().unwrap().to_owned()
}

#[test]
fn a_mutant_run_without_a_scenario_replays_to_the_same_history_with_its_mutant() {
    let out = tempfile::tempdir().unwrap();
    let (first, again) = (out.path().join("first"), out.path().join("again"));
    let output = leasesim!().run([
        "run",
        "--seed",
        "7",
        "--duration",
        "20s",
        "--mutant",
        "expiry-by-wall-clock",
        "--out",
        first.to_str().unwrap(),
    ]);
    let stdout = text(&output.stdout);
    assert!(
        stdout
            .contains("   or: leasesim run --seed 7 --duration 20s --mutant expiry-by-wall-clock"),
        "{stdout}"
    );
    assert!(stdout.contains(" mutant=expiry-by-wall-clock "), "{stdout}");
    let run_json = first.join("run.json");
    let replay = leasesim!().run([
        "replay",
        run_json.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
    ]);
    assert_eq!(
        replay.status.code(),
        output.status.code(),
        "{}",
        text(&replay.stdout)
    );
    assert!(
        config_line(&again).contains(r#""mutant":"expiry-by-wall-clock""#),
        "{}",
        config_line(&again)
    );
    assert_eq!(
        std::fs::read(first.join("history.jsonl")).unwrap(),
        std::fs::read(again.join("history.jsonl")).unwrap(),
        "the replay's history differs"
    );
}

/// `--check-determinism` of a scenario with a mutant: both processes run the scenario's world
/// with the mutant (the old self-check dropped both).
#[test]
fn check_determinism_of_a_scenario_with_a_mutant_compares_runs_that_carry_it() {
    let out = tempfile::tempdir().unwrap();
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/sims/f4-fence-compares-the-tip.toml"
    );
    let output = leasesim!().run([
        "run",
        "--scenario",
        scenario,
        "--seed",
        "1",
        "--mutant",
        "fence-written-blind",
        "--check-determinism",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(
        stdout.contains("deterministic: two processes replaying"),
        "{stdout}"
    );
    for process in ["first", "second"] {
        let config = config_line(&out.path().join(process));
        assert!(
            config.contains(r#""mutant":"fence-written-blind""#),
            "{process}: {config}"
        );
    }
    let run = std::fs::read_to_string(out.path().join("run.json")).unwrap();
    assert!(
        run.contains(r#""scenario": "f4-fence-compares-the-tip""#),
        "{run}"
    );
}

/// A second process that writes different bytes is caught: exit 3, naming the file.
#[test]
fn check_determinism_exits_3_when_the_second_process_differs() {
    let out = tempfile::tempdir().unwrap();
    let output = leasesim!()
        .command()
        .args([
            "run",
            "--seed",
            "3",
            "--duration",
            "10s",
            "--check-determinism",
            "--out",
        ])
        .arg(out.path())
        .env(leasesim::sim::determinism::PERTURB_ENV, "1")
        .output()
        .unwrap();
    assert_exit(
        &output,
        3,
        &["NONDETERMINISM: seed 3 wrote different trace.jsonl in two processes"],
    );
}

/// `result.json` of a swarm run holds the schedule the seed drew (as the run file has it,
/// never `null`), the verdict with its exit code, and every check's result.
#[test]
fn result_json_holds_the_verdict_every_check_and_the_drawn_schedule() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/sims/swarm-freezes.toml");
    let output = leasesim!().run(["run", "--scenario", scenario, "--seed", "3", "--out", dir]);
    let stdout = text(&output.stdout);
    let read = |file: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(out.path().join(file)).unwrap()).unwrap()
    };
    let (result, run) = (read("result.json"), read("run.json"));
    assert_eq!(result["v"], 2);
    assert_eq!(result["schedule"], run["schedule"]);
    assert_eq!(result["drawn"], run["drawn"]);
    let faults = result["schedule"]["faults"].as_array().unwrap();
    assert!(!faults.is_empty(), "a swarm seed with no faults: {result}");
    assert_eq!(result["faults"], faults.len());
    assert_eq!(result["exit_code"], output.status.code().unwrap());
    let verdict = result["verdict"].as_str().unwrap();
    assert_eq!(
        stdout.lines().last().unwrap(),
        format!(
            "verdict: {verdict} — exit {}",
            output.status.code().unwrap()
        )
    );
    let names: Vec<&str> = result["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|check| check["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, leasesim::check::Check::ALL.map(|c| c.name()));
}

/// The swarm kinds are the schedule's words: a scenario or a run file written with a retired
/// word (`lease_restarts`, `delete_record`) exits 2 naming the word that replaced it, before any
/// run.
#[test]
fn a_retired_fault_kind_in_a_scenario_or_a_run_file_exits_2_naming_its_new_word() {
    let out = tempfile::tempdir().unwrap();
    let scenario = |kind: &str| {
        format!(
            "v = 1\nabout = \"test\"\n[world]\nduration_s = 5\n[faults.swarm]\nkinds = \
             [\"{kind}\"]\nfaults = [1, 1]\n"
        )
    };
    let file = out.path().join("retired.toml");
    // `leasesim run --scenario FILE --seed 1 --out DIR`.
    let run_into = |dir: &std::path::Path| {
        let args = [
            "run",
            "--scenario",
            file.to_str().unwrap(),
            "--seed",
            "1",
            "--out",
        ];
        leasesim!().run(
            args.iter()
                .map(std::ffi::OsStr::new)
                .chain([dir.as_os_str()]),
        )
    };
    for (old, new) in [
        ("lease_restarts", "lease_service_restarts"),
        ("delete_record", "delete_lease_record"),
    ] {
        std::fs::write(&file, scenario(old)).unwrap();
        let run_out = out.path().join(format!("{old}-run"));
        let output = run_into(&run_out);
        assert_exit(
            &output,
            2,
            &[&format!("unknown fault kind `{old}`: it is now `{new}`")],
        );
        assert!(!run_out.join("history.jsonl").exists(), "nothing ran");

        // The same profile in the new word runs; its run file, edited back to the old word,
        // is refused by `replay`.
        std::fs::write(&file, scenario(new)).unwrap();
        let ran = out.path().join(format!("{new}-run"));
        let output = run_into(&ran);
        assert!(
            matches!(output.status.code(), Some(0 | 1 | 5)),
            "{}",
            text(&output.stderr)
        );
        let run_file = ran.join("run.json");
        let mut run: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&run_file).unwrap()).unwrap();
        assert_eq!(run["drawn"]["kinds"], serde_json::json!([new]));
        run["drawn"]["kinds"] = serde_json::json!([old]);
        std::fs::write(&run_file, serde_json::to_vec(&run).unwrap()).unwrap();
        let output = leasesim!().run(["replay", run_file.to_str().unwrap()]);
        assert_exit(
            &output,
            2,
            &[&format!("unknown fault kind `{old}`: it is now `{new}`")],
        );
    }
}

/// A check with nothing to judge is `not-judged` with its reason in `result.json` and in the
/// verdict line, never `pass`: a scripted run has no liveness phase, so LIVE judges nothing.
#[test]
fn a_check_that_judged_nothing_is_not_judged_in_result_json_and_the_verdict() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/sims/f1-pause-longer-than-ttl.toml"
    );
    let output = leasesim!().run(["run", "--scenario", scenario, "--seed", "0", "--out", dir]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
    let stdout = text(&output.stdout);
    assert_eq!(
        stdout.lines().last().unwrap(),
        "verdict: clean (not judged: LIVE, SIGNAL) — exit 0"
    );
    assert!(
        stdout.contains("LIVE: not judged (no contended session to judge after the faults healed)"),
        "{stdout}"
    );
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("result.json")).unwrap()).unwrap();
    let live = result["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|check| check["name"] == "LIVE")
        .unwrap();
    assert_eq!(live["verdict"], "not-judged");
    assert_eq!(
        live["not_judged"],
        "no contended session to judge after the faults healed"
    );
    let token = &result["checks"][0];
    assert_eq!(
        (&token["name"], &token["verdict"]),
        (&"TOKEN".into(), &"pass".into())
    );
    assert_eq!(result["schedule"]["faults"][0]["fault"], "pause");
    // The nemesis's trace lines carry the simulated time they act at, as the hosts' do.
    let trace = std::fs::read_to_string(out.path().join("trace.jsonl")).unwrap();
    let nemesis: Vec<serde_json::Value> = trace
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|line| line["target"] == "leasesim::nemesis")
        .collect();
    assert_eq!(nemesis[0]["fields"]["at"], "1.5s", "{trace}");
    assert_eq!(nemesis[0]["timestamp"], "1500000us", "{trace}");
    assert!(
        nemesis.iter().all(|line| line["timestamp"] != "-"),
        "{trace}"
    );
}

/// `run --help` lists every exit code a run can end with and points to the mutant catalogue.
#[test]
fn run_help_lists_every_exit_code_and_points_to_the_mutants() {
    let output = leasesim!().run(["run", "--help"]);
    assert_eq!(output.status.code(), Some(0));
    let help = text(&output.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for code in [
        "0 clean",
        "1 a safety violation",
        "2 bad input or usage",
        "3 a harness error",
        "4 inconclusive",
        "5 a liveness violation",
        "(6, incomplete, is for campaigns and reports only.)",
        "`leasesim mutants` lists the planted bugs",
    ] {
        assert!(help.contains(code), "run --help lacks {code:?}:\n{help}");
    }
}

/// Probe 2, minor: live mode's banner names the backend the run uses (`--backend flock`), not
/// the simulated world's `grpc` that its run file keeps.
#[test]
fn the_options_banner_names_the_backend_the_run_uses() {
    let run = leasesim::campaign::request::RunRequest::new(1)
        .resolve()
        .unwrap();
    let out = std::path::Path::new("out");
    let timeout = std::time::Duration::from_secs(60);
    assert!(run.describe(out, timeout).contains(" backend=grpc "));
    let flock = run.describe_on("flock", out, timeout);
    assert!(flock.contains(" backend=flock "), "{flock}");
    assert!(!flock.contains("backend=grpc"), "{flock}");
}
