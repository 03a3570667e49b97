//! `leasesim judge` as a user runs it (docs/checks.md#judging-a-history-file): every check
//! on a history file, with `run`'s check lines, verdict line and exit codes
//! (docs/exit-codes.md); bad input named with its file and line; `--json`; several files
//! folded into one exit code; and the definite failure that the linearizability
//! checks alone pass.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;

use leasesim::check::Check;
use leasesim::exit::Exit;
use leasesim_testkit::{assert_exit, both, leasesim, stderr, stdout};

/// The scenario: replica-1 paused longer than the TTL (field case F1).
const F1: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/sims/f1-pause-longer-than-ttl.toml"
);

/// The README's failing mutant on F1 seed 1: FENCE, LEDGER and LIN-LEDGER fail.
const MUTANT: &str = "append-ignores-expected-tip";

/// `leasesim judge ARGS FILES…` run to its end.
fn judge(args: &[&str], files: &[&Path]) -> Output {
    let mut all = vec![OsStr::new("judge")];
    all.extend(args.iter().map(OsStr::new));
    all.extend(files.iter().map(|f| f.as_os_str()));
    leasesim!().run(all)
}

/// A run of F1 on seed 1 (with `mutant` planted, if any) into `dir/name`: its stdout and its
/// history file.
fn f1_run(dir: &Path, name: &str, mutant: Option<&str>) -> (Output, PathBuf) {
    let out = dir.join(name);
    let mut args = vec!["run", "--scenario", F1, "--seed", "1"];
    if let Some(mutant) = mutant {
        args.extend(["--mutant", mutant]);
    }
    let ran = leasesim!().run(
        args.iter()
            .map(OsStr::new)
            .chain([OsStr::new("--out"), out.as_os_str()]),
    );
    (ran, out.join("history.jsonl"))
}

/// What `run` printed from its first check line (`TOKEN: …`) to its verdict line, the last.
fn check_and_verdict_lines(run_stdout: &str) -> String {
    let first = format!("{}: ", Check::ALL[0]);
    let at = run_stdout
        .lines()
        .position(|line| line.starts_with(&first))
        .unwrap_or_else(|| panic!("no {first:?} line in\n{run_stdout}"));
    run_stdout.lines().skip(at).collect::<Vec<_>>().join("\n") + "\n"
}

/// `judge` on the history `run` wrote prints, under a line naming the file, exactly the
/// check lines and verdict line `run` printed, and exits as `run` did with `code`.
fn assert_judges_as_run_did(ran: &Output, history: &Path, code: i32) -> String {
    assert_eq!(ran.status.code(), Some(code), "{}", both(ran));
    let judged = judge(&[], &[history]);
    assert_eq!(judged.status.code(), Some(code), "{}", both(&judged));
    let text = stdout(&judged);
    let (header, rest) = text.split_once('\n').expect("a header line");
    assert!(
        header.starts_with(&format!("{}: ", history.display()))
            && header.ends_with(" history lines"),
        "{header}"
    );
    assert_eq!(rest, check_and_verdict_lines(&stdout(ran)));
    for check in Check::ALL {
        assert!(
            rest.lines().any(|l| l.starts_with(&format!("{check}: "))),
            "no {check} line in\n{rest}"
        );
    }
    text
}

#[test]
fn a_clean_runs_history_exits_0_with_every_check_line_as_run_printed_them() {
    let dir = tempfile::tempdir().unwrap();
    let (ran, history) = f1_run(dir.path(), "clean", None);
    let text = assert_judges_as_run_did(&ran, &history, 0);
    assert!(text.lines().last().unwrap().starts_with("verdict: clean"));
}

#[test]
fn a_mutant_runs_history_exits_1_naming_what_it_violated() {
    let dir = tempfile::tempdir().unwrap();
    let (ran, history) = f1_run(dir.path(), "mutant", Some(MUTANT));
    let text = assert_judges_as_run_did(&ran, &history, 1);
    let verdict = text.lines().last().unwrap();
    assert!(verdict.starts_with("verdict: FAIL: "), "{verdict}");
    for check in [Check::Fence, Check::Ledger, Check::LinLedger] {
        assert!(verdict.contains(check.name()), "{check} not in {verdict}");
    }
}

