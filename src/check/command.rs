//! `leasesim check [--model etcd|kv|ledger|lease] [--json] [--budget STEPS] [--memo-entries N]
//! FILE...`: judges
//! history files for linearizability and prints one verdict per file.
//!
//! Without `--model`, each file's model is told from its first event line ([`detect`]): a
//! Jepsen etcd log line (`… jepsen.util - 0 :invoke :read nil`) is `etcd`, an EDN op map
//! (`{:process 0, …}`) is `kv`; one of our `history.jsonl` files holds both ledger and lease
//! calls, so it needs `--model ledger|lease` (bad input otherwise). So one process judges a
//! folder of mixed Jepsen files: `leasesim check tests/data/jepsen/*/*.{log,txt}`.
//!
//! Text output, one block per file on `out`:
//! - `FILE: linearizable (N ops, X ms)`
//! - `FILE: not linearizable (N ops, X ms)`, then the [`Explanation`] indented by two spaces;
//! - `FILE: unknown (budget of S steps per partition ran out, no violation found; N ops, X ms)`;
//! - `FILE: unknown (memo cap of M positions reached, no violation found; raise it with
//!   --memo-entries; N ops, X ms)`.
//!
//! A file that cannot be read or has a malformed line is reported on `err` as
//! `error: FILE:LINE: what is wrong` (exit 2); so are a file that is not a regular file (a
//! FIFO, a device: refused before reading, [`crate::input`]), an empty or config-less history
//! (`--model ledger|lease`), one without an operation of its model (cut after its config
//! line, say) and a Jepsen file without operations (`--model etcd|kv`), which have nothing
//! to judge and must not pass as linearizable. With `--json`, `out` gets one [`FileReport`]
//! JSON object per line and per file instead (bad files included, with their error). Everything
//! but the elapsed times is a function of the input alone. Exit codes follow
//! docs/exit-codes.md: see [`Exit::worst`].

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::check::jepsen::{etcd, kv, read_text};
use crate::check::judge::judges_lease_objects;
use crate::check::linearizability::kv::KvStore;
use crate::check::linearizability::register::CasRegister;
use crate::check::linearizability::{
    Budget, Exhausted, Explanation, Verdict, check, kube_operations, lease_operations,
    ledger_operations, parallelism,
};
use crate::exit::Exit;
use crate::history::History;

/// Which reader and sequential model judge the files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CheckModel {
    /// Jepsen etcd logs (`tests/data/jepsen/etcd/*.log`) against a compare-and-set
    /// register.
    Etcd,
    /// Jepsen/porcupine key-value EDN histories (`tests/data/jepsen/kv/*.txt`) against a
    /// get/put/append store, per key.
    Kv,
    /// Our `history.jsonl`: the ledger calls against the CAS chain model, per session
    /// ([`check_ledger_history`](crate::check::linearizability::check_ledger_history)).
    Ledger,
    /// Our `history.jsonl`: the lease calls against the timed lease model, per session
    /// ([`check_lease_history`](crate::check::linearizability::check_lease_history)); for a
    /// backend without an authority clock (KubeLease), its Lease API calls against the Lease
    /// objects as a CAS register keyed by resourceVersion
    /// ([`check_kube_history`](crate::check::linearizability::check_kube_history)), as
    /// LIN-LEASE judges them.
    Lease,
}

impl CheckModel {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            CheckModel::Etcd => "etcd",
            CheckModel::Kv => "kv",
            CheckModel::Ledger => "ledger",
            CheckModel::Lease => "lease",
        }
    }

    /// What the times in this model's explanations are.
    fn time_unit(self) -> &'static str {
        match self {
            CheckModel::Etcd | CheckModel::Kv => "line numbers of the file",
            CheckModel::Ledger => "microseconds of simulated true time",
            CheckModel::Lease => "microseconds on the lease authority's clock",
        }
    }
}

