//! Every file listed in `tests/data/jepsen/expected.csv` gets its expected verdict, and the
//! readers find the op counts the csv records.

use std::path::{Path, PathBuf};

use leasesim::check::jepsen::{ReadError, etcd, kv};
use leasesim::check::linearizability::kv::KvStore;
use leasesim::check::linearizability::register::{CasRegister, RegisterInput, RegisterOutput};
use leasesim::check::linearizability::{Budget, Operation, Verdict, check};

pub(crate) fn cases_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/jepsen");
    assert!(
        dir.join("expected.csv").is_file(),
        "the Jepsen cases are missing: expected {}/expected.csv (they are tracked in the \
         repository: restore them with `git checkout -- tests/data/jepsen`)",
        dir.display()
    );
    dir
}

pub(crate) struct Case {
    pub(crate) file: String,
    pub(crate) linearizable: bool,
    ops: usize,
    unknown_ops: usize,
}

pub(crate) fn cases() -> Vec<Case> {
    let path = cases_dir().join("expected.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("file,expected_linearizable,ops,pending_unknown_ops"),
        "{header}"
    );
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            Case {
                file: fields[0].to_string(),
                linearizable: fields[1]
                    .parse()
                    .unwrap_or_else(|_| panic!("bad row {line}")),
                ops: fields[2].parse().unwrap(),
                unknown_ops: fields[3].parse().unwrap(),
            }
        })
        .collect()
}

fn counts<I, O>(ops: &[Operation<I, O>]) -> (usize, usize) {
    (
        ops.len(),
        ops.iter().filter(|op| op.output.is_none()).count(),
    )
}

fn verdict(case: &Case, dir: &Path) -> (Verdict, (usize, usize)) {
    let path = dir.join(&case.file);
    if case.file.starts_with("etcd/") {
        let ops = etcd::read(&path).unwrap();
        (check(&CasRegister, &ops, Budget::default()), counts(&ops))
    } else if case.file.starts_with("kv/") {
        let ops = kv::read(&path).unwrap();
        (check(&KvStore, &ops, Budget::default()), counts(&ops))
    } else {
        panic!(
            "expected.csv lists {}, which is neither etcd/ nor kv/",
            case.file
        );
    }
}

#[test]
fn every_jepsen_file_gets_its_expected_verdict() {
    let dir = cases_dir();
    let cases = cases();
    assert_eq!(
        cases.len(),
        64,
        "expected.csv should list 60 etcd and 4 kv files"
    );
    let mut wrong = Vec::new();
    for case in &cases {
        let (verdict, (ops, unknown)) = verdict(case, &dir);
        assert_eq!(
            (ops, unknown),
            (case.ops, case.unknown_ops),
            "{}: (ops, unknown-outcome ops) read",
            case.file
        );
        let ok = match (&verdict, case.linearizable) {
            (Verdict::Linearizable, true) => true,
            (Verdict::NotLinearizable(explanation), false) => {
                assert!(
                    !explanation.longest_prefix.is_empty() || !explanation.states_before.is_empty()
                );
                true
            }
            _ => false,
        };
        if !ok {
            wrong.push(format!(
                "{}: expected linearizable={}, got {verdict:?}",
                case.file, case.linearizable
            ));
        }
    }
    assert!(wrong.is_empty(), "wrong verdicts:\n{}", wrong.join("\n"));
}

/// The same history as Jepsen may write it: fields separated by runs of spaces instead of tabs
/// (porcupine's reader matches `\s+`), blanks padded around the logger's dash and at the ends
/// of lines, and CRLF line endings.
fn reformatted(text: &str, spaces: &str, line_end: &str) -> String {
    text.lines()
        .map(|line| {
            let line = line
                .replace('\t', spaces)
                .replace(" - ", &format!("{spaces}-{spaces}"))
                .replace(", ", &format!(",{spaces}"));
            format!("{line} \t{line_end}")
        })
        .collect()
}

