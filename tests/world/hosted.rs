//! What code the world hosts unmodified reads as time and entropy (`leasesim::sim::hosted`,
//! docs/targets.md#the-worlds-side): inside a host, that host's clocks (a wall offset on one
//! host shows on it alone; a restarted host is registered again); on a world's thread outside
//! every host, a fixed answer; elsewhere the real clock. Entropy is drawn from the run's seed.
//! And what a world whose code cannot take freezes or drift refuses, and where it runs.

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use leasesim::lease::SessionLease;
use leasesim::sim::backend::{
    AuthorityHost, Backend, BackendView, Grpc, HostResult, ReplicaEnv, WorldBackend,
    register_targets, target_backend,
};
use leasesim::sim::config::{WALL_EPOCH, WorldConfig, WorldEngine};
use leasesim::sim::generate::random_schedule;
use leasesim::sim::hosted::{ClockKind, WorldThread, clock_now, fill_random};
use leasesim::sim::runfile::{BackendSpec, WorldSpec};
use leasesim::sim::schedule::{Fault, FaultSchedule};
use leasesim::sim::true_time::true_now;
use leasesim::sim::world::{World, WorldError};

use crate::support::scenario_refused;

/// What a replica's probe saw at one reading.
#[derive(Clone, Debug, PartialEq)]
struct Sample {
    host: String,
    thread: ThreadId,
    /// True simulated time of the reading.
    true_at: Duration,
    /// [`clock_now`]'s answers: what the hooks would give hosted code.
    wall: Option<Duration>,
    monotonic: Option<Duration>,
    /// The host's own clock at the same moment, through leasesim's `Clock`.
    host_wall_ns: i128,
    host_monotonic: Duration,
    /// Eight bytes from [`fill_random`], or none when it declined.
    random: Option<[u8; 8]>,
}

type Samples = Arc<Mutex<Vec<Sample>>>;

/// The gRPC backend, with a probe on every replica reading the hooks' answers once a second
/// of the replica's clock; `unmodified` says its code takes neither freezes nor drift and
/// needs a thread of its own, as a target backend's does.
#[derive(Debug, Clone)]
struct Probe {
    name: &'static str,
    unmodified: bool,
    samples: Samples,
}

impl Probe {
    fn new(unmodified: bool) -> (Self, Samples) {
        let samples = Samples::default();
        let probe = Probe {
            name: if unmodified {
                "probe-unmodified"
            } else {
                "probe"
            },
            unmodified,
            samples: samples.clone(),
        };
        (probe, samples)
    }
}

impl WorldBackend for Probe {
    fn name(&self) -> &str {
        self.name
    }

    fn view(&self) -> BackendView {
        BackendView {
            drift: !self.unmodified,
            freezes: !self.unmodified,
            own_thread: self.unmodified,
            forks: false,
            ..Grpc.view()
        }
    }

    fn serve(&self, host: AuthorityHost) -> std::pin::Pin<Box<dyn Future<Output = HostResult>>> {
        Grpc.serve(host)
    }

    fn client(
        &self,
        replica: &ReplicaEnv,
    ) -> Result<Arc<dyn SessionLease>, Box<dyn std::error::Error>> {
        let (host, clock, samples) = (
            replica.name().to_owned(),
            replica.clock(),
            self.samples.clone(),
        );
        tokio::spawn(async move {
            loop {
                let mut bytes = [0u8; 8];
                let drew = fill_random(&mut bytes);
                let sample = Sample {
                    host: host.clone(),
                    thread: std::thread::current().id(),
                    true_at: true_now(),
                    wall: clock_now(ClockKind::Wall),
                    monotonic: clock_now(ClockKind::Monotonic),
                    host_wall_ns: clock.wall().unix_ns,
                    host_monotonic: clock.now().since_origin(),
                    random: drew.then_some(bytes),
                };
                samples.lock().unwrap().push(sample);
                clock.sleep(Duration::from_secs(1)).await;
            }
        });
        Grpc.client(replica)
    }
}

/// Both engines: what hosted code reads must not depend on which one runs the world.
const ENGINES: [WorldEngine; 2] = [WorldEngine::Turmoil, WorldEngine::Engine];

fn run(engine: WorldEngine, probe: Probe, seed: u64, schedule: FaultSchedule) {
    World::builder()
        .engine(engine)
        .seed(seed)
        .replicas(2)
        .duration(Duration::from_secs(40))
        .backend(Backend::new(probe))
        .schedule(schedule)
        .build()
        .expect("a valid world")
        .run()
        .expect("the world runs");
}

