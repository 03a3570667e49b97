//! A machine crash at one time and its start at another (docs/engine.md#crash-and-start), as
//! the world's `crash` and `restart` faults need them: between the two the host is down —
//! no task, no network — and the start is a new boot.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Duration;

use leasesim_engine::{Engine, EngineError, Event, HostId, HostState, NetConfig};
use turmoil_net::shim::tokio::net::TcpStream;

mod common;
use common::{echo_server, ping, ping_twice};
mod support;
use support::{trace_ms, two_hosts};

const MS: Duration = Duration::from_millis(1);

/// Traces the host's boot and monotonic reading.
async fn trace_boot() {
    leasesim_engine::trace(&format!(
        "boot {} mono {} ms",
        leasesim_engine::boot(),
        leasesim_engine::now_local().as_millis()
    ));
}

/// Traces the host's boot and monotonic reading, then serves the echo.
async fn traced_echo_server() {
    trace_boot().await;
    echo_server().await;
}

/// An engine with hosts `server` (serving the echo, its boot traced) and `client` over 5 ms
/// links; the client's tasks are the test's.
fn echo_world() -> (Engine, HostId, HostId) {
    let config = NetConfig {
        latency: (5 * MS).into(),
        ..NetConfig::default()
    };
    let (engine, server, client) = two_hosts(1, config, ["server", "client"]);
    engine.spawn(server, traced_echo_server()).expect("a host");
    (engine, server, client)
}

fn state(engine: &Engine, id: HostId) -> HostState {
    engine.host(id).expect("the host exists").state()
}

#[test]
fn a_crashed_server_is_down_and_silent_until_it_starts_on_a_new_boot() {
    let (mut engine, server, client) = echo_world();
    engine.spawn(client, ping_twice(77 * MS)).expect("a host");
    let crash = move |engine: &mut Engine| engine.crash(server).expect("the host exists");
    engine.schedule(50 * MS, Event::Call(Box::new(crash)));
    let start = move |engine: &mut Engine| {
        engine.start(server).expect("the host is down");
        engine.spawn(server, traced_echo_server()).expect("a host");
    };
    engine.schedule(2000 * MS, Event::Call(Box::new(start)));
    engine.run_until(1000 * MS).expect("no fault refused");
    assert_eq!(state(&engine, server), HostState::Down);
    engine.run_until(4000 * MS).expect("no fault refused");
    assert_eq!(state(&engine, server), HostState::Running);
    // Crashed at 50, the server sends nothing more: no FIN, unlike a killed process
    // (tests/net.rs's restart). The client's second ping (100) is retransmitted into the
    // crash until TCP gives up at 100 + 1.2 s; its SYNs from then on are lost too, until the
    // start at 2000: the new boot's clock reads 0, it binds at once (the old sockets were
    // reaped by then), and the client's SYN retransmitted at 2100 connects.
    assert_eq!(
        trace_ms(&engine),
        [
            "0 server boot 0 mono 0 ms",
            "0 server listening",
            "23 client ping",
            "50 server crash -> Down",
            "1300 client error TimedOut",
            "2000 server start -> boot 1",
            "2000 server boot 1 mono 0 ms",
            "2000 server listening",
            "2122 client ping",
        ]
    );
}

#[test]
fn a_crash_during_a_reboots_down_time_keeps_the_host_down_until_it_is_started() {
    let mut engine = Engine::new(1);
    let host = engine.add_host("h").expect("a host");
    let reboot = move |engine: &mut Engine| engine.reboot(host, 500 * MS).expect("a host");
    let crash = move |engine: &mut Engine| engine.crash(host).expect("a host");
    engine.schedule(100 * MS, Event::Call(Box::new(reboot)));
    engine.schedule(300 * MS, Event::Call(Box::new(crash)));
    engine.run_until(1000 * MS).expect("no fault refused");
    // The reboot's end (600) finds a later crash: the host stays down.
    assert_eq!(state(&engine, host), HostState::Down);
    engine.start(host).expect("the host is down");
    engine.spawn(host, trace_boot()).expect("a host");
    engine.run_until(1001 * MS).expect("no fault refused");
    assert_eq!(
        trace_ms(&engine),
        [
            "100 h reboot -> boot 1, down for 500ms",
            "300 h crash -> Down",
            "1000 h start -> boot 2",
            "1000 h boot 2 mono 0 ms",
        ]
    );
}

