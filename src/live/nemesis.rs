//! The nemesis of live mode: a fault schedule ([`crate::sim::schedule`]) turned into actions
//! on real processes and proxy links, in true time ([`plan`]).
//!
//! | fault | what live mode does |
//! |---|---|
//! | `pause` | SIGSTOP the host's process, SIGCONT after `duration_ms` |
//! | `crash` / `restart` | SIGKILL / start again (SIGKILL first if it runs, as in the world) (a replica with the next incarnation, a service on the same `--data` with the next boot; its links follow the new port) |
//! | `lease_service_restarts` | SIGKILL and start again the lease service `count` times, every `every_ms`, the first at the fault's time (as the world) |
//! | `partition`, `isolate` | the links between the hosts are cut ([`super::proxy`]) |
//! | `partition_one_way` | the link drops one direction |
//! | `hold` / `release` | the link holds both directions / delivers them |
//! | `delay_replies` | the link holds the replies for `delay_ms`, then delivers them |
//! | `latency`, `link_flaps` | the link's latency and jitter / random resets drawn from the seed |
//! | `clock_drift` | the host's processes run under libfaketime at that rate **from their start** (the fault's time is not honoured: a rate is set when a process starts) |
//! | `wall_jump`, `wall_offset` | the host's processes run under libfaketime with their monotonic clock untouched; at the fault's time the wall offset is rewritten (libfaketime re-reads it within 1 s) |
//! | `heal` | every link healed, every paused process continued, every crashed one started again |
//!
//! Faults with no real counterpart here — `suspend` (no process can stop its own
//! CLOCK_MONOTONIC), `stall`, `worker_panic` and a pause `at_point` (any pause point:
//! `before_append_check`, `before_open_check`, `before_cleanup_append`, … — no hook into a real
//! process's tasks), `delete_lease_record` and `authority_errors` (no hook into the lease
//! authority), `hold_replies` (the proxy holds a direction's every byte, keepalive acks
//! included), a host with both a drift and a wall step
//! (libfaketime would step its monotonic clock too), a clock fault on the etcd server (not run
//! under libfaketime: a Go program's clocks are out of its reach) — are refused up front when
//! the schedule was given (a scenario's or `--schedule`), naming them; from a schedule drawn
//! from the seed they are dropped, each with a `dropped` nemesis line and a printed line
//! saying so.

use std::collections::BTreeMap;

use crate::history::hosts;
use crate::sim::schedule::{Fault, FaultSchedule, ScheduledFault};

/// What one step does.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Action {
    /// SIGSTOP the host.
    Stop(String),
    /// SIGCONT the host.
    Cont(String),
    /// SIGKILL the host.
    Kill(String),
    /// Start the host again (if it is not running).
    Start(String),
    /// Change the links between `a` and `b` (either may be a client or a service).
    Link {
        /// One end.
        a: String,
        /// The other.
        b: String,
        /// The change.
        change: LinkChange,
    },
    /// Cut every link of the host.
    Isolate(String),
    /// Set the wall offset of a host started under libfaketime, ms.
    WallOffset {
        /// The host.
        host: String,
        /// The offset from the true wall clock, ms.
        offset_ms: i64,
    },
    /// Heal everything.
    HealAll,
}

/// A change to a link.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum LinkChange {
    /// Both directions cut.
    Cut,
    /// The bytes sent by `from` are dropped.
    DropFrom(String),
    /// Both directions held.
    Hold,
    /// Both directions delivered.
    Release,
    /// The bytes sent by `from` are held.
    HoldFrom(String),
    /// The bytes sent by `from` are delivered.
    ReleaseFrom(String),
    /// Latency and jitter, ms.
    Latency(u64, u64),
    /// Random resets, ppm per ms.
    Flaps(u32),
}

/// One timed action.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Step {
    /// True time, ms from the start.
    pub at_ms: u64,
    /// What to do.
    pub action: Action,
    /// The fault it comes from, for the progress line and the history.
    pub why: String,
}

/// How a host's processes are started under libfaketime.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct HostClock {
    /// Monotonic (and wall) rate error, ppm, from each process's start.
    pub drift_ppm: i64,
    /// Its wall clock is stepped during the run (monotonic untouched).
    pub wall_steps: bool,
}

