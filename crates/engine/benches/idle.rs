//! The cost of an idle host per engine step (docs/engine.md#costs).
//!
//! `cargo bench -p leasesim-engine --bench idle`. Figures, not assertions. Each host runs one
//! task parked on a timer an hour away (a renewer between renewals); the engine runs with a
//! 1 ms lookahead and nothing queued, so each step is one slice of every host and no timer is
//! due in any of them: what is measured is the slice itself. Settings (environment):
//! - `LEASESIM_ENGINE_HOSTS`: the sizes, comma-separated (default `3,64,500,1000`);
//! - `LEASESIM_ENGINE_STEPS`: engine steps (1 ms each) per size (default 1000);
//! - `LEASESIM_ENGINE_BUSY`: when set, each host's task wakes every 10 ms of its clock instead,
//!   for the cost of a slice that runs a timer.
//!
//! For instructions, run one size under callgrind:
//! `LEASESIM_ENGINE_HOSTS=64 valgrind --tool=callgrind target/release/deps/idle-<hash>`.
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "a benchmark reads real time; the hosts' tasks sleep on their own clocks"
)]

use std::time::{Duration, Instant};

use leasesim_engine::Engine;

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

/// Resident memory in bytes (Linux `/proc/self/statm`), or 0 where it cannot be read.
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn one_size(hosts: u64, steps: u64, busy: bool) {
    let before = resident_bytes();
    let mut engine = Engine::new(1);
    engine.set_lookahead(Some(Duration::from_millis(1)));
    for i in 0..hosts {
        let id = engine.add_host(&format!("h{i}")).expect("a runtime");
        let every = if busy {
            Duration::from_millis(10)
        } else {
            Duration::from_secs(3600)
        };
        let task = async move {
            loop {
                tokio::time::sleep(every).await;
            }
        };
        engine.spawn(id, task).expect("the host exists");
    }
    // The first slice polls every task once: not part of the steady state.
    engine
        .run_until(Duration::from_millis(1))
        .expect("no faults");
    let per_host = resident_bytes().saturating_sub(before) / hosts;
    let slices = engine.slices();
    let start = Instant::now();
    engine
        .run_until(Duration::from_millis(1 + steps))
        .expect("no faults");
    let wall = start.elapsed();
    let slices = engine.slices() - slices;
    assert_eq!(slices, hosts * steps, "one slice per host per step");
    let ns_per_slice = wall.as_nanos() / u128::from(slices);
    let ms_per_sim_s = wall.as_secs_f64() * 1000.0 * 1000.0 / steps as f64;
    println!(
        "{hosts:>5} hosts  {steps} steps  {ns_per_slice:>6} ns per host per step  \
         {ms_per_sim_s:>9.1} ms per simulated s  ~{} KiB resident per host",
        per_host / 1024
    );
}

fn main() {
    let hosts = env_list("LEASESIM_ENGINE_HOSTS", "3,64,500,1000");
    let steps = env_list("LEASESIM_ENGINE_STEPS", "1000")[0];
    let busy = std::env::var_os("LEASESIM_ENGINE_BUSY").is_some();
    for n in hosts {
        one_size(n, steps, busy);
    }
}
