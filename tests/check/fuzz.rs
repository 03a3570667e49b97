//! Fuzzing the readers (issue 13, item 6): the history reader and the Jepsen readers, on
//! arbitrary bytes and on mutated lines of real files (a simulated run's history, the Jepsen
//! etcd and kv cases), must answer `Ok` or `Err`, never panic; and whatever they accept, the
//! checker judges without panicking. A panic fails the property and proptest shrinks it.
//!
//! Deterministic and short: a fixed ChaCha seed, a fixed number of cases, no persistence files
//! (as in `differential.rs`).

use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestRunner};

use leasesim::check::jepsen::{etcd, kv};
use leasesim::check::linearizability::kv::KvStore;
use leasesim::check::linearizability::register::CasRegister;
use leasesim::check::linearizability::{Budget, check, lease_operations, ledger_operations};
use leasesim::history::History;

use crate::bad_input::base_lines;
use crate::jepsen::cases_dir;
use crate::world_runs::run_random;

/// The RNG seed of every property here.
const SEED: u64 = 0x6675_7a7a_6c65_6173;

/// A small budget: the properties are about panics, not verdicts.
fn budget() -> Budget {
    Budget::steps(20_000)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(SEED),
        ..Config::default()
    })
}

fn run<S: Strategy>(cases: u32, strategy: S, property: impl Fn(S::Value))
where
    S::Value: std::fmt::Debug,
{
    let result = runner(cases).run(&strategy, |value| {
        property(value);
        Ok(())
    });
    if let Err(error) = result {
        panic!("{error}");
    }
}

/// Reads `text` as our history and, if it is accepted, checks it under both models.
fn read_and_check_history(text: &[u8]) {
    let Ok(history) = History::read_jsonl(text, "fuzz.jsonl") else {
        return;
    };
    if let Ok(ops) = ledger_operations(&history) {
        check(&ops.model, &ops.ops, budget());
    }
    if let Ok(ops) = lease_operations(&history) {
        check(&ops.model, &ops.ops, budget());
    }
}

/// Parses `text` with both Jepsen readers and checks whatever they accept.
fn read_and_check_jepsen(text: &str) {
    if let Ok(ops) = etcd::parse(Path::new("fuzz.log"), text) {
        check(&CasRegister, &ops, budget());
    }
    if let Ok(ops) = kv::parse(Path::new("fuzz.txt"), text) {
        check(&KvStore, &ops, budget());
    }
}

/// A simulated run's history (10 s, random faults), as lines.
fn sim_lines() -> &'static [String] {
    static LINES: OnceLock<Vec<String>> = OnceLock::new();
    LINES.get_or_init(|| {
        let history = run_random(3, 10, None).history;
        history.to_jsonl().lines().map(str::to_string).collect()
    })
}

/// The first lines of a Jepsen case file.
fn jepsen_lines(file: &str, lines: usize) -> Vec<String> {
    let text = std::fs::read_to_string(cases_dir().join(file)).unwrap();
    text.lines().take(lines).map(str::to_string).collect()
}

/// Values a perturbed number may take: edges of every integer type the readers use.
const NUMBERS: [&str; 14] = [
    "0",
    "1",
    "-1",
    "2",
    "4611686018427387903",
    "4611686018427387904",
    "9007199254740993",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1.5",
    "1e3",
];

/// Words a perturbed string or keyword may take.
const WORDS: [&str; 14] = [
    "\"\"",
    "\"s2\"",
    "\"lease\"",
    "\"replica-9\"",
    "null",
    "\"ok\"",
    "\"info\"",
    "\"granted\"",
    ":invoke",
    ":ok",
    ":fail",
    ":info",
    "nil",
    "[1 2]",
];

