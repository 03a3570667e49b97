//! Bad input to the checkers (bad-input probe, issue 13): times out of order or near
//! `u64::MAX` (D1, D2), empty and config-less histories (D8), a budget that bounds the
//! pruning too (D6) and files that are not regular files (D9). Each is refused with exit 2
//! and a line-numbered message, or judged without a false verdict; never a panic or a hang.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use leasesim::check::linearizability::register::CasRegister;
use leasesim::check::linearizability::{
    Budget, Exhausted, Verdict, check_counted, check_lease_history, check_ledger_history,
    ledger_operations,
};
use leasesim::history::{History, HistoryError, Line, LineProblem, MAX_TIME_US};
use leasesim_testkit::{leasesim, stderr};

const MAX: u64 = u64::MAX;

/// A small linearizable history, one JSON line per entry: config (line 1), the authority's
/// clock (2), an acquire (3) and its grant decision (4), an append (5), the final ledger (6)
/// and the end of the run (7).
pub(crate) fn base_lines() -> Vec<String> {
    let p = r#"{"replica":"replica-1","incarnation":0}"#;
    let record = format!(
        r#"{{"type":"event","writer_id":{{"owner":{p},"journal":1}},"seq_in_writer":1,"payload_hex":"00"}}"#
    );
    vec![
        r#"{"v":1,"kind":"config","ttl_us":10000000,"skew_margin_us":1000000,"renew_interval_us":3333333,"longest_reconnect_backoff_us":2000000,"grace_period_us":10000000,"mutant":null,"seed":1,"replicas":1,"sessions":["s1"]}"#.to_string(),
        r#"{"v":1,"kind":"clock","host":"lease","boot":0,"from_us":0,"local_from_us":0,"drift_ppm":0,"suspended":false}"#.to_string(),
        format!(
            r#"{{"v":1,"kind":"op","id":1,"process":{p},"session":"s1","op":{{"type":"lease_acquire","owner":{p}}},"invoke_us":1000000,"complete_us":1000040,"invoke_local_us":1000000,"complete_local_us":1000040,"outcome":"ok","result":{{"type":"granted","token":1,"expiry_authority_us":11000020,"ttl_us":10000000}}}}"#
        ),
        format!(
            r#"{{"v":1,"kind":"decision","session":"s1","owner":{p},"decision":{{"type":"grant","token":1,"expiry_authority_us":11000020,"ttl_us":10000000}},"at_authority_us":1000020,"at_us":1000020}}"#
        ),
        format!(
            r#"{{"v":1,"kind":"op","id":2,"process":{p},"session":"s1","op":{{"type":"ledger_append","expected":0,"record":{record}}},"invoke_us":2000000,"complete_us":2000040,"invoke_local_us":2000000,"complete_local_us":2000040,"outcome":"ok","result":{{"type":"appended","seq":1}}}}"#
        ),
        format!(r#"{{"v":1,"kind":"ledger","session":"s1","seq":1,"record":{record}}}"#),
        r#"{"v":1,"kind":"phase","name":"run_ended","at_us":5000000}"#.to_string(),
    ]
}

/// `base_lines` with `field` of line `number` (1-based) set to `value`.
fn with_field(number: usize, field: &str, value: u64) -> Vec<String> {
    let mut lines = base_lines();
    let line = &mut lines[number - 1];
    let at = line
        .find(&format!("\"{field}\":"))
        .unwrap_or_else(|| panic!("line {number} has no {field}"))
        + field.len()
        + 3;
    let end = at + line[at..].find([',', '}']).expect("a number ends");
    line.replace_range(at..end, &value.to_string());
    lines
}

/// The lines as an in-memory history, not validated (as a caller of the library may build).
fn in_memory(lines: &[String]) -> History {
    let parsed = lines
        .iter()
        .map(|l| Line::from_json(l).expect("a valid line"));
    History::from_lines("hand-built", parsed.collect())
}

fn write(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    let mut text = lines.join("\n");
    if !lines.is_empty() {
        text.push('\n');
    }
    std::fs::write(&path, text).expect("write the history");
    path
}

/// `leasesim check --model MODEL FILE`, killed (and the test failed) if it runs past a
/// generous guard time: the point is that it must not hang. (Real time and sleeping are
/// only this guard's, never what a test asserts.)
#[allow(clippy::disallowed_methods)]
fn check_cli(model: &str, file: &Path) -> Output {
    let mut child = leasesim!()
        .command()
        .args(["check", "--model", model])
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run leasesim");
    for _ in 0..600 {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("leasesim check --model {model} {} hung", file.display());
}

/// Exit 2 and the one error line `error: <message>`.
fn assert_bad_input(out: &Output, message: &str) {
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(out)
    );
    assert_eq!(stderr(out), format!("error: {message}\n"));
}

/// Each of `models` refuses `file` as bad input, its one error line the file's path then
/// `rest`.
fn assert_refused_by(models: &[&str], file: &Path, rest: &str) {
    for model in models {
        assert_bad_input(
            &check_cli(model, file),
            &format!("{}{rest}", file.display()),
        );
    }
}

#[test]
fn the_base_history_is_linearizable_under_both_models() {
    let history = in_memory(&base_lines());
    let budget = Budget::default();
    assert_eq!(
        check_ledger_history(&history, budget).unwrap(),
        Verdict::Linearizable
    );
    assert_eq!(
        check_lease_history(&history, budget).unwrap(),
        Verdict::Linearizable
    );
}

mod times {
    use super::*;

    #[test]
    fn an_op_completing_before_its_invocation_is_refused_with_its_line() {
        let mut lines = with_field(3, "invoke_us", 5_000_000);
        lines[2] = lines[2].replace("\"complete_us\":1000040", "\"complete_us\":1000");
        let error = check_lease_history(&in_memory(&lines), Budget::default()).unwrap_err();
        assert_eq!(error.line(), Some(3));
        assert_eq!(
            error.problem(),
            Some(&LineProblem::CompletesBeforeInvoke {
                id: 1,
                invoke_us: 5_000_000,
                complete_us: 1000
            })
        );
        let dir = tempfile::tempdir().unwrap();
        let file = write(dir.path(), "bad.jsonl", &lines);
        assert_refused_by(
            &["lease", "ledger"],
            &file,
            ":3: op 1 completes at 1000 µs, before it was invoked at 5000000 µs; \
             complete_us must be at least invoke_us",
        );
    }

    /// The probe's u64::MAX times: `run_ended`, a decision, a clock segment and a ledger op's
    /// completion. Each used to give a false "not linearizable"; now each is refused, in
    /// memory and on the command line.
    #[test]
    fn a_time_at_u64_max_is_refused_never_a_false_verdict() {
        let mut clock = base_lines();
        clock.push(
            r#"{"v":1,"kind":"clock","host":"lease","boot":0,"from_us":18446744073709551615,"local_from_us":18446744073709551615,"drift_ppm":0,"suspended":false}"#
                .to_string(),
        );
        let complete = with_field(5, "complete_us", MAX);
        let cases = [
            (with_field(7, "at_us", MAX), 7, "at_us"),
            (with_field(4, "at_us", MAX), 4, "at_us"),
            (clock, 8, "from_us"),
            (complete, 5, "complete_us"),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (i, (lines, number, field)) in cases.into_iter().enumerate() {
            let history = in_memory(&lines);
            for error in [
                check_ledger_history(&history, Budget::default()).unwrap_err(),
                check_lease_history(&history, Budget::default()).unwrap_err(),
            ] {
                assert_eq!(error.line(), Some(number), "{error}");
                assert_eq!(
                    error.problem(),
                    Some(&LineProblem::TimeOutOfRange {
                        field: field.into(),
                        value: MAX
                    }),
                    "{error}"
                );
            }
            let file = write(dir.path(), &format!("max{i}.jsonl"), &lines);
            assert_refused_by(
                &["ledger", "lease"],
                &file,
                &format!(
                    ":{number}: `{field}` = {MAX} µs is beyond the largest time a history may \
                     hold ({MAX_TIME_US} µs = 2^62, about 146 000 years); a time this large is \
                     a damaged or hand-made value"
                ),
            );
        }
    }

    #[test]
    fn the_largest_time_allowed_is_judged_without_wrapping() {
        let history = in_memory(&with_field(7, "at_us", MAX_TIME_US - 1));
        assert_eq!(
            check_ledger_history(&history, Budget::default()).unwrap(),
            Verdict::Linearizable
        );
        assert_eq!(
            check_lease_history(&history, Budget::default()).unwrap(),
            Verdict::Linearizable
        );
        let error = in_memory(&with_field(7, "at_us", MAX_TIME_US))
            .validate()
            .unwrap_err();
        assert_eq!(error.line(), Some(7));
    }
}

mod missing {
    use super::*;

    #[test]
    fn an_empty_history_is_bad_input_for_every_model() {
        let dir = tempfile::tempdir().unwrap();
        let file = write(dir.path(), "empty.jsonl", &[]);
        assert_refused_by(
            &["ledger", "lease"],
            &file,
            ": the file is empty; a history has a config line, then its operations",
        );
        assert_refused_by(
            &["etcd", "kv"],
            &file,
            ": no operations; an empty history has nothing to judge",
        );
    }

    #[test]
    fn a_history_without_its_config_line_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let file = write(dir.path(), "nocfg.jsonl", &base_lines()[1..]);
        assert_refused_by(
            &["ledger", "lease"],
            &file,
            ": no config line; a history has exactly one",
        );
    }

    /// Probe 2, N8: a history cut right after its config line has nothing to judge, under
    /// every model (it used to be "linearizable (0 ops)" under ledger and lease).
    #[test]
    fn a_history_cut_after_its_config_line_is_bad_input_for_every_model() {
        let dir = tempfile::tempdir().unwrap();
        let file = write(dir.path(), "cfg.jsonl", &base_lines()[..1]);
        for model in ["ledger", "lease"] {
            assert_refused_by(
                &[model],
                &file,
                &format!(
                    ": no {model} operations; a history with nothing to judge cannot be \
                     linearizable (a file cut short after its config line? give the whole \
                     history)"
                ),
            );
        }
    }

    #[test]
    fn a_jepsen_file_of_chatter_only_has_no_operations() {
        let dir = tempfile::tempdir().unwrap();
        let file = write(
            dir.path(),
            "chatter.log",
            &["INFO  jepsen.core - hello".into()],
        );
        assert_refused_by(
            &["etcd"],
            &file,
            ": no operations; an empty history has nothing to judge",
        );
    }
}

mod files {
    use super::*;

    #[test]
    fn a_fifo_is_refused_at_once_by_every_reader() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f.jsonl");
        let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(status.success());
        assert_refused_by(
            &["ledger", "lease", "etcd", "kv"],
            &fifo,
            " is a FIFO, not a regular file; give the path of a file",
        );
    }

    #[test]
    fn dev_zero_is_refused_at_once_by_every_reader() {
        assert_refused_by(
            &["ledger", "lease", "etcd", "kv"],
            Path::new("/dev/zero"),
            " is a device, not a regular file; give the path of a file",
        );
        let error = History::read_jsonl_path("/dev/zero").unwrap_err();
        assert!(matches!(error, HistoryError::Input(_)), "{error}");
    }
}

