//! The nemesis: steps the simulation and applies the fault schedule at its times, then heals
//! everything once the schedule's effects have ended.

use std::collections::BTreeMap;
use std::time::Duration;

use super::config::{WorldConfig, config_line};
use super::fault_lines;
use super::gate::FreezeKind;
use super::hosts::Hosts;
use super::schedule::{Fault, FaultSchedule, Target};
use super::stage::{ClockChange, Stage};
use leasesim_core::lease::SessionId;
use leasesim_history::hosts as host_names;
use leasesim_history::{HistEvent, NemesisAction};

/// The world's simulation, which the nemesis steps and acts on: turmoil or the engine.
type Sim = dyn Stage;

/// What the nemesis does at a time: a scheduled fault, or a follow-up it scheduled itself.
#[derive(Clone, Debug)]
enum Action {
    Apply(Fault),
    /// A scheduled fault aimed at a target, resolved when it strikes.
    ApplyAimed(Fault, Target),
    /// End of a reply delay: deliver what was held.
    Deliver {
        a: String,
        b: String,
    },
    /// One of a series of lease service restarts: a crash, and a start `downtime_ms` later
    /// (at once without one).
    BounceLease {
        downtime_ms: Option<u64>,
    },
    /// The start that ends a restart's downtime.
    StartLease,
    /// End of an error window: answer `to`'s requests again.
    ServeRequests {
        to: Option<String>,
    },
    /// End of a one-way reply hold: deliver what it held.
    ReleaseReplies {
        from: String,
        to: String,
    },
    /// The schedule's effects are over: heal everything.
    HealAll,
}

/// Runs `sim` for `config.duration`, applying `schedule`. Returns when everything was healed:
/// at the schedule's `heal_at_ms` (default: the end of the run) once no host is frozen, or
/// the run's end if that never happened.
///
/// On turmoil it steps every millisecond; on the engine it runs to the next action (at most a
/// millisecond at a time while it watches for replicas that stopped, or after the run's
/// duration with a liveness phase).
///
/// # Errors
/// The stage's, when a host fails.
pub(crate) fn drive(
    sim: &mut Sim,
    config: &WorldConfig,
    schedule: &FaultSchedule,
    hosts: &Hosts,
    restart_stopped: bool,
) -> Result<Duration, String> {
    let mut actions: BTreeMap<(u64, u64), Action> = BTreeMap::new();
    let mut order = 0;
    let mut push = |actions: &mut BTreeMap<(u64, u64), Action>, at_ms: u64, action: Action| {
        order += 1;
        actions.insert((at_ms, order), action);
    };
    for scheduled in schedule.sorted() {
        push(
            &mut actions,
            scheduled.at_ms,
            match scheduled.target {
                None => Action::Apply(scheduled.fault),
                Some(target) => Action::ApplyAimed(scheduled.fault, target),
            },
        );
    }
    let heal_ms = schedule
        .heal_at_ms
        .unwrap_or(config.duration.as_millis() as u64);
    push(&mut actions, heal_ms, Action::HealAll);
    let mut healed: Option<Duration> = None;
    let mut stopped_since: BTreeMap<String, Duration> = BTreeMap::new();
    let replicas = replica_names(hosts);
    loop {
        let now = sim.elapsed();
        let now_ms = now.as_millis() as u64;
        start_deferred_suspends(sim, hosts, now);
        while let Some(entry) = actions.first_entry() {
            if entry.key().0 > now_ms {
                break;
            }
            let action = entry.remove();
            if matches!(action, Action::HealAll) && !frozen(hosts, now) {
                healed = Some(now);
            }
            // A heal ends a series of lease service restarts: drop what is left of it (the
            // heal itself starts a service that is down).
            if matches!(action, Action::HealAll | Action::Apply(Fault::Heal)) {
                actions.retain(|_, pending| {
                    !matches!(pending, Action::BounceLease { .. } | Action::StartLease)
                });
            }
            for (delay_ms, follow_up) in apply(sim, hosts, now, action) {
                push(&mut actions, now_ms + delay_ms, follow_up);
            }
        }
        if over(config, hosts, healed, now) {
            return Ok(healed.unwrap_or(config.duration).min(now));
        }
        if restart_stopped {
            restart_stopped_replicas(sim, hosts, &replicas, now, &mut stopped_since);
        }
        super::hosted::set_true_now(now);
        let next_ms = actions
            .first_key_value()
            .map_or(u64::MAX, |((at_ms, _), _)| *at_ms);
        let next = Duration::from_millis(next_ms).min(config.duration.max(now));
        let watch = restart_stopped || now >= config.duration || awaits_deferred_suspend(hosts);
        sim.advance(next, watch)?;
    }
}

