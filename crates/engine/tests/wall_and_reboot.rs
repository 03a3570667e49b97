//! Wall clocks and machine reboots (docs/engine.md#wall-clocks-and-reboots): the wall clock is
//! the monotonic reading plus the boot's wall epoch plus a step offset that faults move; a
//! reboot is a new boot (monotonic and boot time from zero, wall clock running on), after a
//! down period in which the machine runs nothing and its network is down.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Duration;

use leasesim_engine::{Engine, Event, HostFault, HostId, HostState};

mod common;
use common::{echo_server, pinging_world};
mod support;
use support::trace_ms;

const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);
/// 2026-12-07T00:00:00Z, in ns since the Unix epoch.
const EPOCH_NS: i128 = 1_796_601_600_000_000_000;

/// Traces the host's clocks: boot, monotonic ms, boot-time ms and wall ms after `EPOCH_NS`.
fn trace_clocks(what: &str) {
    let wall_ms = (leasesim_engine::wall() - EPOCH_NS) / 1_000_000;
    leasesim_engine::trace(&format!(
        "{what}: boot {} mono {} boottime {} wall {wall_ms}",
        leasesim_engine::boot(),
        leasesim_engine::now_local().as_millis(),
        leasesim_engine::boottime().as_millis(),
    ));
}

/// Spawns a task on `id` that traces its clocks every `every` of the host's clock, forever.
fn clock_ticker(engine: &Engine, id: HostId, every: Duration) {
    engine
        .spawn(id, async move {
            loop {
                tokio::time::sleep(every).await;
                trace_clocks("tick");
            }
        })
        .expect("the host exists");
}

#[test]
fn a_wall_jump_back_of_five_seconds_at_true_three_seconds_moves_the_wall_clock_only() {
    let mut engine = Engine::new(1);
    let host = engine.add_host("h").unwrap();
    engine.set_wall_epoch(host, EPOCH_NS).unwrap();
    engine.schedule(
        3 * S,
        Event::Host(host, HostFault::WallJump(-5_000_000_000)),
    );
    engine.schedule(5 * S, Event::Host(host, HostFault::WallOffset(250_000_000)));
    clock_ticker(&engine, host, 2 * S);
    engine.run_until(7 * S).unwrap();
    // The 2 s timer fires at 2, 4 and 6 s whatever the wall clock does; the jump at 3 s takes
    // the wall reading 5 s back (4 s reads -1 s), the offset at 5 s replaces it (+250 ms).
    assert_eq!(
        trace_ms(&engine),
        [
            "2000 h tick: boot 0 mono 2000 boottime 2000 wall 2000",
            "3000 h fault WallJump(-5000000000) -> Running",
            "4000 h tick: boot 0 mono 4000 boottime 4000 wall -1000",
            "5000 h fault WallOffset(250000000) -> Running",
            "6000 h tick: boot 0 mono 6000 boottime 6000 wall 6250",
        ]
    );
}

#[test]
fn the_wall_clock_follows_a_slow_monotonic_clock_and_stands_while_the_host_is_suspended() {
    let mut engine = Engine::new(1);
    let host = engine.add_host("h").unwrap();
    engine.set_wall_epoch(host, EPOCH_NS).unwrap();
    engine.schedule(
        Duration::ZERO,
        Event::Host(host, HostFault::Drift(-100_000)),
    );
    engine.schedule(2 * S, Event::Host(host, HostFault::Suspend));
    engine.schedule(3 * S, Event::Host(host, HostFault::Wake));
    clock_ticker(&engine, host, 900 * MS);
    engine.run_until(4 * S).unwrap();
    // 10 % slow: 900 ms of the host's clock is 1 true s. Suspended from true 2 s (the clock
    // reads 1.8 s; the tick due there runs in the slice ending at 2 s, before the fault) to
    // 3 s: monotonic and wall stand still, boot time counts the sleep.
    assert_eq!(
        trace_ms(&engine),
        [
            "0 h fault Drift(-100000) -> Running",
            "1000 h tick: boot 0 mono 900 boottime 900 wall 900",
            "2000 h tick: boot 0 mono 1800 boottime 1800 wall 1800",
            "2000 h fault Suspend -> Suspended",
            "3000 h fault Wake -> Running",
            "4000 h tick: boot 0 mono 2700 boottime 3700 wall 2700",
        ]
    );
}