/// What `leasesim check` was asked to do.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// The model (and reader) for every file; `None`: each file's own, told by [`detect`].
    pub model: Option<CheckModel>,
    /// One JSON object per file instead of text.
    pub json: bool,
    /// The search budget: steps per partition, memo entries per check.
    pub budget: Budget,
    /// The history files, judged and reported in this order.
    pub files: Vec<PathBuf>,
}

/// How one file's check ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileOutcome {
    /// The engine's verdict.
    Verdict(Verdict),
    /// The file could not be read or is malformed; the message names the file and line.
    BadInput(String),
    /// The checker panicked on this file.
    HarnessError(String),
}

/// How `leasesim check` judged one file: the engine's verdict, or why there is none. Its
/// JSON string is the `verdict` of a [`FileReport`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileVerdict {
    /// `linearizable`: a linearization was found.
    Linearizable,
    /// `not_linearizable`: none exists; the report carries the explanation.
    NotLinearizable,
    /// `unknown`: the search ran out of budget (steps or memo entries) without finding a
    /// violation.
    Unknown,
    /// `bad_input`: the file could not be read or is malformed.
    BadInput,
    /// `harness_error`: the checker panicked on the file.
    HarnessError,
}

impl FileVerdict {
    /// The exit code a file with this verdict stands for alone.
    pub fn exit_code(self) -> Exit {
        match self {
            FileVerdict::Linearizable => Exit::Clean,
            FileVerdict::NotLinearizable => Exit::SafetyViolation,
            FileVerdict::Unknown => Exit::Inconclusive,
            FileVerdict::BadInput => Exit::BadInput,
            FileVerdict::HarnessError => Exit::HarnessError,
        }
    }
}

/// One file's result: what [`run`] prints, as text or (serialised) JSON.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FileReport {
    /// The file as given on the command line.
    pub file: String,
    /// The model that judged the file ([`CheckModel::name`] in JSON); `None` when it was not
    /// given and could not be told from the file ([`detect`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<CheckModel>,
    /// `linearizable`, `not_linearizable`, `unknown`, `bad_input` or `harness_error`.
    pub verdict: FileVerdict,
    /// Operations read from the file (0 when it could not be read).
    pub ops: usize,
    /// Wall-clock time of the check (reading excluded), in milliseconds.
    pub elapsed_ms: f64,
    /// Why the file is not linearizable (`not_linearizable` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
    /// The error (`bad_input` and `harness_error` only), naming file and line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The search budget, in steps per partition (`unknown` because the steps ran out only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_steps: Option<u64>,
    /// The memo cap, in entries (`unknown` because the memo reached it only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_memo_entries: Option<u64>,
}

impl FileReport {
    /// This file's exit code alone.
    pub fn exit_code(&self) -> Exit {
        self.verdict.exit_code()
    }
}

/// Reads `file` with `model`'s reader and checks it: the number of operations, the verdict and
/// how long the check took (reading excluded), or the reader's error (naming file and line).
/// `text` is the file's contents when they were already read to tell its model; a Jepsen
/// reader reads the file itself otherwise. Each model is one match arm.
fn judge(
    model: CheckModel,
    file: &Path,
    text: Option<&str>,
    budget: Budget,
) -> Result<(usize, Verdict, Duration), String> {
    let jepsen_text = || match text {
        Some(text) => Ok(std::borrow::Cow::Borrowed(text)),
        None => read_text(file)
            .map(std::borrow::Cow::Owned)
            .map_err(|e| e.to_string()),
    };
    match model {
        CheckModel::Etcd => {
            let ops = etcd::read_from(file, &jepsen_text()?).map_err(|e| e.to_string())?;
            let (verdict, elapsed) = timed(|| check(&CasRegister, &ops, budget));
            Ok((ops.len(), verdict, elapsed))
        }
        CheckModel::Kv => {
            let ops = kv::read_from(file, &jepsen_text()?).map_err(|e| e.to_string())?;
            let (verdict, elapsed) = timed(|| check(&KvStore, &ops, budget));
            Ok((ops.len(), verdict, elapsed))
        }
        // As `check_ledger_history` / `check_lease_history`, with the extraction outside the
        // timing and its operation count reported.
        CheckModel::Ledger => {
            let history = read_history(file)?;
            let ops = ledger_operations(&history).map_err(|e| e.to_string())?;
            some_operations(file, ops.ops.len(), "ledger")?;
            let (verdict, elapsed) = timed(|| check(&ops.model, &ops.ops, budget));
            Ok((ops.ops.len(), verdict, elapsed))
        }
        CheckModel::Lease => {
            let history = read_history(file)?;
            if judges_lease_objects(&history) {
                let ops = kube_operations(&history).map_err(|e| e.to_string())?;
                some_operations(file, ops.ops.len(), "Lease object")?;
                let (verdict, elapsed) = timed(|| check(&ops.model, &ops.ops, budget));
                return Ok((ops.ops.len(), verdict, elapsed));
            }
            let ops = lease_operations(&history).map_err(|e| e.to_string())?;
            some_operations(file, ops.ops.len(), "lease")?;
            let (verdict, elapsed) = timed(|| check(&ops.model, &ops.ops, budget));
            Ok((ops.ops.len(), verdict, elapsed))
        }
    }
}

