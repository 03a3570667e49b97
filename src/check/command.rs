//! `leasesim check --model etcd|kv|ledger|lease [--json] [--budget STEPS] FILE...`: judges
//! history files for linearizability and prints one verdict per file.
//!
//! Text output, one block per file on `out`:
//! - `FILE: linearizable (N ops, X ms)`
//! - `FILE: not linearizable (N ops, X ms)`, then the [`Explanation`] indented by two spaces;
//! - `FILE: unknown (budget of S steps per partition ran out, no violation found; N ops, X ms)`.
//!
//! A file that cannot be read or has a malformed line is reported on `err` as
//! `error: FILE:LINE: what is wrong` (exit 2); so are a file that is not a regular file (a
//! FIFO, a device: refused before reading, [`crate::input`]), an empty or config-less history
//! (`--model ledger|lease`) and a Jepsen file without operations (`--model etcd|kv`), which
//! have nothing to judge and must not pass as linearizable. With `--json`, `out` gets one [`FileReport`]
//! JSON object per line and per file instead (bad files included, with their error). Everything
//! but the elapsed times is a function of the input alone. Exit codes follow DESIGN.md
//! ("Exit codes"): see [`Exit::worst`].

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::check::jepsen::{etcd, kv};
use crate::check::judge::judges_lease_objects;
use crate::check::linearizability::kv::KvStore;
use crate::check::linearizability::register::CasRegister;
use crate::check::linearizability::{
    Budget, Explanation, Verdict, check, kube_operations, lease_operations, ledger_operations,
};
use crate::exit::Exit;
use crate::history::History;

/// Which reader and sequential model judge the files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
#[non_exhaustive]
pub enum CheckModel {
    /// Jepsen etcd logs (`../shared/cases/jepsen/etcd/*.log`) against a compare-and-set
    /// register.
    Etcd,
    /// Jepsen/porcupine key-value EDN histories (`../shared/cases/jepsen/kv/*.txt`) against a
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
    /// The model (and reader) for every file.
    pub model: CheckModel,
    /// One JSON object per file instead of text.
    pub json: bool,
    /// The search budget per partition.
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

/// One file's result: what [`run`] prints, as text or (serialised) JSON.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FileReport {
    /// The file as given on the command line.
    pub file: String,
    /// [`CheckModel::name`].
    pub model: &'static str,
    /// `linearizable`, `not_linearizable`, `unknown`, `bad_input` or `harness_error`.
    pub verdict: &'static str,
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
    /// The search budget, in steps per partition (`unknown` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_steps: Option<u64>,
}

impl FileReport {
    /// This file's exit code alone.
    pub fn exit_code(&self) -> Exit {
        match self.verdict {
            "linearizable" => Exit::Clean,
            "not_linearizable" => Exit::SafetyViolation,
            "unknown" => Exit::Inconclusive,
            "bad_input" => Exit::BadInput,
            _ => Exit::HarnessError,
        }
    }
}

/// Reads `file` with `model`'s reader and checks it: the number of operations, the verdict and
/// how long the check took (reading excluded), or the reader's error (naming file and line).
/// Each model is one match arm.
fn judge(
    model: CheckModel,
    file: &Path,
    budget: Budget,
) -> Result<(usize, Verdict, Duration), String> {
    match model {
        CheckModel::Etcd => {
            let ops = etcd::read(file).map_err(|e| e.to_string())?;
            let (verdict, elapsed) = timed(|| check(&CasRegister, &ops, budget));
            Ok((ops.len(), verdict, elapsed))
        }
        CheckModel::Kv => {
            let ops = kv::read(file).map_err(|e| e.to_string())?;
            let (verdict, elapsed) = timed(|| check(&KvStore, &ops, budget));
            Ok((ops.len(), verdict, elapsed))
        }
        // As `check_ledger_history` / `check_lease_history`, with the extraction outside the
        // timing and its operation count reported.
        CheckModel::Ledger => {
            let history = read_history(file)?;
            let ops = ledger_operations(&history).map_err(|e| e.to_string())?;
            let (verdict, elapsed) = timed(|| check(&ops.model, &ops.ops, budget));
            Ok((ops.ops.len(), verdict, elapsed))
        }
        CheckModel::Lease => {
            let history = read_history(file)?;
            if judges_lease_objects(&history) {
                let ops = kube_operations(&history).map_err(|e| e.to_string())?;
                let (verdict, elapsed) = timed(|| check(&ops.model, &ops.ops, budget));
                return Ok((ops.ops.len(), verdict, elapsed));
            }
            let ops = lease_operations(&history).map_err(|e| e.to_string())?;
            let (verdict, elapsed) = timed(|| check(&ops.model, &ops.ops, budget));
            Ok((ops.ops.len(), verdict, elapsed))
        }
    }
}