/// The configuration of a world with the defaults on an unmodified [`Probe`]: code that takes
/// neither freezes nor drift.
fn unmodified_world_config() -> WorldConfig {
    let (probe, _) = Probe::new(true);
    let world = World::builder()
        .backend(Backend::new(probe))
        .build()
        .unwrap();
    world.config().clone()
}

fn ns(duration: Duration) -> i128 {
    duration.as_nanos() as i128
}

fn of_host<'a>(samples: &'a [Sample], host: &'a str) -> impl Iterator<Item = &'a Sample> {
    samples.iter().filter(move |sample| sample.host == host)
}

/// The wall offset a sample shows: its wall reading less the epoch and true time (a clock
/// that never drifts nor stops keeps counting true time, through restarts too).
fn wall_offset_ns(sample: &Sample) -> i128 {
    ns(sample.wall.unwrap()) - WALL_EPOCH.unix_ns - ns(sample.true_at)
}

#[test]
fn inside_a_host_the_answer_is_that_hosts_clocks_and_a_wall_offset_shows_on_it_alone() {
    for engine in ENGINES {
        a_wall_offset_shows_on_its_host_alone(engine);
    }
}

/// The probe reads once a second from 0 s, so one reading falls on the offset's own instant,
/// 10 s: the nemesis acts before any host's work at an instant, and that reading shows it
/// (docs/engine.md#one-instant).
fn a_wall_offset_shows_on_its_host_alone(engine: WorldEngine) {
    let (probe, samples) = Probe::new(false);
    let schedule = FaultSchedule::new().at(
        10_000,
        Fault::WallOffset {
            host: "replica-1".into(),
            offset_ms: 5_000,
        },
    );
    run(engine, probe, 7, schedule);
    let samples = samples.lock().unwrap();
    assert!(samples.len() >= 70, "{} samples", samples.len());
    for sample in samples.iter() {
        assert_eq!(
            sample.wall.map(ns),
            Some(sample.host_wall_ns),
            "wall, {sample:?}"
        );
        assert_eq!(
            sample.monotonic,
            Some(sample.host_monotonic),
            "monotonic, {sample:?}"
        );
    }
    for sample in of_host(&samples, "replica-1") {
        let expected = if sample.true_at >= Duration::from_secs(10) {
            5_000_000_000
        } else {
            0
        };
        assert_eq!(wall_offset_ns(sample), expected, "{engine:?} {sample:?}");
    }
    assert!(
        of_host(&samples, "replica-1").any(|sample| sample.true_at == Duration::from_secs(10)),
        "{engine:?}: a reading at the offset's instant"
    );
    assert!(of_host(&samples, "replica-2").all(|sample| wall_offset_ns(sample) == 0));
}

#[test]
fn after_a_restart_the_host_is_registered_again_and_its_monotonic_clock_starts_from_zero() {
    for engine in ENGINES {
        a_restarted_hosts_monotonic_clock_starts_from_zero(engine);
    }
}

fn a_restarted_hosts_monotonic_clock_starts_from_zero(engine: WorldEngine) {
    let (probe, samples) = Probe::new(false);
    let replica_2 = || "replica-2".to_owned();
    let schedule = FaultSchedule::new()
        .at(20_000, Fault::Crash { host: replica_2() })
        .at(25_000, Fault::Restart { host: replica_2() });
    run(engine, probe, 7, schedule);
    let samples = samples.lock().unwrap();
    let after: Vec<&Sample> = of_host(&samples, "replica-2")
        .filter(|sample| sample.true_at >= Duration::from_secs(25))
        .collect();
    assert!(
        after.len() >= 10,
        "{} samples after the restart",
        after.len()
    );
    for sample in &after {
        assert_eq!(sample.monotonic, Some(sample.host_monotonic), "{sample:?}");
        assert_eq!(sample.wall.map(ns), Some(sample.host_wall_ns), "{sample:?}");
        // The clock restarted at 25 s: its reading is the time since then.
        assert_eq!(
            sample.monotonic,
            Some(sample.true_at - Duration::from_secs(25)),
            "{sample:?}"
        );
        // The wall clock kept counting through the downtime.
        assert_eq!(
            ns(sample.wall.unwrap()),
            WALL_EPOCH.unix_ns + ns(sample.true_at)
        );
    }
}

#[test]
fn outside_every_world_the_real_clock_and_real_entropy_answer() {
    assert_eq!(clock_now(ClockKind::Wall), None);
    assert_eq!(clock_now(ClockKind::Monotonic), None);
    let mut bytes = [0u8; 16];
    assert!(!fill_random(&mut bytes));
    assert_eq!(bytes, [0u8; 16], "left as it was");
}