/// Refuses a history in which the model finds no `kind` operation to judge (one cut right
/// after its config line, or one that never called what the model judges): nothing was
/// judged, so it must not pass as "linearizable (0 ops)" — as a Jepsen file without
/// operations is refused (docs/checks.md#linearizability-engine).
fn some_operations(file: &Path, ops: usize, kind: &str) -> Result<(), String> {
    if ops > 0 {
        return Ok(());
    }
    Err(format!(
        "{}: no {kind} operations; a history with nothing to judge cannot be linearizable \
         (a file cut short after its config line? give the whole history)",
        file.display()
    ))
}

/// Reads and validates one of our history files, which must have its `config` line: an empty
/// file, or one whose config line is gone, is bad input, never "linearizable (0 ops)".
pub(crate) fn read_history(file: &Path) -> Result<History, String> {
    let history = History::read_jsonl_path(file).map_err(|e| e.to_string())?;
    if history.lines().is_empty() {
        return Err(format!(
            "{}: the file is empty; a history has a config line, then its operations",
            file.display()
        ));
    }
    history.config().map_err(|e| e.to_string())?;
    Ok(history)
}

/// The model of a file's text when `--model` is not given: told by its first line that is
/// not blank and not log chatter. `Err` says why it cannot be told and how to say it.
///
/// - A Jepsen etcd log event (`jepsen.util`, blanks, `-`, blanks, then the event: the line
///   [`etcd::parse`] reads) is [`CheckModel::Etcd`]; other lines of an etcd log (Jepsen's
///   chatter) are skipped, as the reader skips them.
/// - An EDN map (`{:`) is [`CheckModel::Kv`].
/// - A JSON object (`{"`) is one of our history files: ledger or lease, which `--model` must
///   choose.
pub fn detect(text: &str) -> Result<CheckModel, String> {
    const SAY: &str = "say which with --model etcd|kv|ledger|lease";
    for line in text.lines().take(DETECT_LINES) {
        let line = line.trim_start();
        if line.starts_with("{:") {
            return Ok(CheckModel::Kv);
        }
        if line.starts_with("{\"") {
            return Err(format!(
                "a leasesim history (JSON lines) holds both ledger and lease calls: {SAY}"
            ));
        }
        if etcd::is_event(line) {
            return Ok(CheckModel::Etcd);
        }
    }
    Err(format!(
        "neither a Jepsen etcd log nor an EDN history in its first {DETECT_LINES} lines: {SAY}"
    ))
}

/// How many lines [`detect`] reads before it gives up: a Jepsen etcd log starts with a few
/// lines of set-up chatter.
const DETECT_LINES: usize = 1000;