/// Whether the run is over at `now`: at `config.duration`, or with the liveness phase, once
/// the heal has happened (it waits for frozen hosts) and LIVE's bound after it has run out.
fn over(config: &WorldConfig, hosts: &Hosts, healed: Option<Duration>, now: Duration) -> bool {
    if now < config.duration {
        return false;
    }
    if !config.liveness_phase {
        return true;
    }
    let Some(healed) = healed else {
        return false;
    };
    let restarted = hosts.clocks[&hosts.authority_host]
        .segments(now)
        .iter()
        .any(|segment| segment.boot > 0);
    let bound = config_line(config).live_bound_us(restarted);
    // One tick past the bound, so the last append it allows can complete.
    now > healed + Duration::from_micros(bound)
}

/// Applies one action; returns follow-ups as (delay from now in ms, action).
fn apply(sim: &mut Sim, hosts: &Hosts, now: Duration, action: Action) -> Vec<(u64, Action)> {
    super::trace::set_trace_now(now);
    tracing::info!(target: "leasesim::nemesis", at = ?now, ?action, "nemesis");
    hosts.recorder.set_harness_now(now);
    let at = leasesim_history::micros(now);
    let record = |action: NemesisAction, host: &str, peer: Option<&str>| {
        hosts
            .recorder
            .nemesis(fault_lines::line(at, action, host, peer, None));
    };
    match action {
        Action::ApplyAimed(mut fault, target) => {
            super::aim::strike(&hosts.recorder, &mut fault, &target, at);
            return apply(sim, hosts, now, Action::Apply(fault));
        }
        Action::Apply(fault) => {
            for line in fault_lines::fault_lines(now, &fault, &hosts.authority_host) {
                hosts.recorder.nemesis(line);
            }
            return apply_fault(sim, hosts, now, fault);
        }
        Action::Deliver { a, b } => {
            record(NemesisAction::Deliver, &a, Some(&b));
            sim.release(&a, &b)
        }
        Action::ServeRequests { to } => {
            record(NemesisAction::Serve, &hosts.authority_host, to.as_deref());
            hosts.error_windows.close(&to)
        }
        Action::ReleaseReplies { from, to } => {
            record(NemesisAction::ReleaseReplies, &from, Some(&to));
            if let Some(holds) = &hosts.reply_holds {
                holds.release(&from, &to);
            }
        }
        Action::BounceLease { downtime_ms: None } => {
            let host = hosts.authority_host.clone();
            record(NemesisAction::Restart, &host, None);
            restart(sim, hosts, now, &host)
        }
        Action::BounceLease {
            downtime_ms: Some(downtime_ms),
        } => {
            let host = hosts.authority_host.clone();
            if sim.is_running(&host) {
                record(NemesisAction::Crash, &host, None);
                crash(sim, hosts, now, &host);
                return vec![(downtime_ms, Action::StartLease)];
            }
        }
        Action::StartLease => {
            let host = hosts.authority_host.clone();
            if hosts.is_crashed(&host) {
                record(NemesisAction::Restart, &host, None);
                restart(sim, hosts, now, &host);
            }
        }
        // A freeze that started at a pause point ends when it ends: heal after it.
        Action::HealAll if frozen(hosts, now) => return vec![(HEAL_RETRY_MS, Action::HealAll)],
        Action::HealAll => {
            record(NemesisAction::Heal, fault_lines::ALL, None);
            heal(sim, hosts, now)
        }
    }
    Vec::new()
}

/// How long a replica that stopped by itself (a graceful shutdown) stays down before it is
/// started again, in a generated workload.
const STOPPED_REPLICA_RESTART: Duration = Duration::from_secs(1);

