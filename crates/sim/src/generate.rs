//! Fault schedules drawn from a seed: the one drawing code path. [`draw_schedule`] draws
//! `faults` faults of the given kinds, each at a time before the heal, each as hard as an
//! [`Intensity`] allows. [`random_schedule`] (`leasesim run` without a scenario) uses every
//! classic kind at the TTL-derived intensity; swarm profiles (`campaign::swarm`) choose, per
//! seed, a subset of kinds and a narrower intensity, then call [`draw_schedule`] too.

use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;
use serde::{Deserialize, Serialize};

use super::backend::{AuthorityKind, BackendView};
use super::config::{WorldConfig, replica_name};
use super::schedule::{ErrorStatus, Fault, FaultSchedule, Target};
use super::script::ForkMode;
use super::seed::{Subsystem, between, chance, rng};
use leasesim_core::hooks::PausePoint;
use leasesim_history::hosts;

/// A kind of fault the drawing code can draw. The names ([`FaultKind::name`]) are the scenario
/// files' spellings (`kinds = ["partition", "pause", …]`) and, where a kind draws one schedule
/// fault, that fault's own name (`lease_service_restarts`, `delete_lease_record`, …): one
/// vocabulary for swarm kinds and schedules. Read and written as that name (`kind_spelling`:
/// an old alias is read, a retired word is refused naming its successor).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum FaultKind {
    /// A replica cut from the lease or the ledger service, both ways.
    Partition,
    /// A replica cut from every host.
    Isolate,
    /// A stop-the-world pause of a replica, at a time or at a pause point (monotonic clock
    /// runs on).
    Pause,
    /// A suspend of a replica (its monotonic clock stops too).
    Suspend,
    /// One task of a replica stalled at a pause point.
    Stall,
    /// A replica's monotonic clock drifting (ppm).
    ClockDrift,
    /// A replica's or the lease authority's wall clock stepping forward or back.
    WallJump,
    /// A replica crashed (restarted at the heal).
    Crash,
    /// The lease service crashed and restarted a few times: the schedule's
    /// `lease_service_restarts` (older profiles spelled it `lease_restarts`, now refused).
    LeaseServiceRestarts,
    /// Latency and jitter on a link between a replica and a service.
    Latency,
    /// Random link failures between a replica and a service.
    LinkFlaps,
    /// The lease service's replies to a replica held back (beyond the TTL by default).
    DelayReplies,
    /// A replica's messages to a service, or a service's to the replica, dropped (one way).
    PartitionOneWay,
    /// The lease or the ledger service crashed, restarted after a downtime: it draws the
    /// schedule's pair `crash` of the service host and, `downtime_ms` later, `restart` of it
    /// (two schedule faults, so no one schedule word to share).
    CrashService,
    /// A session's lease record deleted at the authority (garbage collection): the
    /// schedule's `delete_lease_record`, one per sweep (older profiles spelled it
    /// `delete_record`, now refused).
    DeleteLeaseRecord,
    /// The lease authority (lease service, or the kube backend's API server) answering one
    /// replica's calls, or every caller's, with an unexpected status (internal, unavailable,
    /// permission denied) for as long as a crashed service's downtime (`downtime_ms`).
    /// Profiles written before it was one kind for both backends spell it `apiserver_errors`
    /// (still read).
    AuthorityErrors,
    /// A service's replies to a replica held one way (the connection lives on) for
    /// `delay_ms`, then delivered.
    HoldReplies,
    /// A replica's worker panicking at a pause point a run's work reaches
    /// ([`PausePoint::WORKER`]): the renewer must end and the lease be released.
    WorkerPanic,
    /// A replica's process forking, its child exiting at once or lingering (odds 1 in 2):
    /// only on a backend whose replicas are processes of one host (`flock`).
    Fork,
}

impl FaultKind {
    /// The kinds `leasesim run` draws from without a scenario, in their drawing order (fixed:
    /// changing it changes every such seed's schedule).
    pub const CLASSIC: [FaultKind; 12] = [
        FaultKind::Partition,
        FaultKind::Isolate,
        FaultKind::Pause,
        FaultKind::Suspend,
        FaultKind::Stall,
        FaultKind::ClockDrift,
        FaultKind::WallJump,
        FaultKind::Crash,
        FaultKind::LeaseServiceRestarts,
        FaultKind::Latency,
        FaultKind::LinkFlaps,
        FaultKind::DelayReplies,
    ];

