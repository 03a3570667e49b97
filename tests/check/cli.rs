//! `leasesim check` as a user runs it: the binary on the Jepsen files and on broken ones, its
//! exit codes (docs/exit-codes.md) and its explanation of a violation.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;

use leasesim::check::jepsen::etcd;
use leasesim::check::linearizability::register::CasRegister;
use leasesim::check::linearizability::{Budget, Verdict, check};
use leasesim::exit::Exit;
use leasesim_testkit::{assert_exit, leasesim, text};

use crate::jepsen::{cases, cases_dir};

/// `leasesim check ARGS FILES…` run to its end.
fn check_files(args: &[&str], files: &[&Path]) -> Output {
    let mut all = vec![OsStr::new("check")];
    all.extend(args.iter().map(OsStr::new));
    all.extend(files.iter().map(|f| f.as_os_str()));
    leasesim!().run(all)
}

/// The first etcd file `expected.csv` marks with `linearizable`.
fn etcd_file(linearizable: bool) -> PathBuf {
    let case = cases()
        .into_iter()
        .find(|c| c.file.starts_with("etcd/") && c.linearizable == linearizable)
        .unwrap_or_else(|| {
            panic!("expected.csv lists no etcd file with linearizable={linearizable}")
        });
    cases_dir().join(case.file)
}

/// `leasesim check --model etcd` on [`etcd_file`]`(linearizable)`: the file and the run's
/// stdout, asserting it exited 0 (linearizable) or 1 and starts with the file's verdict.
fn check_etcd_file(linearizable: bool) -> (PathBuf, String) {
    let file = etcd_file(linearizable);
    let out = check_files(&["--model", "etcd"], &[&file]);
    let stdout = text(&out.stdout);
    let (code, verdict) = match linearizable {
        true => (0, "linearizable"),
        false => (1, "not linearizable"),
    };
    assert_eq!(
        out.status.code(),
        Some(code),
        "{stdout}{}",
        text(&out.stderr)
    );
    assert!(
        stdout.starts_with(&format!("{}: {verdict} (", file.display())),
        "{stdout}"
    );
    (file, stdout)
}

/// A Jepsen log line completing a read that was never invoked: bad input at line 1.
const OK_WITHOUT_INVOKE: &str = "INFO  jepsen.util - 0\t:ok\t:read\t1\n";

/// `bad.log` holding `contents`, in a fresh directory that lives as long as the returned guard.
fn bad_log(contents: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.log");
    std::fs::write(&bad, contents).unwrap();
    (dir, bad)
}