#[test]
fn on_a_worlds_thread_outside_every_host_the_wall_epoch_and_a_monotonic_zero_answer() {
    let world = WorldThread::enter(7);
    let epoch = Duration::from_nanos(WALL_EPOCH.unix_ns as u64);
    assert_eq!(clock_now(ClockKind::Wall), Some(epoch));
    assert_eq!(clock_now(ClockKind::Monotonic), Some(Duration::ZERO));
    // A runtime the world did not register for a host is outside every host too.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        assert_eq!(clock_now(ClockKind::Monotonic), Some(Duration::ZERO));
    });
    let (mut first, mut second) = ([0u8; 16], [0u8; 16]);
    assert!(fill_random(&mut first));
    assert!(fill_random(&mut second));
    assert_ne!(first, second, "a stream, not one value again");
    drop(world);
    assert_eq!(clock_now(ClockKind::Wall), None, "the world is over");
    let again = WorldThread::enter(7);
    let mut replayed = [0u8; 16];
    assert!(fill_random(&mut replayed));
    assert_eq!(replayed, first, "the same seed draws the same bytes");
    drop(again);
}

#[test]
fn a_hosts_clock_read_over_and_over_in_one_instant_moves_on_by_a_nanosecond_a_read() {
    // Code that sleeps until a wall-clock expiry and then asks `now > expiry` spins on a clock
    // that stands still; a real one moves on (docs/targets.md#a-clock-that-never-stands-still).
    let reads = leasesim::sim::hosted::in_a_host(|| {
        (0..10_500)
            .map(|_| clock_now(ClockKind::Wall).unwrap())
            .collect::<Vec<_>>()
    })
    .unwrap();
    let first = reads[0];
    assert!(
        reads[..10_000].iter().all(|read| *read == first),
        "still at first"
    );
    assert_eq!(reads[10_000] - first, Duration::from_nanos(1));
    assert_eq!(reads[10_499] - first, Duration::from_nanos(500));
    let capped = leasesim::sim::hosted::in_a_host(|| {
        (0..12_000)
            .map(|_| clock_now(ClockKind::Monotonic).unwrap())
            .collect::<Vec<_>>()
    })
    .unwrap();
    assert_eq!(
        capped[11_999] - capped[0],
        Duration::from_micros(1),
        "at most 1 µs"
    );
}

#[test]
fn two_runs_of_a_seed_draw_the_same_random_bytes_and_two_seeds_different_ones() {
    let draws = |seed: u64| {
        let (probe, samples) = Probe::new(false);
        run(WorldEngine::Turmoil, probe, seed, FaultSchedule::new());
        let samples = samples.lock().unwrap();
        samples
            .iter()
            .map(|sample| sample.random.expect("drawn on the world's thread"))
            .collect::<Vec<_>>()
    };
    let first = draws(7);
    assert!(first.len() >= 70);
    assert_eq!(draws(7), first);
    assert_ne!(draws(8), first);
}

#[test]
fn a_world_whose_backend_asks_for_it_runs_on_a_thread_of_its_own() {
    let caller = std::thread::current().id();
    let threads = |unmodified: bool| {
        let (probe, samples) = Probe::new(unmodified);
        run(WorldEngine::Turmoil, probe, 7, FaultSchedule::new());
        let mut threads: Vec<ThreadId> = samples.lock().unwrap().iter().map(|s| s.thread).collect();
        threads.dedup();
        threads
    };
    let own = threads(true);
    assert_eq!(own.len(), 1, "every host on the world's one thread");
    assert_ne!(own[0], caller);
    assert_eq!(
        threads(false),
        [caller],
        "our own code runs on the caller's thread"
    );
}

#[test]
fn code_that_takes_no_freezes_or_drift_refuses_them_naming_what_it_lacks() {
    let build = |fault: Fault| {
        let (probe, _) = Probe::new(true);
        World::builder()
            .backend(Backend::new(probe))
            .schedule(FaultSchedule::new().at(1_000, fault))
            .build()
    };
    let host = || "replica-1".to_owned();
    let refusals = [
        (
            Fault::Pause {
                host: host(),
                duration_ms: 500,
                at_point: None,
            },
            "freezes",
        ),
        (
            Fault::Suspend {
                host: host(),
                duration_ms: 500,
                at_point: None,
            },
            "freezes",
        ),
        (
            Fault::ClockDrift {
                host: host(),
                ppm: 1_000,
            },
            "drift",
        ),
    ];
    for (fault, capability) in refusals {
        match build(fault.clone()) {
            Err(WorldError::Unsupported(message)) => {
                assert!(
                    message.contains(&format!("lacks the capability `{capability}`")),
                    "{message}"
                );
                assert!(message.contains("probe-unmodified"), "{message}");
            }
            other => panic!("{fault:?} was not refused: {other:?}"),
        }
    }
    let wall_step = Fault::WallJump {
        host: host(),
        delta_ms: 1_000,
    };
    assert!(build(wall_step).is_ok(), "wall steps are taken");
}