    /// The kinds added after the classic ones, in the order they came.
    const NEWER: [FaultKind; 7] = [
        FaultKind::PartitionOneWay,
        FaultKind::CrashService,
        FaultKind::DeleteLeaseRecord,
        FaultKind::AuthorityErrors,
        FaultKind::HoldReplies,
        FaultKind::WorkerPanic,
        FaultKind::Fork,
    ];

    /// Every kind: the classic ones, then the newer ones.
    pub const ALL: [FaultKind; 19] = {
        let classic = Self::CLASSIC.len();
        let mut all = [FaultKind::Partition; 19];
        assert!(
            classic + Self::NEWER.len() == all.len(),
            "ALL is CLASSIC then NEWER, nothing more or less"
        );
        let mut i = 0;
        while i < all.len() {
            all[i] = if i < classic {
                Self::CLASSIC[i]
            } else {
                Self::NEWER[i - classic]
            };
            i += 1;
        }
        all
    };

    /// The kind's name as scenario files spell it (`clock_drift`, …).
    pub const fn name(self) -> &'static str {
        match self {
            FaultKind::Partition => "partition",
            FaultKind::Isolate => "isolate",
            FaultKind::Pause => "pause",
            FaultKind::Suspend => "suspend",
            FaultKind::Stall => "stall",
            FaultKind::ClockDrift => "clock_drift",
            FaultKind::WallJump => "wall_jump",
            FaultKind::Crash => "crash",
            FaultKind::LeaseServiceRestarts => "lease_service_restarts",
            FaultKind::Latency => "latency",
            FaultKind::LinkFlaps => "link_flaps",
            FaultKind::DelayReplies => "delay_replies",
            FaultKind::PartitionOneWay => "partition_one_way",
            FaultKind::CrashService => "crash_service",
            FaultKind::DeleteLeaseRecord => "delete_lease_record",
            FaultKind::AuthorityErrors => "authority_errors",
            FaultKind::HoldReplies => "hold_replies",
            FaultKind::WorkerPanic => "worker_panic",
            FaultKind::Fork => "fork",
        }
    }
}

/// How hard drawn faults are. Every range is inclusive, `(least, most)`; each fault draws
/// its value uniformly in its range.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intensity {
    /// Length of a pause or a suspend, ms.
    pub freeze_ms: (u64, u64),
    /// Length of a stall, ms.
    pub stall_ms: (u64, u64),
    /// Monotonic clock drift, ppm (negative: slow).
    pub drift_ppm: (i64, i64),
    /// Wall-clock step, ms (negative: back).
    pub wall_jump_ms: (i64, i64),
    /// Interval between lease service restarts, ms.
    pub restart_every_ms: (u64, u64),
    /// Lease service restarts per fault.
    pub restarts: (u32, u32),
    /// Least one-way latency of a slowed link, ms.
    pub latency_ms: (u64, u64),
    /// Jitter on top of it, ms.
    pub jitter_ms: (u64, u64),
    /// Link failure rate of a flapping link, ppm per tick.
    pub flap_ppm: (u32, u32),
    /// How long the lease service's replies are held back, ms.
    pub delay_ms: (u64, u64),
    /// How long a crashed service stays down before it restarts, ms.
    pub downtime_ms: (u64, u64),
    /// Sweeps of a record garbage collector: one deletion attempt of a session's record (if
    /// expired) a second apart, this many times.
    #[serde(default = "default_gc_sweeps")]
    pub gc_sweeps: (u64, u64),
    /// The statuses an `authority_errors` window draws from, uniformly (default, and left
    /// out of a file when it is: [`ErrorStatus::DRAWN_BY_DEFAULT`]).
    #[serde(
        default = "default_error_statuses",
        skip_serializing_if = "is_default_error_statuses"
    )]
    pub error_statuses: Vec<ErrorStatus>,
}

fn default_gc_sweeps() -> (u64, u64) {
    (1, 20)
}

fn default_error_statuses() -> Vec<ErrorStatus> {
    ErrorStatus::DRAWN_BY_DEFAULT.to_vec()
}

fn is_default_error_statuses(statuses: &[ErrorStatus]) -> bool {
    statuses == ErrorStatus::DRAWN_BY_DEFAULT
}

