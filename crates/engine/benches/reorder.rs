//! What letting packets overtake costs turmoil-net's TCP (docs/engine.md#latency-and-loss).
//!
//! `cargo bench -p leasesim-engine --bench reorder`. Figures in simulated time, not
//! assertions, and deterministic: the same on every machine. Two hosts over links whose
//! latency is drawn per packet in 1–5 ms (the world's default range), uniformly and with
//! turmoil's odds (`Spread`), on FIFO links (the default) and with `NetConfig::reorder`, for
//! seeds `0..LEASESIM_REORDER_SEEDS` (default 20):
//! - **ping-pong**: the client writes 16 bytes every 10 ms of its clock and waits for the echo,
//!   100 times (one segment in flight at a time); the time the last echo is read, and the round
//!   trips of 100 ms or more;
//! - **stream**: the client writes 16 bytes every 1 ms for 1 s without waiting (many segments
//!   in flight); the time the server has read them all.
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "the hosts' tasks sleep on their own clocks"
)]

mod support;
use support::env_list;

use std::time::Duration;

use leasesim_engine::{Engine, HostId, Latency, NetConfig, Spread};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil_net::shim::tokio::net::{TcpListener, TcpStream};

const MS: Duration = Duration::from_millis(1);

/// An engine seeded `seed`, links of 1–5 ms spread by `spread`, FIFO unless `reorder`; its
/// server and client.
fn world(seed: u64, spread: Spread, reorder: bool) -> (Engine, HostId, HostId) {
    let config = NetConfig {
        latency: Latency {
            spread,
            ..Latency::range(MS, 5 * MS)
        },
        reorder,
        ..NetConfig::default()
    };
    let mut engine = Engine::with_network(seed, config).expect("a valid config");
    let server = engine.add_host("server").expect("a host");
    let client = engine.add_host("client").expect("a host");
    (engine, server, client)
}

/// The true ms of the first trace line that ends with `text`, if any.
fn traced_at(engine: &Engine, text: &str) -> Option<u128> {
    let trace = String::from_utf8(engine.trace()).expect("the trace is UTF-8");
    let line = trace.lines().find(|line| line.ends_with(text))?;
    let ns: u128 = line.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1_000_000)
}

/// Echoes one connection until it closes.
async fn echo() {
    let listener = TcpListener::bind("0.0.0.0:9000").await.expect("bind");
    let (mut stream, _) = listener.accept().await.expect("accept");
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await.expect("read");
        if n == 0 || stream.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// The ping-pong: (ms the last echo is read, round trips of 100 ms or more).
fn ping_pong(seed: u64, spread: Spread, reorder: bool) -> (u128, usize) {
    let (mut engine, server, client) = world(seed, spread, reorder);
    engine.spawn(server, echo()).expect("a host");
    engine
        .spawn(client, async {
            let mut stream = TcpStream::connect("server:9000").await.expect("connect");
            let mut buf = [0u8; 16];
            for _ in 0..100 {
                let sent = leasesim_engine::now_true();
                stream.write_all(&[7; 16]).await.expect("write");
                stream.read_exact(&mut buf).await.expect("the echo");
                if leasesim_engine::now_true() - sent >= 100 * MS {
                    leasesim_engine::trace("slow round trip");
                }
                tokio::time::sleep(10 * MS).await;
            }
            leasesim_engine::trace("done");
        })
        .expect("a host");
    engine.run_until(600_000 * MS).expect("no fault");
    let trace = String::from_utf8(engine.trace()).expect("the trace is UTF-8");
    let slow = trace
        .lines()
        .filter(|l| l.ends_with("slow round trip"))
        .count();
    (traced_at(&engine, "done").expect("the run ends"), slow)
}

/// The stream: ms the server has read every byte.
fn stream(seed: u64, spread: Spread, reorder: bool) -> u128 {
    let (mut engine, server, client) = world(seed, spread, reorder);
    engine
        .spawn(server, async {
            let listener = TcpListener::bind("0.0.0.0:9000").await.expect("bind");
            let (mut stream, _) = listener.accept().await.expect("accept");
            let (mut buf, mut read) = ([0u8; 4096], 0);
            while read < 16 * 1000 {
                read += stream.read(&mut buf).await.expect("read");
            }
            leasesim_engine::trace("done");
        })
        .expect("a host");
    engine
        .spawn(client, async {
            let mut stream = TcpStream::connect("server:9000").await.expect("connect");
            for _ in 0..1000 {
                stream.write_all(&[7; 16]).await.expect("write");
                tokio::time::sleep(MS).await;
            }
            tokio::time::sleep(600_000 * MS).await;
        })
        .expect("a host");
    engine.run_until(600_000 * MS).expect("no fault");
    traced_at(&engine, "done").expect("the run ends")
}

fn main() {
    let seeds = env_list("LEASESIM_REORDER_SEEDS", "20")[0];
    for spread in [Spread::Uniform, Spread::Turmoil] {
        for reorder in [false, true] {
            report(seeds, spread, reorder);
        }
    }
}

/// Prints both workloads' figures over `seeds` for one spread and one link order.
fn report(seeds: u64, spread: Spread, reorder: bool) {
    let runs: Vec<(u128, usize)> = (0..seeds).map(|s| ping_pong(s, spread, reorder)).collect();
    let ends: Vec<u128> = runs.iter().map(|r| r.0).collect();
    let slow: usize = runs.iter().map(|r| r.1).sum();
    let mean = ends.iter().sum::<u128>() / u128::from(seeds);
    let worst = ends.iter().max().copied().unwrap_or_default();
    println!(
        "{spread:?} reorder={reorder}: ping-pong last echo mean {mean} ms, worst {worst} ms; \
         round trips >= 100 ms: {slow} of {}",
        seeds * 100
    );
    let ends: Vec<u128> = (0..seeds).map(|s| stream(s, spread, reorder)).collect();
    let mean = ends.iter().sum::<u128>() / u128::from(seeds);
    let least = ends.iter().min().copied().unwrap_or_default();
    let most = ends.iter().max().copied().unwrap_or_default();
    println!("{spread:?} reorder={reorder}: stream all read at mean {mean} ms, {least}–{most} ms");
}