#[test]
fn every_jepsen_file_written_with_spaces_and_crlf_gets_the_same_verdict() {
    let dir = cases_dir();
    let mut wrong = Vec::new();
    for case in cases() {
        let (expected, counted) = verdict(&case, &dir);
        let text = std::fs::read_to_string(dir.join(&case.file)).unwrap();
        for (spaces, line_end) in [(" ", "\n"), ("   ", "\n"), (" \t ", "\r\n")] {
            let variant = reformatted(&text, spaces, line_end);
            assert_ne!(variant, text);
            let path = Path::new(&case.file);
            let (got, got_counts) = if case.file.starts_with("etcd/") {
                let ops = etcd::parse(path, &variant)
                    .unwrap_or_else(|e| panic!("{} with {spaces:?}: {e}", case.file));
                (check(&CasRegister, &ops, Budget::default()), counts(&ops))
            } else {
                let ops = kv::parse(path, &variant)
                    .unwrap_or_else(|e| panic!("{} with {spaces:?}: {e}", case.file));
                (check(&KvStore, &ops, Budget::default()), counts(&ops))
            };
            if (got_counts, std::mem::discriminant(&got))
                != (counted, std::mem::discriminant(&expected))
            {
                wrong.push(format!(
                    "{} with {spaces:?} and {line_end:?}: {got_counts:?} ops, {got:?}",
                    case.file
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "verdicts changed:\n{}", wrong.join("\n"));
}

#[test]
fn etcd_fields_are_split_at_any_run_of_blanks_and_a_cas_value_may_hold_them() {
    let text = "INFO jepsen.util -  1   :invoke :cas   [1    2]  \r\n\
                INFO\tjepsen.util\t-\t1\t:ok\t:cas\t[1 2]\r\n\
                INFO  jepsen.util-2 :invoke :read nil\n";
    let ops = etcd::parse(Path::new("h.log"), text).unwrap();
    assert_eq!(ops.len(), 1, "`jepsen.util-2` (no blanks) is not an event");
    assert_eq!(ops[0].input, RegisterInput::Cas { old: 1, new: 2 });
    assert_eq!(ops[0].output, Some(RegisterOutput::Cas(true)));
    let err = etcd::parse(Path::new("h.log"), "INFO jepsen.util - 1 :invoke :read\n").unwrap_err();
    assert!(err.to_string().starts_with("h.log:1: "), "{err}");
    assert!(err.to_string().contains("no value"), "{err}");
}

/// `err` is a reader's refusal of line `line` of `file`, its message starting `file:line: `.
fn assert_bad_line(err: &ReadError, file: &str, line: usize) {
    assert!(
        matches!(err, ReadError::BadLine { line: l, .. } if *l == line),
        "{err}"
    );
    assert!(
        err.to_string().starts_with(&format!("{file}:{line}: ")),
        "{err}"
    );
}

#[test]
fn a_bad_etcd_line_names_file_and_line() {
    let text = "INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:ok\t:read\tx\n";
    let err = etcd::parse(Path::new("h.log"), text).unwrap_err();
    assert_bad_line(&err, "h.log", 2);
}

#[test]
fn etcd_chatter_is_ignored_and_info_stays_open() {
    let text = "INFO  jepsen.core - starting\n\
                INFO  jepsen.util - 1\t:invoke\t:cas\t[1 2]\n\
                INFO  jepsen.util - 1\t:info\t:cas\t:timed-out\n\
                INFO  jepsen.util - 2\t:invoke\t:read\tnil\n\
                INFO  jepsen.util - 2\t:fail\t:read\t:timed-out\n";
    let ops = etcd::parse(Path::new("h.log"), text).unwrap();
    assert_eq!(ops.len(), 2);
    assert_eq!((ops[0].output, ops[0].ret), (None, None));
    assert_eq!((ops[1].output, ops[1].ret), (None, Some(5)));
}

#[test]
fn a_bad_kv_line_names_file_and_line() {
    let text = "{:process 0, :type :invoke, :f :get, :key \"1\", :value nil}\n{:process 0, :type :ok, :f :get\n";
    let err = kv::parse(Path::new("c.txt"), text).unwrap_err();
    assert_bad_line(&err, "c.txt", 2);
}

#[test]
fn the_etcd_000_violation_is_explained() {
    let ops = etcd::read(&cases_dir().join("etcd/etcd_000.log")).unwrap();
    let Verdict::NotLinearizable(explanation) = check(&CasRegister, &ops, Budget::default()) else {
        panic!("etcd_000 is not linearizable");
    };
    let text = explanation.to_string();
    assert!(
        text.contains("the operation that cannot be placed is"),
        "{text}"
    );
    assert!(!explanation.states_before.is_empty(), "{text}");
    assert!(!explanation.longest_prefix.is_empty(), "{text}");
}