#[test]
fn a_reboot_drops_every_task_and_starts_a_new_boot_whose_wall_clock_runs_on() {
    let mut engine = Engine::new(1);
    let host = engine.add_host("h").unwrap();
    engine.set_wall_epoch(host, EPOCH_NS).unwrap();
    engine.schedule(
        Duration::ZERO,
        Event::Host(host, HostFault::Drift(-500_000)),
    );
    engine.schedule(S, Event::Host(host, HostFault::WallJump(7_000_000)));
    clock_ticker(&engine, host, 400 * MS);
    let reboot = move |engine: &mut Engine| {
        engine.reboot(host, 600 * MS).unwrap();
        assert_eq!(engine.host(host).unwrap().state(), HostState::Down);
        engine
            .spawn(host, async {
                trace_clocks("booted");
                tokio::time::sleep(400 * MS).await;
                trace_clocks("slept 400 ms");
            })
            .unwrap();
    };
    engine.schedule(2 * S, Event::Call(Box::new(reboot)));
    engine.run_until(5 * S).unwrap();
    // Half speed: the old boot ticks at true 0.8 and 1.6 s (mono 400, 800); at true 2 s it
    // reads 1 s, and the wall clock 1 s + the 7 ms jump. The new boot's clocks start from zero
    // at 2 s; down for 600 ms, its first task reads 300 ms (half speed) and the wall clock has
    // run on from 1007 ms; its 400 ms sleep ends at true 3.4 s. The old ticker is gone.
    assert_eq!(
        trace_ms(&engine),
        [
            "0 h fault Drift(-500000) -> Running",
            "800 h tick: boot 0 mono 400 boottime 400 wall 400",
            "1000 h fault WallJump(7000000) -> Running",
            "1600 h tick: boot 0 mono 800 boottime 800 wall 807",
            "2000 h reboot -> boot 1, down for 600ms",
            "2600 h up",
            "2600 h booted: boot 1 mono 300 boottime 300 wall 1307",
            "3400 h slept 400 ms: boot 1 mono 700 boottime 700 wall 1707",
        ]
    );
}

#[test]
fn a_reboot_ends_a_suspension_and_boot_time_starts_from_zero() {
    let mut engine = Engine::new(1);
    let host = engine.add_host("h").unwrap();
    engine.set_wall_epoch(host, EPOCH_NS).unwrap();
    engine.schedule(S, Event::Host(host, HostFault::Suspend));
    let reboot = move |engine: &mut Engine| {
        engine.reboot(host, Duration::ZERO).unwrap();
        engine
            .spawn(host, async {
                tokio::time::sleep(S).await;
                trace_clocks("new boot");
            })
            .unwrap();
    };
    engine.schedule(3 * S, Event::Call(Box::new(reboot)));
    // A wake meant for the old boot finds the host running and changes nothing.
    engine.schedule(4 * S, Event::Host(host, HostFault::Wake));
    engine.run_until(5 * S).unwrap();
    // Suspended at 1 s (the clock stops at 1 s, the wall clock too), rebooted at 3 s with no
    // down time: monotonic and boot time from zero, wall clock from 1 s. (The new boot's timer
    // due at 4 s runs in the slice ending there, before the events due at 4 s.)
    assert_eq!(
        trace_ms(&engine),
        [
            "1000 h fault Suspend -> Suspended",
            "3000 h reboot -> boot 1, down for 0ns",
            "4000 h new boot: boot 1 mono 1000 boottime 1000 wall 2000",
            "4000 h fault Wake -> Running",
        ]
    );
}

/// An echo server and a client that connects, pings at once and again at `second_ping` of
/// its clock (then connects anew and pings once more if that failed); the server reboots at
/// true 50 ms for `down`.
fn reboot_world(down: Duration, second_ping: Duration) -> Engine {
    let (mut engine, server, _) = pinging_world(second_ping);
    let reboot = move |engine: &mut Engine| {
        engine.reboot(server, down).unwrap();
        engine.spawn(server, echo_server()).unwrap();
    };
    engine.schedule(50 * MS, Event::Call(Box::new(reboot)));
    engine
}

