//! The determinism self-check (`leasesim run --check-determinism`): the same run file,
//! replayed in two fresh processes of this executable, must write the same history and trace
//! bytes (docs/determinism.md#rules: same seed, same bytes, in every process).
//!
//! **Test hook.** With [`PERTURB_ENV`] set, the second process appends one line to its trace
//! after the run (the first never sees the variable), so a test can prove that a difference
//! is caught and exits 3 without planting real nondeterminism.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::runfile::{RunFile, duration_token};

pub use super::runner::PERTURB_ENV;

/// Why the self-check did not say "deterministic".
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The run file could not be written or a process not started: bad input (exit 2).
    #[error("{0}")]
    BadInput(String),
    /// A process failed with a harness error or could not start (exit 3).
    #[error("{0}")]
    Harness(String),
    /// The two processes wrote different bytes (exit 3).
    #[error(
        "NONDETERMINISM: seed {seed} wrote different {file} in two processes ({first_len} vs \
         {second_len} bytes); compare {} and {}", first.display(), second.display()
    )]
    Differs {
        /// The seed of the run.
        seed: u64,
        /// The file that differs (`history.jsonl` or `trace.jsonl`).
        file: &'static str,
        /// The first process's copy.
        first: PathBuf,
        /// The second process's copy.
        second: PathBuf,
        /// Its length in the first process, bytes.
        first_len: usize,
        /// Its length in the second process, bytes.
        second_len: usize,
    },
}

/// Saves `run` as `out/run.json`, replays it in `out/first` and `out/second`, each in a
/// process of its own (`leasesim replay`), and compares `history.jsonl` and `trace.jsonl`.
/// Returns the line to print when they are identical. The processes' own verdicts do not
/// matter here (a mutant's run is expected to fail its checks); a harness error does.
///
/// # Errors
/// [`Failure::BadInput`] when `out` cannot be written; [`Failure::Harness`] when a process
/// cannot start or ends with a harness error (exit 3) or bad input (exit 2);
/// [`Failure::Differs`] naming the first file that differs.
pub fn check(run: &RunFile, out: &Path, timeout: Duration) -> Result<String, Failure> {
    let _lock = crate::runner::lock_out(out).map_err(|e| Failure::BadInput(e.to_string()))?;
    let run_path = out.join("run.json");
    run.save(&run_path)
        .map_err(|e| Failure::BadInput(e.to_string()))?;
    let outs = [out.join("first"), out.join("second")];
    for (index, process_out) in outs.iter().enumerate() {
        replay_in_a_process(&run_path, process_out, timeout, index == 1)?;
    }
    // With RUST_LOG set the trace may include turmoil's dumps of TCP segments, which carry
    // hyper's HTTP/2 `date` header, stamped from the real wall clock: only the history is
    // compared then (it never contains it).
    let files: &[&'static str] = if std::env::var_os("RUST_LOG").is_some() {
        eprintln!("note: RUST_LOG is set, so only history.jsonl is compared");
        &["history.jsonl"]
    } else {
        &["history.jsonl", "trace.jsonl"]
    };
    for &file in files {
        let [first, second] = outs.clone().map(|dir| dir.join(file));
        let [a, b] = [&first, &second].map(|path| std::fs::read(path).unwrap_or_default());
        if a != b {
            return Err(Failure::Differs {
                seed: run.seed,
                file,
                first,
                second,
                first_len: a.len(),
                second_len: b.len(),
            });
        }
    }
    Ok(format!(
        "deterministic: two processes replaying {} wrote identical {} for seed {}",
        run_path.display(),
        files.join(" and "),
        run.seed
    ))
}

fn replay_in_a_process(
    run_path: &Path,
    out: &Path,
    timeout: Duration,
    second: bool,
) -> Result<(), Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Harness(format!("cannot find this executable: {e}")))?;
    let mut command = Command::new(&exe);
    command
        .arg("replay")
        .arg(run_path)
        .arg("--out")
        .arg(out)
        .arg("--timeout")
        .arg(duration_token(timeout))
        .stdout(Stdio::null());
    if !second {
        command.env_remove(PERTURB_ENV);
    }
    let status = command
        .status()
        .map_err(|e| Failure::Harness(format!("cannot run {}: {e}", exe.display())))?;
    let failed = || {
        format!(
            "`leasesim replay {}` failed ({status}); see its messages above",
            run_path.display()
        )
    };
    match status.code() {
        Some(2) => Err(Failure::BadInput(failed())),
        Some(3) | None => Err(Failure::Harness(failed())),
        Some(_) => Ok(()),
    }
}
