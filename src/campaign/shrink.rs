//! Shrinking: reduce a failing run to a minimal run that still breaks the same check
//! (docs/campaigns.md), by delta debugging over its run file ([`ddmin`]).
//! A generated workload is first turned into its plan (the same world, as data:
//! [`crate::sim::plan`]), so shrinking reaches the calls. Then: drop faults, drop scripted
//! calls, pin a plan's runs to the times they started (so dropping one no longer moves the
//! rest), thin each incarnation to its first and last runs, keep the shortest prefix of runs that still fails, keep one session's runs or leave
//! a replica's out (hierarchical delta debugging), drop whole runs, then appends within runs,
//! then graceful shutdowns, shorten faults that last, shorten think times, pull the later part
//! of the run earlier ([`super::retime`]), drop faults and runs again (fewer runs may need
//! fewer faults, and the reverse), remove replicas, shorten the run.
//!
//! Every candidate is a whole run file executed from scratch; since runs are deterministic,
//! "still fails" is a property of the file alone, and the minimal file replays the failure.
//! The minimal plan keeps only the runs its replicas reached (the rest never ran).

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::ddmin::ddmin;
use super::retime::{instants, pulled_earlier};
use crate::check::Check;
use crate::check::invariants::Evidence;
use crate::check::judge::judge;
use crate::check::linearizability::Budget;
use crate::history::History;
use crate::report::checks::check_records;
use crate::results::record::ViolationRecord;
use crate::sim::plan::{Plan, PlannedRun};
use crate::sim::runfile::{self, RunFile, RunWorkload};
use crate::sim::schedule::{Fault, ScheduledFault};
use crate::sim::script::Script;
use crate::sim::world::RunOutput;

/// Most runs one shrink may execute (each is a whole world).
pub const MAX_ATTEMPTS: u32 = 200;

