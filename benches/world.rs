//! Simulated seconds per wall second of the world at 3, 10, 30 and 64 replicas, each beside a
//! bare turmoil world with the same hosts (N replicas + `lease` + `ledger`) exchanging as many
//! request/reply messages over simulated TCP, so any cost the world adds shows at every size;
//! and, at 3 replicas, the kube backend beside the gRPC one (the same hosts but the
//! authority's, the same seeds, so the same workload).
//!
//! `cargo bench --bench world` (release build). Figures, not assertions. Settings (environment):
//! - `LEASESIM_BENCH_REPLICAS`: the sizes, comma-separated (default `3,10,30,64`);
//! - `LEASESIM_BENCH_SEEDS`: the seeds run at each size, comma-separated (default `1,2,3`);
//! - `LEASESIM_BENCH_SIDES`: which of `world`, `bare`, `kube` to run (default all three;
//!   `kube` runs at 3 replicas only), so a profiler (`perf record`, callgrind) sees one side;
//! - `LEASESIM_BENCH_MESSAGES`: request/reply pairs per bare run when the world is not run
//!   (default 30 per replica, about what the world's replicas make);
//! - `LEASESIM_BENCH_SECONDS`: simulated seconds per run (default 60), for short profiles.
//!
//! A quick run: `LEASESIM_BENCH_REPLICAS=3,10 LEASESIM_BENCH_SEEDS=1 cargo bench --bench world`.
//!
//! # What grows with the hosts (measured 2026-12-03, 2 shared cores, load 2–3.5)
//!
//! Instructions (valgrind callgrind, seed 1; the world with the default faults; the bare world
//! with the world's RPC count). Wall seconds on this machine move by 30 % from one minute to the
//! next, so instructions are the figure to compare; the wall-time table is in
//! docs/world.md#cost.
//!
//! | replicas (hosts) | simulated s | bare turmoil | world before | world after | world / bare after |
//! |---:|---:|---:|---:|---:|---:|
//! | 3 (5) | 60 | 2.96 G | 3.24 G | 3.09 G | 1.04 |
//! | 10 (12) | 60 | 10.12 G | 10.91 G | 10.42 G | 1.03 |
//! | 30 (32) | 10 | 10.56 G | 10.90 G | 10.66 G | 1.01 |
//! | 64 (66) | 5 | 27.75 G | 27.80 G | 27.54 G | 0.99 |
//!
//! Per simulated second bare turmoil costs 49 M, 169 M, 1,056 M and 5,549 M instructions: 113×
//! for 13× the hosts. The world adds 4 % at 3 replicas and no instructions at 64 (in wall time it ran
//! about 10 % slower there in every sitting, but not in CPU time: 5.1 s against bare's 5.3 s
//! for 64 replicas × 10 s under `perf record`): the growth
//! is turmoil's, and it is cubic in the hosts. Every `Sim::step` (one per 1 ms tick, 60,000 per
//! run) does, in turmoil 0.7.2:
//! - `Topology::tick_by`: every link of the full mesh (H·(H−1)/2 links; turmoil registers one
//!   between each new host and every existing one) moves its clock and scans its queue;
//! - for each running host, `Topology::deliver_messages`: a scan of **every** link to find
//!   the host's own (H·L link visits per step: 141,570 at 64 replicas), then for each of its
//!   H−1 links a SipHash lookup into that link's `deliverable` map and a drained `Vec`;
//! - for each running host, `Rt::tick`: a `block_on` of its tokio runtime for one tick, idle or
//!   not (about 5,000 instructions).
//!
//! Inclusive shares of the bare world's instructions:
//!
//! | replicas | `deliver_messages` | `tick_by` | `Rt::tick` (the hosts' own work) |
//! |---:|---:|---:|---:|
//! | 3 | 18.9 % | 15.1 % | 59.7 % |
//! | 10 | 41.4 % | 12.7 % | 37.8 % |
//! | 30 | 68.4 % | 12.3 % | 15.3 % |
//! | 64 | 82.6 % | 9.8 % | 5.9 % |
//!
//! At 64 replicas 2,016 of the 2,145 links join two replicas and never carry a message, yet
//! each is visited 66 times a millisecond. None of this is reachable from outside turmoil:
//! - **links**: no API removes or skips a link, and a host registered later still gets one
//!   to every host before it;
//! - **idle or stopped hosts**: a crashed or finished host skips its `Rt::tick` and its own
//!   scan, but its links are still ticked and scanned by every running host; the world's
//!   replicas run nearly all the time (think times ≤ 1.5 s, a stopped replica restarts after
//!   1 s), so there is nothing to stop without changing the workload;
//! - **`Sim::run` or manual stepping**: `run` is a loop over `step`; the world steps by hand
//!   for the nemesis and pays the same per step;
//! - **message latency**: the cost is per step, not per message (at 64 replicas about 32
//!   RPCs per simulated second against 141,570 link visits per step);
//! - **the tick** (`Builder::tick_duration`) is the one lever: the cost is per step, so a
//!   k ms tick is about k× cheaper (64 replicas × 5 s with a 5 ms tick: world 5.56 G
//!   instructions, bare 5.59 G, 4.95× fewer than with 1 ms). 64 replicas × 60 s took 8.9 s of wall time with a 5 ms tick
//!   (bare turmoil 8.3 s) and 4.4 s with 10 ms (bare 5.3 s), against about 40 s with 1 ms, under
//!   the same load. But messages are delivered and faults applied only at step boundaries, so
//!   a coarser tick adds up to a tick to every message's 1–5 ms latency and moves each fault to
//!   the next tick: histories change (seed 1, 3 replicas: 351 operations at 1 ms, 327 at 2 ms,
//!   317 at 5 ms, 331 at 10 ms; every check clean) and the pinned snapshots would. Not taken:
//!   the world keeps turmoil's 1 ms tick. Offering it would mean a world setting carried by run
//!   files (it is part of what reproduces a run), off by default.
//!
//! `leasesim run` adds its trace subscriber: under 0.5 % of the samples at 30 replicas (turmoil's
//! per-host span is filtered out by the callsite's cached interest).
//!
//! What the world itself did at every step, and no longer does: the nemesis looked at every
//! replica by name, and turmoil resolves a name by allocating a `String` and hashing it (4.5 %
//! of a 3-replica run's instructions, 0.9 % at 64); it now resolves the addresses once.

