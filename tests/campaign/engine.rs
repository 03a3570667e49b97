//! `--engine` on `run` and `campaign`: the world on turmoil (the default) or on leasesim's
//! engine, recorded in the run file so `replay` runs it there again; an unknown name is
//! refused; a run file without the field is a turmoil run (docs/campaigns.md#another-engine,
//! docs/world.md#the-world-on-the-engine).

use std::path::Path;
use std::process::Output;

use leasesim_testkit::{assert_exit, both, leasesim};

use super::support::{copy_sims, results};

/// `leasesim run --seed 3 --duration 10s` (a small generated world with drawn faults) into
/// `root/out`, with `extra` flags.
fn small_run(root: &Path, out: &str, extra: &[&str]) -> Output {
    let args = ["run", "--seed", "3", "--duration", "10s", "--out", out];
    leasesim!().run_in(root, [&args[..], extra].concat())
}

/// `leasesim replay root/from/run.json --out root/to`.
fn replay(root: &Path, from: &str, to: &str) -> Output {
    let file = format!("{from}/run.json");
    leasesim!().run_in(root, ["replay", file.as_str(), "--out", to])
}

/// The run file in `root/dir`, as JSON.
fn run_file(root: &Path, dir: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(root.join(dir).join("run.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The bytes of `root/dir/name`.
fn bytes(root: &Path, dir: &str, name: &str) -> Vec<u8> {
    std::fs::read(root.join(dir).join(name)).unwrap()
}

#[test]
fn a_run_on_the_engine_records_it_and_replays_there_byte_for_byte() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let run = small_run(root, "engine", &["--engine", "engine"]);
    assert_eq!(run.status.code(), Some(0), "{}", both(&run));
    assert!(
        String::from_utf8_lossy(&run.stdout).contains(" backend=grpc engine=engine "),
        "the header names the engine: {}",
        both(&run)
    );
    assert_eq!(run_file(root, "engine")["world"]["engine"], "engine");
    let again = replay(root, "engine", "again");
    assert_eq!(again.status.code(), Some(0), "{}", both(&again));
    for name in ["history.jsonl", "trace.jsonl", "run.json"] {
        assert!(
            bytes(root, "engine", name) == bytes(root, "again", name),
            "{name} differs between the run on the engine and its replay"
        );
    }
    // The same seed on turmoil makes another history: the flag did move the world.
    let turmoil = small_run(root, "turmoil", &[]);
    assert_eq!(turmoil.status.code(), Some(0), "{}", both(&turmoil));
    assert!(
        bytes(root, "engine", "history.jsonl") != bytes(root, "turmoil", "history.jsonl"),
        "the run on the engine has turmoil's history"
    );
}

#[test]
fn a_run_file_without_the_engine_field_replays_on_turmoil() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    // `--engine turmoil` is the default: the run file leaves the field out, as every run
    // file written before the flag did.
    let run = small_run(root, "turmoil", &["--engine", "turmoil"]);
    assert_eq!(run.status.code(), Some(0), "{}", both(&run));
    let file = run_file(root, "turmoil");
    assert!(file["world"].get("engine").is_none(), "{file}");
    assert!(!String::from_utf8_lossy(&run.stdout).contains("engine="));
    let again = replay(root, "turmoil", "again");
    assert_eq!(again.status.code(), Some(0), "{}", both(&again));
    let on_engine = small_run(root, "engine", &["--engine", "engine"]);
    assert_eq!(on_engine.status.code(), Some(0), "{}", both(&on_engine));
    let history = bytes(root, "again", "history.jsonl");
    assert!(history == bytes(root, "turmoil", "history.jsonl"));
    assert!(history != bytes(root, "engine", "history.jsonl"));
}

#[test]
fn an_unknown_engine_name_is_refused_naming_the_two() {
    let root = tempfile::tempdir().unwrap();
    let expected = [
        "invalid value 'nonsense' for '--engine",
        "expected `turmoil` or `engine`",
    ];
    let run = leasesim!().run_in(root.path(), ["run", "--seed", "1", "--engine", "nonsense"]);
    assert_exit(&run, 2, &expected);
    let campaign = leasesim!().run_in(
        root.path(),
        ["campaign", "--seeds", "0..1", "--engine", "nonsense"],
    );
    assert_exit(&campaign, 2, &expected);
}

#[test]
fn an_unknown_engine_in_a_run_file_is_refused_naming_the_file_and_the_two() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let run = small_run(root, "engine", &["--engine", "engine"]);
    assert_eq!(run.status.code(), Some(0), "{}", both(&run));
    let path = root.join("engine/run.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("\"engine\": \"engine\"", "\"engine\": \"tokio\""),
    )
    .unwrap();
    let output = replay(root, "engine", "again");
    assert_exit(
        &output,
        2,
        &["engine/run.json: unknown engine `tokio`, expected `turmoil` or `engine`"],
    );
}

#[test]
fn a_campaign_on_the_engine_says_so_and_every_rerun_command_names_the_flag() {
    let root = tempfile::tempdir().unwrap();
    copy_sims(root.path(), "sims", &["swarm-partitions"]);
    let args = [
        "campaign", "--sims", "sims", "--seeds", "0..1", "--engine", "engine",
    ];
    let output = leasesim!().run_in(
        root.path(),
        [&args[..], &["--out", "out", "--no-progress"]].concat(),
    );
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(" jobs, on the engine -> "),
        "{}",
        both(&output)
    );
    let runs = results(&root.path().join("out"));
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0]["replay"],
        "leasesim run --scenario sims/swarm-partitions.toml --seed 0 --engine engine"
    );
}

#[test]
fn resuming_a_campaign_on_the_engine_without_the_flag_is_refused() {
    let root = tempfile::tempdir().unwrap();
    copy_sims(root.path(), "sims", &["swarm-partitions"]);
    let campaign = |extra: &[&str]| {
        let args = [
            "campaign", "--sims", "sims", "--seeds", "0..1", "--out", "out",
        ];
        leasesim!().run_in(root.path(), [&args[..], &["--no-progress"], extra].concat())
    };
    let first = campaign(&["--engine", "engine"]);
    assert_eq!(first.status.code(), Some(0), "{}", both(&first));
    let resumed = campaign(&["--resume"]);
    assert_exit(&resumed, 2, &["written by a different campaign"]);
    let on_engine = campaign(&["--engine", "engine", "--resume"]);
    assert_eq!(on_engine.status.code(), Some(0), "{}", both(&on_engine));
}