/// What the nemesis will do in one run.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Plan {
    /// The steps, by time (ties in schedule order); the heal is not among them.
    pub steps: Vec<Step>,
    /// When everything is healed, ms.
    pub heal_at_ms: u64,
    /// Drawn faults with no real counterpart, dropped: one sentence each.
    pub dropped: Vec<String>,
    /// Hosts started under libfaketime.
    pub clocks: BTreeMap<String, HostClock>,
}

/// Turns `schedule` into a plan for a run of `duration_ms` with `replicas` replicas and a
/// lease host when `lease_host` (not for flock). The schedule's `lease` host is the lease
/// backend's server, whatever it is called in the run (`etcd` for the etcd backend): its
/// faults apply to `lease_host`. `drawn`: the schedule was drawn from the seed (faults with
/// no counterpart are dropped), else given (they are refused).
///
/// # Errors
/// A given schedule with faults live mode cannot apply: one message naming each.
pub fn plan(
    schedule: &FaultSchedule,
    duration_ms: u64,
    replicas: u32,
    lease_host: Option<&str>,
    drawn: bool,
) -> Result<Plan, String> {
    let mut planner = Planner {
        plan: Plan {
            heal_at_ms: schedule.heal_at_ms.unwrap_or(duration_ms),
            ..Plan::default()
        },
        refused: Vec::new(),
        wall_offsets: BTreeMap::new(),
        replicas,
        lease_host,
    };
    for (index, scheduled) in schedule.faults.iter().enumerate() {
        // A drawn fault aimed at a holder strikes the replica it names, as it does in the
        // world when nobody holds the session: live mode cannot resolve holders (NO_TARGETS).
        let mut scheduled = scheduled.clone();
        if drawn {
            scheduled.target = None;
        }
        planner.add(index, &scheduled);
    }
    planner.refuse_drift_with_wall_steps();
    let Planner {
        mut plan, refused, ..
    } = planner;
    if !refused.is_empty() {
        if !drawn {
            return Err(format!(
                "live mode cannot apply {} of this schedule's faults (docs/live.md; \
                 src/live/nemesis.rs lists what it can): {}; remove them from the schedule",
                refused.len(),
                refused.join("; ")
            ));
        }
        plan.dropped = refused;
    }
    // A step at the heal's very time is kept (the heal comes after it, as in the world,
    // whose faults at the heal time are applied before the heal).
    plan.steps.retain(|s| s.at_ms <= plan.heal_at_ms);
    plan.steps.sort_by_key(|s| s.at_ms);
    if let Some(lease) = lease_host {
        rename_host(&mut plan, hosts::LEASE, lease);
    }
    Ok(plan)
}

/// The plan being built from a schedule's faults, in order, and the faults refused so far.
struct Planner<'a> {
    plan: Plan,
    /// One message per fault live mode cannot apply.
    refused: Vec<String>,
    /// Each host's wall clock offset so far, in ms (a wall jump moves it by its delta).
    wall_offsets: BTreeMap<String, i64>,
    replicas: u32,
    lease_host: Option<&'a str>,
}

/// A change of the link between hosts `a` and `b`.
fn link(a: &str, b: &str, change: LinkChange) -> Action {
    Action::Link {
        a: a.to_owned(),
        b: b.to_owned(),
        change,
    }
}

