//! Workload plans: what a generated workload does, as data — which replica makes which runs,
//! in which incarnation, from when — so a run file can hold it and a shrinker can drop and
//! shorten its steps (docs/world.md#workload).
//!
//! A **run** is one pass of the service layer over a session: acquire its lease, open its
//! journal, append `appends` events a think time apart (the renewer renewing meanwhile),
//! release; then think (three think times after the session was held elsewhere or the
//! authority was unavailable) before the next run. A run with `shutdown` also asks for a
//! graceful shutdown one think time in: the run makes a final clean-up append while its lease
//! is still valid, the service releases every lease and the replica stops; the world starts
//! it again a second later as its next incarnation.
//!
//! The generated workload *is* a plan: each replica incarnation draws its runs one after the
//! other from its own stream of the seed's workload subsystem ([`drawn_runs`]: a pure function
//! of the seed, the replica, the incarnation, the sessions and the mix), and one interpreter
//! runs drawn and planned runs alike. Which of the drawn runs a replica gets to make depends
//! on how the world goes (a crash ends an incarnation, a long hold delays the next run), so
//! the explicit plan of a generated run is the list of runs its replicas started, as the world
//! reports it ([`crate::world::RunOutput::started`]), each stamped with the true time it
//! started (ms, rounded down). That plan runs the same world, byte for byte: every run's time
//! has already come when its replica reaches it (tests/world/plans.rs).
//!
//! JSON shape (inside a run file's `workload`):
//! ```json
//! {"plan": {"runs": [
//!   {"replica": "replica-1", "incarnation": 0, "at_ms": 0, "session": "s2", "appends": 3,
//!    "think_ms": 420, "shutdown": false},
//!   {"replica": "replica-2", "incarnation": 0, "at_ms": 0, "session": "s2", "appends": 1,
//!    "think_ms": 75, "shutdown": true}
//! ]}}
//! ```
//! A replica incarnation makes its runs in file order, each no earlier than its `at_ms`;
//! once they are done it stays up and idle (it still answers for its leases: none are held
//! between runs).

use std::sync::{Arc, Mutex};

use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

use super::schedule::limits::RUN_MS_MAX;
use super::seed::{Subsystem, between, chance, rng};
use leasesim_history::hosts::{self, REPLICA_PREFIX};

/// Most appends one run may make (also the most a generated mix may draw).
pub const APPENDS_MAX: u64 = 1_000;
/// Longest think time, ms (1 hour; also the longest a generated mix may draw).
pub const THINK_MS_MAX: u64 = 3_600_000;

/// The shape of a generated workload: each replica loops picking a session, running on it
/// (appending events a think time apart), releasing and thinking again. Every range is
/// inclusive and drawn per run from the replica's workload stream. The defaults are the
/// workload every seed had before mixes existed (same seed, same bytes).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadMix {
    /// Events appended per run, `[least, most]` (default `[1, 6]`).
    pub appends: (u64, u64),
    /// Think time between appends and between runs, ms, `[least, most]` (default
    /// `[50, 1500]`).
    pub think_ms: (u64, u64),
    /// Odds that a run ends in a graceful shutdown, as `[numerator, denominator]` (default
    /// `[1, 25]`; `[0, 1]` never shuts down).
    pub shutdown_chance: (u32, u32),
}

impl Default for WorkloadMix {
    fn default() -> Self {
        WorkloadMix {
            appends: (1, 6),
            think_ms: (50, 1_500),
            shutdown_chance: (1, 25),
        }
    }
}

/// A workload plan: every run of every replica incarnation.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The runs; those of one replica incarnation are made in this order.
    pub runs: Vec<PlannedRun>,
}

/// One run by one replica incarnation.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedRun {
    /// The replica making it (`replica-1` …).
    pub replica: String,
    /// Which boot of the replica makes it: 0 the first, then one more at every restart
    /// (after a crash, or a second after a graceful shutdown).
    pub incarnation: u64,
    /// Earliest true simulated time to start it, ms from the start (it also waits for the
    /// incarnation's run before it, and the think time after that one).
    pub at_ms: u64,
    /// The session it runs on.
    pub session: String,
    /// Events it appends, `0..=`[`APPENDS_MAX`].
    pub appends: u64,
    /// Think time, ms, `0..=`[`THINK_MS_MAX`]: between appends, after the run (three of them
    /// after a refusal), and before the graceful shutdown a `shutdown` run asks for.
    pub think_ms: u64,
    /// Whether the run asks for a graceful shutdown one think time in.
    pub shutdown: bool,
}

