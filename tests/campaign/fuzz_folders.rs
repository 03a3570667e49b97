//! Fuzzing what a campaign reads back (issue 40, item 5): a report folder whose
//! `campaign.json`, `results.jsonl`, `shrunk.jsonl` or `summary.json` is cut, flipped,
//! deleted, replaced by a FIFO, a folder or a device link, or given a second record of a run
//! that says "violation" is rendered (`report::render_summary`) to an error or a verdict —
//! never a panic, never clean beside a violation record, and never a changed data file.
//! Deterministic: a fixed seed, ChaCha, no persistence files.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use leasesim::exit::Exit;
use leasesim::report::{DATA_FILES, render_summary};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestRunner};

use leasesim_testkit::{both, leasesim};

use crate::support::{campaign_args, copy_sims};

/// A clean campaign of one scenario × seeds 0..3, made once per test binary.
fn pristine() -> &'static Path {
    static FOLDER: OnceLock<tempfile::TempDir> = OnceLock::new();
    FOLDER
        .get_or_init(|| {
            let tmp = tempfile::tempdir().unwrap();
            copy_sims(tmp.path(), "sims", &["f1-pause-longer-than-ttl"]);
            let args = campaign_args("0..3", "1", "c", &[]);
            let output = leasesim!().run_in(tmp.path(), &args);
            assert_eq!(output.status.code(), Some(0), "{}", both(&output));
            tmp
        })
        .path()
}

/// What is done to one file of the folder.
#[derive(Clone, Debug)]
enum Damage {
    Cut(usize),
    Flip(usize, u8),
    Delete,
    Fifo,
    Folder,
    DevZero,
    /// A copy of record N of results.jsonl saying `violation` of EXCL, appended.
    ViolationTwin(usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        any::<usize>().prop_map(Damage::Cut),
        (any::<usize>(), 1..=255u8).prop_map(|(at, bits)| Damage::Flip(at, bits)),
        Just(Damage::Delete),
        Just(Damage::Fifo),
        Just(Damage::Folder),
        Just(Damage::DevZero),
        any::<usize>().prop_map(Damage::ViolationTwin),
    ]
}

const FILES: [&str; 4] = [
    "campaign.json",
    "results.jsonl",
    "shrunk.jsonl",
    "summary.json",
];

/// A fresh copy of the pristine folder in `root`, with `damage` done to `file`.
fn damaged_copy(root: &Path, file: &str, damage: &Damage) -> PathBuf {
    let dir = root.join("c");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(pristine().join("c")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
    }
    let path = dir.join(file);
    let bytes = std::fs::read(&path).unwrap_or_default();
    match damage {
        Damage::Cut(at) => std::fs::write(&path, &bytes[..at % (bytes.len() + 1)]).unwrap(),
        Damage::Flip(at, bits) if !bytes.is_empty() => {
            let mut flipped = bytes.clone();
            flipped[at % bytes.len()] ^= bits;
            std::fs::write(&path, flipped).unwrap();
        }
        Damage::Flip(..) => {}
        Damage::Delete => {
            let _ = std::fs::remove_file(&path);
        }
        Damage::Fifo | Damage::Folder | Damage::DevZero => {
            let _ = std::fs::remove_file(&path);
            match damage {
                Damage::Fifo => {
                    let made = std::process::Command::new("mkfifo").arg(&path).status();
                    assert!(made.unwrap().success());
                }
                Damage::Folder => std::fs::create_dir(&path).unwrap(),
                _ => std::os::unix::fs::symlink("/dev/zero", &path).unwrap(),
            }
        }
        Damage::ViolationTwin(n) => {
            let results = dir.join("results.jsonl");
            let text = std::fs::read_to_string(&results).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            let mut twin: serde_json::Value = serde_json::from_str(lines[n % lines.len()]).unwrap();
            twin["status"] = "violation".into();
            twin["unexpected"] = serde_json::json!(["EXCL"]);
            std::fs::write(&results, format!("{text}{twin}\n")).unwrap();
        }
    }
    dir
}

/// The data files' bytes (regular files only: a FIFO is never read here).
fn data_bytes(dir: &Path) -> Vec<Option<Vec<u8>>> {
    DATA_FILES
        .iter()
        .map(|name| {
            let path = dir.join(name);
            let regular = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
            regular.then(|| std::fs::read(&path).unwrap())
        })
        .collect()
}

/// Whether any line of `results.jsonl` that parses records a violation.
fn holds_a_violation(dir: &Path) -> bool {
    let path = dir.join("results.jsonl");
    if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .any(|record| record["status"] == "violation")
}

#[test]
fn a_damaged_report_folder_renders_to_an_error_or_a_verdict_never_a_false_clean() {
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(40),
        ..Config::default()
    });
    let strategy = (proptest::sample::select(FILES.to_vec()), damage());
    runner
        .run(&strategy, |(file, damage)| {
            let root = tempfile::tempdir().unwrap();
            let dir = damaged_copy(root.path(), file, &damage);
            let before = data_bytes(&dir);
            let violation = holds_a_violation(&dir);
            let rendered = render_summary(&dir);
            prop_assert_eq!(data_bytes(&dir), before, "a data file was changed");
            if let Ok(summary) = rendered {
                prop_assert!(
                    !(violation && summary.exit() == Exit::Clean),
                    "{file} {damage:?}: clean beside a violation record"
                );
            }
            Ok(())
        })
        .unwrap();
}
