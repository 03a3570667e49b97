//! What the campaign keeps beside a shrunk counterexample's run file (scenario failures and
//! mutant kills alike): the minimal run's history and timeline, and for a mutant's
//! counterexample its **clean twin** — the same run file with `mutant: null`, run once — with
//! its history and timeline, so a reviewer sees the bug beside the correct implementation.
//! The names are [`Counterexample::of`]'s.

use std::path::Path;
use std::time::Duration;

use super::single::write_timeline;
use crate::check::Check;
use crate::history::History;
use crate::report::Counterexample;
use crate::report::timeline::Highlight;
use crate::results::record::ViolationRecord;
use crate::sim::runfile::{self, RunFile};

/// Writes the files of the counterexample whose run file `run` was saved at `dir/run_file`
/// (`run_file` relative to the report folder `dir`): its `history` (when it ran) with its
/// timeline, `violations` of `check` highlighted, and, when `run` plants a mutant, its clean
/// twin's (run here, within `timeout`; a twin that fails to run is left out with a note).
///
/// # Errors
/// A file that cannot be written, as text naming it.
pub fn keep(
    dir: &Path,
    run_file: &str,
    run: &RunFile,
    history: Option<&History>,
    check: Check,
    violations: &[ViolationRecord],
    timeout: Duration,
) -> Result<(), String> {
    let files = Counterexample::of(run_file);
    let title = format!("{} seed {}", run.scenario, run.seed);
    if let Some(history) = history {
        let mutant = run.mutant.as_deref().unwrap_or("no mutant");
        write_history(&dir.join(&files.history), history)?;
        write_timeline(
            &dir.join(&files.timeline),
            history,
            &format!("{title} ({mutant}): {check} violated, shrunk"),
            &Highlight::of_violations(check.name(), violations, history),
        )
        .map_err(|e| e.to_string())?;
    }
    if run.mutant.is_none() {
        return Ok(());
    }
    let mut twin = run.clone();
    twin.mutant = None;
    match runfile::execute(&twin, timeout) {
        Ok((history, _)) => {
            write_history(&dir.join(&files.clean_history), &history)?;
            write_timeline(
                &dir.join(&files.clean_timeline),
                &history,
                &format!("{title}: the same run on the correct implementation (clean twin)"),
                &Highlight::default(),
            )
            .map_err(|e| e.to_string())
        }
        Err(error) => {
            eprintln!("  clean twin of {run_file} did not run: {error}");
            Ok(())
        }
    }
}

fn write_history(path: &Path, history: &History) -> Result<(), String> {
    crate::input::replace(path, history.to_jsonl().as_bytes()).map_err(|e| e.to_string())
}