/// Why live mode cannot apply `fault`, one that needs a hook into a task or a service.
fn no_counterpart(fault: &Fault) -> String {
    match fault {
        Fault::Pause {
            at_point: Some(point),
            ..
        } => format!(
            "a pause at `{}` waits for a task to reach that point, and {NO_PAUSE_POINTS}; \
             pause it at a time instead",
            point.name()
        ),
        Fault::Suspend { .. } => {
            "a suspend stops CLOCK_MONOTONIC, which no unprivileged process can do".into()
        }
        Fault::Stall { point, .. } => format!(
            "a stall blocks the one task that reaches `{}`, and {NO_PAUSE_POINTS}",
            point.name()
        ),
        Fault::WorkerPanic { point, .. } => format!(
            "a worker panic fires in the task that reaches `{}`, and {NO_PAUSE_POINTS}",
            point.name()
        ),
        Fault::DeleteLeaseRecord { .. } => {
            "deleting a lease record needs a hook into the lease service".into()
        }
        Fault::HoldReplies { .. } => "the proxy holds bytes, not HTTP/2 frames: holding one \
             direction's replies holds its keepalive acks too, so the connection dies instead \
             of living on to deliver them late (that is `delay_replies`)"
            .into(),
        Fault::AuthorityErrors { .. } => "answering calls with a status needs a hook in the \
             lease authority: a real lease service, etcd or flock answers what it decides"
            .into(),
        other => format!("{} has no live counterpart", describe(other)),
    }
}

/// Why no clock fault can be applied to the etcd server.
const ETCD_CLOCK: &str = "etcd is not run under libfaketime (a Go program reads its clocks \
    through the vDSO, not libc, so the fault would silently not happen); put clock faults on \
    the replicas or the ledger";

/// Why no fault aimed at a holder can be applied live.
const NO_TARGETS: &str = "a fault aimed at a session's holder (`target`) resolves it from \
    the authority's decisions as they happen, which live mode does not see; name the replica \
    instead (docs/world.md#faults-aimed-at-the-holder)";

/// Why no fault at a pause point can be applied live.
const NO_PAUSE_POINTS: &str = "a real process's pause points are no-ops (no hook into its tasks)";

