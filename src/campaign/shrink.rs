//! Shrinking: reduce a failing run to a minimal run that still breaks the same check
//! (DESIGN.md, "Campaigns and reports"), by delta debugging over its run file ([`ddmin`]):
//! drop faults, drop scripted calls, shorten freezes, remove replicas, shorten the run.
//!
//! Every candidate is a whole run file executed from scratch; since runs are deterministic,
//! "still fails" is a property of the file alone, and the minimal file replays the failure.

use std::cell::Cell;
use std::time::Duration;

use super::ddmin::ddmin;
use super::execute::check_records;
use crate::check::Check;
use crate::check::judge::judge;
use crate::check::linearizability::Budget;
use crate::history::History;
use crate::results::record::ViolationRecord;
use crate::sim::runfile::{self, RunFile, RunWorkload};
use crate::sim::schedule::{Fault, ScheduledFault};
use crate::sim::script::Script;

/// Most runs one shrink may execute (each is a whole world).
pub const MAX_ATTEMPTS: u32 = 200;

/// A shrunk run.
pub struct Shrunk {
    /// The minimal run file found.
    pub run: RunFile,
    /// Runs executed while shrinking.
    pub attempts: u32,
    /// Operations in the minimal run's history.
    pub operations: usize,
    /// The violations of the check in the minimal run.
    pub violations: Vec<ViolationRecord>,
    /// A mermaid sequence diagram of the minimal run.
    pub sequence_diagram: String,
    /// The minimal run's history (`None` when its last run failed to run).
    pub history: Option<History>,
}

/// Reduces `run`, which violates `check` (`TOKEN`, …, `LIN-LEDGER`), to a minimal run that
/// still violates it. Never fails: when nothing smaller fails, the original run comes back.
pub fn shrink(run: &RunFile, check: Check, timeout: Duration) -> Shrunk {
    let shrinker = Shrinker {
        check,
        timeout,
        tries: Cell::new(0),
    };
    let mut best = run.clone();
    shrinker.drop_faults(&mut best);
    shrinker.drop_calls(&mut best);
    shrinker.shorten_freezes(&mut best);
    shrinker.drop_replicas(&mut best);
    shrinker.shorten_run(&mut best);
    shrinker.finish(best)
}

/// One shrink: the check kept failing, the run timeout, and the runs executed so far.
struct Shrinker {
    check: Check,
    timeout: Duration,
    tries: Cell<u32>,
}

impl Shrinker {
    fn attempts(&self) -> u32 {
        self.tries.get()
    }

    /// Runs `candidate`: its history when it still violates the check.
    fn still_fails(&self, candidate: &RunFile) -> Option<History> {
        self.tries.set(self.tries.get() + 1);
        let (history, _) = runfile::execute(candidate, self.timeout).ok()?;
        let judgement = judge(&history, Budget::steps(super::execute::RUN_BUDGET));
        judgement
            .violated()
            .contains(&self.check)
            .then_some(history)
    }

    /// 1. Faults: ddmin over the schedule.
    fn drop_faults(&self, best: &mut RunFile) {
        let budget = MAX_ATTEMPTS / 2;
        let (faults, _) = ddmin(best.schedule.faults.clone(), budget, |faults| {
            let mut candidate = best.clone();
            candidate.schedule.faults = faults.to_vec();
            self.still_fails(&candidate).is_some()
        });
        best.schedule.faults = faults;
    }

    /// 2. Scripted calls: ddmin over the script.
    fn drop_calls(&self, best: &mut RunFile) {
        let RunWorkload::Script(script) = &best.workload else {
            return;
        };
        let budget = MAX_ATTEMPTS.saturating_sub(self.attempts()) / 2;
        let (calls, _) = ddmin(script.calls.clone(), budget, |calls| {
            let mut candidate = best.clone();
            candidate.workload = with_calls(calls);
            self.still_fails(&candidate).is_some()
        });
        best.workload = with_calls(&calls);
    }