#[test]
fn a_server_down_longer_than_tcp_gives_up_comes_back_with_no_old_connection_and_resets_the_peer() {
    let mut engine = reboot_world(1500 * MS, 2000 * MS);
    engine.run_until(3000 * MS).unwrap();
    let mut lines = trace_ms(&engine);
    lines.retain(|line| !line.contains(" net link "));
    // The first echo at 23 ms (as in tests/net.rs). The crash at 50 ms: the old process's FIN
    // never leaves (the machine is down), its socket retransmits into nothing and times out
    // at 1.2 s of no progress, so the port is free when the new boot comes up at 1550 ms and
    // binds at once. The client heard nothing: its ping at 2023 ms (2 s after the first echo)
    // reaches a kernel with no such connection, whose RST resets it at 2033; it connects anew
    // and its echo comes at 2056.
    assert_eq!(
        lines,
        [
            "0 server listening",
            "23 client ping",
            "50 server reboot -> boot 1, down for 1.5s",
            "1550 server up",
            "1550 server listening",
            "2033 client error ConnectionReset",
            "2056 client ping",
        ]
    );
}

#[test]
fn a_server_down_shorter_than_tcp_gives_up_keeps_its_old_connection_lingering_in_its_kernel() {
    let mut engine = reboot_world(100 * MS, 77 * MS);
    engine.run_until(3000 * MS).unwrap();
    let mut lines = trace_ms(&engine);
    lines.retain(|line| !line.contains(" net link "));
    // Down from 50 to 150 ms. The client's second ping (100 ms) is lost: the server is down.
    // The old connection's FIN, dropped at the crash, is retransmitted by turmoil-net's kernel,
    // which the reboot could not reset, 200 ms (the RTO) later: at 250 it leaves, and at 255
    // the client reads EOF, where a rebooted Linux would have answered its ping's
    // retransmission with a RST. Until that connection closes it holds port 9000: the new
    // boot's binds at 150 and 250 fail, the client's reconnection at 255 is refused (261 at the
    // server, 266 back), and only the bind at 350 succeeds; the client's retry at 366 is echoed
    // at 388.
    assert_eq!(
        lines,
        [
            "0 server listening",
            "23 client ping",
            "50 server reboot -> boot 1, down for 100ms",
            "150 server up",
            "150 server bind AddrInUse",
            "250 server bind AddrInUse",
            "255 client error UnexpectedEof",
            "266 client connect ConnectionRefused",
            "350 server listening",
            "388 client ping",
        ]
    );
}

#[test]
fn a_down_host_ignores_suspends_and_a_second_reboot_while_down_moves_its_boot_on() {
    let mut engine = Engine::new(1);
    let host = engine.add_host("h").unwrap();
    engine.set_wall_epoch(host, EPOCH_NS).unwrap();
    let reboot = move |engine: &mut Engine| {
        engine.reboot(host, S).unwrap();
        engine
            .spawn(host, async { trace_clocks("booted") })
            .unwrap();
    };
    engine.schedule(S, Event::Call(Box::new(reboot)));
    engine.schedule(1500 * MS, Event::Host(host, HostFault::Suspend));
    engine.schedule(1800 * MS, Event::Call(Box::new(reboot)));
    engine.run_until(4 * S).unwrap();
    // The suspend finds the machine down and changes nothing. The second crash at 1.8 s drops
    // the first boot's task before it ever ran; the first boot's end (2 s) is void, and the
    // second boot is up at 2.8 s, its clocks 1 s from its start; the wall clock ran on through
    // both crashes.
    assert_eq!(
        trace_ms(&engine),
        [
            "1000 h reboot -> boot 1, down for 1s",
            "1500 h fault Suspend -> Down",
            "1800 h reboot -> boot 2, down for 1s",
            "2800 h up",
            "2800 h booted: boot 2 mono 1000 boottime 1000 wall 2800",
        ]
    );
}

#[test]
fn a_reboot_replays_to_the_same_trace_bytes() {
    let run = || {
        let mut engine = reboot_world(100 * MS, 77 * MS);
        engine.run_until(1000 * MS).unwrap();
        engine.trace()
    };
    let first = run();
    assert!(!first.is_empty());
    assert_eq!(first, run());
}