/// The output with the one real-time reading (`, X ms` / `X ms;`) removed.
fn without_times(out: &str) -> String {
    out.lines()
        .map(|line| match (line.find(" ops, "), line.find(" ms")) {
            (Some(a), Some(b)) if a < b => format!("{}{}", &line[..a + 5], &line[b + 3..]),
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_violating_etcd_file_exits_1_and_explains_itself() {
    let (file, stdout) = check_etcd_file(false);
    for part in [
        "but the register could only hold",
        "the operation that cannot be placed is #",
        "states possible just before it",
        "a read then returns",
        "longest valid prefix, in linearization order",
    ] {
        assert!(stdout.contains(part), "missing {part:?} in\n{stdout}");
    }
    // Byte-identical apart from the time it took.
    let again = check_files(&["--model", "etcd"], &[&file]);
    assert_eq!(without_times(&text(&again.stdout)), without_times(&stdout));
}

#[test]
fn a_linearizable_etcd_file_exits_0() {
    let (_, stdout) = check_etcd_file(true);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
}

#[test]
fn the_kv_files_get_their_verdicts_from_the_cli() {
    let dir = cases_dir();
    let bad = dir.join("kv/c01-bad.txt");
    let ok = dir.join("kv/c01-ok.txt");
    assert_eq!(
        check_files(&["--model", "kv"], &[&ok]).status.code(),
        Some(0)
    );
    let out = check_files(&["--model", "kv"], &[&bad]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("  partition: \""),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_malformed_file_exits_2_naming_file_and_line() {
    let (_dir, bad) = bad_log(
        "INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:ok\t:read\tx\n",
    );
    let out = check_files(&["--model", "etcd"], &[&bad]);
    assert_exit(&out, 2, &[&format!("error: {}:2: ", bad.display())]);
    assert!(
        !text(&out.stderr).contains("panicked"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn an_unreadable_file_exits_2_naming_it() {
    let missing = Path::new("/nonexistent/leasesim/etcd.log");
    let out = check_files(&["--model", "etcd"], &[missing]);
    assert_exit(
        &out,
        2,
        &["error: /nonexistent/leasesim/etcd.log: cannot read"],
    );
}

#[test]
fn a_tiny_budget_exits_4() {
    let file = etcd_file(true);
    let out = check_files(&["--model", "etcd", "--budget", "1"], &[&file]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{stdout}");
    assert!(
        stdout.contains(": unknown (budget of 1 steps per partition ran out, no violation found;"),
        "{stdout}"
    );
}

/// The memory budget: a memo cap of one position cannot hold a real etcd history's search,
/// which ends `unknown` (exit 4) naming the cap and the option that raises it, in text and in
/// JSON.
#[test]
fn a_tiny_memo_cap_exits_4_and_says_how_to_raise_it() {
    let file = etcd_file(true);
    let out = check_files(&["--model", "etcd", "--memo-entries", "1"], &[&file]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{stdout}");
    assert!(
        stdout.contains(
            ": unknown (memo cap of 1 positions reached, no violation found; raise it with \
             --memo-entries;"
        ),
        "{stdout}"
    );
    let out = check_files(
        &["--model", "etcd", "--memo-entries", "1", "--json"],
        &[&file],
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(
        (
            &report["verdict"],
            &report["budget_memo_entries"],
            &report["budget_steps"]
        ),
        (&"unknown".into(), &1.into(), &serde_json::Value::Null),
    );
}

#[test]
fn bad_input_wins_over_a_violation_which_wins_over_unknown() {
    let (_dir, bad) = bad_log(OK_WITHOUT_INVOKE);
    let (violating, clean) = (etcd_file(false), etcd_file(true));
    let out = check_files(&["--model", "etcd"], &[&violating, &bad, &clean]);
    assert_eq!(out.status.code(), Some(2));
    // Every file still gets its verdict.
    assert_eq!(text(&out.stdout).matches("linearizable (").count(), 2);
    let out = check_files(&["--model", "etcd"], &[&clean, &violating]);
    assert_eq!(out.status.code(), Some(1));
    let worst = |codes: &[u8]| {
        Exit::worst(
            codes
                .iter()
                .map(|c| Exit::from_code(*c).expect("a known code")),
        )
        .code()
    };
    assert_eq!(worst(&[0, 4, 1]), 1);
    assert_eq!(worst(&[4, 5]), 5);
    assert_eq!(worst(&[1, 3, 2]), 3);
    assert_eq!(worst(&[0, 4]), 4);
    assert_eq!(worst(&[]), 0);
}

#[test]
fn many_files_report_in_the_order_given_as_one_by_one() {
    let (_dir, bad) = bad_log(OK_WITHOUT_INVOKE);
    let mut files: Vec<PathBuf> = cases()
        .into_iter()
        .filter(|c| c.file.starts_with("etcd/"))
        .map(|c| cases_dir().join(c.file))
        .rev()
        .collect();
    assert!(
        files.len() >= 8,
        "the etcd cases of tests/data/jepsen: {}",
        files.len()
    );
    files.insert(files.len() / 2, bad);
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let together = check_files(&["--model", "etcd"], &paths);
    let mut one_by_one = (String::new(), String::new(), Vec::new());
    for file in &paths {
        let out = check_files(&["--model", "etcd"], &[file]);
        one_by_one.0.push_str(&text(&out.stdout));
        one_by_one.1.push_str(&text(&out.stderr));
        one_by_one
            .2
            .push(Exit::from_code(out.status.code().unwrap() as u8).unwrap());
    }
    assert_eq!(
        without_times(&text(&together.stdout)),
        without_times(&one_by_one.0)
    );
    assert_eq!(text(&together.stderr), one_by_one.1);
    assert_eq!(
        together.status.code(),
        Some(Exit::worst(one_by_one.2).code().into())
    );
    assert_eq!(together.status.code(), Some(2));
}

#[test]
fn json_prints_one_object_per_file() {
    let (_dir, bad) = bad_log(OK_WITHOUT_INVOKE);
    let (violating, clean) = (etcd_file(false), etcd_file(true));
    let out = check_files(&["--model", "etcd", "--json"], &[&violating, &clean, &bad]);
    assert_eq!(out.status.code(), Some(2));
    let objects: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();
    let verdicts: Vec<&str> = objects
        .iter()
        .map(|o| o["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["not_linearizable", "linearizable", "bad_input"]);
    assert_eq!(objects[0]["file"], violating.display().to_string());
    assert_eq!(objects[0]["model"], "etcd");
    assert!(objects[0]["ops"].as_u64().unwrap() > 0);
    assert!(objects[0]["elapsed_ms"].is_number());
    let explanation = &objects[0]["explanation"];
    assert!(
        explanation["summary"]
            .as_str()
            .unwrap()
            .contains("could only hold")
    );
    assert!(!explanation["longest_prefix"].as_array().unwrap().is_empty());
    assert!(!explanation["states_before"].as_array().unwrap().is_empty());
    assert!(objects[1].get("explanation").is_none());
    assert!(
        objects[2]["error"]
            .as_str()
            .unwrap()
            .contains("bad.log:1: ")
    );
}

/// Without `--model`, one process judges etcd logs and kv histories together, each with its
/// own model, exactly as `--model etcd` and `--model kv` judge them apart; a history.jsonl
/// and a file of neither format are bad input that says to give `--model`.
#[test]
fn without_a_model_each_jepsen_file_is_judged_by_its_own() {
    let files: Vec<PathBuf> = cases()
        .into_iter()
        .map(|c| cases_dir().join(c.file))
        .collect();
    let (etcd_files, kv_files): (Vec<&Path>, Vec<&Path>) = files
        .iter()
        .map(PathBuf::as_path)
        .partition(|f| f.extension().is_some_and(|e| e == "log"));
    assert!(!etcd_files.is_empty() && !kv_files.is_empty());
    let mixed: Vec<&Path> = etcd_files.iter().chain(&kv_files).copied().collect();
    let together = check_files(&[], &mixed);
    let etcd = check_files(&["--model", "etcd"], &etcd_files);
    let kv = check_files(&["--model", "kv"], &kv_files);
    assert_eq!(
        without_times(&text(&together.stdout)),
        without_times(&format!("{}{}", text(&etcd.stdout), text(&kv.stdout)))
    );
    assert_eq!(
        together.status.code(),
        Some(1),
        "{}",
        text(&together.stderr)
    );
    let json = check_files(&["--json"], &[etcd_files[0], kv_files[0]]);
    let models: Vec<serde_json::Value> = text(&json.stdout)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["model"].clone())
        .collect();
    assert_eq!(models, ["etcd", "kv"]);

    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.jsonl");
    std::fs::write(&history, "{\"config\":{}}\n").unwrap();
    let chatter = dir.path().join("chatter.log");
    std::fs::write(&chatter, "INFO  jepsen.core - Running test\n").unwrap();
    for (file, why) in [
        (&history, "holds both ledger and lease calls"),
        (&chatter, "neither a Jepsen etcd log nor an EDN history"),
    ] {
        let out = check_files(&[], &[file]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "{}: cannot tell the file's model: ",
                file.display()
            )) && stderr.contains(why)
                && stderr.contains("--model etcd|kv|ledger|lease"),
            "{stderr}"
        );
    }
}

#[test]
fn unknown_models_are_refused_as_usage_errors() {
    let out = check_files(&["--model", "paxos"], &[&etcd_file(true)]);
    assert_eq!(out.status.code(), Some(2));
}

/// The explanation a reviewer reads for etcd_000 (snapshot under `tests/check/snapshots/`).
#[test]
fn the_etcd_000_explanation_reads_as_committed() {
    let ops = etcd::read(&cases_dir().join("etcd/etcd_000.log")).unwrap();
    let Verdict::NotLinearizable(explanation) = check(&CasRegister, &ops, Budget::default()) else {
        panic!("etcd_000 is not linearizable");
    };
    insta::assert_snapshot!("etcd_000_explanation", explanation.to_string());
}

/// Our own history.jsonl: a simulated run (seed 1, no faults, 10 s) is linearizable under both
/// the ledger and the lease model; a malformed line is bad input naming file and line.
#[test]
fn ledger_and_lease_models_judge_our_history_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let ran = leasesim!()
        .command()
        .args([
            "run",
            "--seed",
            "1",
            "--no-faults",
            "--duration",
            "10s",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .expect("run leasesim run");
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    let history = dir.path().join("history.jsonl");
    for model in ["ledger", "lease"] {
        let out = check_files(&["--model", model], &[&history]);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{model}: {stdout}{}",
            text(&out.stderr)
        );
        assert!(
            stdout.starts_with(&format!("{}: linearizable (", history.display())),
            "{stdout}"
        );
    }
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"v\":1,\"kind\":\"nonsense\"}\n").unwrap();
    let out = check_files(&["--model", "lease"], &[&bad]);
    assert_exit(&out, 2, &[&format!("error: {}:1: ", bad.display())]);
}