impl Intensity {
    /// The classic intensity for a TTL of `ttl_ms`: freezes ½–2 TTL, stalls 100 ms–1 TTL,
    /// drift ±40%, wall steps ±1 h, restarts every 1 s–1 TTL (1–3 of them), latency 1–200 ms
    /// with 0–200 ms jitter, flaps 1–2000 ppm, replies delayed 1–2 TTL, services down
    /// 1 s–1 TTL, record collectors sweeping 1–20 times.
    pub fn for_ttl(ttl_ms: u64) -> Self {
        Intensity {
            freeze_ms: (ttl_ms / 2, ttl_ms * 2),
            stall_ms: (100, ttl_ms),
            drift_ppm: (-400_000, 400_000),
            wall_jump_ms: (-3_600_000, 3_600_000),
            restart_every_ms: (1_000, ttl_ms),
            restarts: (1, 3),
            latency_ms: (1, 200),
            jitter_ms: (0, 200),
            flap_ppm: (1, 2_000),
            delay_ms: (ttl_ms, ttl_ms * 2),
            downtime_ms: (1_000, ttl_ms),
            error_statuses: default_error_statuses(),
            gc_sweeps: default_gc_sweeps(),
        }
    }
}

/// What to draw one schedule from.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrawOptions {
    /// The kinds to draw from, uniformly (a kind listed twice is drawn twice as often).
    pub kinds: Vec<FaultKind>,
    /// How many faults, `(least, most)`.
    pub faults: (u64, u64),
    /// When everything heals, ms; faults fall in `0..heal_at_ms`.
    pub heal_at_ms: u64,
    /// How hard.
    pub intensity: Intensity,
    /// The pause points a pause or a stall of a replica is drawn at, uniformly (default
    /// [`CLASSIC_POINTS`]; swarm profiles draw from [`REPLICA_POINTS`]).
    #[serde(default = "classic_points")]
    pub points: Vec<PausePoint>,
    /// The replica every fault drawn for a replica is aimed at: a swarm seed's victim (a
    /// profile's `victim_chance`, docs/campaigns.md#swarm-profiles). `None`: each fault draws
    /// its own replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub victim: Option<String>,
    /// Odds `(numerator, denominator)` that a fault striking one replica is aimed at the
    /// holder of one of the world's sessions (drawn uniformly) instead: a swarm's
    /// ([`SWARM_HOLDER_CHANCE`], docs/world.md#faults-aimed-at-the-holder). `None`, and with
    /// a victim: no fault is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_chance: Option<(u32, u32)>,
}

/// The odds a swarm aims a fault that strikes one replica at a session's holder: one in
/// two, so about half the faults strike the replica acting on a lease when they do, and the
/// other half (a third of them on the holder by chance with three replicas) keep striking
/// contenders and bystanders (docs/world.md#faults-aimed-at-the-holder).
pub const SWARM_HOLDER_CHANCE: (u32, u32) = (1, 2);

fn classic_points() -> Vec<PausePoint> {
    CLASSIC_POINTS.to_vec()
}

impl DrawOptions {
    /// The options of `leasesim run` without a scenario: 2–6 faults of every classic kind,
    /// over the first two thirds of the run, healed there.
    pub fn classic(config: &WorldConfig) -> Self {
        DrawOptions {
            kinds: FaultKind::CLASSIC.to_vec(),
            faults: (2, 6),
            heal_at_ms: config.duration.as_millis() as u64 * 2 / 3,
            intensity: Intensity::for_ttl(config.ttl.as_millis() as u64),
            points: classic_points(),
            victim: None,
            holder_chance: None,
        }
    }
}

/// Draws a schedule for `config` from its seed (the `Faults` stream, so the workload is the
/// same with and without faults), with the classic options.
pub fn random_schedule(config: &WorldConfig) -> FaultSchedule {
    let mut rng = rng(config.seed, Subsystem::Faults);
    let schedule = draw_schedule(&DrawOptions::classic(config), config, &mut rng);
    fit_to_backend(schedule, &config.backend.view(), config.skew_margin_percent)
}

/// The capability a world whose lease backend is `view` lacks to take `kind` (`freezes` for
/// a pause, suspend or stall, `drift` for a clock drift), if it lacks one: such a world
/// refuses the kind in a schedule and never draws it (docs/targets.md#what-a-target-world-refuses).
pub fn lacked_capability(view: &BackendView, kind: FaultKind) -> Option<&'static str> {
    match kind {
        FaultKind::Pause | FaultKind::Suspend | FaultKind::Stall if !view.freezes => {
            Some("freezes")
        }
        FaultKind::ClockDrift if !view.drift => Some("drift"),
        FaultKind::Fork if !view.forks => Some("forks"),
        _ => None,
    }
}

