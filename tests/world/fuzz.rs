//! Fuzzing the scenario reader and the run-file reader (proptest): arbitrary bytes and
//! mutated valid documents (every `sims/*.toml`, resolved run files of a swarm and a scripted
//! scenario) are refused or accepted, never a panic; what is accepted also resolves (a
//! scenario) or yields its world (a run file) without one. Deterministic: a fixed seed,
//! ChaCha, no persistence files; each property runs in about a second.

use leasesim::campaign::scenario::Scenario;
use leasesim::sim::runfile::RunFile;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestRunner};

use crate::support::sims;

const SEED: [u8; 32] = *b"leasesim bad-input fuzz, seed 01";

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(u64::from_le_bytes(SEED[..8].try_into().unwrap())),
        ..Config::default()
    })
}

/// Every committed scenario's text.
fn scenarios() -> Vec<String> {
    let mut texts: Vec<String> = std::fs::read_dir(sims())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect();
    texts.sort();
    texts
}

/// Resolved run files: a swarm scenario's and a scripted one's.
fn run_files() -> Vec<String> {
    ["swarm-everything.toml", "f1-pause-longer-than-ttl.toml"]
        .iter()
        .map(|name| {
            let scenario = Scenario::load(&sims().join(name)).unwrap();
            scenario.resolve(3).unwrap().to_json()
        })
        .collect()
}

/// Values that break ranges and arithmetic, put where a number or a token was.
const EXTREMES: [&str; 12] = [
    "0",
    "1",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "86400000",
    "1e308",
    "[1, 2, 3]",
    "[]",
    "\"s1\"",
];

/// One edit of a document: a byte replaced, a byte removed, a number (digit run) replaced by
/// an extreme value, or a line duplicated.
#[derive(Clone, Debug)]
enum Edit {
    Byte(Index, u8),
    Remove(Index),
    Number(Index, &'static str),
    DuplicateLine(Index),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Byte(i, b)),
        any::<Index>().prop_map(Edit::Remove),
        (any::<Index>(), select(&EXTREMES[..])).prop_map(|(i, v)| Edit::Number(i, v)),
        any::<Index>().prop_map(Edit::DuplicateLine),
    ];
    prop::collection::vec(edit, 1..4)
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for edit in edits {
        if bytes.is_empty() {
            break;
        }
        match edit {
            Edit::Byte(i, b) => {
                let at = i.index(bytes.len());
                bytes[at] = *b;
            }
            Edit::Remove(i) => {
                bytes.remove(i.index(bytes.len()));
            }
            Edit::Number(i, value) => {
                let numbers = digit_runs(&bytes);
                if !numbers.is_empty() {
                    let (start, end) = numbers[i.index(numbers.len())];
                    bytes.splice(start..end, value.bytes());
                }
            }
            Edit::DuplicateLine(i) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let lines: Vec<&str> = text.lines().collect();
                let line = lines[i
                    .index(lines.len().max(1))
                    .min(lines.len().saturating_sub(1))];
                bytes = format!("{line}\n{text}").into_bytes();
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn digit_runs(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, b) in bytes.iter().enumerate() {
        match (b.is_ascii_digit(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                runs.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push((s, bytes.len()));
    }
    runs
}

/// Reads `text` as a scenario in `sims/` (so the field cases it names are found) and, if it
/// loads, resolves a seed: neither may panic.
fn read_scenario(text: &str) {
    if let Ok(scenario) = Scenario::parse(&sims().join("fuzzed.toml"), text) {
        let _ = scenario.resolve(7);
    }
}

fn read_run_file(text: &str) {
    if let Ok(run) = RunFile::parse(text) {
        let _ = run.world_config();
        let _ = run.to_json();
    }
}

/// `read` on 2,000 arbitrary byte strings of up to 400 bytes (as lossy UTF-8).
fn never_panics_on_arbitrary_bytes(read: fn(&str)) {
    runner(2000)
        .run(&prop::collection::vec(any::<u8>(), 0..400), |bytes| {
            read(&String::from_utf8_lossy(&bytes));
            Ok(())
        })
        .unwrap();
}

/// `read` on 1,500 documents of `texts`, each with one to three [`Edit`]s.
fn never_panics_on_mutations_of(texts: Vec<String>, read: fn(&str)) {
    runner(1500)
        .run(&(select(texts), edits()), |(text, edits)| {
            read(&apply(&text, &edits));
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_scenario_reader_never_panics_on_arbitrary_bytes() {
    never_panics_on_arbitrary_bytes(read_scenario);
}

#[test]
fn the_scenario_reader_never_panics_on_mutated_scenarios() {
    never_panics_on_mutations_of(scenarios(), read_scenario);
}

#[test]
fn the_run_file_reader_never_panics_on_arbitrary_bytes() {
    never_panics_on_arbitrary_bytes(read_run_file);
}

#[test]
fn the_run_file_reader_never_panics_on_mutated_run_files() {
    never_panics_on_mutations_of(run_files(), read_run_file);
}
