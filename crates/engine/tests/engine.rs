//! The engine's promises (docs/engine.md): a host's timers fire by its own clock, a pause or
//! a suspend stops every task of the host, time jumps to the next thing that is due, and the
//! same seed gives the same trace bytes.
//!
//! The tasks here sleep with `tokio::time` directly, as a third party's code does: that is
//! the point of the engine (the crate-wide ban on it is for the system under test).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Duration;

use leasesim_engine::{Engine, Event, HostFault, HostId};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);

/// The trace's (true ns, text) pairs for host `name`.
fn lines_of(engine: &Engine, name: &str) -> Vec<(u128, String)> {
    let trace = String::from_utf8(engine.trace()).expect("the trace is UTF-8");
    trace
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let at = words.next()?.parse().ok()?;
            (words.next()? == name).then(|| (at, words.collect::<Vec<_>>().join(" ")))
        })
        .collect()
}

/// Spawns a task on `id` that traces `tick` every `every` of the host's clock, forever.
fn ticker(engine: &Engine, id: HostId, every: Duration) {
    engine
        .spawn(id, async move {
            loop {
                tokio::time::sleep(every).await;
                leasesim_engine::trace("tick");
            }
        })
        .expect("the host exists");
}

fn tick_times(engine: &Engine, name: &str) -> Vec<u128> {
    lines_of(engine, name)
        .into_iter()
        .filter(|(_, text)| text == "tick")
        .map(|(at, _)| at)
        .collect()
}

#[test]
fn on_a_host_whose_clock_runs_ten_percent_slow_a_ten_second_sleep_takes_eleven_point_one_true_seconds()
 {
    let mut engine = Engine::new(1);
    let slow = engine.add_host("slow").unwrap();
    let exact = engine.add_host("exact").unwrap();
    engine.schedule(
        Duration::ZERO,
        Event::Host(slow, HostFault::Drift(-100_000)),
    );
    for id in [slow, exact] {
        engine
            .spawn(id, async {
                tokio::time::sleep(10 * S).await;
                let local = leasesim_engine::now_local();
                leasesim_engine::trace(&format!("woke at local {}", local.as_millis()));
            })
            .unwrap();
    }
    engine.run_until(20 * S).unwrap();
    assert_eq!(
        lines_of(&engine, "slow"),
        [
            (0, "fault Drift(-100000) -> Running".to_string()),
            (11_111_111_112, "woke at local 10000".to_string())
        ]
    );
    assert_eq!(
        lines_of(&engine, "exact"),
        [(10_000_000_000, "woke at local 10000".to_string())]
    );
}

#[test]
fn a_fast_hosts_interval_and_timeout_run_on_its_clock_too() {
    let mut engine = Engine::new(1);
    let fast = engine.add_host("fast").unwrap();
    engine.schedule(
        Duration::ZERO,
        Event::Host(fast, HostFault::Drift(1_000_000)),
    );
    engine
        .spawn(fast, async {
            let mut interval = tokio::time::interval(S);
            interval.tick().await;
            for _ in 0..2 {
                interval.tick().await;
                leasesim_engine::trace("interval");
            }
            let never = std::future::pending::<()>();
            let _ = tokio::time::timeout(4 * S, never).await;
            leasesim_engine::trace("timed out");
        })
        .unwrap();
    engine.run_until(10 * S).unwrap();
    let times: Vec<u128> = lines_of(&engine, "fast")
        .iter()
        .map(|(at, _)| *at)
        .collect();
    assert_eq!(times, [0, 500_000_000, 1_000_000_000, 3_000_000_000]);
}

#[test]
fn a_paused_hosts_tasks_make_no_progress_and_read_the_jump_on_resume() {
    let mut engine = Engine::new(1);
    let host = engine.add_host("paused").unwrap();
    let other = engine.add_host("other").unwrap();
    ticker(&engine, host, 400 * MS);
    ticker(&engine, other, 400 * MS);
    engine.schedule(S, Event::Host(host, HostFault::Pause));
    engine.schedule(3 * S, Event::Host(host, HostFault::Resume));
    engine.run_until(4 * S).unwrap();
    let ms: Vec<u128> = tick_times(&engine, "paused")
        .iter()
        .map(|ns| ns / 1_000_000)
        .collect();
    // Due at 1.2 s, it fires at the resume with the clock reading 3 s; the next sleep starts
    // there.
    assert_eq!(ms, [400, 800, 3000, 3400, 3800]);
    assert_eq!(
        tick_times(&engine, "other").len(),
        10,
        "the other host runs on"
    );
}