/// Every replica's name, in name order (the stage resolves each to its address once).
fn replica_names(hosts: &Hosts) -> Vec<String> {
    hosts
        .clocks
        .keys()
        .filter(|h| host_names::is_replica(h))
        .cloned()
        .collect()
}

/// Starts again the replicas that stopped by themselves (not crashed by the nemesis), one
/// second after they stopped, so long generated runs keep their contention.
fn restart_stopped_replicas(
    sim: &mut Sim,
    hosts: &Hosts,
    replicas: &[String],
    now: Duration,
    stopped_since: &mut BTreeMap<String, Duration>,
) {
    for host in replicas {
        if sim.is_running(host) || hosts.is_crashed(host) {
            stopped_since.remove(host);
            continue;
        }
        let since = *stopped_since.entry(host.clone()).or_insert(now);
        if now >= since + STOPPED_REPLICA_RESTART {
            stopped_since.remove(host);
            restart(sim, hosts, now, host);
        }
    }
}

/// How often the final heal looks again while a host is still frozen.
const HEAL_RETRY_MS: u64 = 100;

fn frozen(hosts: &Hosts, now: Duration) -> bool {
    hosts
        .freezes
        .values()
        .any(|freeze| freeze.is_frozen_at(now))
}

/// Applies one scheduled fault at `now`; returns the follow-up actions it schedules, as
/// `(ms after now, action)`. Faults are routed by what they act on, so each phase reads as one
/// kind of damage.
fn apply_fault(sim: &mut Sim, hosts: &Hosts, now: Duration, fault: Fault) -> Vec<(u64, Action)> {
    match fault {
        Fault::Heal => heal(sim, hosts, now),
        Fault::Partition { .. }
        | Fault::PartitionOneWay { .. }
        | Fault::Isolate { .. }
        | Fault::Hold { .. }
        | Fault::Release { .. }
        | Fault::Latency { .. }
        | Fault::LinkFlaps { .. }
        | Fault::DelayReplies { .. }
        | Fault::HoldReplies { .. } => return apply_link_fault(sim, hosts, fault),
        Fault::Pause { .. }
        | Fault::Suspend { .. }
        | Fault::Stall { .. }
        | Fault::WorkerPanic { .. } => apply_freeze_fault(sim, hosts, now, fault),
        Fault::ClockDrift { .. } | Fault::WallJump { .. } | Fault::WallOffset { .. } => {
            apply_clock_fault(sim, hosts, now, fault)
        }
        Fault::Crash { .. } | Fault::Restart { .. } | Fault::DeleteLeaseRecord { .. } => {
            apply_host_fault(sim, hosts, now, fault);
        }
        // The replica's process forks on its host (a task there runs it, reading the host's
        // clocks), as soon as that task runs.
        Fault::Fork { host, mode } => {
            if !hosts.forks(&host).request(mode) {
                tracing::info!(target: "leasesim::sim::nemesis", %host, "fork: no process runs there");
            }
        }
        // A series of lease service restarts: follow-ups `every_ms` apart, the first now,
        // each down for its downtime.
        Fault::LeaseServiceRestarts {
            every_ms,
            count,
            downtime_ms,
        } => {
            let bounce = Action::BounceLease { downtime_ms };
            return (0..u64::from(count))
                .map(|i| (i * every_ms, bounce.clone()))
                .collect();
        }
        Fault::AuthorityErrors {
            duration_ms,
            status,
            to,
        } => {
            hosts.error_windows.open(to.clone(), status);
            return vec![(duration_ms, Action::ServeRequests { to })];
        }
    }
    Vec::new()
}