/// `schedule` for a world whose lease backend is `view`, with a skew margin of
/// `skew_margin_percent` of the TTL: faults drawn for the lease service's host name the
/// backend's host instead; faults the backend does not support (record deletion; restarts of
/// its host; error windows its server does not answer; freezes and drift its code cannot
/// take) are dropped; and for a backend judged
/// on its holders (no authority clock: KubeLease) every drift is clamped to ±half the margin
/// ([`holders_drift_bound_ppm`]), so a slow holder and a fast candidate together stay inside
/// the margin (docs/checks.md#excl). Drawing is unchanged, so the default gRPC
/// backend (host `lease`, every fault supported) gets exactly the schedule it always had.
pub fn fit_to_backend(
    mut schedule: FaultSchedule,
    view: &BackendView,
    skew_margin_percent: u8,
) -> FaultSchedule {
    schedule.faults.retain(|scheduled| match &scheduled.fault {
        Fault::DeleteLeaseRecord { .. } => view.record_deletion,
        Fault::LeaseServiceRestarts { .. } => view.restarts,
        Fault::Crash { host } | Fault::Restart { host } => view.restarts || host != hosts::LEASE,
        Fault::AuthorityErrors { .. } => view.error_windows,
        Fault::Pause { .. } | Fault::Suspend { .. } | Fault::Stall { .. } => view.freezes,
        Fault::ClockDrift { .. } => view.drift,
        Fault::Fork { .. } => view.forks,
        _ => true,
    });
    let bound = holders_drift_bound_ppm(skew_margin_percent);
    for scheduled in &mut schedule.faults {
        for host in scheduled.fault.hosts_mut() {
            if host == hosts::LEASE {
                view.host.clone_into(host);
            }
        }
        if let Fault::ClockDrift { ppm, .. } = &mut scheduled.fault
            && view.authority == AuthorityKind::Holders
        {
            *ppm = (*ppm).clamp(-bound, bound);
        }
    }
    schedule
}

/// The largest drift, ppm either way, drawn for a backend judged on its holders: half the
/// skew margin (a 10% margin: ±50,000 ppm), so holder slowness plus candidate speed never
/// exceeds the margin.
pub fn holders_drift_bound_ppm(skew_margin_percent: u8) -> i64 {
    i64::from(skew_margin_percent) * 10_000 / 2
}

/// Draws a schedule from `options` with `rng`: the number of faults, then for each its time
/// in `0..heal_at_ms` and the fault; sorted by time (stable). A crashed service's restart
/// comes after its downtime, no later than the heal. No kinds: no faults. With a victim,
/// every replica a fault names is the victim; the draws are the same as without one, so a
/// seed's times, kinds and strengths do not move. With `holder_chance` (and no victim), the
/// faults that strike one replica are then aimed at sessions' holders ([`aim_at_holders`]),
/// drawn after every other draw, so again nothing else moves.
pub fn draw_schedule(
    options: &DrawOptions,
    config: &WorldConfig,
    rng: &mut ChaCha20Rng,
) -> FaultSchedule {
    let span_ms = options.heal_at_ms;
    let count = between(rng, options.faults.0, options.faults.1);
    let mut schedule = FaultSchedule::new().heal_at(span_ms);
    if options.kinds.is_empty() {
        return schedule;
    }
    for _ in 0..count {
        let at_ms = between(rng, 0, span_ms.saturating_sub(1));
        let (fault, follow_ups) = draw(rng, options, config);
        let aim = |fault| aim_at(fault, options.victim.as_deref());
        schedule = schedule.at(at_ms, aim(fault));
        for (after_ms, fault) in follow_ups {
            schedule = schedule.at((at_ms + after_ms).min(span_ms), aim(fault));
        }
    }
    if let (Some(odds), None) = (options.holder_chance, &options.victim) {
        aim_at_holders(&mut schedule, odds, config, rng);
    }
    schedule.faults.sort_by_key(|f| f.at_ms);
    debug_assert!(
        schedule.faults.iter().all(|f| f.at_ms <= span_ms),
        "every fault, follow-ups included, is at or before the heal"
    );
    schedule
}

/// Aims each fault of `schedule` that strikes one replica, in drawing order, with `odds`, at
/// the holder of one of `config`'s sessions, drawn uniformly.
fn aim_at_holders(
    schedule: &mut FaultSchedule,
    (numerator, denominator): (u32, u32),
    config: &WorldConfig,
    rng: &mut ChaCha20Rng,
) {
    let last = config.sessions.len().saturating_sub(1) as u64;
    for scheduled in &mut schedule.faults {
        if scheduled.fault.replica_mut().is_none() || config.sessions.is_empty() {
            continue;
        }
        if chance(rng, numerator, denominator) {
            let session = config.sessions[between(rng, 0, last) as usize].clone();
            scheduled.target = Some(Target::Holder(session));
        }
    }
}

