//! Skipping empty slices (docs/engine.md#skipped-slices) changes the cost only: a busy world
//! of drifting, paused, suspended and restarted hosts talking TCP gives the same trace bytes
//! with every slice run as with the empty ones skipped — the same timers at the same
//! readings, the same deliveries, the same `select!` draws, the same task order.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Duration;

use leasesim_engine::{Engine, Event, HostFault, HostId, NetConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use turmoil_net::shim::tokio::net::{TcpListener, TcpStream};

#[allow(dead_code, reason = "this file pings with its own server")]
mod common;
use common::ping;

const MS: Duration = Duration::from_millis(1);

/// Traces `what` with the host's monotonic reading and one `select!` draw between two ready
/// branches (tokio's per-slice RNG).
async fn trace_draw(what: &str) {
    let branch = tokio::select! {
        () = std::future::ready(()) => "left",
        () = std::future::ready(()) => "right",
    };
    let local = leasesim_engine::now_local().as_micros();
    leasesim_engine::trace(&format!("{what} at local {local} us, {branch}"));
}

/// Connects, then pings every `every` of the host's clock, racing each ping against a 3 ms
/// timeout and drawing a `select!` branch after each.
async fn pinger(every: Duration) {
    let mut stream = loop {
        if let Ok(stream) = TcpStream::connect("server:9000").await {
            break stream;
        }
        tokio::time::sleep(10 * MS).await;
    };
    loop {
        match tokio::time::timeout(3 * MS, ping(&mut stream)).await {
            Ok(true) => trace_draw("echo").await,
            Ok(false) => return trace_draw("closed").await,
            Err(_) => trace_draw("slow echo").await,
        }
        tokio::time::sleep(every).await;
    }
}

/// An echo server whose connection tasks (woken from outside the runtime, by deliveries) each
/// wake a logger task of the host (woken inside it) before echoing: when two connections'
/// segments arrive in one tick, the trace shows which kind of task the runtime ran first.
async fn logging_echo_server() {
    let listener = TcpListener::bind("0.0.0.0:9000").await.unwrap();
    let (log, mut lines) = unbounded_channel::<String>();
    tokio::spawn(async move {
        while let Some(line) = lines.recv().await {
            trace_draw(&line).await;
        }
    });
    for conn in 0.. {
        let (stream, _) = listener.accept().await.unwrap();
        tokio::spawn(echo_logged(stream, conn, log.clone()));
    }
}

async fn echo_logged(mut stream: TcpStream, conn: u32, log: UnboundedSender<String>) {
    let mut buf = [0u8; 64];
    while let Ok(n) = stream.read(&mut buf).await {
        trace_draw(&format!("read {n} on {conn}")).await;
        let _ = log.send(format!("logged {n} on {conn}"));
        if n == 0 || stream.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// A task that wakes every `every` of its host's clock, wakes a second task of its own
/// through a channel (a task woken inside the runtime), and draws.
async fn chatter(every: Duration) {
    let (tx, mut rx) = unbounded_channel::<u32>();
    tokio::spawn(async move {
        while let Some(n) = rx.recv().await {
            trace_draw(&format!("heard {n}")).await;
        }
    });
    for n in 0.. {
        tokio::time::sleep(every).await;
        trace_draw("chatter").await;
        if tx.send(n).is_err() {
            return;
        }
    }
}

fn add(engine: &mut Engine, name: &str, drift_ppm: i64) -> HostId {
    let id = engine.add_host(name).unwrap();
    engine.schedule(Duration::ZERO, Event::Host(id, HostFault::Drift(drift_ppm)));
    id
}

/// The busy world, run for 2 true seconds with empty slices skipped or not; its trace and
/// the engine's slice counts (all, skipped).
fn busy_world(skip: bool) -> (Vec<u8>, u64, u64) {
    let mut engine = Engine::with_network(3, NetConfig::default()).unwrap();
    engine.set_skip_empty_slices(skip);
    let server = add(&mut engine, "server", -100_000);
    engine.spawn(server, logging_echo_server()).unwrap();
    engine.spawn(server, chatter(11 * MS)).unwrap();
    let clients = [
        ("slow", -100_000, 5),
        ("slower", -300_000, 5),
        ("fast", 50_000, 5),
    ];
    let mut ids = Vec::new();
    for (name, drift, every) in clients {
        let id = add(&mut engine, name, drift);
        engine.spawn(id, pinger(every * MS)).unwrap();
        engine.spawn(id, chatter(17 * MS)).unwrap();
        ids.push(id);
    }
    // A host with no task until 500 ms: its clock must read right when its first task runs.
    let late = add(&mut engine, "late", -100_000);
    let start_late = move |engine: &mut Engine| {
        engine.spawn(late, pinger(5 * MS)).unwrap();
        engine.spawn(late, chatter(4 * MS)).unwrap();
    };
    engine.schedule(500 * MS, Event::Call(Box::new(start_late)));
    engine.schedule(300 * MS, Event::Host(ids[0], HostFault::Pause));
    engine.schedule(420 * MS, Event::Host(ids[0], HostFault::Resume));
    engine.schedule(600 * MS, Event::Host(ids[1], HostFault::Suspend));
    engine.schedule(650 * MS, Event::Host(ids[1], HostFault::Wake));
    let restart = move |engine: &mut Engine| {
        engine.restart(ids[2]).unwrap();
        engine.spawn(ids[2], pinger(3 * MS)).unwrap();
    };
    engine.schedule(1200 * MS, Event::Call(Box::new(restart)));
    engine.run_until(2000 * MS).unwrap();
    (engine.trace(), engine.slices(), engine.skipped_slices())
}

#[test]
fn skipping_empty_slices_gives_the_same_trace_bytes_as_running_every_slice() {
    let (every_slice, slices, none_skipped) = busy_world(false);
    let (skipping, same_slices, skipped) = busy_world(true);
    let text = String::from_utf8(every_slice.clone()).unwrap();
    for host in ["slow", "slower", "fast", "late", "server"] {
        let lines = text
            .lines()
            .filter(|l| l.contains(&format!(" {host} ")))
            .count();
        assert!(lines > 50, "{host} is busy: {lines} lines\n{text}");
    }
    assert!(
        text.contains(" right") && text.contains(" left"),
        "both branches drawn"
    );
    assert_eq!(none_skipped, 0, "nothing skipped when told not to");
    assert_eq!(
        slices, same_slices,
        "one slice per running host per horizon, run or not"
    );
    assert!(
        skipped > slices / 20,
        "slow clocks leave empty slices: {skipped} of {slices}"
    );
    assert!(
        skipping == every_slice,
        "the same trace bytes, skipping or not"
    );
}