/// The ticks of a host ticking every second, paused by the caller at 2 s after the engine
/// has run to that instant with `stop`, and resumed at 3.5 s.
fn ticks_paused_by_the_caller_at_two_seconds(
    stop: fn(&mut Engine, Duration) -> Result<(), leasesim_engine::EngineError>,
) -> Vec<u128> {
    let mut engine = Engine::new(1);
    let host = engine.add_host("h").unwrap();
    ticker(&engine, host, S);
    stop(&mut engine, 2 * S).unwrap();
    for fault in [HostFault::Drift(0), HostFault::Pause] {
        // Two faults at the one instant: applying the first runs none of the hosts' work.
        engine.schedule(engine.now(), Event::Host(host, fault));
        engine.run_until(engine.now()).unwrap();
    }
    engine.schedule(3500 * MS, Event::Host(host, HostFault::Resume));
    engine.run_until(5 * S).unwrap();
    tick_times(&engine, "h")
        .iter()
        .map(|ns| ns / 1_000_000)
        .collect()
}

#[test]
fn faults_at_the_instant_a_run_to_instant_stops_at_come_before_the_hosts_work_then() {
    // run_to_instant: the pause at 2 s comes before the tick due at 2 s, which fires at the
    // resume; run_until: the host's work at 2 s is done when the caller acts.
    assert_eq!(
        ticks_paused_by_the_caller_at_two_seconds(Engine::run_to_instant),
        [1000, 3500, 4500]
    );
    assert_eq!(
        ticks_paused_by_the_caller_at_two_seconds(Engine::run_until),
        [1000, 2000, 3500, 4500]
    );
}

#[test]
fn a_suspended_host_stops_and_its_monotonic_clock_stands_still_while_boot_time_runs() {
    let mut engine = Engine::new(1);
    let host = engine.add_host("laptop").unwrap();
    engine
        .spawn(host, async {
            loop {
                tokio::time::sleep(400 * MS).await;
                let (mono, boot) = (leasesim_engine::now_local(), leasesim_engine::boottime());
                let text = format!("tick mono {} boot {}", mono.as_millis(), boot.as_millis());
                leasesim_engine::trace(&text);
            }
        })
        .unwrap();
    engine.schedule(S, Event::Host(host, HostFault::Suspend));
    engine.schedule(3 * S, Event::Host(host, HostFault::Wake));
    engine.run_until(4 * S).unwrap();
    let ticks: Vec<(u128, String)> = lines_of(&engine, "laptop")
        .into_iter()
        .filter(|(_, text)| text.starts_with("tick"))
        .map(|(at, text)| (at / 1_000_000, text))
        .collect();
    let expected = [
        (400, "tick mono 400 boot 400"),
        (800, "tick mono 800 boot 800"),
        (3200, "tick mono 1200 boot 3200"),
        (3600, "tick mono 1600 boot 3600"),
        (4000, "tick mono 2000 boot 4000"),
    ];
    let expected: Vec<(u128, String)> = expected.iter().map(|(t, s)| (*t, s.to_string())).collect();
    assert_eq!(ticks, expected);
}

#[test]
fn with_nothing_due_time_jumps_to_the_end_in_one_slice_per_host() {
    let mut engine = Engine::new(1);
    let a = engine.add_host("a").unwrap();
    let b = engine.add_host("b").unwrap();
    ticker(&engine, a, 60 * S);
    ticker(&engine, b, 60 * S);
    engine.run_until(3600 * S).unwrap();
    assert_eq!(
        engine.slices(),
        2,
        "one slice each: their timers fire inside it"
    );
    assert_eq!(tick_times(&engine, "a").len(), 60);
    engine.schedule(3601 * S, Event::Host(a, HostFault::Pause));
    engine.run_until(3602 * S).unwrap();
    assert_eq!(
        engine.slices(),
        2 + 2 + 1,
        "two horizons: the pause, then the end"
    );
}

#[test]
fn a_lookahead_bounds_every_slice() {
    let mut engine = Engine::new(1);
    for name in ["a", "b", "c"] {
        engine.add_host(name).unwrap();
    }
    engine.set_lookahead(Some(MS));
    engine.run_until(S).unwrap();
    assert_eq!(engine.slices(), 3 * 1000);
}

/// A seeded workload: each host sleeps drawn durations and races two ready branches in
/// `select!` (whose order is tokio's RNG, seeded per host by the engine).
fn seeded_run(seed: u64) -> Vec<u8> {
    let mut engine = Engine::new(seed);
    engine.set_lookahead(Some(MS));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for i in 0..4 {
        let id = engine.add_host(&format!("h{i}")).unwrap();
        let sleeps: Vec<u64> = (0..20).map(|_| rng.next_u64() % 500).collect();
        engine
            .spawn(id, async move {
                for ms in sleeps {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    let branch = tokio::select! {
                        () = std::future::ready(()) => "left",
                        () = std::future::ready(()) => "right",
                    };
                    leasesim_engine::trace(branch);
                }
            })
            .unwrap();
        if i == 1 {
            engine.schedule(S, Event::Host(id, HostFault::Pause));
            engine.schedule(2 * S, Event::Host(id, HostFault::Resume));
        }
    }
    engine.run_until(12 * S).unwrap();
    engine.trace()
}