/// `fault` with every replica it names replaced by `victim` (services and the authority's
/// host stay); unchanged without a victim.
fn aim_at(mut fault: Fault, victim: Option<&str>) -> Fault {
    if let Some(victim) = victim {
        for host in fault.hosts_mut() {
            if hosts::is_replica(host) {
                victim.clone_into(host);
            }
        }
    }
    fault
}

/// One of `config`'s replicas, uniformly.
pub fn replica(rng: &mut ChaCha20Rng, config: &WorldConfig) -> String {
    replica_name(between(rng, 1, u64::from(config.replicas)) as u32)
}

/// A replica, or (one draw in replicas + 1) the lease authority's host: a wall-clock step
/// at the authority while a lease is held is the fault that shows an authority judging expiry
/// by its wall clock (`sims/wall-jump-at-the-authority.toml`), and nothing may read the wall
/// clock there either. Drawn as `lease`; [`fit_to_backend`] names the backend's host.
fn replica_or_authority(rng: &mut ChaCha20Rng, config: &WorldConfig) -> String {
    let n = between(rng, 1, u64::from(config.replicas) + 1) as u32;
    if n > config.replicas {
        hosts::LEASE.to_owned()
    } else {
        replica_name(n)
    }
}

fn service(rng: &mut ChaCha20Rng) -> String {
    if rng.next_u32().is_multiple_of(2) {
        hosts::LEASE
    } else {
        hosts::LEDGER
    }
    .to_owned()
}

/// A uniform draw in a signed range.
fn signed(rng: &mut ChaCha20Rng, (low, high): (i64, i64)) -> i64 {
    if high <= low {
        return low;
    }
    low + between(rng, 0, high.abs_diff(low)) as i64
}

fn range(rng: &mut ChaCha20Rng, (low, high): (u64, u64)) -> u64 {
    between(rng, low, high)
}

/// Interval between a record collector's sweeps, ms.
const GC_SWEEP_MS: u64 = 1_000;

/// The pause points `leasesim run` draws a replica's pauses and stalls at without a scenario,
/// in their drawing order (fixed: changing it changes every such seed's schedule).
pub const CLASSIC_POINTS: [PausePoint; 3] = [
    PausePoint::BeforeAppendSend,
    PausePoint::BeforeRenewSend,
    PausePoint::AfterGrantReceived,
];

/// Every pause point a replica reaches on every backend (a service host reaches only the
/// handler start): the classic ones, then the points before each validity decision (an
/// append's check, a journal open's check, a clean-up append's). Swarm profiles draw from
/// these unless they name their `points` (which may add [`DECISION_POINTS`]).
pub const REPLICA_POINTS: [PausePoint; 6] = [
    PausePoint::BeforeAppendSend,
    PausePoint::BeforeRenewSend,
    PausePoint::AfterGrantReceived,
    PausePoint::BeforeAppendCheck,
    PausePoint::BeforeOpenCheck,
    PausePoint::BeforeCleanupAppend,
];

/// The pause points only a replica whose lease client decides from a read of the authority's
/// state reaches (`KubeLease`, between its GET and the write it decided: the gRPC client's
/// authority decides in one critical section, docs/world.md#freezes-and-pause-points). A
/// swarm profile may name them in `points` on such a backend; the default list,
/// [`REPLICA_POINTS`], leaves them out, so that a profile without `points` draws on every
/// backend the schedules it always drew.
pub const DECISION_POINTS: [PausePoint; 1] = [PausePoint::AfterAuthorityRead];

