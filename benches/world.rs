//! Simulated seconds per wall second: the default world (3 replicas, 60 s, faults drawn from
//! the seed) against a bare turmoil world with the same hosts exchanging the same number of
//! request/reply messages over simulated TCP. Prints both and the ratio.
//!
//! `cargo bench --bench world` (release build). Figures, not assertions.

use std::time::Duration;

use leasesim::sim::world::World;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SEEDS: u64 = 10;

// A benchmark measures real time by definition.
#[allow(clippy::disallowed_types)]
fn main() {
    let mut world_wall = Duration::ZERO;
    let mut simulated = Duration::ZERO;
    let mut calls = 0u64;
    for seed in 1..=SEEDS {
        let world = World::builder()
            .seed(seed)
            .random_faults()
            .build()
            .expect("the default world is valid");
        let started = std::time::Instant::now();
        let output = world.run().expect("world runs");
        world_wall += started.elapsed();
        simulated += world.config().duration;
        calls += output
            .history
            .ops()
            .filter(|op| is_rpc(op.op.name()))
            .count() as u64;
    }
    let per_run = calls / SEEDS;
    let started = std::time::Instant::now();
    for _ in 1..=SEEDS {
        bare_world(Duration::from_secs(60), per_run);
    }
    let bare_wall = started.elapsed();
    let world_rate = simulated.as_secs_f64() / world_wall.as_secs_f64();
    let bare_rate = simulated.as_secs_f64() / bare_wall.as_secs_f64();
    println!(
        "default world: {SEEDS} runs × 60 s, {per_run} RPCs per run, {world_wall:?} wall → {world_rate:.1} simulated s per wall s"
    );
    println!(
        "bare turmoil:  {SEEDS} runs × 60 s, {per_run} request/reply pairs per run, {bare_wall:?} wall → {bare_rate:.1} simulated s per wall s"
    );
    println!(
        "ratio: the world runs at {:.2}× the bare world's speed ({:.1}× slower)",
        world_rate / bare_rate,
        bare_rate / world_rate
    );
}

/// Client calls that cross the network (journal calls are made of ledger calls).
fn is_rpc(name: &str) -> bool {
    name.starts_with("lease_") || name.starts_with("ledger_")
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