#[test]
fn a_host_is_found_by_name_and_only_a_down_host_can_be_started() {
    let mut engine = Engine::new(1);
    let lease = engine.add_host("lease").expect("a host");
    let replica = engine.add_host("replica-1").expect("a host");
    assert_eq!(engine.host_id("replica-1"), Some(replica));
    assert_eq!(engine.host_id("lease"), Some(lease));
    assert_eq!(engine.host_id("replica-2"), None);
    let err = engine.start(lease).expect_err("running");
    assert_eq!(err, EngineError::NotDown(lease));
    assert_eq!(
        err.to_string(),
        "host 0 is not down: crash it before starting it"
    );
    let ghost = HostId(7);
    assert_eq!(engine.crash(ghost), Err(EngineError::NoSuchHost(ghost)));
    assert_eq!(engine.start(ghost), Err(EngineError::NoSuchHost(ghost)));
}

#[test]
fn a_crash_and_a_start_at_once_close_the_connections_as_a_killed_process_does() {
    let (mut engine, server, client) = echo_world();
    engine
        .spawn(client, async {
            use tokio::io::AsyncReadExt;
            let mut stream = TcpStream::connect("server:9000").await.expect("connect");
            ping(&mut stream).await;
            let mut buf = [0u8; 4];
            let read = stream.read(&mut buf).await.map_err(|e| e.kind());
            leasesim_engine::trace(&format!("read {read:?}"));
        })
        .expect("a host");
    let restart = move |engine: &mut Engine| {
        engine.crash(server).expect("the host exists");
        engine.start(server).expect("the host is down");
        engine.spawn(server, trace_boot()).expect("a host");
    };
    engine.schedule(50 * MS, Event::Call(Box::new(restart)));
    engine.run_until(1000 * MS).expect("no fault refused");
    // The FIN of the dropped connection leaves once the host is up, at the fabric tick of the
    // call's own time (events first, then the tick), and is read as EOF 5 ms later, as
    // after Engine::restart (tests/net.rs); the clock is a new boot.
    assert_eq!(
        trace_ms(&engine),
        [
            "0 server boot 0 mono 0 ms",
            "0 server listening",
            "23 client ping",
            "50 server crash -> Down",
            "50 server start -> boot 1",
            "50 server boot 1 mono 0 ms",
            "55 client read Ok(0)",
        ]
    );
}

#[test]
fn a_paused_host_that_crashes_is_down_and_a_resume_does_not_run_it() {
    use leasesim_engine::HostFault;
    let mut engine = Engine::new(1);
    let host = engine.add_host("h").expect("a host");
    engine
        .spawn(host, async {
            loop {
                tokio::time::sleep(100 * MS).await;
                leasesim_engine::trace("tick");
            }
        })
        .expect("a host");
    engine.schedule(150 * MS, Event::Host(host, HostFault::Pause));
    let crash = move |engine: &mut Engine| engine.crash(host).expect("a host");
    engine.schedule(250 * MS, Event::Call(Box::new(crash)));
    engine.schedule(350 * MS, Event::Host(host, HostFault::Resume));
    engine.run_until(1000 * MS).expect("no fault refused");
    assert_eq!(state(&engine, host), HostState::Down);
    // The ticker's tasks went with the crash: the resume finds a down host, and no tick
    // comes after the pause.
    assert_eq!(
        trace_ms(&engine),
        [
            "100 h tick",
            "150 h fault Pause -> Paused",
            "250 h crash -> Down",
            "350 h fault Resume -> Down",
        ]
    );
}