/// One fault, and follow-ups `(ms later, fault)` for kinds that have them (a crashed
/// service's restart, a collector's later sweeps). The order of the draws is fixed (a pause
/// point first, then the kind): it is what every classic seed's schedule was drawn with.
fn draw(
    rng: &mut ChaCha20Rng,
    options: &DrawOptions,
    config: &WorldConfig,
) -> (Fault, Vec<(u64, Fault)>) {
    debug_assert!(
        !options.kinds.is_empty(),
        "draw_schedule draws no fault without kinds"
    );
    let strength = &options.intensity;
    // Drawn for every kind, used only by some: skipping it would shift every later draw.
    let points: &[PausePoint] = if options.points.is_empty() {
        &CLASSIC_POINTS
    } else {
        &options.points
    };
    let point = points[between(rng, 0, points.len() as u64 - 1) as usize];
    let kind = options.kinds[between(rng, 0, options.kinds.len() as u64 - 1) as usize];
    let alone = |fault: Fault| (fault, Vec::new());
    match kind {
        FaultKind::Partition
        | FaultKind::Isolate
        | FaultKind::Latency
        | FaultKind::LinkFlaps
        | FaultKind::DelayReplies
        | FaultKind::HoldReplies
        | FaultKind::PartitionOneWay => alone(draw_link_fault(rng, kind, strength, config)),
        FaultKind::Pause | FaultKind::Suspend | FaultKind::Stall | FaultKind::WorkerPanic => {
            alone(draw_freeze_fault(rng, kind, point, strength, config))
        }
        FaultKind::ClockDrift | FaultKind::WallJump => {
            alone(draw_clock_fault(rng, kind, strength, config))
        }
        FaultKind::Crash => alone(Fault::Crash {
            host: replica(rng, config),
        }),
        FaultKind::Fork => alone(Fault::Fork {
            host: replica(rng, config),
            mode: if rng.next_u32().is_multiple_of(2) {
                ForkMode::Exit
            } else {
                ForkMode::Linger
            },
        }),
        FaultKind::LeaseServiceRestarts => alone(Fault::LeaseServiceRestarts {
            every_ms: range(rng, strength.restart_every_ms),
            count: between(
                rng,
                u64::from(strength.restarts.0),
                u64::from(strength.restarts.1),
            ) as u32,
            downtime_ms: None,
        }),
        FaultKind::CrashService => draw_service_crash(rng, strength),
        FaultKind::DeleteLeaseRecord => draw_record_deletion(rng, strength, config),
        FaultKind::AuthorityErrors => alone(draw_authority_errors(rng, strength, config)),
    }
}

/// A fault on a link between a replica and a service (or all of a replica's links).
fn draw_link_fault(
    rng: &mut ChaCha20Rng,
    kind: FaultKind,
    strength: &Intensity,
    config: &WorldConfig,
) -> Fault {
    match kind {
        FaultKind::Partition => Fault::Partition {
            a: replica(rng, config),
            b: service(rng),
        },
        FaultKind::Isolate => Fault::Isolate {
            host: replica(rng, config),
        },
        FaultKind::Latency => Fault::Latency {
            a: replica(rng, config),
            b: service(rng),
            latency_ms: range(rng, strength.latency_ms),
            jitter_ms: range(rng, strength.jitter_ms),
        },
        FaultKind::LinkFlaps => Fault::LinkFlaps {
            a: replica(rng, config),
            b: service(rng),
            fail_ppm: between(
                rng,
                u64::from(strength.flap_ppm.0),
                u64::from(strength.flap_ppm.1),
            ) as u32,
        },
        FaultKind::DelayReplies => Fault::DelayReplies {
            from: hosts::LEASE.into(),
            to: replica(rng, config),
            delay_ms: range(rng, strength.delay_ms),
        },
        FaultKind::HoldReplies => Fault::HoldReplies {
            from: service(rng),
            to: replica(rng, config),
            duration_ms: range(rng, strength.delay_ms),
        },
        FaultKind::PartitionOneWay => {
            let (replica, service) = (replica(rng, config), service(rng));
            if rng.next_u32().is_multiple_of(2) {
                Fault::PartitionOneWay {
                    from: replica,
                    to: service,
                }
            } else {
                Fault::PartitionOneWay {
                    from: service,
                    to: replica,
                }
            }
        }
        other => unreachable!("draw routed a non-link kind here: {other:?}"),
    }
}

/// A freeze of a replica: a pause (at a time, or at `point` on a coin flip), a suspend, a
/// stall at `point`, or a worker panic at a point a run's work reaches (`point` if it is
/// one, else one drawn from [`PausePoint::WORKER`]).
fn draw_freeze_fault(
    rng: &mut ChaCha20Rng,
    kind: FaultKind,
    point: PausePoint,
    strength: &Intensity,
    config: &WorldConfig,
) -> Fault {
    match kind {
        FaultKind::Pause => Fault::Pause {
            host: replica(rng, config),
            duration_ms: range(rng, strength.freeze_ms),
            at_point: (rng.next_u32().is_multiple_of(2)).then_some(point),
        },
        FaultKind::Suspend => Fault::Suspend {
            host: replica(rng, config),
            duration_ms: range(rng, strength.freeze_ms),
            at_point: None,
        },
        FaultKind::Stall => Fault::Stall {
            host: replica(rng, config),
            point,
            duration_ms: range(rng, strength.stall_ms),
        },
        FaultKind::WorkerPanic => {
            let host = replica(rng, config);
            let point = if PausePoint::WORKER.contains(&point) {
                point
            } else {
                PausePoint::WORKER[between(rng, 0, PausePoint::WORKER.len() as u64 - 1) as usize]
            };
            Fault::WorkerPanic { host, point }
        }
        other => unreachable!("draw routed a non-freeze kind here: {other:?}"),
    }
}