/// Runs `f` and measures it in real time: only to report how long a check took (checkers may
/// read real time: docs/determinism.md#rules); it never influences a verdict.
#[allow(clippy::disallowed_types)]
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = std::time::Instant::now();
    let value = f();
    (value, start.elapsed())
}

/// Checks one file: reads it, runs the engine, and times the check. A panic in the checker
/// becomes a `harness_error` report.
pub fn check_file(model: Option<CheckModel>, file: &Path, budget: Budget) -> FileReport {
    let (model, text) = match model {
        Some(model) => (Ok(model), None),
        None => match read_text(file) {
            Ok(text) => (
                detect(&text).map_err(|why| {
                    format!("{}: cannot tell the file's model: {why}", file.display())
                }),
                Some(text),
            ),
            Err(error) => (Err(error.to_string()), None),
        },
    };
    let judged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        judge(model.clone()?, file, text.as_deref(), budget)
    }));
    let (outcome, ops, elapsed) = match judged {
        Ok(Ok((ops, verdict, elapsed))) => (FileOutcome::Verdict(verdict), ops, elapsed),
        Ok(Err(error)) => (FileOutcome::BadInput(error), 0, Duration::ZERO),
        Err(panic) => (
            FileOutcome::HarnessError(panicked(file, panic.as_ref())),
            0,
            Duration::ZERO,
        ),
    };
    let exhausted = match &outcome {
        FileOutcome::Verdict(Verdict::Unknown(exhausted)) => Some(*exhausted),
        _ => None,
    };
    let (verdict, explanation, error) = match outcome {
        FileOutcome::Verdict(Verdict::Linearizable) => (FileVerdict::Linearizable, None, None),
        FileOutcome::Verdict(Verdict::NotLinearizable(explanation)) => {
            (FileVerdict::NotLinearizable, Some(*explanation), None)
        }
        FileOutcome::Verdict(Verdict::Unknown(_)) => (FileVerdict::Unknown, None, None),
        FileOutcome::BadInput(error) => (FileVerdict::BadInput, None, Some(error)),
        FileOutcome::HarnessError(error) => (FileVerdict::HarnessError, None, Some(error)),
    };
    FileReport {
        file: file.display().to_string(),
        model: model.ok(),
        verdict,
        ops,
        elapsed_ms: (elapsed.as_secs_f64() * 1e6).round() / 1e3,
        explanation,
        error,
        budget_steps: (exhausted == Some(Exhausted::Steps))
            .then_some(budget.max_steps_per_partition),
        budget_memo_entries: (exhausted == Some(Exhausted::Memo))
            .then_some(budget.max_memo_entries),
    }
}

/// What a checker's panic on `file` is reported as (a harness error, exit 3):
/// `FILE: the checker panicked: MESSAGE`.
pub(crate) fn panicked(file: &Path, panic: &(dyn std::any::Any + Send)) -> String {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    format!("{}: the checker panicked: {message}", file.display())
}

/// The text block for one report (several lines for a violation), without the `error:` line
/// that bad input gets on the error stream.
pub fn render_text(report: &FileReport) -> String {
    let stats = format!("{} ops, {:.1} ms", report.ops, report.elapsed_ms);
    match report.verdict {
        FileVerdict::Linearizable => format!("{}: linearizable ({stats})\n", report.file),
        FileVerdict::NotLinearizable => {
            let mut text = format!(
                "{}: not linearizable ({stats}; times are {})\n",
                report.file,
                report.model.map_or("?", CheckModel::time_unit)
            );
            if let Some(explanation) = &report.explanation {
                for line in explanation.to_string().lines() {
                    text.push_str("  ");
                    text.push_str(line);
                    text.push('\n');
                }
            }
            text
        }
        FileVerdict::Unknown => match report.budget_memo_entries {
            Some(entries) => format!(
                "{}: unknown (memo cap of {entries} positions reached, no violation found; \
                 raise it with --memo-entries; {stats})\n",
                report.file
            ),
            None => format!(
                "{}: unknown (budget of {} steps per partition ran out, no violation found; \
                 {stats})\n",
                report.file,
                report.budget_steps.unwrap_or_default()
            ),
        },
        // Said on the error stream instead (`error: …`).
        FileVerdict::BadInput | FileVerdict::HarnessError => String::new(),
    }
}

