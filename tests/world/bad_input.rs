//! Input the loaders must refuse with exit 2 and a message naming the field and the bound
//! (bad-input probe D3, D9, D10, D11, D14, D15, D17, D18): scenario files, `run`'s flags and
//! files, and run files given to `replay` get the same checks.

use std::path::{Path, PathBuf};
use std::process::Command;

use leasesim::campaign::scenario::Scenario;
use leasesim::exit::Exit;
use leasesim::sim::runfile::RunFile;
use leasesim::sim::world::World;
use leasesim_testkit::leasesim;
use serde_json::{Value, json};

use crate::support::{refused, scenario_refused, write};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// A resolved run file of a committed scenario, as JSON.
fn run_json(scenario: &str) -> Value {
    let run = Scenario::load(&repo(scenario)).unwrap().resolve(1).unwrap();
    serde_json::from_str(&run.to_json()).unwrap()
}

/// `leasesim replay` of `run` is refused naming each of `expected`; so is `RunFile::parse`.
fn replay_refused(run: &Value, expected: &[&str]) {
    let text = run.to_string();
    let error = RunFile::parse(&text).expect_err("the run file should be refused");
    for part in expected {
        assert!(error.0.contains(part), "`{part}` not in {error}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "run.json", &text);
    let out = dir.path().join("out");
    refused(&["replay", &file, "--out", out.to_str().unwrap()], expected);
}

const HEAD: &str = "v = 1\nabout = \"bad input\"\n";

#[test]
fn d3_a_duplicate_session_is_refused_naming_world_sessions() {
    let named_twice = ["`world.sessions`", "`s1` is named twice"];
    scenario_refused(
        &format!("{HEAD}[world]\nsessions = [\"s1\", \"s1\"]\nduration_s = 5\n"),
        &named_twice,
    );
    let mut run = run_json("sims/swarm-freezes.toml");
    run["world"]["sessions"] = json!(["s1", "s2", "s1"]);
    replay_refused(&run, &named_twice);
    let Err(error) = World::builder().sessions(["s1", "s1"]).build() else {
        panic!("the builder should refuse a duplicate session");
    };
    assert!(error.to_string().contains("world.sessions"), "{error}");
    assert!(error.to_string().contains("named twice"), "{error}");
}

#[test]
fn d9_scenario_paths_stay_in_the_scenario_folder_and_special_files_are_refused() {
    let outside = [
        ("/dev/zero", "is an absolute path"),
        ("../elsewhere.json", "leaves the scenario's folder"),
        ("field-cases/../../x.json", "leaves the scenario's folder"),
    ];
    for (path, expected) in outside {
        scenario_refused(
            &format!("{HEAD}[faults]\nschedule = \"{path}\"\n"),
            &["`faults.schedule`", expected],
        );
        scenario_refused(
            &format!("{HEAD}[workload]\nscript = \"{path}\"\n"),
            &["`workload.script`", expected],
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.json");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let fifo = fifo.to_str().unwrap();
    let scenario = write(
        dir.path(),
        "fifo.toml",
        &format!("{HEAD}[faults]\nschedule = \"fifo.json\"\n"),
    );
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let not_a_file = "is a FIFO, not a regular file";
    let args = ["run", "--seed", "1", "--scenario", &scenario, "--out", out];
    refused(&args, &["`faults.schedule`", not_a_file]);
    refused(
        &["run", "--seed", "1", "--schedule", fifo, "--out", out],
        &[not_a_file],
    );
    refused(
        &["run", "--seed", "1", "--script", fifo, "--out", out],
        &[not_a_file],
    );
    refused(&["replay", fifo, "--out", out], &[not_a_file]);
    refused(
        &[
            "run",
            "--seed",
            "1",
            "--schedule",
            "/dev/zero",
            "--out",
            out,
        ],
        &["a device"],
    );
}

#[test]
fn d10_run_duration_has_the_scenario_bound_and_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for duration in ["18446744073709551615s", "1000000h", "5124095577h", "86401s"] {
        let args = ["run", "--seed", "1", "--duration", duration, "--out"];
        refused(
            &[&args[..], &[out.to_str().unwrap()]].concat(),
            &["--duration", "at most 86400s"],
        );
    }
}

#[test]
fn d17_runs_that_cannot_end_within_a_simulated_day_are_refused_at_load() {
    let bound = "must end within 86400000 ms (one simulated day)";
    scenario_refused(
        &format!("{HEAD}[world]\nttl_ms = 86400000\nduration_s = 5\n"),
        &["`world.ttl_ms`", bound],
    );
    scenario_refused(
        &format!("{HEAD}[world]\nduration_s = 86400\n"),
        &["`world.duration_s`", bound],
    );
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "suspend.schedule.json",
        r#"{"v":1,"faults":[{"at_ms":1000,"fault":"suspend","host":"replica-1","duration_ms":86400000}]}"#,
    );
    let scenario = write(
        dir.path(),
        "suspend.toml",
        &format!(
            "{HEAD}[world]\nduration_s = 30\n[faults]\nschedule = \"suspend.schedule.json\"\n"
        ),
    );
    let out = dir.path().join("out");
    let args = ["run", "--seed", "1", "--scenario", &scenario, "--out"];
    refused(
        &[&args[..], &[out.to_str().unwrap()]].concat(),
        &["`faults.schedule`", bound],
    );
    let mut run = run_json("sims/swarm-freezes.toml");
    run["world"]["ttl_ms"] = json!(86_400_000);
    replay_refused(&run, &["`schedule`", bound]);
}

#[test]
fn d11_run_files_get_the_checks_of_scenario_files() {
    let base = run_json("sims/swarm-freezes.toml");
    let generated = |field: &str, value: Value| {
        let mut run = base.clone();
        run["workload"]["generated"][field] = value;
        run
    };
    let mix = [
        ("appends", json!([6, 1]), "least <= most <= 1000"),
        (
            "appends",
            json!([1_000_000, 1_000_000]),
            "least <= most <= 1000",
        ),
        ("think_ms", json!([1500, 50]), "least <= most <= 3600000"),
        ("think_ms", json!([0, u64::MAX]), "least <= most <= 3600000"),
        ("shutdown_chance", json!([1, 0]), "denominator >= 1"),
        ("shutdown_chance", json!([5, 2]), "numerator <= denominator"),
    ];
    for (field, value, bound) in mix {
        let field_name = format!("`workload.generated.{field}`");
        replay_refused(&generated(field, value), &[&field_name, bound]);
    }
    let mut coverage = base.clone();
    coverage["expect"]["coverage"] = json!(["NOPE"]);
    replay_refused(
        &coverage,
        &["`expect.coverage`", "unknown coverage event `NOPE`"],
    );
    let mut violate = base.clone();
    violate["expect"]["violate"] = json!(["NOPE"]);
    replay_refused(&violate, &["NOPE"]);
    let mut version = base.clone();
    version["schedule"]["v"] = json!(2);
    replay_refused(&version, &["`schedule.v`", "version 2 is not supported"]);
    let mut heal = base.clone();
    heal["schedule"]["heal_at_ms"] = json!(u64::MAX);
    replay_refused(
        &heal,
        &["`schedule`", "after the end of the run (40000 ms)"],
    );
    let mut host = base.clone();
    host["schedule"]["faults"] = json!([{"at_ms": 1, "fault": "crash", "host": "replica-9"}]);
    replay_refused(&host, &["`schedule`", "unknown host `replica-9`"]);

    let scripted = run_json("sims/f1-pause-longer-than-ttl.toml");
    let mut script_version = scripted.clone();
    script_version["workload"]["script"]["v"] = json!(2);
    replay_refused(
        &script_version,
        &["`workload.script.v`", "version 2 is not supported"],
    );
    let mut session = scripted.clone();
    session["workload"]["script"]["calls"][0]["session"] = json!("zz");
    replay_refused(&session, &["`workload.script`", "unknown session `zz`"]);
}

#[test]
fn d14_a_swarm_profile_that_draws_over_the_schedule_limit_is_refused_at_load() {
    let profile = "[faults.swarm]\nkinds = [\"pause\"]\nfaults = [1, 2]\n\
                   [faults.swarm.intensity]\nfreeze_ttl_percent = [10000, 10000]\n";
    scenario_refused(
        &format!("{HEAD}[world]\nttl_ms = 3600000\nduration_s = 30\n{profile}"),
        &[
            "`faults.swarm.intensity.freeze_ttl_percent`",
            "over the schedule's limit of 86400000 ms",
        ],
    );
    // The probe's world: its TTL alone outlasts the bound of a run.
    scenario_refused(
        &format!("{HEAD}[world]\nttl_ms = 86400000\nduration_s = 30\n{profile}"),
        &["`world.ttl_ms`", "86400000 ms (one simulated day)"],
    );
    let delays = "[faults.swarm]\nkinds = [\"delay_replies\"]\nfaults = [1, 2]\n\
                  [faults.swarm.intensity]\ndelay_ttl_percent = [5000, 10000]\n";
    scenario_refused(
        &format!("{HEAD}[world]\nttl_ms = 3600000\nduration_s = 30\n{delays}"),
        &["`faults.swarm.intensity.delay_ttl_percent`", "86400000 ms"],
    );
}

#[test]
fn d15_pairs_with_extra_elements_are_refused_naming_the_field() {
    let cases = [
        ("[world]\nlatency_ms = [1, 2, 3]\n", "`world.latency_ms`"),
        ("[workload]\nappends = [1, 2, 99]\n", "`workload.appends`"),
        (
            "[faults.swarm]\nkinds = [\"pause\"]\nfaults = [1, 2, 1000000]\n",
            "`faults.swarm.faults`",
        ),
        (
            "[faults.swarm]\nkinds = [\"pause\"]\nfaults = [1, 2]\n[faults.swarm.intensity]\n\
             freeze_ttl_percent = [50, 60, 99999999]\n",
            "`faults.swarm.intensity.freeze_ttl_percent`",
        ),
    ];
    for (section, field) in cases {
        scenario_refused(
            &format!("{HEAD}{section}"),
            &[
                field,
                "invalid length 3, expected a pair of exactly two elements",
            ],
        );
    }
    let mut run = run_json("sims/swarm-freezes.toml");
    run["world"]["latency_ms"] = json!([1, 2, 3]);
    replay_refused(&run, &["invalid length 3"]);
}

#[test]
fn d18_self_links_and_unknown_sessions_in_a_schedule_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let faults = [
        (
            r#""fault":"partition_one_way","from":"lease","to":"lease""#,
            "got `lease` twice",
        ),
        (
            r#""fault":"latency","a":"replica-1","b":"replica-1","latency_ms":5"#,
            "got `replica-1` twice",
        ),
        (
            r#""fault":"link_flaps","a":"ledger","b":"ledger","fail_ppm":5"#,
            "got `ledger` twice",
        ),
        (
            r#""fault":"delay_replies","from":"lease","to":"lease","delay_ms":5"#,
            "got `lease` twice",
        ),
        (
            r#""fault":"delete_lease_record","session":"zz""#,
            "unknown session `zz`; the world's sessions are s1, s2",
        ),
    ];
    for (fault, expected) in faults {
        let schedule = write(
            dir.path(),
            "schedule.json",
            &format!(r#"{{"v":1,"faults":[{{"at_ms":10,{fault}}}]}}"#),
        );
        let args = ["run", "--seed", "1", "--schedule", &schedule, "--out"];
        refused(
            &[&args[..], &[out.to_str().unwrap()]].concat(),
            &["fault 0 (at 10 ms)", expected],
        );
    }
}

/// Probe 2, N2: a mutant planted in another backend's code than the run's would change
/// nothing and pass on the correct code; `run --mutant` refuses it before running, as
/// `replay` refuses the run file it would write.
#[test]
fn n2_run_refuses_a_mutant_of_another_backend_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let k1 = repo("sims/k1-two-candidates-one-read.toml");
    let cases: [(&[&str], &str); 3] = [
        (
            &["--mutant", "unlink-on-release"],
            "mutant `unlink-on-release` plants its bug in the flock backend, and this run is on grpc",
        ),
        (
            &["--mutant", "update-without-resource-version"],
            "plants its bug in the kube backend, and this run is on grpc: it would change nothing",
        ),
        (
            &[
                "--scenario",
                k1.to_str().unwrap(),
                "--mutant",
                "no-grace-period",
            ],
            "plants its bug in the grpc backend, and this run is on kube",
        ),
    ];
    for (extra, message) in cases {
        let args = [&["run", "--seed", "1", "--out", out][..], extra].concat();
        refused(&args, &["--mutant", message]);
        assert!(!dir.path().join("out/run.json").exists(), "{extra:?} ran");
    }
}

/// Probe 2, N9: a run the tool accepts is never cut off as "a hang" only for being long. A
/// limit shorter than twice what its simulated time takes here is refused before it runs,
/// naming the limit, the run's simulated length and the limit to give.
#[test]
fn n9_a_timeout_too_short_for_the_runs_simulated_length_is_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let args = [
        "run",
        "--seed",
        "1",
        "--duration",
        "86400s",
        "--no-faults",
        "--timeout",
        "30s",
        "--out",
    ];
    refused(
        &[&args[..], &[out.to_str().unwrap()]].concat(),
        &[
            "--timeout 30s: the run reaches 86400 s of simulated time",
            "give --timeout 3516s (the default for it) or more",
        ],
    );
    let mut run = run_json("sims/swarm-freezes.toml");
    run["world"]["duration_s"] = json!(86_000);
    let file = write(dir.path(), "long.json", &run.to_string());
    refused(
        &[
            "replay",
            &file,
            "--timeout",
            "1m",
            "--out",
            out.to_str().unwrap(),
        ],
        &["--timeout 1m: the run reaches"],
    );
}

/// Probe 2, N8 (the run side of it): a run whose replicas never make a call — a plan whose
/// only run waits for an incarnation that never comes — recorded no operation, so every
/// check had nothing to judge: bad input (exit 2), never "clean".
#[test]
fn n8_a_run_that_recorded_no_operation_is_not_clean() {
    let mut run = run_json("sims/swarm-freezes.toml");
    run["workload"] = json!({"plan": {"runs": [{
        "replica": "replica-1", "incarnation": 7, "at_ms": 0, "session": "s1",
        "appends": 1, "think_ms": 0, "shutdown": false
    }]}});
    run["schedule"] = json!({"v": 1, "faults": []});
    run["drawn"] = Value::Null;
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "idle.json", &run.to_string());
    let out = dir.path().join("out");
    let output = leasesim!().run(["replay", &file, "--out", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(i32::from(Exit::BadInput.code())),
        "{stdout}"
    );
    assert!(
        stdout.contains("verdict: nothing judged: the run recorded no operation"),
        "{stdout}"
    );
}