impl Plan {
    /// The runs of `replica`'s incarnation `incarnation`, in order.
    pub fn runs_of(&self, replica: &str, incarnation: u64) -> Vec<PlannedRun> {
        self.runs
            .iter()
            .filter(|run| run.replica == replica && run.incarnation == incarnation)
            .cloned()
            .collect()
    }

    /// The plan without the runs no replica reached in a world that ran it (`started`, that
    /// world's [`crate::world::RunOutput::started`]): it runs the same world, since a
    /// replica never looked at the runs after the last one it started.
    pub fn without_unstarted(&self, started: &Plan) -> Plan {
        let mut reached: std::collections::BTreeMap<(&str, u64), usize> = Default::default();
        for run in &started.runs {
            *reached
                .entry((run.replica.as_str(), run.incarnation))
                .or_default() += 1;
        }
        let mut seen: std::collections::BTreeMap<(&str, u64), usize> = Default::default();
        let runs = self
            .runs
            .iter()
            .filter(|run| {
                let key = (run.replica.as_str(), run.incarnation);
                let index = seen.entry(key).or_default();
                *index += 1;
                *index <= reached.get(&key).copied().unwrap_or(0)
            })
            .cloned()
            .collect();
        Plan { runs }
    }

    /// Checks the plan against a world of `replicas` replicas and `sessions`: every replica
    /// and session known, every value in range.
    ///
    /// # Errors
    /// A message naming the first run refused (its index, replica and time) and why.
    pub fn check(&self, replicas: u32, sessions: &[String]) -> Result<(), String> {
        let replicas: Vec<String> = (1..=replicas).map(hosts::replica).collect();
        for (index, run) in self.runs.iter().enumerate() {
            let refuse = |reason: String| {
                Err(format!(
                    "run {index} (at {} ms by {}): {reason}",
                    run.at_ms, run.replica
                ))
            };
            if !replicas.contains(&run.replica) {
                return refuse(format!(
                    "unknown replica; the world has {}",
                    replicas.join(", ")
                ));
            }
            if !sessions.contains(&run.session) {
                return refuse(format!(
                    "unknown session `{}`; the world's sessions are {}",
                    run.session,
                    sessions.join(", ")
                ));
            }
            if run.appends > APPENDS_MAX {
                return refuse(format!(
                    "appends must be 0..={APPENDS_MAX}, got {}",
                    run.appends
                ));
            }
            if run.think_ms > THINK_MS_MAX {
                return refuse(format!(
                    "think_ms must be 0..={THINK_MS_MAX}, got {}",
                    run.think_ms
                ));
            }
            if run.at_ms > RUN_MS_MAX {
                return refuse(format!(
                    "at_ms must be 0..={RUN_MS_MAX} (one simulated day), got {}",
                    run.at_ms
                ));
            }
        }
        Ok(())
    }
}

/// Who draws runs: a replica incarnation of a world with a seed, its sessions and its mix.
#[derive(Clone, Copy, Debug)]
pub struct Drawer<'a> {
    /// The world's master seed.
    pub seed: u64,
    /// The world's sessions.
    pub sessions: &'a [String],
    /// The generated workload's mix.
    pub mix: &'a WorkloadMix,
    /// The replica (`replica-1` …).
    pub replica: &'a str,
    /// Its incarnation (0 at the first boot).
    pub incarnation: u64,
}

/// The runs `who` draws: endless, each drawn when the replica reaches it, from the replica
/// incarnation's own stream of the seed's workload subsystem (the seed xor the replica's
/// number shifted 32 bits xor the incarnation). Each run draws, in this order: the session
/// (uniform), the appends and the think time (uniform in the mix's ranges), and whether it
/// shuts down (the mix's odds). Every drawn run has `at_ms` 0: it starts as soon as the
/// replica reaches it.
pub fn drawn_runs(who: Drawer<'_>) -> DrawnRuns {
    let index = who
        .replica
        .trim_start_matches(REPLICA_PREFIX)
        .parse::<u64>()
        .unwrap_or(0);
    DrawnRuns {
        rng: rng(
            who.seed ^ (index << 32) ^ who.incarnation,
            Subsystem::Workload,
        ),
        sessions: who.sessions.to_vec(),
        mix: who.mix.clone(),
        replica: who.replica.to_owned(),
        incarnation: who.incarnation,
    }
}

/// The endless runs of one replica incarnation ([`drawn_runs`]).
#[derive(Clone, Debug)]
pub struct DrawnRuns {
    rng: ChaCha20Rng,
    sessions: Vec<String>,
    mix: WorkloadMix,
    replica: String,
    incarnation: u64,
}