/// A fault on the network between hosts. Only reply delays and holds schedule a follow-up:
/// the delivery of what they held.
fn apply_link_fault(sim: &mut Sim, hosts: &Hosts, fault: Fault) -> Vec<(u64, Action)> {
    let ms = Duration::from_millis;
    match fault {
        Fault::Partition { a, b } => sim.partition(&a, &b),
        Fault::PartitionOneWay { from, to } => sim.partition_oneway(&from, &to),
        Fault::Isolate { host } => {
            debug_assert!(
                hosts.clocks.contains_key(&host),
                "isolating {host}, which is not a host of the world (the schedule was validated)"
            );
            for other in hosts.clocks.keys().filter(|h| **h != host) {
                sim.partition(&host, other);
            }
        }
        Fault::Hold { a, b } => sim.hold(&a, &b),
        Fault::Release { a, b } => sim.release(&a, &b),
        Fault::Latency {
            a,
            b,
            latency_ms,
            jitter_ms,
        } => sim.set_latency(&a, &b, ms(latency_ms), ms(latency_ms + jitter_ms)),
        Fault::LinkFlaps { a, b, fail_ppm } => {
            debug_assert!(fail_ppm <= 1_000_000, "a fail rate above 1: {fail_ppm} ppm");
            sim.set_fail_rate(&a, &b, f64::from(fail_ppm) / 1_000_000.0)
        }
        Fault::DelayReplies { from, to, delay_ms } => {
            sim.hold(&from, &to);
            return vec![(delay_ms, Action::Deliver { a: from, b: to })];
        }
        Fault::HoldReplies {
            from,
            to,
            duration_ms,
        } => {
            if let Some(holds) = &hosts.reply_holds {
                holds.hold(&from, &to);
            }
            return vec![(duration_ms, Action::ReleaseReplies { from, to })];
        }
        other => unreachable!("apply_fault routed a non-link fault here: {other:?}"),
    }
    Vec::new()
}

/// A fault that freezes a host now or arms a freeze (or a worker panic) at a pause point.
fn apply_freeze_fault(sim: &mut Sim, hosts: &Hosts, now: Duration, fault: Fault) {
    let ms = Duration::from_millis;
    let kind = match fault {
        Fault::Suspend { .. } => FreezeKind::Suspend,
        _ => FreezeKind::Pause,
    };
    match fault {
        Fault::Pause {
            host,
            duration_ms,
            at_point,
        }
        | Fault::Suspend {
            host,
            duration_ms,
            at_point,
        } => freeze(sim, hosts, &host, now, (kind, ms(duration_ms)), at_point),
        Fault::Stall {
            host,
            point,
            duration_ms,
        } => hosts.freezes[&host].arm(point, FreezeKind::Stall, ms(duration_ms)),
        Fault::WorkerPanic { host, point } => {
            hosts.freezes[&host].arm(point, FreezeKind::Panic, Duration::ZERO)
        }
        other => unreachable!("apply_fault routed a non-freeze fault here: {other:?}"),
    }
}

/// A fault on a host's clock: its monotonic rate, or its wall clock (ms in the schedule, ns
/// on the clock).
fn apply_clock_fault(sim: &mut Sim, hosts: &Hosts, now: Duration, fault: Fault) {
    match fault {
        Fault::ClockDrift { host, ppm } => {
            hosts.clocks[&host].set_drift_ppm(now, ppm);
            sim.clock(&host, ClockChange::Drift(ppm));
        }
        Fault::WallJump { host, delta_ms } => {
            if delta_ms < 0 {
                hosts.recorder.event(&host, HistEvent::BackwardWallJump);
            }
            hosts.clocks[&host].jump_wall(delta_ms * 1_000_000);
            sim.clock(&host, ClockChange::WallJump(delta_ms * 1_000_000));
        }
        Fault::WallOffset { host, offset_ms } => {
            hosts.clocks[&host].set_wall_offset(offset_ms * 1_000_000);
            sim.clock(&host, ClockChange::WallOffset(offset_ms * 1_000_000));
        }
        other => unreachable!("apply_fault routed a non-clock fault here: {other:?}"),
    }
}

/// A fault on a host's process or its state: a crash, a restart, or the deletion of an
/// expired lease record.
fn apply_host_fault(sim: &mut Sim, hosts: &Hosts, now: Duration, fault: Fault) {
    match fault {
        Fault::Crash { host } => crash(sim, hosts, now, &host),
        Fault::Restart { host } => restart(sim, hosts, now, &host),
        Fault::DeleteLeaseRecord { session } => delete_lease_record(hosts, now, session),
        other => unreachable!("apply_fault routed a non-host fault here: {other:?}"),
    }
}

