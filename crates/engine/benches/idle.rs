//! The cost of an idle host per engine step (docs/engine.md#costs).
//!
//! `cargo bench -p leasesim-engine --bench idle`. Figures, not assertions. Each host runs one
//! task parked on a timer an hour away (a renewer between renewals); the engine runs with a
//! 1 ms lookahead and nothing queued, so each step is one slice of every host and no timer is
//! due in any of them: what is measured is the slice itself. Settings (environment):
//! - `LEASESIM_ENGINE_HOSTS`: the sizes, comma-separated (default `3,64,500,1000`);
//! - `LEASESIM_ENGINE_STEPS`: engine steps (1 ms each) per size (default 1000);
//! - `LEASESIM_ENGINE_BUSY`: when set (to anything but `0`), each host's task wakes every 10 ms of its clock instead,
//!   for the cost of a slice that runs a timer;
//! - `LEASESIM_ENGINE_NET`: when set (to anything but `0`), the hosts are on a turmoil-net network (1 ms ticks, no
//!   sockets open), for the cost of the fabric tick's pass over every idle kernel;
//! - `LEASESIM_ENGINE_DRIFT`: every host's clock drift in ppm (default 0; `-100000` is 10 %
//!   slow), for the slices a slow clock leaves empty (docs/engine.md#skipped-slices);
//! - `LEASESIM_ENGINE_RUN_ALL`: when set (to anything but `0`), no slice is skipped, for the
//!   cost of running the empty ones.
//!
//! For instructions, run one size under callgrind:
//! `LEASESIM_ENGINE_HOSTS=64 valgrind --tool=callgrind target/release/deps/idle-<hash>`.
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "a benchmark reads real time; the hosts' tasks sleep on their own clocks"
)]

mod support;
use support::{env_flag, env_int, env_list};

use leasesim_engine::{Event, HostFault};

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use leasesim_engine::{Engine, NetConfig};

/// The system allocator, counting the bytes live on the heap.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is a side
// effect only.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes live on the heap now.
fn heap_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// What one run of the bench does: its steps, its hosts' drift, and the switches.
#[derive(Clone, Copy)]
struct Settings {
    steps: u64,
    drift_ppm: i64,
    busy: bool,
    net: bool,
    run_all: bool,
}

fn one_size(hosts: u64, settings: Settings) {
    let Settings {
        steps,
        drift_ppm,
        busy,
        net,
        run_all,
    } = settings;
    let before = heap_bytes();
    let mut engine = if net {
        Engine::with_network(1, NetConfig::default()).expect("a 1 ms tick")
    } else {
        Engine::new(1)
    };
    engine.set_lookahead(Some(Duration::from_millis(1)));
    engine.set_skip_empty_slices(!run_all);
    for i in 0..hosts {
        let id = engine.add_host(&format!("h{i}")).expect("a runtime");
        engine.schedule(Duration::ZERO, Event::Host(id, HostFault::Drift(drift_ppm)));
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
    let per_host = heap_bytes().saturating_sub(before) as u64 / hosts;
    let (slices, skipped) = (engine.slices(), engine.skipped_slices());
    let start = Instant::now();
    engine
        .run_until(Duration::from_millis(1 + steps))
        .expect("no faults");
    let wall = start.elapsed();
    let slices = engine.slices() - slices;
    let skipped = engine.skipped_slices() - skipped;
    assert_eq!(slices, hosts * steps, "one slice per host per step");
    let ns_per_slice = wall.as_nanos() / u128::from(slices);
    let ms_per_sim_s = wall.as_secs_f64() * 1000.0 * 1000.0 / steps as f64;
    println!(
        "{hosts:>5} hosts  {steps} steps  {ns_per_slice:>6} ns per host per step  \
         {ms_per_sim_s:>9.1} ms per simulated s  {:.1} KiB heap per host  {:.1} % skipped",
        per_host as f64 / 1024.0,
        100.0 * skipped as f64 / slices as f64
    );
}

fn main() {
    let hosts = env_list("LEASESIM_ENGINE_HOSTS", "3,64,500,1000");
    let steps = env_list("LEASESIM_ENGINE_STEPS", "1000")[0];
    let settings = Settings {
        steps,
        drift_ppm: env_int("LEASESIM_ENGINE_DRIFT", 0),
        busy: env_flag("LEASESIM_ENGINE_BUSY"),
        net: env_flag("LEASESIM_ENGINE_NET"),
        run_all: env_flag("LEASESIM_ENGINE_RUN_ALL"),
    };
    for n in hosts {
        one_size(n, settings);
    }
}