#[test]
fn faults_drawn_for_code_that_takes_no_freezes_or_drift_leave_those_kinds_out() {
    let world = unmodified_world_config();
    let mut drawn = 0;
    for seed in 0..64 {
        let mut config = world.clone();
        config.seed = seed;
        for scheduled in random_schedule(&config).faults {
            drawn += 1;
            assert!(
                !matches!(
                    scheduled.fault,
                    Fault::Pause { .. }
                        | Fault::Suspend { .. }
                        | Fault::Stall { .. }
                        | Fault::ClockDrift { .. }
                ),
                "seed {seed} drew {:?}",
                scheduled.fault
            );
        }
    }
    assert!(drawn > 64, "other faults are still drawn ({drawn})");
}

#[test]
fn leasesim_refuses_a_target_backend_naming_the_targets_binary() {
    scenario_refused(
        "v = 1\nabout = \"a target world\"\n\n[world]\nbackend = \"target:kube-lease-manager\"\n",
        &[
            "backend `target:kube-lease-manager`",
            "`leasesim-targets`",
            "docs/targets.md",
        ],
    );
}

#[test]
fn a_backend_spelling_is_grpc_kube_flock_or_a_target_name() {
    let spell = |text: &str| BackendSpec::try_from(text.to_owned());
    assert_eq!(spell("grpc"), Ok(BackendSpec::Grpc));
    assert_eq!(spell("flock"), Ok(BackendSpec::Flock));
    assert_eq!(
        spell("target:kube-lease-manager"),
        Ok(BackendSpec::Target("target:kube-lease-manager".into()))
    );
    for wrong in ["etcd", "target:", "Target:x"] {
        let error = spell(wrong).unwrap_err();
        assert!(
            error.contains("expected `grpc`, `kube`, `flock` or `target:<name>`"),
            "{error}"
        );
    }
    let json = serde_json::to_string(&BackendSpec::Target("target:x".into())).unwrap();
    assert_eq!(json, "\"target:x\"");
}

/// The only test of this binary that registers target backends (once per process).
#[test]
fn a_targets_binary_knows_its_targets_and_lists_them_for_an_unknown_name() {
    let (mut probe, _) = Probe::new(true);
    let misnamed = Backend::new(probe.clone());
    let error = register_targets(vec![misnamed]).unwrap_err();
    assert_eq!(
        error,
        "target backend `probe-unmodified`: a target's name is `target:<name>`"
    );
    probe.name = "target:probe";
    register_targets(vec![Backend::new(probe.clone())]).unwrap();
    assert_eq!(
        target_backend("target:probe").unwrap().name(),
        "target:probe"
    );
    let error = target_backend("target:nope").unwrap_err();
    assert_eq!(
        error,
        "unknown target backend `target:nope`; this binary knows target:probe"
    );
    let world = WorldSpec {
        backend: BackendSpec::Target("target:nope".into()),
        ..WorldSpec::default()
    };
    assert_eq!(world.check(), Err(("backend", error)));
    assert!(
        register_targets(vec![Backend::new(probe)]).is_err(),
        "only once"
    );
}

#[test]
fn a_swarm_profile_on_code_that_takes_no_freezes_or_drift_draws_only_the_other_kinds() {
    use leasesim::campaign::swarm::{IntensityProfile, SwarmProfile, draw};
    use leasesim::sim::generate::FaultKind::{ClockDrift, Partition, Pause, Stall, WallJump};
    let mut config = unmodified_world_config();
    let profile = SwarmProfile {
        kinds: vec![Pause, ClockDrift, WallJump, Partition],
        kind_chance: None,
        faults: (1, 8),
        heal_at_percent: 66,
        points: None,
        victim_chance: None,
        intensity: IntensityProfile::default(),
    };
    assert_eq!(profile.left_out(&config), [Pause, ClockDrift]);
    assert_eq!(profile.check_in(&config), Ok(()));
    let mut drawn_kinds = Vec::new();
    for seed in 0..32 {
        config.seed = seed;
        for kind in draw(&profile, &config).kinds {
            assert!(
                matches!(kind, WallJump | Partition),
                "seed {seed}: {kind:?}"
            );
            drawn_kinds.push(kind);
        }
    }
    assert!(drawn_kinds.contains(&WallJump) && drawn_kinds.contains(&Partition));
    let only_freezes = SwarmProfile {
        kinds: vec![Pause, Stall],
        ..profile
    };
    let (field, message) = only_freezes.check_in(&config).unwrap_err();
    assert_eq!(field, "kinds");
    assert!(
        message.contains("`pause` needs freezes, `stall` needs freezes"),
        "{message}"
    );
}