    /// 3. Freezes: halve each freeze while the run still fails.
    fn shorten_freezes(&self, best: &mut RunFile) {
        for index in 0..best.schedule.faults.len() {
            while self.attempts() < MAX_ATTEMPTS {
                let mut candidate = best.clone();
                let Some(duration) = freeze_duration(&mut candidate.schedule.faults[index]) else {
                    break;
                };
                if *duration < 2 {
                    break;
                }
                *duration /= 2;
                if self.still_fails(&candidate).is_none() {
                    break;
                }
                *best = candidate;
            }
        }
    }

    /// 4. Replicas: one fewer while the run still fails (a schedule or script naming a
    ///    removed replica makes the candidate invalid, so it is simply not taken).
    fn drop_replicas(&self, best: &mut RunFile) {
        while best.world.replicas > 1 && self.attempts() < MAX_ATTEMPTS {
            let mut candidate = best.clone();
            candidate.world.replicas -= 1;
            if self.still_fails(&candidate).is_none() {
                break;
            }
            *best = candidate;
        }
    }

    /// 5. A generated workload: a shorter run, never ending before the heal (the liveness
    ///    phase runs on from the heal anyway, so a shorter fault phase is what shrinks).
    fn shorten_run(&self, best: &mut RunFile) {
        if !matches!(best.workload, RunWorkload::Generated(_)) {
            return;
        }
        let heal_s = best.schedule.heal_at_ms.map_or(0, |ms| ms.div_ceil(1_000));
        let floor_s = heal_s.max(10);
        while best.world.duration_s * 3 / 4 >= floor_s && self.attempts() < MAX_ATTEMPTS {
            let mut candidate = best.clone();
            candidate.world.duration_s = best.world.duration_s * 3 / 4;
            if self.still_fails(&candidate).is_none() {
                break;
            }
            *best = candidate;
        }
    }

    /// The minimal run with its violations of the check, operations and diagram.
    fn finish(&self, best: RunFile) -> Shrunk {
        let (violations, sequence_diagram, operations, history) =
            match runfile::execute(&best, self.timeout) {
                Ok((history, _)) => {
                    let judgement = judge(&history, Budget::steps(super::execute::RUN_BUDGET));
                    let violations = check_records(&judgement, &best.expect, &history)
                        .into_iter()
                        .find(|record| record.name == self.check)
                        .map(|record| record.violations)
                        .unwrap_or_default();
                    let session = session_of(&violations);
                    let diagram =
                        crate::report::mermaid::sequence_diagram(&history, session.as_deref(), 80);
                    let operations = history.ops().count();
                    (violations, diagram, operations, Some(history))
                }
                Err(_) => (Vec::new(), String::new(), 0, None),
            };
        Shrunk {
            run: best,
            attempts: self.attempts(),
            operations,
            violations,
            sequence_diagram,
            history,
        }
    }
}

/// A scripted workload of exactly `calls`.
fn with_calls(calls: &[crate::sim::script::ScriptedCall]) -> RunWorkload {
    let mut script = Script::new();
    script.calls = calls.to_vec();
    RunWorkload::Script(script)
}

/// The freeze length of a pause, suspend or stall, ms.
fn freeze_duration(fault: &mut ScheduledFault) -> Option<&mut u64> {
    match &mut fault.fault {
        Fault::Pause { duration_ms, .. }
        | Fault::Suspend { duration_ms, .. }
        | Fault::Stall { duration_ms, .. } => Some(duration_ms),
        _ => None,
    }
}

/// The session a violation's evidence names first (`ledger s1 seq 4`, `decision s1 by …`).
fn session_of(violations: &[ViolationRecord]) -> Option<String> {
    violations
        .iter()
        .flat_map(|v| v.evidence.iter())
        .find_map(|evidence| {
            let mut words = evidence.split_whitespace();
            match words.next()? {
                "ledger" | "decision" | "validity" => words.next().map(str::to_owned),
                _ => None,
            }
        })
}
