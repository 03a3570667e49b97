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
//!   `kube` runs at 3 replicas only), so `perf stat` can count one side alone;
//! - `LEASESIM_BENCH_MESSAGES`: request/reply pairs per bare run when the world is not run
//!   (default 30 per replica, about what the world's replicas make);
//! - `LEASESIM_BENCH_SECONDS`: simulated seconds per run (default 60), for short profiles.
//!
//! A quick run: `LEASESIM_BENCH_REPLICAS=3,10 LEASESIM_BENCH_SEEDS=1 cargo bench --bench world`.

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