/// A clock fault: a replica's monotonic drift, or a wall-clock step of a replica or the
/// authority.
fn draw_clock_fault(
    rng: &mut ChaCha20Rng,
    kind: FaultKind,
    strength: &Intensity,
    config: &WorldConfig,
) -> Fault {
    match kind {
        FaultKind::ClockDrift => Fault::ClockDrift {
            host: replica(rng, config),
            ppm: signed(rng, strength.drift_ppm),
        },
        FaultKind::WallJump => Fault::WallJump {
            host: replica_or_authority(rng, config),
            delta_ms: signed(rng, strength.wall_jump_ms),
        },
        other => unreachable!("draw routed a non-clock kind here: {other:?}"),
    }
}

/// An error window of the authority: a status, for as long as a downtime, answered to one
/// replica (odds 1 in 2) or to every caller. The status and the window's length are drawn
/// first, as `apiserver_errors` drew its code and length.
fn draw_authority_errors(
    rng: &mut ChaCha20Rng,
    strength: &Intensity,
    config: &WorldConfig,
) -> Fault {
    let duration_ms = range(rng, strength.downtime_ms);
    let statuses = match strength.error_statuses.as_slice() {
        [] => &ErrorStatus::DRAWN_BY_DEFAULT[..],
        some => some,
    };
    let status = statuses[between(rng, 0, statuses.len() as u64 - 1) as usize];
    let to = rng
        .next_u32()
        .is_multiple_of(2)
        .then(|| replica(rng, config));
    Fault::AuthorityErrors {
        duration_ms,
        status,
        to,
    }
}

/// A service crash, and its restart after a downtime.
fn draw_service_crash(rng: &mut ChaCha20Rng, strength: &Intensity) -> (Fault, Vec<(u64, Fault)>) {
    let host = service(rng);
    let downtime_ms = range(rng, strength.downtime_ms);
    let restart = Fault::Restart { host: host.clone() };
    (Fault::Crash { host }, vec![(downtime_ms, restart)])
}