impl Planner<'_> {
    /// Whether the run has `host`: the ledger, the replicas, the lease host under either name.
    fn knows(&self, host: &str) -> bool {
        host == hosts::LEDGER
            || (self.lease_host.is_some() && host == hosts::LEASE)
            || Some(host) == self.lease_host
            || (1..=self.replicas).any(|n| hosts::replica(n) == host)
    }

    /// Whether `host` is the etcd server (the schedule's `lease` host, or named `etcd`), which
    /// is not started under libfaketime: its clock cannot be faulted.
    fn unfaked(&self, host: &str) -> bool {
        self.lease_host == Some(super::etcd::HOST)
            && (host == hosts::LEASE || host == super::etcd::HOST)
    }

    /// Adds the steps of fault number `index` (from 0), or its refusal.
    fn add(&mut self, index: usize, scheduled: &ScheduledFault) {
        let at = scheduled.at_ms;
        let why = format!("fault {} ({})", index + 1, describe(&scheduled.fault));
        let hosts_known = scheduled
            .fault
            .clone()
            .hosts_mut()
            .iter()
            .all(|h| self.knows(h));
        let steps = if scheduled.target.is_some() {
            Err(NO_TARGETS.to_owned())
        } else if hosts_known {
            self.steps(at, &scheduled.fault)
        } else {
            Err("names a host this live run does not have".to_owned())
        };
        match steps {
            Ok(steps) => self
                .plan
                .steps
                .extend(steps.into_iter().map(|(at_ms, action)| Step {
                    at_ms,
                    action,
                    why: why.clone(),
                })),
            Err(reason) => self.refused.push(format!("{why} at {at} ms: {reason}")),
        }
    }

    /// The timed actions that apply `fault` at `at` ms, or why live mode cannot apply it.
    fn steps(&mut self, at: u64, fault: &Fault) -> Result<Vec<(u64, Action)>, String> {
        Ok(match fault {
            Fault::Pause {
                host,
                duration_ms,
                at_point: None,
            } => vec![
                (at, Action::Stop(host.clone())),
                (at + duration_ms, Action::Cont(host.clone())),
            ],
            Fault::Pause {
                at_point: Some(_), ..
            }
            | Fault::Suspend { .. }
            | Fault::Stall { .. }
            | Fault::WorkerPanic { .. }
            | Fault::Fork { .. }
            | Fault::DeleteLeaseRecord { .. }
            | Fault::HoldReplies { .. }
            | Fault::AuthorityErrors { .. } => return Err(no_counterpart(fault)),
            Fault::Crash { host } => vec![(at, Action::Kill(host.clone()))],
            // As in the world: a running host is crashed first.
            Fault::Restart { host } => vec![
                (at, Action::Kill(host.clone())),
                (at, Action::Start(host.clone())),
            ],
            Fault::LeaseServiceRestarts {
                every_ms,
                count,
                downtime_ms,
            } => self.lease_restarts(at, *every_ms, *count, downtime_ms.unwrap_or(0))?,
            Fault::Partition { a, b } => vec![(at, link(a, b, LinkChange::Cut))],
            Fault::PartitionOneWay { from, to } => {
                vec![(at, link(from, to, LinkChange::DropFrom(from.clone())))]
            }
            Fault::Isolate { host } => vec![(at, Action::Isolate(host.clone()))],
            Fault::Heal => vec![(at, Action::HealAll)],
            Fault::Hold { a, b } => vec![(at, link(a, b, LinkChange::Hold))],
            Fault::Release { a, b } => vec![(at, link(a, b, LinkChange::Release))],
            Fault::Latency {
                a,
                b,
                latency_ms,
                jitter_ms,
            } => vec![(at, link(a, b, LinkChange::Latency(*latency_ms, *jitter_ms)))],
            Fault::LinkFlaps { a, b, fail_ppm } => {
                vec![(at, link(a, b, LinkChange::Flaps(*fail_ppm)))]
            }
            Fault::DelayReplies { from, to, delay_ms } => vec![
                (at, link(from, to, LinkChange::HoldFrom(from.clone()))),
                (
                    at + delay_ms,
                    link(from, to, LinkChange::ReleaseFrom(from.clone())),
                ),
            ],
            Fault::ClockDrift { host, .. }
            | Fault::WallJump { host, .. }
            | Fault::WallOffset { host, .. }
                if self.unfaked(host) =>
            {
                return Err(ETCD_CLOCK.into());
            }
            Fault::ClockDrift { host, ppm } => {
                self.plan.clocks.entry(host.clone()).or_default().drift_ppm = *ppm;
                Vec::new()
            }
            Fault::WallJump { host, delta_ms } => {
                let offset_ms = self.wall_offsets.get(host).copied().unwrap_or(0) + delta_ms;
                self.wall_step(at, host, offset_ms)
            }
            Fault::WallOffset { host, offset_ms } => self.wall_step(at, host, *offset_ms),
        })
    }

    /// As the world bounces the lease service (`crate::sim::nemesis`): the first restart at
    /// `at`, `count` in all, `every_ms` apart, each down for `downtime_ms`.
    fn lease_restarts(
        &self,
        at: u64,
        every_ms: u64,
        count: u32,
        downtime_ms: u64,
    ) -> Result<Vec<(u64, Action)>, String> {
        let Some(lease) = self.lease_host else {
            return Err("this backend has no lease service to restart".into());
        };
        Ok((0..u64::from(count))
            .flat_map(|i| {
                let down = at + i * every_ms;
                [
                    (down, Action::Kill(lease.to_owned())),
                    (down + downtime_ms, Action::Start(lease.to_owned())),
                ]
            })
            .collect())
    }

    /// A step of `host`'s wall clock to `offset_ms` from true time at `at` ms.
    fn wall_step(&mut self, at: u64, host: &str, offset_ms: i64) -> Vec<(u64, Action)> {
        self.wall_offsets.insert(host.to_owned(), offset_ms);
        self.plan
            .clocks
            .entry(host.to_owned())
            .or_default()
            .wall_steps = true;
        vec![(
            at,
            Action::WallOffset {
                host: host.to_owned(),
                offset_ms,
            },
        )]
    }

    /// A host with both a drift and a wall step keeps the drift: under libfaketime a wall step
    /// would step its monotonic clock too.
    fn refuse_drift_with_wall_steps(&mut self) {
        for (host, clock) in &mut self.plan.clocks {
            if clock.drift_ppm != 0 && clock.wall_steps {
                self.refused.push(format!(
                    "host {host} has both a clock drift and a wall step: under libfaketime a \
                     wall step would step its monotonic clock too"
                ));
                clock.wall_steps = false;
                self.plan.steps.retain(
                    |s| !matches!(&s.action, Action::WallOffset { host: h, .. } if h == host),
                );
            }
        }
    }
}