#[test]
fn a_budget_too_small_for_the_searches_exits_4_as_check_does() {
    let dir = tempfile::tempdir().unwrap();
    let (_, history) = f1_run(dir.path(), "clean", None);
    let out = judge(&["--budget", "1"], &[&history]);
    assert_eq!(out.status.code(), Some(4), "{}", both(&out));
    let text = stdout(&out);
    for check in Check::LINEARIZABILITY {
        let line = format!("{check}: unknown (the search ran out of budget)");
        assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    }
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("verdict: inconclusive: "),
        "{text}"
    );
}

#[test]
fn a_memo_cap_too_small_for_the_searches_exits_4_naming_the_memo() {
    let dir = tempfile::tempdir().unwrap();
    let (_, history) = f1_run(dir.path(), "clean", None);
    let out = judge(&["--memo-entries", "1"], &[&history]);
    assert_eq!(out.status.code(), Some(4), "{}", both(&out));
    let text = stdout(&out);
    for check in Check::LINEARIZABILITY {
        let line = format!(
            "{check}: unknown (the search's memo reached its cap (raise it with leasesim check --memo-entries))"
        );
        assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    }
}

/// `lines` written as a file `name` in `dir`, each with its newline unless `cut` says the
/// last one was cut short.
fn write_lines(dir: &Path, name: &str, lines: &[&str], cut: bool) -> PathBuf {
    let path = dir.join(name);
    let mut text = lines.join("\n");
    if !cut {
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// Exit 2 with `error: FILE…` holding `what`, nothing judged on stdout, and no panic.
fn assert_bad_input(file: &Path, what: &str) {
    let out = judge(&[], &[file]);
    assert_exit(&out, 2, &[&format!("error: {}", file.display()), what]);
    assert_eq!(stdout(&out), "", "{}", both(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", both(&out));
}

#[test]
fn files_that_are_not_histories_exit_2_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let (_, history) = f1_run(dir.path(), "clean", None);
    let text = std::fs::read_to_string(&history).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let last = lines.len();

    assert_bad_input(&dir.path().join("missing.jsonl"), "cannot read");
    let jepsen = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/jepsen/etcd/etcd_000.log"
    ));
    assert_bad_input(jepsen, "use `leasesim check` for Jepsen histories");
    // The last line cut in half, as a writer killed mid-line leaves it.
    let mut cut = lines.clone();
    cut[last - 1] = &lines[last - 1][..lines[last - 1].len() / 2];
    let cut = write_lines(dir.path(), "cut.jsonl", &cut, true);
    assert_bad_input(&cut, &format!("{}:{last}: not JSON", cut.display()));
    // A line in the middle overwritten.
    let mut corrupt = lines.clone();
    corrupt[4] = "\u{0}\u{0}\u{0}";
    let corrupt = write_lines(dir.path(), "corrupt.jsonl", &corrupt, false);
    assert_bad_input(&corrupt, &format!("{}:5: ", corrupt.display()));
    let headless = write_lines(dir.path(), "headless.jsonl", &lines[1..], false);
    assert_bad_input(&headless, "no config line");
    let empty = write_lines(dir.path(), "empty.jsonl", &[], true);
    assert_bad_input(&empty, "the file is empty");
}

#[test]
fn json_prints_one_object_per_file_naming_every_check() {
    let dir = tempfile::tempdir().unwrap();
    let (_, clean) = f1_run(dir.path(), "clean", None);
    let (_, mutant) = f1_run(dir.path(), "mutant", Some(MUTANT));
    let missing = dir.path().join("missing.jsonl");
    let out = judge(&["--json"], &[&clean, &mutant, &missing]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    let objects: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();
    let names: Vec<&str> = Check::ALL.iter().map(|c| c.name()).collect();
    for (object, file, code) in [(&objects[0], &clean, 0), (&objects[1], &mutant, 1)] {
        assert_eq!(object["file"], file.display().to_string());
        assert_eq!(object["exit_code"], code);
        assert!(object["operations"].as_u64().unwrap() > 0);
        let checks: Vec<&str> = object["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(checks, names);
    }
    assert!(objects[0]["verdict"].as_str().unwrap().starts_with("clean"));
    let failed = |object: &serde_json::Value| -> Vec<String> {
        let checks = object["checks"].as_array().unwrap().iter();
        checks
            .filter(|c| c["verdict"] == "fail")
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(failed(&objects[0]), Vec::<String>::new());
    assert_eq!(failed(&objects[1]), ["FENCE", "LEDGER", "LIN-LEDGER"]);
    assert_eq!(objects[2]["exit_code"], 2);
    assert!(objects[2].get("verdict").is_none());
    assert!(
        objects[2]["error"]
            .as_str()
            .unwrap()
            .contains("missing.jsonl"),
        "{}",
        objects[2]
    );
    assert_eq!(objects.len(), 3);
}

#[test]
fn several_files_fold_into_one_exit_code_by_precedence() {
    let dir = tempfile::tempdir().unwrap();
    let (_, clean) = f1_run(dir.path(), "clean", None);
    let (_, mutant) = f1_run(dir.path(), "mutant", Some(MUTANT));
    let missing = dir.path().join("missing.jsonl");
    let cases: [(&[&Path], Exit); 3] = [
        (&[&clean, &clean], Exit::Clean),
        (&[&clean, &mutant], Exit::SafetyViolation),
        (&[&mutant, &missing, &clean], Exit::BadInput),
    ];
    for (files, exit) in cases {
        let out = judge(&[], files);
        let code = i32::from(exit.code());
        assert_eq!(out.status.code(), Some(code), "{}", both(&out));
        let text = stdout(&out);
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with(&format!("verdict: {} files (exit 0: ", files.len()))
                && last.ends_with(&format!(" — exit {code}")),
            "{last}"
        );
        // Each judged file's block, in the order given.
        let verdicts: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("verdict: ") && l != &last)
            .collect();
        let judged = files.iter().filter(|f| f.exists()).count();
        assert_eq!(verdicts.len(), judged, "{text}");
    }
}

/// The example: F1 seed 1's history with its first `ok` journal append turned into
/// a definite failure (`fail`, fenced) while its record stays in the final ledger. The
/// linearizability check of the ledger passes it; `judge` runs every check, and DEFINITE
/// (docs/checks.md) catches it.
#[test]
fn a_definite_failure_whose_record_is_in_the_ledger_exits_1_naming_definite() {
    let dir = tempfile::tempdir().unwrap();
    let (_, history) = f1_run(dir.path(), "clean", None);
    let text = std::fs::read_to_string(&history).unwrap();
    let failed = dir.path().join("failed.jsonl");
    std::fs::write(&failed, first_journal_append_failed(&text)).unwrap();
    let out = judge(&[], &[&failed]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let last = stdout(&out).lines().last().unwrap().to_owned();
    assert!(
        last.starts_with("verdict: FAIL: ") && last.contains("DEFINITE"),
        "{last}"
    );
    let ledger_only = leasesim!().run([
        OsStr::new("check"),
        OsStr::new("--model"),
        OsStr::new("ledger"),
        failed.as_os_str(),
    ]);
    assert_eq!(ledger_only.status.code(), Some(0), "{}", both(&ledger_only));
}

/// `history` (JSON lines) with its first `ok` `journal_append` reported `fail`, fenced
/// (`expected` the tip it appended at, `actual` the seq it was acknowledged at); every other
/// line, the final ledger's included, unchanged.
fn first_journal_append_failed(history: &str) -> String {
    let mut changed = false;
    let lines = history.lines().map(|line| {
        let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
        let is_it = !changed
            && value["kind"] == "op"
            && value["op"]["type"] == "journal_append"
            && value["outcome"] == "ok";
        if !is_it {
            return line.to_owned();
        }
        changed = true;
        let seq = value["result"]["seq"].as_u64().expect("an appended seq");
        value["outcome"] = "fail".into();
        value["result"] = serde_json::json!({"type": "fenced", "expected": seq - 1, "actual": seq});
        value.to_string()
    });
    let text: String = lines.map(|line| line + "\n").collect();
    assert!(changed, "no ok journal_append in the history");
    text
}