mod budget {
    use super::*;
    use leasesim::history::{HistRecord, HistWriterId, Op, OpLine, OpResult, Outcome, Process};

    /// The probe's 100k-op history: one writer's sequential appends, trivially linearizable.
    fn sequential_appends(n: u64) -> History {
        let p = Process::new("replica-1", 0);
        let mut lines = vec![Line::from_json(&base_lines()[0]).unwrap()];
        lines.extend((0..n).map(|i| {
            Line::Op(OpLine {
                id: i + 1,
                process: p.clone(),
                session: "s1".into(),
                op: Op::LedgerAppend {
                    expected: i,
                    record: HistRecord::Event {
                        writer_id: HistWriterId {
                            owner: p.clone(),
                            journal: 1,
                        },
                        seq_in_writer: i + 1,
                        payload: vec![0],
                    },
                },
                invoke_us: 10 * i,
                complete_us: Some(10 * i + 5),
                invoke_local_us: 10 * i,
                complete_local_us: Some(10 * i + 5),
                outcome: Outcome::Ok,
                result: Some(OpResult::Appended { seq: i + 1 }),
            })
        }));
        History::from_lines("l100k", lines)
    }

    #[test]
    fn a_budget_of_1000_stops_the_100k_op_ledger_check_at_1000_units_of_work() {
        let ops = ledger_operations(&sequential_appends(100_000)).unwrap();
        assert_eq!(ops.ops.len(), 100_000);
        let (verdict, work) = check_counted(&ops.model, &ops.ops, Budget::steps(1000));
        assert_eq!(verdict, Verdict::Unknown(Exhausted::Steps));
        assert_eq!(work, 1000);
    }

    /// 100k equal reads, one after the other: every earlier one is a candidate twin, which the
    /// old pruning scanned for each (5·10⁹ comparisons, none counted). Its comparisons now
    /// count against the budget and stop at it.
    #[test]
    fn the_pruning_counts_against_the_budget() {
        let reads = crate::families::equal_reads(100_000);
        let (verdict, work) = check_counted(&CasRegister, &reads, Budget::steps(1000));
        assert_eq!(verdict, Verdict::Unknown(Exhausted::Steps));
        assert_eq!(work, 1000);
        // With room to spare, 10k of them are linearizable, pruning and all (the memo of a
        // full 100k-op search would hold 100k bit sets of 100k bits).
        let (verdict, work) =
            check_counted(&CasRegister, &reads[..10_000], Budget::steps(1_000_000));
        assert_eq!(verdict, Verdict::Linearizable);
        assert!(work < 1_000_000, "{work}");
    }
}