impl Iterator for DrawnRuns {
    type Item = PlannedRun;

    fn next(&mut self) -> Option<PlannedRun> {
        let rng = &mut self.rng;
        let last = self.sessions.len().saturating_sub(1) as u64;
        let pick = between(rng, 0, last) as usize;
        let session = self.sessions.get(pick)?.clone();
        let mix = &self.mix;
        let appends = between(rng, mix.appends.0, mix.appends.1);
        let think_ms = between(rng, mix.think_ms.0, mix.think_ms.1);
        let shutdown = chance(rng, mix.shutdown_chance.0, mix.shutdown_chance.1);
        Some(PlannedRun {
            replica: self.replica.clone(),
            incarnation: self.incarnation,
            at_ms: 0,
            session,
            appends,
            think_ms,
            shutdown,
        })
    }
}

/// The runs the replicas of one world started, in the order they started, each stamped with
/// the true time it started (ms, rounded down). Shared by the world's replicas; all of them
/// run on the simulation's one thread, so the order is the world's own.
#[derive(Clone, Debug, Default)]
pub struct StartedRuns(Arc<Mutex<Vec<PlannedRun>>>);

impl StartedRuns {
    /// Notes that `run` started at `now_ms`.
    pub(crate) fn push(&self, run: &PlannedRun, now_ms: u64) {
        let started = PlannedRun {
            at_ms: run.at_ms.max(now_ms),
            ..run.clone()
        };
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(started);
    }

    /// The runs started so far, as a plan.
    pub(crate) fn plan(&self) -> Plan {
        Plan {
            runs: self.0.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(replica: &str, incarnation: u64, session: &str) -> PlannedRun {
        PlannedRun {
            replica: replica.into(),
            incarnation,
            at_ms: 0,
            session: session.into(),
            appends: 2,
            think_ms: 100,
            shutdown: false,
        }
    }

    fn sessions() -> Vec<String> {
        vec!["s1".into(), "s2".into()]
    }

    #[test]
    fn a_replica_incarnation_draws_the_same_runs_every_time_and_its_own() {
        let (sessions, mix) = (sessions(), WorkloadMix::default());
        let draw = |replica, incarnation| -> Vec<PlannedRun> {
            let who = Drawer {
                seed: 7,
                sessions: &sessions,
                mix: &mix,
                replica,
                incarnation,
            };
            drawn_runs(who).take(50).collect()
        };
        let first = draw("replica-1", 0);
        assert_eq!(first, draw("replica-1", 0));
        assert_ne!(first, draw("replica-2", 0));
        assert_ne!(first, draw("replica-1", 1));
        assert!(first.iter().any(|run| run.session == "s1"));
        assert!(first.iter().any(|run| run.session == "s2"));
        for run in &first {
            assert!(sessions.contains(&run.session));
            assert!((mix.appends.0..=mix.appends.1).contains(&run.appends));
            assert!((mix.think_ms.0..=mix.think_ms.1).contains(&run.think_ms));
            assert_eq!((run.at_ms, run.incarnation), (0, 0));
        }
    }

    #[test]
    fn unstarted_runs_are_the_tail_of_each_incarnation() {
        let plan = Plan {
            runs: vec![
                run("replica-1", 0, "s1"),
                run("replica-2", 0, "s1"),
                run("replica-1", 0, "s2"),
                run("replica-1", 1, "s1"),
            ],
        };
        let started = Plan {
            runs: vec![run("replica-1", 0, "s1"), run("replica-1", 1, "s1")],
        };
        let kept = plan.without_unstarted(&started);
        assert_eq!(
            kept.runs,
            vec![run("replica-1", 0, "s1"), run("replica-1", 1, "s1")]
        );
    }

    #[test]
    fn a_plan_naming_what_the_world_lacks_is_refused_saying_what() {
        let check = |run: PlannedRun| Plan { runs: vec![run] }.check(3, &sessions());
        let refused = |run: PlannedRun| check(run).unwrap_err();
        assert!(refused(run("replica-4", 0, "s1")).contains("unknown replica"));
        assert!(refused(run("replica-1", 0, "s9")).contains("unknown session `s9`"));
        let too_many = PlannedRun {
            appends: APPENDS_MAX + 1,
            ..run("replica-1", 0, "s1")
        };
        assert!(refused(too_many).contains("appends must be 0..=1000"));
        assert_eq!(check(run("replica-3", 5, "s2")), Ok(()));
    }
}