/// The smallest time pull tried, ms (a pull shorter than this rarely saves a renewal).
const PULL_MS_MIN: u64 = 500;

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
    shrinker.plan_workload(&mut best);
    shrinker.drop_faults(&mut best);
    shrinker.drop_calls(&mut best);
    shrinker.pin_starts(&mut best);
    shrinker.thin_incarnations(&mut best);
    shrinker.keep_prefix(&mut best);
    shrinker.keep_groups(&mut best);
    shrinker.drop_runs(&mut best);
    shrinker.drop_appends(&mut best);
    shrinker.drop_shutdowns(&mut best);
    shrinker.shorten_lasting(&mut best);
    shrinker.shorten_thinks(&mut best);
    shrinker.pull_earlier(&mut best);
    shrinker.drop_faults(&mut best);
    shrinker.pin_starts(&mut best);
    shrinker.drop_runs(&mut best);
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

    /// One `parts`-th of the attempts left.
    fn share(&self, parts: u32) -> u32 {
        MAX_ATTEMPTS.saturating_sub(self.attempts()) / parts
    }

    /// Whether `history` violates the check.
    fn violates(&self, history: &History) -> bool {
        let judgement = judge(history, Budget::steps(super::execute::RUN_BUDGET));
        judgement.violated().contains(&self.check)
    }

    /// Runs `candidate`: what its world did when it still violates the check.
    fn attempt(&self, candidate: &RunFile) -> Option<RunOutput> {
        self.tries.set(self.tries.get() + 1);
        let output = runfile::execute_world(candidate, self.timeout).ok()?;
        self.violates(&output.history).then_some(output)
    }

    /// Runs `candidate`: its history when it still violates the check.
    fn still_fails(&self, candidate: &RunFile) -> Option<History> {
        self.attempt(candidate).map(|output| output.history)
    }

    /// Takes `candidate` when it still fails.
    fn take_if_fails(&self, best: &mut RunFile, candidate: RunFile) -> bool {
        let fails = self.still_fails(&candidate).is_some();
        if fails {
            *best = candidate;
        }
        fails
    }

    /// 0. A generated workload becomes its plan (one run: the same world, so it still fails).
    fn plan_workload(&self, best: &mut RunFile) {
        if !matches!(best.workload, RunWorkload::Generated(_)) {
            return;
        }
        self.tries.set(self.tries.get() + 1);
        if let Ok((planned, history)) = best.planned(self.timeout)
            && self.violates(&history)
        {
            *best = planned;
        }
    }

    /// 1. Faults: ddmin over the schedule (half the attempts, a third beside a plan). Run
    ///    again after the time pull: with fewer runs, and runs moved, a fault may no longer
    ///    be needed.
    fn drop_faults(&self, best: &mut RunFile) {
        let budget = self.share(if plan_of(best).is_some() { 3 } else { 2 });
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

    /// Pins a plan's runs to the true times they started: each run's `at_ms` becomes its
    /// start in the failing world ([`RunOutput::started`]), which runs the same world (every
    /// run's time has come when its replica reaches it), and runs no replica reached are
    /// dropped. Without it, dropping a run or an append pulls the replica's next run earlier
    /// and moves the race the run was there for; pinned, a run that was only there to delay
    /// the next can go. Run again after each pass that moves runs (`at_ms` is only a lower
    /// bound).
    fn pin_starts(&self, best: &mut RunFile) {
        if plan_of(best).is_none() || self.attempts() >= MAX_ATTEMPTS {
            return;
        }
        let Some(output) = self.attempt(best) else {
            return;
        };
        let pinned = with_runs(best, output.started.runs);
        if pinned != *best {
            self.take_if_fails(best, pinned);
        }
    }

    /// 2b. A plan's incarnations thinned to their ends: each incarnation keeps only its first
    ///     run (its first call, e.g. a candidate's first look at a Lease object) and its last
    ///     (the one that ends it, e.g. a graceful shutdown), pinned where they started, first
    ///     all incarnations at once, else each in turn. A generated workload counts every
    ///     refused acquire as a run, so a candidate waiting out a TTL leaves dozens of runs
    ///     that only repeat its question; ddmin over hundreds of them runs out of attempts
    ///     long before it gets there (kube-swarm-slow-holders seed 2080 kept 323 runs, 658 of
    ///     836 operations, after 200 attempts), where this takes one attempt per incarnation
    ///     at most (docs/campaigns.md#shrinking).
    fn thin_incarnations(&self, best: &mut RunFile) {
        let Some(plan) = plan_of(best).cloned() else {
            return;
        };
        let all = thinned(&plan.runs, |_| true);
        if all.len() == plan.runs.len()
            || self.attempts() >= MAX_ATTEMPTS
            || self.take_if_fails(best, with_runs(best, all))
        {
            return;
        }
        let incarnations: BTreeSet<(&str, u64)> = plan
            .runs
            .iter()
            .map(|run| (run.replica.as_str(), run.incarnation))
            .collect();
        for (replica, incarnation) in incarnations {
            let Some(current) = plan_of(best).cloned() else {
                return;
            };
            if self.attempts() >= MAX_ATTEMPTS {
                return;
            }
            let runs = thinned(&current.runs, |run| {
                run.replica == replica && run.incarnation == incarnation
            });
            if runs.len() < current.runs.len() {
                self.take_if_fails(best, with_runs(best, runs));
            }
        }
    }

    /// 3. A plan's runs up to a time: the shortest prefix of runs, by start, that still
    ///    fails, found by bisection over the start times (a race needs the runs up to it and
    ///    rarely those after; `log2(runs)` attempts where ddmin would spend dozens).
    fn keep_prefix(&self, best: &mut RunFile) {
        let Some(plan) = plan_of(best).cloned() else {
            return;
        };
        let mut starts: Vec<u64> = plan.runs.iter().map(|run| run.at_ms).collect();
        starts.sort_unstable();
        starts.dedup();
        let until = |last_ms: u64| {
            let runs = plan.runs.iter().filter(|run| run.at_ms <= last_ms);
            with_runs(best, runs.cloned().collect())
        };
        // `starts[high]` keeps every run, which fails.
        let (mut low, mut high) = (0, starts.len().saturating_sub(1));
        while low < high && self.attempts() < MAX_ATTEMPTS {
            let middle = (low + high) / 2;
            if self.still_fails(&until(starts[middle])).is_some() {
                high = middle;
            } else {
                low = middle + 1;
            }
        }
        if let Some(&last_ms) = starts.get(high) {
            *best = until(last_ms);
        }
    }

    /// 4. A plan's runs by group, a level above single runs (hierarchical delta debugging:
    ///    Misherghi & Su, "HDD", ICSE 2006): one session's runs alone, then each replica's
    ///    runs left out in turn.
    fn keep_groups(&self, best: &mut RunFile) {
        let Some(plan) = plan_of(best).cloned() else {
            return;
        };
        let sessions: BTreeSet<&str> = plan.runs.iter().map(|r| r.session.as_str()).collect();
        if sessions.len() > 1 {
            for session in sessions {
                if self.attempts() >= MAX_ATTEMPTS {
                    return;
                }
                let alone = plan.runs.iter().filter(|r| r.session == session);
                let candidate = with_runs(best, alone.cloned().collect());
                if self.take_if_fails(best, candidate) {
                    break;
                }
            }
        }
        let replicas: BTreeSet<String> = plan_of(best)
            .map(|plan| plan.runs.iter().map(|r| r.replica.clone()).collect())
            .unwrap_or_default();
        for replica in replicas {
            let Some(plan) = plan_of(best).cloned() else {
                return;
            };
            if self.attempts() >= MAX_ATTEMPTS {
                return;
            }
            let others = plan.runs.into_iter().filter(|r| r.replica != replica);
            let candidate = with_runs(best, others.collect());
            self.take_if_fails(best, candidate);
        }
    }

    /// 5. A plan's runs: ddmin over them, whole.
    fn drop_runs(&self, best: &mut RunFile) {
        let Some(plan) = plan_of(best) else {
            return;
        };
        let (runs, _) = ddmin(plan.runs.clone(), self.share(2), |runs| {
            self.still_fails(&with_runs(best, runs.to_vec())).is_some()
        });
        *best = with_runs(best, runs);
    }

    /// 6. A plan's appends: ddmin over every append of every run (a run keeps as many as
    ///    the candidate leaves it).
    fn drop_appends(&self, best: &mut RunFile) {
        let Some(plan) = plan_of(best) else {
            return;
        };
        let slots: Vec<usize> = (0..plan.runs.len())
            .flat_map(|index| std::iter::repeat_n(index, plan.runs[index].appends as usize))
            .collect();
        let keeping = |slots: &[usize]| {
            let mut runs = plan.runs.clone();
            for (index, run) in runs.iter_mut().enumerate() {
                run.appends = slots.iter().filter(|slot| **slot == index).count() as u64;
            }
            with_runs(best, runs)
        };
        let (slots, _) = ddmin(slots, self.share(2), |slots| {
            self.still_fails(&keeping(slots)).is_some()
        });
        *best = keeping(&slots);
    }

    /// 7. A plan's graceful shutdowns: ddmin over the runs that ask for one.
    fn drop_shutdowns(&self, best: &mut RunFile) {
        let Some(plan) = plan_of(best) else {
            return;
        };
        let asking: Vec<usize> = (0..plan.runs.len())
            .filter(|index| plan.runs[*index].shutdown)
            .collect();
        let keeping = |asking: &[usize]| {
            let mut runs = plan.runs.clone();
            for (index, run) in runs.iter_mut().enumerate() {
                run.shutdown = asking.contains(&index);
            }
            with_runs(best, runs)
        };
        let (asking, _) = ddmin(asking, self.share(2), |asking| {
            self.still_fails(&keeping(asking)).is_some()
        });
        *best = keeping(&asking);
    }

    /// 8. Faults that last (freezes, held or delayed replies, authority errors): halve each
    ///    while the run still fails.
    fn shorten_lasting(&self, best: &mut RunFile) {
        for index in 0..best.schedule.faults.len() {
            while self.attempts() < MAX_ATTEMPTS {
                let mut candidate = best.clone();
                let Some(duration) = lasting_ms(&mut candidate.schedule.faults[index]) else {
                    break;
                };
                if *duration < 2 {
                    break;
                }
                *duration /= 2;
                if !self.take_if_fails(best, candidate) {
                    break;
                }
            }
        }
    }

    /// 9. A plan's think times: all to 0 at once, else halve them all while the run still
    ///    fails, then each run's.
    fn shorten_thinks(&self, best: &mut RunFile) {
        let Some(plan) = plan_of(best).cloned() else {
            return;
        };
        if plan.runs.iter().any(|run| run.think_ms > 0) {
            let mut runs = plan.runs.clone();
            runs.iter_mut().for_each(|run| run.think_ms = 0);
            if self.take_if_fails(best, with_runs(best, runs)) {
                return;
            }
        }
        let runs = plan.runs.len();
        self.halve_while_failing(
            best,
            |run| run.think_ms > 1,
            |runs| {
                for run in runs {
                    run.think_ms /= 2;
                }
            },
        );
        for index in 0..runs {
            self.halve_while_failing(
                best,
                |run| run.think_ms > 1,
                |runs| runs[index].think_ms /= 2,
            );
        }
    }

    /// Applies `halve` to a plan's runs while the run still fails, some run still `can`
    /// halve, and attempts are left.
    fn halve_while_failing(
        &self,
        best: &mut RunFile,
        can: impl Fn(&PlannedRun) -> bool,
        halve: impl Fn(&mut [PlannedRun]),
    ) {
        while self.attempts() < MAX_ATTEMPTS {
            let Some(plan) = plan_of(best) else {
                return;
            };
            let mut runs = plan.runs.clone();
            halve(&mut runs);
            let changed = runs.iter().zip(&plan.runs).any(|(new, old)| new != old);
            if !changed || !plan.runs.iter().any(&can) {
                return;
            }
            let candidate = with_runs(best, runs);
            if self.still_fails(&candidate).is_none() {
                return;
            }
            *best = candidate;
        }
    }

    /// 10. Time: pull the later part of the run earlier ([`pulled_earlier`]), from each
    ///     instant in turn, latest first: the whole way to 0, then half as far, down to
    ///     [`PULL_MS_MIN`]. A pull is kept when the check still fails with no more operations
    ///     than before (moving steps in time may also add renewals: those pulls are not
    ///     shrinking). A third of the attempts left.
    fn pull_earlier(&self, best: &mut RunFile) {
        if matches!(best.workload, RunWorkload::Generated(_)) {
            return;
        }
        let budget = self.attempts() + self.share(3);
        let Some(mut operations) = self.still_fails(best).map(|h| h.ops().count()) else {
            return;
        };
        let mut tried: Vec<u64> = Vec::new();
        while let Some(from) = instants(best)
            .into_iter()
            .rev()
            .find(|t| !tried.contains(t))
        {
            let (mut from, mut by) = (from, from);
            while by >= PULL_MS_MIN && self.attempts() < budget {
                let candidate = pulled_earlier(best, from, by);
                match self.still_fails(&candidate).map(|h| h.ops().count()) {
                    Some(ops) if ops <= operations => {
                        (*best, operations) = (candidate, ops);
                        from -= by;
                        by = by.min(from);
                    }
                    _ => by /= 2,
                }
            }
            tried.push(from);
            if self.attempts() >= budget {
                return;
            }
        }
    }

    /// 11. Replicas: one fewer while the run still fails (a schedule, script or plan naming a
    ///     removed replica makes the candidate invalid, so it is simply not taken).
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

    /// 12. A generated or planned workload: a shorter run, never ending before the heal
    ///     (the liveness phase runs on from the heal anyway, so a shorter fault phase is what
    ///     shrinks).
    fn shorten_run(&self, best: &mut RunFile) {
        if matches!(best.workload, RunWorkload::Script(_)) {
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

    /// The minimal run with its violations of the check, operations and diagram; a plan
    /// keeps only the runs its replicas reached.
    fn finish(&self, mut best: RunFile) -> Shrunk {
        let (violations, sequence_diagram, operations, history) =
            match runfile::execute_world(&best, self.timeout) {
                Ok(output) => {
                    let history = output.history;
                    if let Some(plan) = plan_of(&best) {
                        best = with_runs(&best, plan.without_unstarted(&output.started).runs);
                    }
                    let judgement = judge(&history, Budget::steps(super::execute::RUN_BUDGET));
                    let violations = check_records(&judgement, &best.expect.violate, &history)
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

/// `runs` without the middle runs of each incarnation `chosen` picks: those neither its
/// first nor its last in `runs`.
fn thinned(runs: &[PlannedRun], chosen: impl Fn(&PlannedRun) -> bool) -> Vec<PlannedRun> {
    let mut first: BTreeMap<(&str, u64), usize> = BTreeMap::new();
    let mut last: BTreeMap<(&str, u64), usize> = BTreeMap::new();
    for (index, run) in runs.iter().enumerate() {
        let key = (run.replica.as_str(), run.incarnation);
        first.entry(key).or_insert(index);
        last.insert(key, index);
    }
    runs.iter()
        .enumerate()
        .filter(|(index, run)| {
            let key = (run.replica.as_str(), run.incarnation);
            !chosen(run) || first[&key] == *index || last[&key] == *index
        })
        .map(|(_, run)| run.clone())
        .collect()
}

/// The plan of `run`'s workload, if it has one.
fn plan_of(run: &RunFile) -> Option<&Plan> {
    match &run.workload {
        RunWorkload::Plan(plan) => Some(plan),
        _ => None,
    }
}

/// `run` with a plan of exactly `runs`.
fn with_runs(run: &RunFile, runs: Vec<PlannedRun>) -> RunFile {
    RunFile {
        workload: RunWorkload::Plan(Plan { runs }),
        ..run.clone()
    }
}

/// A scripted workload of exactly `calls`.
fn with_calls(calls: &[crate::sim::script::ScriptedCall]) -> RunWorkload {
    let mut script = Script::new();
    script.calls = calls.to_vec();
    RunWorkload::Script(script)
}

/// How long a fault that lasts lasts, ms: a pause, suspend or stall, held or delayed
/// replies, authority errors.
fn lasting_ms(fault: &mut ScheduledFault) -> Option<&mut u64> {
    match &mut fault.fault {
        Fault::Pause { duration_ms, .. }
        | Fault::Suspend { duration_ms, .. }
        | Fault::Stall { duration_ms, .. }
        | Fault::HoldReplies { duration_ms, .. }
        | Fault::AuthorityErrors { duration_ms, .. }
        | Fault::DelayReplies {
            delay_ms: duration_ms,
            ..
        } => Some(duration_ms),
        _ => None,
    }
}

/// The session a violation's evidence names first: a ledger record's, a decision's or a
/// validity check's.
fn session_of(violations: &[ViolationRecord]) -> Option<String> {
    violations
        .iter()
        .flat_map(ViolationRecord::found)
        .find_map(|evidence| match evidence {
            Evidence::LedgerSeq { session, .. }
            | Evidence::Decision { session, .. }
            | Evidence::Validity { session, .. } => Some(session.clone()),
            Evidence::Op(_) | Evidence::Write { .. } | Evidence::Window { .. } => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Process;
    use crate::results::record::EvidenceRecord;

    fn violation(evidence: Vec<EvidenceRecord>) -> ViolationRecord {
        ViolationRecord {
            message: "m".into(),
            evidence,
            linearization: None,
        }
    }

    /// The sequence diagram follows the session of the first ledger record, decision or
    /// validity check the evidence names, read from its data; ops, windows, writes and
    /// version 1 prose name none.
    #[test]
    fn the_diagrams_session_is_the_first_one_the_evidence_names() {
        let decision = Evidence::Decision {
            session: "s2".into(),
            owner: Process::new("replica-1", 0),
            at_authority_us: 1,
            at_us: 1,
        };
        let violations = [
            violation(vec![
                EvidenceRecord::Written("ledger s9 seq 1".into()),
                Evidence::Op(3).into(),
            ]),
            violation(vec![decision.into(), Evidence::seq("s1", 4).into()]),
        ];
        assert_eq!(session_of(&violations).as_deref(), Some("s2"));
        assert_eq!(session_of(&violations[..1]), None);
    }
}