/// A collector's sweeps of one session's lease record: one now, the rest [`GC_SWEEP_MS`]
/// apart.
fn draw_record_deletion(
    rng: &mut ChaCha20Rng,
    strength: &Intensity,
    config: &WorldConfig,
) -> (Fault, Vec<(u64, Fault)>) {
    debug_assert!(
        !config.sessions.is_empty(),
        "a world has a session to delete"
    );
    let last = config.sessions.len().saturating_sub(1) as u64;
    let session = config.sessions[between(rng, 0, last) as usize].clone();
    let sweeps = range(rng, strength.gc_sweeps).max(1);
    let sweep = || Fault::DeleteLeaseRecord {
        session: session.clone(),
    };
    let later: Vec<(u64, Fault)> = (1..sweeps).map(|n| (n * GC_SWEEP_MS, sweep())).collect();
    debug_assert!(
        later.windows(2).all(|w| w[0].0 < w[1].0),
        "sweeps are drawn in time order"
    );
    (sweep(), later)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_valid_schedule() {
        let mut config = WorldConfig {
            seed: 42,
            ..WorldConfig::default()
        };
        let schedule = random_schedule(&config);
        assert_eq!(schedule, random_schedule(&config));
        assert_eq!(schedule.validate(&config.hosts()), Ok(()));
        for seed in 0..200 {
            config.seed = seed;
            let drawn = random_schedule(&config);
            assert_eq!(drawn.validate(&config.hosts()), Ok(()), "seed {seed}");
        }
        config.seed = 42;
        assert!((2..=6).contains(&schedule.faults.len()));
        assert_eq!(schedule.heal_at_ms, Some(40_000));
        config.seed = 43;
        assert_ne!(schedule, random_schedule(&config));
    }

    /// Wall-clock steps fall on every replica and on the authority's host.
    #[test]
    fn wall_jumps_step_replicas_and_the_authority() {
        let config = WorldConfig::default();
        let mut options = DrawOptions::classic(&config);
        options.kinds = vec![FaultKind::WallJump];
        options.faults = (20, 20);
        let mut stepped = std::collections::BTreeSet::new();
        for seed in 0..5 {
            let schedule = draw_schedule(&options, &config, &mut rng(seed, Subsystem::Faults));
            for scheduled in schedule.faults {
                let Fault::WallJump { host, .. } = scheduled.fault else {
                    panic!("seed {seed}: not a wall jump: {scheduled:?}");
                };
                stepped.insert(host);
            }
        }
        assert_eq!(
            stepped.into_iter().collect::<Vec<_>>(),
            ["lease", "replica-1", "replica-2", "replica-3"]
        );
    }

    /// Every kind, at the classic intensity, draws schedules the world accepts.
    #[test]
    fn every_kind_draws_valid_faults() {
        let config = WorldConfig::default();
        let mut options = DrawOptions::classic(&config);
        options.kinds = FaultKind::ALL.to_vec();
        options.faults = (30, 30);
        for seed in 0..50 {
            let schedule = draw_schedule(&options, &config, &mut rng(seed, Subsystem::Faults));
            assert_eq!(schedule.validate(&config.hosts()), Ok(()), "seed {seed}");
        }
    }

    /// A victim moves no draw: the same seed draws the same times, kinds and strengths, and
    /// only the replicas named change — every one of them to the victim; services and the
    /// authority's host stay.
    #[test]
    fn a_victim_renames_the_replicas_a_schedule_strikes_and_nothing_else() {
        let config = WorldConfig::default();
        let mut options = DrawOptions::classic(&config);
        options.kinds = FaultKind::ALL.to_vec();
        options.faults = (30, 30);
        let mut aimed = options.clone();
        aimed.victim = Some("replica-2".to_owned());
        let mut renamed = 0;
        for seed in 0..20 {
            let free = draw_schedule(&options, &config, &mut rng(seed, Subsystem::Faults));
            let at_victim = draw_schedule(&aimed, &config, &mut rng(seed, Subsystem::Faults));
            assert_eq!(free.faults.len(), at_victim.faults.len(), "seed {seed}");
            for (free, at_victim) in free.faults.iter().zip(&at_victim.faults) {
                assert_eq!(free.at_ms, at_victim.at_ms, "seed {seed}");
                let mut expected = free.fault.clone();
                for host in expected.hosts_mut() {
                    if hosts::is_replica(host) {
                        renamed += usize::from(host != "replica-2");
                        "replica-2".clone_into(host);
                    }
                }
                assert_eq!(at_victim.fault, expected, "seed {seed}");
            }
            assert_eq!(at_victim.validate(&config.hosts()), Ok(()), "seed {seed}");
        }
        assert!(renamed > 100, "only {renamed} replicas renamed");
    }

    /// Holder aims are drawn after everything else: the same seed draws the same faults at
    /// the same times, and with odds of one every fault that strikes one replica (and no
    /// other) is aimed at a holder of one of the world's sessions, both sessions drawn; a
    /// seed with a victim aims nothing at holders.
    #[test]
    fn holder_aims_move_no_draw_and_take_only_faults_on_one_replica() {
        let config = WorldConfig::default();
        let mut options = DrawOptions::classic(&config);
        options.kinds = FaultKind::ALL.to_vec();
        options.faults = (30, 30);
        let mut aimed = options.clone();
        aimed.holder_chance = Some((1, 1));
        let mut sessions = std::collections::BTreeSet::new();
        for seed in 0..20 {
            let free = draw_schedule(&options, &config, &mut rng(seed, Subsystem::Faults));
            let at_holders = draw_schedule(&aimed, &config, &mut rng(seed, Subsystem::Faults));
            assert_eq!(free.faults.len(), at_holders.faults.len(), "seed {seed}");
            for (free, at_holder) in free.faults.iter().zip(&at_holders.faults) {
                assert_eq!(
                    (free.at_ms, &free.fault),
                    (at_holder.at_ms, &at_holder.fault)
                );
                let one_replica = free.fault.clone().replica_mut().is_some();
                match &at_holder.target {
                    Some(Target::Holder(session)) => {
                        assert!(one_replica, "seed {seed}: {at_holder:?}");
                        sessions.insert(session.clone());
                    }
                    None => assert!(!one_replica, "seed {seed}: {at_holder:?}"),
                }
            }
            assert_eq!(at_holders.validate(&config.hosts()), Ok(()), "seed {seed}");
            let mut with_victim = aimed.clone();
            with_victim.victim = Some("replica-1".to_owned());
            let victim = draw_schedule(&with_victim, &config, &mut rng(seed, Subsystem::Faults));
            assert!(
                victim.faults.iter().all(|f| f.target.is_none()),
                "seed {seed}"
            );
        }
        assert_eq!(sessions.into_iter().collect::<Vec<_>>(), ["s1", "s2"]);
    }
}