use std::time::Duration;

use leasesim::sim::backend::{Backend, Grpc, Kube};
use leasesim::sim::world::World;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the bench runs.
struct Settings {
    replicas: Vec<u32>,
    seeds: Vec<u64>,
    sides: Vec<String>,
    bare_messages: Option<u64>,
    duration: Duration,
}

impl Settings {
    fn from_env() -> Self {
        Settings {
            replicas: list("LEASESIM_BENCH_REPLICAS", "3,10,30,64"),
            seeds: list("LEASESIM_BENCH_SEEDS", "1,2,3"),
            sides: list("LEASESIM_BENCH_SIDES", "world,bare,kube"),
            bare_messages: std::env::var("LEASESIM_BENCH_MESSAGES")
                .ok()
                .map(|text| parse("LEASESIM_BENCH_MESSAGES", &text)),
            duration: Duration::from_secs(list("LEASESIM_BENCH_SECONDS", "60")[0]),
        }
    }

    fn runs(&self, side: &str) -> bool {
        self.sides.iter().any(|s| s == side)
    }
}

/// A comma-separated list from `name`, or `default`.
fn list<T: std::str::FromStr>(name: &str, default: &str) -> Vec<T> {
    let text = std::env::var(name).unwrap_or_else(|_| default.to_owned());
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| parse(name, item))
        .collect()
}

fn parse<T: std::str::FromStr>(name: &str, text: &str) -> T {
    text.parse()
        .unwrap_or_else(|_| panic!("{name}: `{text}` is not a valid value (see benches/world.rs)"))
}

/// What the runs of one side at one size took.
#[derive(Default)]
struct Measured {
    runs: u32,
    wall: Duration,
    simulated: Duration,
    calls: u64,
}

impl Measured {
    fn rate(&self) -> f64 {
        self.simulated.as_secs_f64() / self.wall.as_secs_f64()
    }

    fn wall_per_run(&self) -> f64 {
        self.wall.as_secs_f64() / f64::from(self.runs)
    }

    fn calls_per_run(&self) -> u64 {
        self.calls / u64::from(self.runs.max(1))
    }
}

/// The default world (60 s, faults drawn from the seed and fitted to the backend) with
/// `replicas` replicas on `backend`, once per seed.
// A benchmark measures real time by definition.
#[allow(clippy::disallowed_types)]
fn measure_world(settings: &Settings, backend: &Backend, replicas: u32) -> Measured {
    let mut measured = Measured::default();
    for &seed in &settings.seeds {
        let world = World::builder()
            .seed(seed)
            .replicas(replicas)
            .duration(settings.duration)
            .backend(backend.clone())
            .random_faults()
            .build()
            .expect("the default world is valid");
        let started = std::time::Instant::now();
        let output = world.run().expect("world runs");
        measured.wall += started.elapsed();
        measured.simulated += settings.duration;
        measured.runs += 1;
        measured.calls += output
            .history
            .ops()
            .filter(|op| is_rpc(op.op.name(), backend.name() == "kube"))
            .count() as u64;
    }
    measured
}

/// The bare world with `replicas` replicas and `messages` request/reply pairs per run, once
/// per seed.
// A benchmark measures real time by definition.
#[allow(clippy::disallowed_types)]
fn measure_bare(settings: &Settings, replicas: u32, messages: u64) -> Measured {
    let mut measured = Measured::default();
    for &seed in &settings.seeds {
        let started = std::time::Instant::now();
        bare_world(seed, settings.duration, replicas, messages);
        measured.wall += started.elapsed();
        measured.simulated += settings.duration;
        measured.runs += 1;
        measured.calls += messages;
    }
    measured
}