/// Reads and validates one of our history files, which must have its `config` line: an empty
/// file, or one whose config line is gone, is bad input, never "linearizable (0 ops)".
fn read_history(file: &Path) -> Result<History, String> {
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

/// Runs `f` and measures it in real time: only to report how long a check took (checkers may
/// read real time: DESIGN.md, "Determinism rules"); it never influences a verdict.
#[allow(clippy::disallowed_types)]
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = std::time::Instant::now();
    let value = f();
    (value, start.elapsed())
}

/// Checks one file: reads it, runs the engine, and times the check. A panic in the checker
/// becomes a `harness_error` report.
pub fn check_file(model: CheckModel, file: &Path, budget: Budget) -> FileReport {
    let judged =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| judge(model, file, budget)));
    let (outcome, ops, elapsed) = match judged {
        Ok(Ok((ops, verdict, elapsed))) => (FileOutcome::Verdict(verdict), ops, elapsed),
        Ok(Err(error)) => (FileOutcome::BadInput(error), 0, Duration::ZERO),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            (
                FileOutcome::HarnessError(format!(
                    "{}: the checker panicked: {message}",
                    file.display()
                )),
                0,
                Duration::ZERO,
            )
        }
    };
    let mut report = FileReport {
        file: file.display().to_string(),
        model: model.name(),
        verdict: "",
        ops,
        elapsed_ms: (elapsed.as_secs_f64() * 1e6).round() / 1e3,
        explanation: None,
        error: None,
        budget_steps: None,
    };
    match outcome {
        FileOutcome::Verdict(Verdict::Linearizable) => report.verdict = "linearizable",
        FileOutcome::Verdict(Verdict::NotLinearizable(explanation)) => {
            report.verdict = "not_linearizable";
            report.explanation = Some(*explanation);
        }
        FileOutcome::Verdict(Verdict::Unknown) => {
            report.verdict = "unknown";
            report.budget_steps = Some(budget.max_steps_per_partition);
        }
        FileOutcome::BadInput(error) => {
            report.verdict = "bad_input";
            report.error = Some(error);
        }
        FileOutcome::HarnessError(error) => {
            report.verdict = "harness_error";
            report.error = Some(error);
        }
    }
    report
}

/// The text block for one report (several lines for a violation), without the `error:` line
/// that bad input gets on the error stream.
pub fn render_text(report: &FileReport, model: CheckModel) -> String {
    let stats = format!("{} ops, {:.1} ms", report.ops, report.elapsed_ms);
    match report.verdict {
        "linearizable" => format!("{}: linearizable ({stats})\n", report.file),
        "not_linearizable" => {
            let mut text = format!(
                "{}: not linearizable ({stats}; times are {})\n",
                report.file,
                model.time_unit()
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
        "unknown" => format!(
            "{}: unknown (budget of {} steps per partition ran out, no violation found; {stats})\n",
            report.file,
            report.budget_steps.unwrap_or_default()
        ),
        _ => String::new(),
    }
}

/// Runs `leasesim check`: every file in order, verdicts on `out`, errors (and progress, when
/// `err` is a terminal and there are several files) on `err`. Returns the exit code.
pub fn run(options: &CheckOptions, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let progress = options.files.len() > 1 && std::io::stderr().is_terminal();
    let mut codes = Vec::with_capacity(options.files.len());
    for (i, file) in options.files.iter().enumerate() {
        if progress {
            let _ = write!(
                err,
                "\r[{}/{}] {}\x1b[K",
                i + 1,
                options.files.len(),
                file.display()
            );
            let _ = err.flush();
        }
        let report = check_file(options.model, file, options.budget);
        if progress {
            let _ = write!(err, "\r\x1b[K");
        }
        if let Some(error) = &report.error {
            let _ = writeln!(err, "error: {error}");
        }
        let written = if options.json {
            serde_json::to_string(&report)
                .map_err(std::io::Error::other)
                .and_then(|line| writeln!(out, "{line}"))
        } else {
            out.write_all(render_text(&report, options.model).as_bytes())
        };
        if let Err(error) = written {
            let _ = writeln!(err, "error: cannot write the report: {error}");
            return Exit::HarnessError;
        }
        codes.push(report.exit_code());
    }
    let _ = out.flush();
    Exit::worst(codes)
}
