//! What leasesim's test binaries (`tests/<area>/main.rs`) share, written once: running the
//! `leasesim` binary of the calling test's own build and reading what it printed.
//!
//! A dev-dependency of the `leasesim` package and of the crates whose tests use its std-only
//! assertions (`publish = false`, no dependencies). The
//! binary's path is `CARGO_BIN_EXE_leasesim`, which Cargo sets only while it compiles the
//! integration tests of the package that owns the binary: hence [`leasesim!`], a macro that
//! reads it where it is expanded, in the test binary, not here. Where each kind of shared
//! helper lives: docs/testing.md#helpers-written-once.
//!
//! ```text
//! use leasesim_testkit::{both, leasesim};
//! let output = leasesim!().run(["run", "--seed", "7"]);
//! assert_eq!(output.status.code(), Some(0), "{}", both(&output));
//! ```

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The `leasesim` binary of the calling test binary's build, as a [`Binary`].
///
/// Expands to `Binary::new(env!("CARGO_BIN_EXE_leasesim"))` at the call site, so it compiles
/// only in the `leasesim` package's integration tests (the one place Cargo sets the variable).
#[macro_export]
macro_rules! leasesim {
    () => {
        $crate::Binary::new(env!("CARGO_BIN_EXE_leasesim"))
    };
}

/// A built binary the tests run as a user would: by path, with arguments, to its end.
#[derive(Clone, Copy, Debug)]
pub struct Binary {
    path: &'static str,
}

impl Binary {
    /// The binary at `path` (absolute: Cargo's `CARGO_BIN_EXE_<name>`).
    #[must_use]
    pub const fn new(path: &'static str) -> Self {
        Self { path }
    }

    /// A command for the binary with nothing set: the caller adds arguments, pipes, a folder.
    #[must_use]
    pub fn command(&self) -> Command {
        Command::new(self.path)
    }

    /// Runs the binary with `args` in the test's working folder to its end: exit status,
    /// stdout and stderr. Panics only if the binary cannot be started at all.
    pub fn run<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        finish(self.command().args(args))
    }

    /// [`Binary::run`] in folder `cwd` (relative paths in `args` and the files the binary
    /// writes resolve there).
    pub fn run_in<I, S>(&self, cwd: &Path, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        finish(self.command().current_dir(cwd).args(args))
    }
}

/// Runs `command` to its end, naming it in the panic when it cannot start.
fn finish(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"))
}

/// Printed bytes as text; invalid UTF-8 shows as U+FFFD (leasesim prints UTF-8 only, and a
/// test's message should still show what came out if it did not).
#[must_use]
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The run's stdout as text.
#[must_use]
pub fn stdout(output: &Output) -> String {
    text(&output.stdout)
}

/// The run's stderr as text.
#[must_use]
pub fn stderr(output: &Output) -> String {
    text(&output.stderr)
}

/// Exit code, stdout and stderr in one text, for assertion messages.
#[must_use]
pub fn both(output: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        stdout(output),
        stderr(output)
    )
}

/// Asserts that `output` exited with `code` (docs/exit-codes.md) and that its stderr holds
/// every one of `expected`; a failure names the missing part and shows the whole output.
pub fn assert_exit(output: &Output, code: i32, expected: &[&str]) {
    assert_eq!(output.status.code(), Some(code), "{}", both(output));
    let err = stderr(output);
    for part in expected {
        assert!(
            err.contains(part),
            "{part:?} not in stderr:\n{}",
            both(output)
        );
    }
}

/// Asserts that every one of `lines` is a whole line of `text` (`what` names the text in the
/// message: `report.md`, `stdout`…); a failure names the missing line and shows the text.
pub fn assert_has_lines(text: &str, what: &str, lines: &[&str]) {
    for line in lines {
        assert!(
            text.lines().any(|l| l == *line),
            "{what} lacks {line:?}:\n{text}"
        );
    }
}

/// Runs `failure` on every one of `items` on two threads (the CI machine's two cores; each
/// item is a whole run, so the suite takes half as long) and returns every failure it
/// reported, sorted: an empty list when all passed.
///
/// # Panics
/// When `failure` panics on an item (the panic is passed on).
pub fn failures_on_two_threads<T: Sync>(
    items: &[T],
    failure: impl Fn(&T) -> Option<String> + Sync,
) -> Vec<String> {
    let next = AtomicUsize::new(0);
    let mut failures: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let mut failures = Vec::new();
                    while let Some(item) = items.get(next.fetch_add(1, Ordering::SeqCst)) {
                        failures.extend(failure(item));
                    }
                    failures
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().unwrap())
            .collect()
    });
    failures.sort();
    failures
}

/// The files in folder `dir` whose names end in `suffix` (`.run.json`, `.ledger`), sorted.
///
/// # Panics
/// When `dir` cannot be read.
pub fn files_ending_in(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

/// Every file and folder below `root`, recursively, as paths relative to it, sorted.
///
/// # Panics
/// When a folder cannot be listed (a test's own temporary folder).
pub fn paths_below(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            found.push(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
    found.sort();
    found
}
