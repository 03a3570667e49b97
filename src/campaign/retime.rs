//! Time shifts of a run file, for the shrinker ([`super::shrink`]): pull the later part of a
//! run earlier, so a counterexample spends less simulated time (and fewer renewals) around the
//! few steps that break a check.
//!
//! A run file's **instants** are the times it schedules something: each fault's `at_ms`, the
//! heal (`heal_at_ms`), each planned run's or scripted call's `at_ms`. Pulling from instant
//! `from_ms` by `by_ms` moves every instant at or after `from_ms` earlier by `by_ms` and
//! shortens `duration_s` by the whole seconds of `by_ms`; instants before `from_ms` stay. The
//! moved part keeps its own spacing (a run planned 13.5 s after the heal is still 13.5 s
//! after it: LIVE's window is counted from the heal), but may pass instants that stay — that
//! is the point: a holder that started before the heal can start after it, and its renewals
//! before the heal are no longer needed. Whether the result still fails is for the shrinker
//! to run; a pull that breaks the schedule's rules (a fault after the heal, the heal after
//! the end) makes a candidate the shrinker's run refuses.

use crate::sim::runfile::{RunFile, RunWorkload};

/// Every distinct instant of `run` above 0, ms, ascending.
pub fn instants(run: &RunFile) -> Vec<u64> {
    let mut times: Vec<u64> = run.schedule.faults.iter().map(|f| f.at_ms).collect();
    times.extend(run.schedule.heal_at_ms);
    match &run.workload {
        RunWorkload::Plan(plan) => times.extend(plan.runs.iter().map(|r| r.at_ms)),
        RunWorkload::Script(script) => times.extend(script.calls.iter().map(|c| c.at_ms)),
        RunWorkload::Generated(_) => {}
    }
    times.retain(|t| *t > 0);
    times.sort_unstable();
    times.dedup();
    times
}

/// `run` with every instant at or after `from_ms` moved `by_ms` earlier (clamped at 0), and
/// `duration_s` shorter by `by_ms`'s whole seconds (never below 1 s).
pub fn pulled_earlier(run: &RunFile, from_ms: u64, by_ms: u64) -> RunFile {
    let pull = |t: &mut u64| {
        if *t >= from_ms {
            *t = t.saturating_sub(by_ms);
        }
    };
    let mut pulled = run.clone();
    for fault in &mut pulled.schedule.faults {
        pull(&mut fault.at_ms);
    }
    if let Some(heal) = &mut pulled.schedule.heal_at_ms {
        pull(heal);
    }
    match &mut pulled.workload {
        RunWorkload::Plan(plan) => plan.runs.iter_mut().for_each(|r| pull(&mut r.at_ms)),
        RunWorkload::Script(script) => script.calls.iter_mut().for_each(|c| pull(&mut c.at_ms)),
        RunWorkload::Generated(_) => {}
    }
    pulled.world.duration_s = pulled.world.duration_s.saturating_sub(by_ms / 1_000).max(1);
    pulled
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::plan::{Plan, PlannedRun};
    use crate::sim::schedule::{Fault, FaultSchedule, ScheduledFault};

    fn planned(replica: &str, at_ms: u64) -> PlannedRun {
        PlannedRun {
            replica: replica.into(),
            incarnation: 0,
            at_ms,
            session: "s1".into(),
            appends: 1,
            think_ms: 100,
            shutdown: false,
        }
    }

    /// A run file of 30 s: a crash of replica-2 at 5 s, the heal at 24 s, and runs at 0,
    /// 19 s and 37.5 s.
    fn run_file() -> RunFile {
        let mut run = RunFile::parse(
            r#"{"v":3,"scenario":"t","seed":0,"world":{"replicas":3,"sessions":["s1"],
            "ttl_ms":10000,"skew_margin_percent":10,"duration_s":30,"call_timeout_ms":2000,
            "latency_ms":[1,5]},"schedule":{"v":1,"faults":[]},"workload":{"plan":{"runs":[]}},
            "liveness_phase":true}"#,
        )
        .unwrap();
        run.schedule = FaultSchedule {
            faults: vec![ScheduledFault {
                at_ms: 5_000,
                fault: Fault::Crash {
                    host: "replica-2".into(),
                },
                target: None,
            }],
            heal_at_ms: Some(24_000),
            ..run.schedule
        };
        run.workload = RunWorkload::Plan(Plan {
            runs: vec![
                planned("replica-1", 0),
                planned("replica-3", 19_058),
                planned("replica-1", 37_536),
            ],
        });
        run
    }

    #[test]
    fn instants_are_the_distinct_scheduled_times_above_zero() {
        assert_eq!(instants(&run_file()), vec![5_000, 19_058, 24_000, 37_536]);
    }

    /// Pulling from the heal moves the heal and the run after it, keeping their spacing, past
    /// the run at 19 s that stays; the crash and the run at 0 stay too.
    #[test]
    fn a_pull_moves_the_suffix_only_and_shortens_the_run() {
        let pulled = pulled_earlier(&run_file(), 24_000, 18_500);
        assert_eq!(pulled.schedule.heal_at_ms, Some(5_500));
        assert_eq!(pulled.schedule.faults[0].at_ms, 5_000);
        let RunWorkload::Plan(plan) = &pulled.workload else {
            panic!("not a plan")
        };
        let at: Vec<u64> = plan.runs.iter().map(|r| r.at_ms).collect();
        assert_eq!(at, vec![0, 19_058, 19_036]);
        assert_eq!(pulled.world.duration_s, 12);
        assert_eq!(instants(&pulled), vec![5_000, 5_500, 19_036, 19_058]);
    }

    #[test]
    fn a_pull_never_goes_below_zero_or_one_second() {
        let pulled = pulled_earlier(&run_file(), 1, 60_000);
        assert_eq!(instants(&pulled), Vec::<u64>::new());
        assert_eq!(pulled.world.duration_s, 1);
    }
}
