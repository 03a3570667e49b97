//! Simulated seconds per wall second: the default world (3 replicas, 60 s, faults drawn from
//! the seed) on the gRPC backend and on the kube backend (the same hosts but the authority's,
//! the same seeds, so the same workload), against a bare turmoil world with the gRPC world's
//! hosts exchanging as many request/reply messages over simulated TCP. Prints the three and
//! the ratios.
//!
//! `cargo bench --bench world` (release build). Figures, not assertions. Measured late 2026
//! on 2 shared cores (other builds running): gRPC world 71.3 simulated s per wall s, kube
//! world 62.7 (0.88× the gRPC world's; 301 RPCs per run against 229), bare turmoil 76.3.

use std::time::Duration;

use leasesim::sim::backend::{Backend, Grpc, Kube};
use leasesim::sim::world::World;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SEEDS: u64 = 10;

/// What the runs of one backend took.
struct Measured {
    wall: Duration,
    simulated: Duration,
    calls: u64,
}

impl Measured {
    fn rate(&self) -> f64 {
        self.simulated.as_secs_f64() / self.wall.as_secs_f64()
    }
}

/// `SEEDS` default worlds (3 replicas, 60 s, faults drawn from the seed and fitted to the
/// backend) on `backend`.
// A benchmark measures real time by definition.
#[allow(clippy::disallowed_types)]
fn measure(backend: Backend) -> Measured {
    let mut measured = Measured {
        wall: Duration::ZERO,
        simulated: Duration::ZERO,
        calls: 0,
    };
    for seed in 1..=SEEDS {
        let world = World::builder()
            .seed(seed)
            .backend(backend.clone())
            .random_faults()
            .build()
            .expect("the default world is valid");
        let started = std::time::Instant::now();
        let output = world.run().expect("world runs");
        measured.wall += started.elapsed();
        measured.simulated += world.config().duration;
        measured.calls += output
            .history
            .ops()
            .filter(|op| is_rpc(op.op.name(), backend.name() == "kube"))
            .count() as u64;
    }
    measured
}

// A benchmark measures real time by definition.
#[allow(clippy::disallowed_types)]
fn main() {
    let grpc = measure(Backend::new(Grpc));
    let kube = measure(Backend::new(Kube));
    let per_run = grpc.calls / SEEDS;
    let started = std::time::Instant::now();
    for _ in 1..=SEEDS {
        bare_world(Duration::from_secs(60), per_run);
    }
    let bare_wall = started.elapsed();
    let bare_rate = grpc.simulated.as_secs_f64() / bare_wall.as_secs_f64();
    for (name, m) in [("grpc world:", &grpc), ("kube world:", &kube)] {
        println!(
            "{name:<13} {SEEDS} runs × 60 s, {} RPCs per run, {:?} wall → {:.1} simulated s per wall s",
            m.calls / SEEDS,
            m.wall,
            m.rate()
        );
    }
    println!(
        "bare turmoil:  {SEEDS} runs × 60 s, {per_run} request/reply pairs per run, {bare_wall:?} wall → {bare_rate:.1} simulated s per wall s"
    );
    println!(
        "ratio: the grpc world runs at {:.2}× the bare world's speed ({:.1}× slower); the kube world at {:.2}× the grpc world's",
        grpc.rate() / bare_rate,
        bare_rate / grpc.rate(),
        kube.rate() / grpc.rate()
    );
}

/// Client calls that cross the network (journal calls are made of ledger calls; a kube
/// lease call is made of `kube_*` calls).
fn is_rpc(name: &str, kube: bool) -> bool {
    let lease = if kube { "kube_" } else { "lease_" };
    name.starts_with("ledger_") || name.starts_with(lease)
}

/// Hosts `lease`, `ledger` echoing 64-byte messages; three replicas sending `messages` in
/// total, spread evenly over `duration`.
fn bare_world(duration: Duration, messages: u64) {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(duration + Duration::from_secs(10))
        .build();
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
    let per_replica = messages / 3;
    for n in 1..=3 {
        sim.client(format!("replica-{n}"), async move {
            let mut lease = turmoil::net::TcpStream::connect("lease:7070").await?;
            let mut ledger = turmoil::net::TcpStream::connect("ledger:7070").await?;
            let gap = duration / (per_replica.max(1) as u32);
            let mut buf = [7u8; 64];
            for i in 0..per_replica {
                let stream = if i % 2 == 0 { &mut lease } else { &mut ledger };
                stream.write_all(&buf).await?;
                stream.read_exact(&mut buf).await?;
                #[allow(clippy::disallowed_methods)]
                tokio::time::sleep(gap).await;
            }
            Ok(())
        });
    }
    sim.run().expect("bare world runs");
}
