//! The cost of work: N client hosts each send a request to one server host every 100 ms of
//! their clock over TCP (turmoil-net's shim, 1 ms links, 1 ms ticks) and wait for its echo
//! (docs/engine.md#costs). Per-replica request rate fixed, so cost should grow with N.
//!
//! `cargo bench -p leasesim-engine --bench rpc`. Figures, not assertions. Settings:
//! `LEASESIM_ENGINE_HOSTS` (client counts, default `3,64,500`), `LEASESIM_ENGINE_SECONDS`
//! (simulated seconds, default 5).
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "a benchmark reads real time; the hosts' tasks sleep on their own clocks"
)]

use std::time::{Duration, Instant};

use leasesim_engine::{Engine, NetConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil_net::shim::tokio::net::{TcpListener, TcpStream};

fn env_list(name: &str, default: &str) -> Vec<u64> {
    let text = std::env::var(name).unwrap_or_else(|_| default.to_owned());
    text.split(',')
        .map(|n| match n.trim().parse() {
            Ok(n) => n,
            Err(e) => {
                eprintln!("{name}: `{n}` is not a whole number ({e})");
                std::process::exit(2);
            }
        })
        .collect()
}

async fn echo_server() {
    let listener = TcpListener::bind("0.0.0.0:9000").await.expect("bind");
    loop {
        let (mut stream, _) = listener.accept().await.expect("accept");
        tokio::spawn(async move {
            let mut buf = [0u8; 64];
            while let Ok(n) = stream.read(&mut buf).await {
                if n == 0 || stream.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        });
    }
}

async fn client(replies: std::sync::Arc<std::sync::atomic::AtomicU64>) {
    let Ok(mut stream) = TcpStream::connect("server:9000").await else {
        return;
    };
    let mut buf = [0u8; 16];
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if stream.write_all(&[7; 16]).await.is_err() || stream.read_exact(&mut buf).await.is_err() {
            return;
        }
        replies.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

fn one_size(clients: u64, seconds: u64) {
    let mut engine = Engine::with_network(1, NetConfig::default()).expect("a 1 ms tick");
    let server = engine.add_host("server").expect("a runtime");
    engine
        .spawn(server, echo_server())
        .expect("the host exists");
    let replies = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    for i in 0..clients {
        let id = engine.add_host(&format!("c{i}")).expect("a runtime");
        engine
            .spawn(id, client(replies.clone()))
            .expect("the host exists");
    }
    let start = Instant::now();
    engine
        .run_until(Duration::from_secs(seconds))
        .expect("no faults");
    let wall = start.elapsed();
    let got = replies.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "{clients:>5} clients  {seconds} simulated s  {got:>6} replies  {:>8.1} ms per simulated s  \
         {:>6.0} ns per reply",
        wall.as_secs_f64() * 1000.0 / seconds as f64,
        wall.as_nanos() as f64 / got.max(1) as f64
    );
}

fn main() {
    let seconds = env_list("LEASESIM_ENGINE_SECONDS", "5")[0];
    for clients in env_list("LEASESIM_ENGINE_HOSTS", "3,64,500") {
        one_size(clients, seconds);
    }
}