/// Runs `leasesim check`: the files are judged on up to [`parallelism`] threads (one file
/// per thread at a time; a single file on the calling thread), and reported in the order given:
/// verdicts on `out`, errors (and progress, when `err` is a terminal and there are several
/// files) on `err`. What is reported does not depend on the threads, only the elapsed times
/// do. Returns the exit code.
pub fn run(options: &CheckOptions, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let files = &options.files;
    let progress = files.len() > 1 && std::io::stderr().is_terminal();
    let mut reporter = Reporter {
        options,
        out,
        err,
        progress,
        codes: Vec::with_capacity(files.len()),
    };
    let threads = parallelism().min(files.len());
    if threads <= 1 {
        for (i, file) in files.iter().enumerate() {
            reporter.show_progress(i, file);
            let report = check_file(options.model, file, options.budget);
            if reporter.report(&report).is_err() {
                return Exit::HarnessError;
            }
        }
    } else if judge_in_parallel(options, threads, &mut reporter).is_err() {
        return Exit::HarnessError;
    }
    let _ = reporter.out.flush();
    Exit::worst(reporter.codes)
}

/// Judges the files on `threads` scoped threads pulling the next file from a shared counter,
/// and hands the reports to `reporter` in file order as they become available. `Err` when a
/// report could not be written (the threads then take no new file).
fn judge_in_parallel(
    options: &CheckOptions,
    threads: usize,
    reporter: &mut Reporter<'_>,
) -> Result<(), ()> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let files = &options.files;
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let (done, judged) = std::sync::mpsc::channel();
        for _ in 0..threads {
            let (done, next) = (done.clone(), &next);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = files.get(i) else { break };
                    let report = check_file(options.model, file, options.budget);
                    if done.send((i, report)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done);
        // Reports that arrived before the ones ahead of them, by file index.
        let mut waiting = std::collections::BTreeMap::new();
        let mut written = 0;
        for (i, report) in judged {
            waiting.insert(i, report);
            while let Some(report) = waiting.remove(&written) {
                if reporter.report(&report).is_err() {
                    next.store(files.len(), Ordering::Relaxed);
                    return Err(());
                }
                written += 1;
                if let Some(file) = files.get(written) {
                    reporter.show_progress(written, file);
                }
            }
        }
        Ok(())
    })
}

/// Writes the reports of one `leasesim check`, in file order, and keeps their exit codes.
struct Reporter<'a> {
    options: &'a CheckOptions,
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    progress: bool,
    codes: Vec<Exit>,
}

impl Reporter<'_> {
    /// `[i+1/n] file` on a terminal, overwritten by the next line.
    fn show_progress(&mut self, i: usize, file: &Path) {
        if self.progress {
            let _ = write!(
                self.err,
                "\r[{}/{}] {}\x1b[K",
                i + 1,
                self.options.files.len(),
                file.display()
            );
            let _ = self.err.flush();
        }
    }

    /// The report's error on `err`, its verdict on `out`; `Err` (said on `err`) if `out`
    /// cannot be written.
    fn report(&mut self, report: &FileReport) -> Result<(), ()> {
        if self.progress {
            let _ = write!(self.err, "\r\x1b[K");
        }
        if let Some(error) = &report.error {
            let _ = writeln!(self.err, "error: {error}");
        }
        let written = if self.options.json {
            serde_json::to_string(report)
                .map_err(std::io::Error::other)
                .and_then(|line| writeln!(self.out, "{line}"))
        } else {
            self.out.write_all(render_text(report).as_bytes())
        };
        if let Err(error) = written {
            let _ = writeln!(self.err, "error: cannot write the report: {error}");
            return Err(());
        }
        self.codes.push(report.exit_code());
        Ok(())
    }
}