/// A record collector's sweep of `session`, if the authority runs and the name is valid.
fn delete_lease_record(hosts: &Hosts, now: Duration, session: String) {
    if let (Some(authority), Ok(session)) = (hosts.authority_faults(), SessionId::new(session)) {
        // The nemesis runs outside every host: read the authority's clock at `now`.
        let reading = hosts.clocks[&hosts.authority_host].now_at(now);
        authority.delete_expired_record(&session, reading);
    }
}

/// A host-wide freeze now (the gate holds the host's gated tasks, and on the engine every task
/// of the host stops too), or one armed at a pause point (the gate's alone).
fn freeze(
    sim: &mut Sim,
    hosts: &Hosts,
    host: &str,
    now: Duration,
    (kind, duration): (FreezeKind, Duration),
    at_point: Option<leasesim_core::hooks::PausePoint>,
) {
    let control = &hosts.freezes[host];
    match (at_point, kind) {
        (Some(point), kind) => return control.arm(point, kind, duration),
        (None, FreezeKind::Suspend) => control.suspend(now, duration),
        (None, _) => control.pause(now, duration),
    }
    sim.freeze_host(host, kind, duration);
}

/// Starts now every suspend at a pause point that a task reached since the nemesis last
/// acted, on a host that leaves them to the nemesis (the world on the engine: the engine's
/// clock of a host changes between slices only, so the world's clock of it stops here too, at
/// most one slice after the point; docs/world.md#the-world-on-the-engine).
fn start_deferred_suspends(sim: &mut Sim, hosts: &Hosts, now: Duration) {
    if !hosts.defers_suspends {
        return;
    }
    for (host, control) in &hosts.freezes {
        for duration in control.take_deferred_suspends(now) {
            freeze(sim, hosts, host, now, (FreezeKind::Suspend, duration), None);
        }
    }
}

/// Whether a host waits for a suspend at a pause point that the nemesis must start as soon as
/// it fires ([`start_deferred_suspends`]).
fn awaits_deferred_suspend(hosts: &Hosts) -> bool {
    hosts.defers_suspends
        && hosts
            .freezes
            .values()
            .any(|control| control.awaits_deferred_suspend() || control.has_deferred_suspends())
}

/// A crash loses the host's volatile state and its disk's unsynced writes. A down authority's
/// clock reads as stopped (a suspended segment until its restart), so the history shows how
/// long it was up: its grace countdown runs on uptime only (LIVE's grace rule).
fn crash(sim: &mut Sim, hosts: &Hosts, now: Duration, host: &str) {
    hosts.conns[host].tear_down(|| sim.crash(host));
    hosts.set_crashed(host, true);
    hosts.freezes[host].clear(now);
    sim.end_freeze(host);
    if host == hosts.authority_host {
        hosts.clocks[host].suspend(now);
        sim.clock(host, ClockChange::Suspend);
    }
    hosts.crash_disk(host);
}

/// Starts a host again (crashing it first if it runs): a new incarnation on a rebooted clock.
fn restart(sim: &mut Sim, hosts: &Hosts, now: Duration, host: &str) {
    if sim.is_running(host) {
        crash(sim, hosts, now, host);
    }
    hosts.clocks[host].restart(now);
    hosts.set_crashed(host, false);
    hosts.conns[host].tear_down(|| sim.bounce(host));
}

/// Repairs and releases every link, resets link fail rates, ends every freeze and starts
/// every host the nemesis crashed again (not those that finished by themselves).
fn heal(sim: &mut Sim, hosts: &Hosts, now: Duration) {
    let names: Vec<&String> = hosts.clocks.keys().collect();
    // A `latency` fault ends here too: a link left slower than the 1 s connect timeout would
    // keep its replica from the service for the rest of the run.
    let (least, most) = hosts.link_latency_ms;
    let latency = (Duration::from_millis(least), Duration::from_millis(most));
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            sim.heal_link(a, b, latency);
        }
    }
    for (host, freeze) in &hosts.freezes {
        freeze.clear(now);
        sim.end_freeze(host);
    }
    hosts.error_windows.heal();
    if let Some(holds) = &hosts.reply_holds {
        holds.heal();
    }
    for host in hosts.clocks.keys() {
        if hosts.is_crashed(host) {
            restart(sim, hosts, now, host);
        }
    }
}