fn main() {
    let settings = Settings::from_env();
    println!(
        "{} simulated s per run, seeds {:?}; rate = simulated s per wall s (higher is faster)",
        settings.duration.as_secs(),
        settings.seeds
    );
    println!(
        "{:>8} {:>5} {:>9} {:>12} {:>10} {:>12} {:>10} {:>10}",
        "replicas",
        "hosts",
        "RPCs/run",
        "world s/run",
        "world rate",
        "bare s/run",
        "bare rate",
        "world/bare"
    );
    for &replicas in &settings.replicas {
        row(&settings, replicas);
    }
    if settings.runs("kube") && settings.replicas.contains(&3) {
        backends(&settings);
    }
}

/// One size: the world, then the bare world with as many messages, back to back.
fn row(settings: &Settings, replicas: u32) {
    let world = settings
        .runs("world")
        .then(|| measure_world(settings, &Backend::new(Grpc), replicas));
    let messages = world
        .as_ref()
        .map(Measured::calls_per_run)
        .or(settings.bare_messages)
        .unwrap_or(30 * u64::from(replicas));
    let bare = settings
        .runs("bare")
        .then(|| measure_bare(settings, replicas, messages));
    let cell = |m: &Option<Measured>, f: fn(&Measured) -> f64, digits: usize| {
        m.as_ref()
            .map_or_else(|| "-".to_owned(), |m| format!("{:.*}", digits, f(m)))
    };
    let ratio = match (&world, &bare) {
        (Some(w), Some(b)) => format!("{:.2}", w.rate() / b.rate()),
        _ => "-".to_owned(),
    };
    println!(
        "{replicas:>8} {:>5} {messages:>9} {:>12} {:>10} {:>12} {:>10} {ratio:>10}",
        replicas + 2,
        cell(&world, Measured::wall_per_run, 3),
        cell(&world, Measured::rate, 1),
        cell(&bare, Measured::wall_per_run, 3),
        cell(&bare, Measured::rate, 1),
    );
}

/// The kube backend beside the gRPC one at the default size (3 replicas).
fn backends(settings: &Settings) {
    let grpc = measure_world(settings, &Backend::new(Grpc), 3);
    let kube = measure_world(settings, &Backend::new(Kube), 3);
    for (name, m) in [("grpc world:", &grpc), ("kube world:", &kube)] {
        println!(
            "{name:<12} 3 replicas, {} runs, {} RPCs per run, {:.3} s wall per run → {:.1} simulated s per wall s",
            m.runs,
            m.calls_per_run(),
            m.wall_per_run(),
            m.rate()
        );
    }
    println!(
        "the kube world runs at {:.2}× the grpc world's speed",
        kube.rate() / grpc.rate()
    );
}

/// Client calls that cross the network (journal calls are made of ledger calls; a kube
/// lease call is made of `kube_*` calls).
fn is_rpc(name: &str, kube: bool) -> bool {
    let lease = if kube { "kube_" } else { "lease_" };
    name.starts_with("ledger_") || name.starts_with(lease)
}

/// The world's turmoil settings but the hosts: seeded, 1–5 ms latency, the default 1 ms tick.
fn bare_sim(seed: u64, duration: Duration) -> turmoil::Sim<'static> {
    let mut builder = turmoil::Builder::new();
    builder
        .rng_seed(seed)
        .epoch(std::time::UNIX_EPOCH)
        .simulation_duration(duration + Duration::from_secs(10))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(5));
    builder.build()
}

/// Hosts `lease` and `ledger` echoing 64-byte messages; `replicas` replicas sending `messages`
/// in total (alternately to each service), each replica's spread evenly over the run.
fn bare_world(seed: u64, duration: Duration, replicas: u32, messages: u64) {
    let mut sim = bare_sim(seed, duration);
    for host in ["lease", "ledger"] {
        sim.host(host, || async {
            let listener = turmoil::net::TcpListener::bind("0.0.0.0:7070").await?;
            loop {
                let (mut stream, _) = listener.accept().await?;
                tokio::spawn(async move {
                    let mut buf = [0u8; 64];
                    while stream.read_exact(&mut buf).await.is_ok() {
                        if stream.write_all(&buf).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
    }
    let per_replica = (messages / u64::from(replicas)).max(1);
    for n in 1..=replicas {
        sim.client(format!("replica-{n}"), bare_replica(duration, per_replica));
    }
    sim.run().expect("bare world runs");
}

/// One bare replica: `messages` request/reply pairs, alternately to `lease` and `ledger`.
async fn bare_replica(duration: Duration, messages: u64) -> turmoil::Result {
    let mut lease = turmoil::net::TcpStream::connect("lease:7070").await?;
    let mut ledger = turmoil::net::TcpStream::connect("ledger:7070").await?;
    let gap = duration / (messages as u32);
    let mut buf = [7u8; 64];
    for i in 0..messages {
        let stream = if i % 2 == 0 { &mut lease } else { &mut ledger };
        stream.write_all(&buf).await?;
        stream.read_exact(&mut buf).await?;
        // The bare world has no clocks of its own: turmoil's time is the only time.
        #[allow(clippy::disallowed_methods)]
        tokio::time::sleep(gap).await;
    }
    Ok(())
}