/// Every mention of host `from` in `plan` made `to`.
fn rename_host(plan: &mut Plan, from: &str, to: &str) {
    let rename = |host: &mut String| {
        if host == from {
            *host = to.to_owned();
        }
    };
    for step in &mut plan.steps {
        match &mut step.action {
            Action::Stop(host)
            | Action::Cont(host)
            | Action::Kill(host)
            | Action::Start(host)
            | Action::Isolate(host)
            | Action::WallOffset { host, .. } => rename(host),
            Action::Link { a, b, change } => {
                rename(a);
                rename(b);
                match change {
                    LinkChange::DropFrom(host)
                    | LinkChange::HoldFrom(host)
                    | LinkChange::ReleaseFrom(host) => rename(host),
                    _ => {}
                }
            }
            Action::HealAll => {}
        }
    }
    if let Some(clock) = plan.clocks.remove(from) {
        plan.clocks.insert(to.to_owned(), clock);
    }
}

/// A fault as its JSON tag and fields, short.
fn describe(fault: &Fault) -> String {
    serde_json::to_value(fault)
        .ok()
        .and_then(|v| {
            let object = v.as_object()?;
            let tag = object.get("fault")?.as_str()?.to_owned();
            let rest: Vec<String> = object
                .iter()
                .filter(|(k, _)| *k != "fault")
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            Some(format!("{tag} {}", rest.join(" ")).trim().to_owned())
        })
        .unwrap_or_else(|| format!("{fault:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::PausePoint;
    use crate::sim::schedule::ScheduledFault;

    fn schedule(faults: Vec<(u64, Fault)>) -> FaultSchedule {
        FaultSchedule {
            v: 1,
            faults: faults
                .into_iter()
                .map(|(at_ms, fault)| ScheduledFault {
                    at_ms,
                    fault,
                    target: None,
                })
                .collect(),
            heal_at_ms: None,
        }
    }

    /// `s`, given by hand, planned for a 10 s run of 2 replicas and a lease host `lease`.
    fn given_plan(s: &FaultSchedule) -> Plan {
        plan(s, 10_000, 2, Some("lease"), false).unwrap()
    }

    /// The plan's steps as (ms, action).
    fn timed_actions(plan: &Plan) -> Vec<(u64, Action)> {
        let steps = plan.steps.iter();
        steps.map(|s| (s.at_ms, s.action.clone())).collect()
    }

    #[test]
    fn a_pause_is_a_sigstop_and_a_sigcont_after_its_duration() {
        let s = schedule(vec![(
            1_000,
            Fault::Pause {
                host: "replica-1".into(),
                duration_ms: 5_000,
                at_point: None,
            },
        )]);
        let plan = given_plan(&s);
        let actions = timed_actions(&plan);
        assert_eq!(
            actions,
            [
                (1_000, Action::Stop("replica-1".into())),
                (6_000, Action::Cont("replica-1".into()))
            ]
        );
        assert_eq!(plan.heal_at_ms, 10_000);
    }

    #[test]
    fn the_schedules_lease_host_is_the_backends_server_and_flock_has_none() {
        let s = schedule(vec![
            (
                1_000,
                Fault::DelayReplies {
                    from: "lease".into(),
                    to: "replica-1".into(),
                    delay_ms: 2_000,
                },
            ),
            (
                4_000,
                Fault::Crash {
                    host: "lease".into(),
                },
            ),
        ]);
        let plan = plan(&s, 10_000, 2, Some("etcd"), false).unwrap();
        let actions: Vec<Action> = plan.steps.iter().map(|s| s.action.clone()).collect();
        let held = |change| Action::Link {
            a: "etcd".into(),
            b: "replica-1".into(),
            change,
        };
        assert_eq!(
            actions,
            [
                held(LinkChange::HoldFrom("etcd".into())),
                held(LinkChange::ReleaseFrom("etcd".into())),
                Action::Kill("etcd".into()),
            ]
        );
        let error = super::plan(&s, 10_000, 2, None, false).unwrap_err();
        assert!(
            error.contains("names a host this live run does not have"),
            "{error}"
        );
    }

    #[test]
    fn a_given_fault_with_no_real_counterpart_is_refused_naming_it_and_a_drawn_one_dropped() {
        let s = schedule(vec![
            (
                1_000,
                Fault::Suspend {
                    host: "replica-1".into(),
                    duration_ms: 5_000,
                    at_point: None,
                },
            ),
            (
                2_000,
                Fault::Stall {
                    host: "replica-2".into(),
                    point: PausePoint::BeforeAppendSend,
                    duration_ms: 5,
                },
            ),
            (
                3_000,
                Fault::Crash {
                    host: "replica-1".into(),
                },
            ),
        ]);
        let error = plan(&s, 10_000, 2, Some("lease"), false).unwrap_err();
        assert!(
            error.contains("suspend") && error.contains("stall"),
            "{error}"
        );
        let drawn = plan(&s, 10_000, 2, Some("lease"), true).unwrap();
        assert_eq!(drawn.dropped.len(), 2);
        assert_eq!(drawn.steps.len(), 1);
    }

    /// A given fault aimed at a holder is refused, saying why; a drawn one strikes the
    /// replica it names.
    #[test]
    fn a_fault_aimed_at_a_holder_is_refused_given_and_strikes_its_replica_drawn() {
        let crash = Fault::Crash {
            host: "replica-2".into(),
        };
        let target = crate::sim::schedule::Target::Holder("s1".into());
        let s = FaultSchedule::new().at_target(3_000, crash.clone(), target);
        let error = plan(&s, 10_000, 2, Some("lease"), false).unwrap_err();
        assert!(error.contains("aimed at a session's holder"), "{error}");
        let drawn = plan(&s, 10_000, 2, Some("lease"), true).unwrap();
        let untargeted = given_plan(&FaultSchedule::new().at(3_000, crash));
        assert!(drawn.dropped.is_empty(), "{:?}", drawn.dropped);
        assert_eq!(timed_actions(&drawn), timed_actions(&untargeted));
    }

    #[test]
    fn faults_at_pause_points_and_of_the_authoritys_answers_are_refused_each_saying_why() {
        let pause = |point| Fault::Pause {
            host: "replica-1".into(),
            duration_ms: 3_000,
            at_point: Some(point),
        };
        let faults = [
            Fault::HoldReplies {
                from: "lease".into(),
                to: "replica-1".into(),
                duration_ms: 12_000,
            },
            Fault::AuthorityErrors {
                duration_ms: 5_000,
                status: crate::sim::schedule::ErrorStatus::PermissionDenied,
                to: Some("replica-2".into()),
            },
            Fault::WorkerPanic {
                host: "replica-2".into(),
                point: PausePoint::BeforeAppendCheck,
            },
            pause(PausePoint::BeforeAppendCheck),
            pause(PausePoint::BeforeOpenCheck),
            Fault::Stall {
                host: "replica-1".into(),
                point: PausePoint::BeforeCleanupAppend,
                duration_ms: 2_000,
            },
        ];
        let expected = [
            "fault 1 (hold_replies duration_ms=12000 from=\"lease\" to=\"replica-1\") at 1000 ms: \
             the proxy holds bytes, not HTTP/2 frames",
            "fault 2 (authority_errors duration_ms=5000 status=\"permission_denied\" \
             to=\"replica-2\") at 2000 ms: answering calls with a status needs a hook in the \
             lease authority",
            "fault 3 (worker_panic host=\"replica-2\" point=\"before_append_check\") at 3000 ms: \
             a worker panic fires in the task that reaches `before_append_check`",
            "at 4000 ms: a pause at `before_append_check` waits for a task to reach that point",
            "at 5000 ms: a pause at `before_open_check` waits for a task to reach that point",
            "at 6000 ms: a stall blocks the one task that reaches `before_cleanup_append`",
        ];
        let s = schedule(
            faults
                .iter()
                .enumerate()
                .map(|(i, fault)| (1_000 * (i as u64 + 1), fault.clone()))
                .collect(),
        );
        let error = plan(&s, 10_000, 2, Some("lease"), false).unwrap_err();
        assert!(
            error.starts_with("live mode cannot apply 6 of this schedule's faults"),
            "{error}"
        );
        for sentence in expected {
            assert!(error.contains(sentence), "{sentence} missing: {error}");
        }
        // Drawn from the seed, each is dropped with its sentence and nothing is done.
        let drawn = plan(&s, 10_000, 2, Some("lease"), true).unwrap();
        assert_eq!(drawn.dropped.len(), 6);
        for (dropped, sentence) in drawn.dropped.iter().zip(expected) {
            assert!(dropped.contains(sentence), "{dropped}");
        }
        assert!(drawn.steps.is_empty(), "{:?}", drawn.steps);
    }

    #[test]
    fn a_drift_starts_the_host_under_libfaketime_and_wall_jumps_add_up() {
        let s = schedule(vec![
            (
                0,
                Fault::ClockDrift {
                    host: "replica-2".into(),
                    ppm: -50_000,
                },
            ),
            (
                1_000,
                Fault::WallJump {
                    host: "replica-1".into(),
                    delta_ms: -3_000,
                },
            ),
            (
                2_000,
                Fault::WallJump {
                    host: "replica-1".into(),
                    delta_ms: 1_000,
                },
            ),
        ]);
        let plan = given_plan(&s);
        assert_eq!(plan.clocks["replica-2"].drift_ppm, -50_000);
        assert!(plan.clocks["replica-1"].wall_steps);
        assert_eq!(
            plan.steps.last().unwrap().action,
            Action::WallOffset {
                host: "replica-1".into(),
                offset_ms: -2_000
            }
        );
    }

    #[test]
    fn lease_service_restarts_bounce_the_service_count_times_from_the_faults_time() {
        let s = schedule(vec![(
            2_000,
            Fault::LeaseServiceRestarts {
                every_ms: 1_000,
                count: 3,
                downtime_ms: None,
            },
        )]);
        let plan = given_plan(&s);
        let actions = timed_actions(&plan);
        let bounce = |at| {
            [
                (at, Action::Kill("lease".into())),
                (at, Action::Start("lease".into())),
            ]
        };
        assert_eq!(
            actions,
            [bounce(2_000), bounce(3_000), bounce(4_000)].concat()
        );
    }

    #[test]
    fn a_step_at_the_heal_time_is_kept_and_one_after_it_is_cut() {
        let crash = |host: &str| Fault::Crash { host: host.into() };
        let mut s = schedule(vec![
            (5_000, crash("replica-1")),
            (5_001, crash("replica-2")),
        ]);
        s.heal_at_ms = Some(5_000);
        let plan = given_plan(&s);
        let actions = timed_actions(&plan);
        assert_eq!(actions, [(5_000, Action::Kill("replica-1".into()))]);
        assert_eq!(plan.heal_at_ms, 5_000);
    }

    #[test]
    fn a_clock_fault_on_the_etcd_server_is_refused_saying_it_is_not_under_libfaketime() {
        for host in ["lease", "etcd"] {
            let s = schedule(vec![
                (
                    0,
                    Fault::ClockDrift {
                        host: host.into(),
                        ppm: 100_000,
                    },
                ),
                (
                    1_000,
                    Fault::WallJump {
                        host: host.into(),
                        delta_ms: 5_000,
                    },
                ),
            ]);
            let error = plan(&s, 10_000, 2, Some("etcd"), false).unwrap_err();
            assert!(
                error.contains("2 of this schedule's faults")
                    && error.contains("etcd is not run under libfaketime"),
                "{error}"
            );
            let drawn = plan(&s, 10_000, 2, Some("etcd"), true).unwrap();
            assert_eq!(drawn.dropped.len(), 2);
            assert!(drawn.clocks.is_empty() && drawn.steps.is_empty());
        }
        // The gRPC lease service runs under libfaketime: its clock faults apply.
        let s = schedule(vec![(
            0,
            Fault::ClockDrift {
                host: "lease".into(),
                ppm: 100_000,
            },
        )]);
        let plan = given_plan(&s);
        assert_eq!(plan.clocks["lease"].drift_ppm, 100_000);
    }
}