/// One change to a file's lines.
#[derive(Clone, Debug)]
enum Mutation {
    /// The `nth` number of a line becomes `NUMBERS[value]`.
    Number {
        line: Index,
        nth: Index,
        value: Index,
    },
    /// The `nth` string or keyword of a line becomes `WORDS[value]`.
    Word {
        line: Index,
        nth: Index,
        value: Index,
    },
    /// A line is removed.
    Delete(Index),
    /// A line is written twice.
    Duplicate(Index),
    /// Two lines change places.
    Swap(Index, Index),
    /// A line is cut at a byte.
    Truncate(Index, Index),
    /// Bytes are inserted into a line.
    Insert(Index, Index, Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let index = any::<Index>;
    prop_oneof![
        4 => (index(), index(), index()).prop_map(|(line, nth, value)| Mutation::Number { line, nth, value }),
        2 => (index(), index(), index()).prop_map(|(line, nth, value)| Mutation::Word { line, nth, value }),
        1 => index().prop_map(Mutation::Delete),
        1 => index().prop_map(Mutation::Duplicate),
        1 => (index(), index()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        1 => (index(), index()).prop_map(|(a, b)| Mutation::Truncate(a, b)),
        1 => (index(), index(), proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(a, b, bytes)| Mutation::Insert(a, b, bytes)),
    ]
}

/// Byte ranges of the tokens of `line` that `is_start`/`is_part` pick (numbers, or strings
/// and keywords).
fn tokens(line: &[u8], number: bool) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut at = 0;
    while at < line.len() {
        let c = line[at];
        let end = if number && (c.is_ascii_digit() || c == b'-') {
            at + line[at..]
                .iter()
                .position(|b| !(b.is_ascii_digit() || *b == b'-'))
                .unwrap_or(line.len() - at)
        } else if !number && c == b'"' {
            at + 1
                + line[at + 1..]
                    .iter()
                    .position(|b| *b == b'"')
                    .map_or(line.len() - at - 1, |p| p + 1)
        } else if !number && c == b':' && line.get(at + 1).is_some_and(u8::is_ascii_alphabetic) {
            at + line[at..]
                .iter()
                .position(|b| b" ,}\t".contains(b))
                .unwrap_or(line.len() - at)
        } else {
            at += 1;
            continue;
        };
        found.push((at, end));
        at = end.max(at + 1);
    }
    found
}

fn apply(lines: &mut Vec<Vec<u8>>, mutation: &Mutation) {
    if lines.is_empty() {
        return;
    }
    let n = lines.len();
    match mutation {
        Mutation::Number { line, nth, value } | Mutation::Word { line, nth, value } => {
            let numbers = matches!(mutation, Mutation::Number { .. });
            let line = &mut lines[line.index(n)];
            let found = tokens(line, numbers);
            if found.is_empty() {
                return;
            }
            let (from, to) = found[nth.index(found.len())];
            let new = if numbers {
                NUMBERS[value.index(NUMBERS.len())]
            } else {
                WORDS[value.index(WORDS.len())]
            };
            line.splice(from..to, new.bytes());
        }
        Mutation::Delete(line) => {
            lines.remove(line.index(n));
        }
        Mutation::Duplicate(line) => {
            let i = line.index(n);
            lines.insert(i, lines[i].clone());
        }
        Mutation::Swap(a, b) => lines.swap(a.index(n), b.index(n)),
        Mutation::Truncate(line, at) => {
            let line = &mut lines[line.index(n)];
            let at = at.index(line.len() + 1);
            line.truncate(at);
        }
        Mutation::Insert(line, at, bytes) => {
            let line = &mut lines[line.index(n)];
            let at = at.index(line.len() + 1);
            line.splice(at..at, bytes.iter().copied());
        }
    }
}

/// `lines` with `mutations` applied, as one text.
fn mutated(lines: &[String], mutations: &[Mutation]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
    for m in mutations {
        apply(&mut lines, m);
    }
    lines.join(&b'\n')
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    proptest::collection::vec(mutation(), 1..4)
}

#[test]
fn the_history_reader_never_panics_on_arbitrary_bytes() {
    let bytes = proptest::collection::vec(any::<u8>(), 0..400);
    run(256, bytes, |bytes| read_and_check_history(&bytes));
    // JSON-ish text after a valid config line gets past the first line.
    let config = base_lines()[0].clone();
    let text = "[{}\\[\\]:,\"0-9a-z_ \n-]{0,300}";
    run(256, text, |text| {
        read_and_check_history(format!("{config}\n{text}").as_bytes())
    });
}

#[test]
fn the_history_reader_never_panics_on_mutated_hand_built_histories() {
    let lines = base_lines();
    run(512, mutations(), |m| {
        read_and_check_history(&mutated(&lines, &m))
    });
}

#[test]
fn the_history_reader_never_panics_on_mutated_simulated_histories() {
    let lines = sim_lines();
    run(48, mutations(), |m| {
        read_and_check_history(&mutated(lines, &m))
    });
}

#[test]
fn the_jepsen_readers_never_panic_on_arbitrary_text() {
    let bytes = proptest::collection::vec(any::<u8>(), 0..400);
    run(256, bytes, |bytes| {
        read_and_check_jepsen(&String::from_utf8_lossy(&bytes))
    });
    let edn = "[{}\\[\\]:, \"0-9a-z\n\t-]{0,300}";
    run(256, edn, |text| read_and_check_jepsen(&text));
    let etcd_like = "(INFO  jepsen.util - [0-9]{1,3}\t:(invoke|ok|fail|info)\t:(read|write|cas)\t(nil|-?[0-9]{1,20}|\\[[0-9 -]{0,8}\\]|[a-z]{0,3})\n){0,12}";
    run(256, etcd_like, |text| read_and_check_jepsen(&text));
}

#[test]
fn the_jepsen_readers_never_panic_on_mutated_real_files() {
    for file in ["etcd/etcd_000.log", "kv/c01-ok.txt", "kv/c10-bad.txt"] {
        let lines = jepsen_lines(file, 80);
        run(192, mutations(), |m| {
            read_and_check_jepsen(&String::from_utf8_lossy(&mutated(&lines, &m)))
        });
    }
}