#[test]
fn two_runs_with_the_same_seed_give_the_same_trace_bytes() {
    let first = seeded_run(5);
    assert_eq!(first.iter().filter(|b| **b == b'\n').count(), 4 * 20 + 2);
    assert_eq!(first, seeded_run(5));
    assert_ne!(first, seeded_run(6), "the seed reaches the trace");
}

#[test]
fn a_drift_that_would_stop_a_clock_is_refused_with_the_host_and_time() {
    let mut engine = Engine::new(1);
    let host = engine.add_host("h").unwrap();
    engine.schedule(S, Event::Host(host, HostFault::Drift(-1_000_000)));
    let err = engine.run_until(2 * S).unwrap_err();
    assert_eq!(
        err.to_string(),
        "host 0 at 1s: clock drift -1000000 ppm is outside -999999..=1000000: -1000000 ppm or \
         less would stop or reverse a monotonic clock (suspend the host to stop it)"
    );
    assert_eq!(engine.now(), S);
}

#[test]
fn a_network_fault_on_an_engine_without_a_network_is_refused() {
    let mut engine = Engine::new(1);
    let a = engine.add_host("a").unwrap();
    let b = engine.add_host("b").unwrap();
    let cut = leasesim_engine::NetFault::Cut;
    engine.schedule(
        S,
        Event::Net {
            from: a,
            to: b,
            fault: cut,
        },
    );
    let err = engine.run_until(2 * S).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a network fault on an engine without a network: build it with Engine::with_network"
    );
}

#[test]
fn a_restarted_process_loses_its_tasks_and_its_successor_reads_the_same_clock() {
    let mut engine = Engine::new(1);
    let host = engine.add_host("h").unwrap();
    engine.schedule(
        Duration::ZERO,
        Event::Host(host, HostFault::Drift(-500_000)),
    );
    ticker(&engine, host, 400 * MS);
    let restart = move |engine: &mut Engine| {
        engine.restart(host).unwrap();
        engine
            .spawn(host, async {
                tokio::time::sleep(400 * MS).await;
                let local = leasesim_engine::now_local().as_millis();
                leasesim_engine::trace(&format!("successor at local {local}"));
            })
            .unwrap();
    };
    engine.schedule(2 * S, Event::Call(Box::new(restart)));
    engine.run_until(5 * S).unwrap();
    let ms: Vec<(u128, String)> = lines_of(&engine, "h")
        .into_iter()
        .map(|(at, text)| (at / 1_000_000, text))
        .collect();
    // At half speed the old process ticks at true 800 and 1600 ms; killed at 2 s (its clock
    // reads 1 s), it never ticks at 2400. Its successor's 400 ms sleep ends at 1.4 s on the
    // same clock, true 2.8 s.
    let expected = [
        (0, "fault Drift(-500000) -> Running"),
        (800, "tick"),
        (1600, "tick"),
        (2000, "restart"),
        (2800, "successor at local 1400"),
    ];
    let expected: Vec<(u128, String)> = expected
        .iter()
        .map(|(t, s)| (*t, (*s).to_string()))
        .collect();
    assert_eq!(ms, expected);
}

#[test]
fn try_now_true_reads_true_time_on_a_host_and_nothing_outside_one() {
    assert_eq!(leasesim_engine::try_now_true(), None);
    let mut engine = Engine::new(3);
    let slow = engine.add_host("slow").unwrap();
    engine.schedule(
        Duration::ZERO,
        Event::Host(slow, HostFault::Drift(-500_000)),
    );
    engine
        .spawn(slow, async {
            #[allow(clippy::disallowed_methods)] // the host's own clock: 1 s at half speed
            tokio::time::sleep(Duration::from_secs(1)).await;
            let now = leasesim_engine::try_now_true().expect("on a host");
            leasesim_engine::trace(&format!("read {}", now.as_millis()));
        })
        .unwrap();
    engine.run_until(Duration::from_secs(3)).unwrap();
    assert_eq!(
        lines_of(&engine, "slow"),
        vec![
            (0, "fault Drift(-500000) -> Running".to_owned()),
            (2_000_000_000, "read 2000".to_owned())
        ]
    );
}

#[test]
fn a_local_delay_on_a_slow_host_is_the_true_delay_scaled_by_its_clock() {
    let mut engine = Engine::new(3);
    let slow = engine.add_host("slow").unwrap();
    engine.schedule(
        Duration::ZERO,
        Event::Host(slow, HostFault::Drift(-100_000)),
    );
    engine
        .spawn(slow, async {
            let delay = leasesim_engine::local_delay(Duration::from_secs(1));
            leasesim_engine::trace(&format!("delay {}", delay.as_nanos()));
            #[allow(clippy::disallowed_methods)] // the host's own clock
            tokio::time::sleep(delay).await;
            leasesim_engine::trace("slept");
        })
        .unwrap();
    engine.run_until(Duration::from_secs(3)).unwrap();
    let lines = lines_of(&engine, "slow");
    assert_eq!(lines[1], (0, "delay 900000000".to_owned()));
    assert_eq!(lines[2], (1_000_000_000, "slept".to_owned()));
}
