//! Our gRPC lease service on the engine (docs/engine.md#transport): the server `leasesim-remote`
//! builds over an `Incoming`, in front of the in-memory authority (`MemLease`) on host `lease`,
//! and our `RemoteLease` client on two replica hosts, every connection through the engine's
//! transport (turmoil-net's `tokio::net` shim) — the same service and client code the world and
//! live runs use, unchanged.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use leasesim_core::clock::{Clock, Instant, WallTime};
use leasesim_core::lease::{Lease, LeaseError, MemLease, Owner, SessionId, SessionLease};
use leasesim_engine::{Engine, Event, HostFault, HostId, NetConfig, NetFault, transport};
use leasesim_remote::lease::{LeaseServer, RemoteLease};
use leasesim_remote::{ClientConfig, RemoteChannel};

const MS: Duration = Duration::from_millis(1);
/// The TTL of every lease the authority grants.
const TTL: Duration = Duration::from_secs(2);
/// The lease service's address.
const LEASE_ADDR: &str = "lease:7070";

/// The clock of whichever engine host runs the caller: its monotonic reading
/// (`leasesim_engine::now_local`), and sleeps on its tokio clock, which is that same clock
/// (docs/engine.md#hosts). The wall clock reads the monotonic one (the engine has no wall
/// clock yet, docs/engine.md#what-is-left).
#[derive(Debug)]
struct HostClock;

#[async_trait]
impl Clock for HostClock {
    fn now(&self) -> Instant {
        Instant::from_origin(leasesim_engine::now_local())
    }

    fn wall(&self) -> WallTime {
        let unix_ns = leasesim_engine::now_local().as_nanos();
        WallTime {
            unix_ns: i128::try_from(unix_ns).unwrap_or(i128::MAX),
        }
    }

    async fn sleep_until(&self, deadline: Instant) {
        tokio::time::sleep(deadline.saturating_duration_since(self.now())).await;
    }
}

/// Serves the lease service on the current host, at port 7070, from a `MemLease` of [`TTL`]
/// on the host's clock.
async fn lease_service() {
    let authority = Arc::new(MemLease::new(Arc::new(HostClock), TTL));
    let incoming = transport::incoming("0.0.0.0:7070").await.unwrap();
    LeaseServer::new(authority)
        .serve(incoming, std::future::pending())
        .await
        .unwrap();
}

/// A `RemoteLease` client of the lease service, each call bounded by 300 ms of the caller's
/// clock (so a call into a partition fails within a renew interval).
fn client() -> RemoteLease {
    let config = ClientConfig {
        call_timeout: 300 * MS,
        connect_timeout: 300 * MS,
        ..ClientConfig::default()
    };
    let channel = RemoteChannel::new(
        LEASE_ADDR,
        transport::dialer(),
        Arc::new(HostClock),
        &config,
    );
    RemoteLease::new(channel.unwrap())
}

/// A grant, as the trace shows it: the token and when the authority granted it, on the
/// authority's clock (its expiry less the TTL), in milliseconds.
fn granted(lease: &Lease) -> String {
    let at = lease.expiry().since_origin() - lease.ttl();
    let ms = at.as_nanos() as f64 / 1e6;
    format!("token {} granted at lease {ms} ms", lease.token())
}

/// What an error is, without its free text.
fn kind(error: &LeaseError) -> String {
    match error {
        LeaseError::Held { holder_token } => format!("Held by {holder_token:?}"),
        LeaseError::Unavailable { .. } => "Unavailable".to_owned(),
        other => format!("{other}"),
    }
}

/// replica-1: acquires, then renews every 500 ms of its clock until the lease is lost.
async fn first_holder(session: SessionId) {
    let lease = client();
    let owner = Owner::new("replica-1", 1);
    let mut held = lease.acquire(&session, &owner).await.unwrap();
    leasesim_engine::trace(&format!("acquired {}", granted(&held)));
    loop {
        tokio::time::sleep(500 * MS).await;
        match lease.renew(&held).await {
            Ok(renewed) => {
                leasesim_engine::trace(&format!("renewed {}", granted(&renewed)));
                held = renewed;
            }
            Err(e @ LeaseError::Held { .. }) => {
                return leasesim_engine::trace(&format!("renew {}: lost", kind(&e)));
            }
            Err(e) => leasesim_engine::trace(&format!("renew {}", kind(&e))),
        }
    }
}

/// replica-2: from 100 ms of its clock, tries to acquire every 10 ms after each refusal; once
/// it holds the lease, renews it every 500 ms (tracing only a failure).
async fn successor(session: SessionId) {
    let lease = client();
    let owner = Owner::new("replica-2", 1);
    tokio::time::sleep(100 * MS).await;
    let mut refused = 0;
    let mut held = loop {
        match lease.acquire(&session, &owner).await {
            Ok(taken) => break taken,
            Err(LeaseError::Held {
                holder_token: Some(1),
            }) => refused += 1,
            Err(e) => return leasesim_engine::trace(&format!("acquire {}", kind(&e))),
        }
        tokio::time::sleep(10 * MS).await;
    };
    let line = format!("acquired {} after {refused} refusals", granted(&held));
    leasesim_engine::trace(&line);
    loop {
        tokio::time::sleep(500 * MS).await;
        match lease.renew(&held).await {
            Ok(renewed) => held = renewed,
            Err(e) => return leasesim_engine::trace(&format!("renew {}", kind(&e))),
        }
    }
}

/// The world: `lease` serving, replica-1 holding, replica-2 waiting; replica-1 cut off from
/// `lease` both ways from 1 s to 5 s of true time. `setup` queues what else the test needs.
/// The trace, times in milliseconds of true time, without the network's fault lines.
fn takeover_trace(setup: impl FnOnce(&mut Engine, HostId)) -> Vec<String> {
    let config = NetConfig {
        latency: (5 * MS).into(),
        ..NetConfig::default()
    };
    let mut engine = Engine::with_network(1, config).unwrap();
    let lease = engine.add_host("lease").unwrap();
    let first = engine.add_host("replica-1").unwrap();
    let second = engine.add_host("replica-2").unwrap();
    setup(&mut engine, lease);
    for (at, fault) in [(1000 * MS, NetFault::Cut), (5000 * MS, NetFault::Release)] {
        for (from, to) in [(first, lease), (lease, first)] {
            engine.schedule(at, Event::Net { from, to, fault });
        }
    }
    let session = SessionId::new("s1").unwrap();
    engine.spawn(lease, lease_service()).unwrap();
    engine.spawn(first, first_holder(session.clone())).unwrap();
    engine.spawn(second, successor(session)).unwrap();
    engine.run_until(6000 * MS).unwrap();
    let mut trace = trace_ms(&engine);
    trace.retain(|line| !line.contains(" net link "));
    trace
}

/// The engine's trace, times in milliseconds of true time.
fn trace_ms(engine: &Engine) -> Vec<String> {
    let trace = String::from_utf8(engine.trace()).unwrap();
    trace
        .lines()
        .map(|line| {
            let (ns, rest) = line.trim_start().split_once(' ').unwrap();
            let ms = ns.parse::<u128>().unwrap() as f64 / 1e6;
            format!("{ms} {rest}")
        })
        .collect()
}

/// The renews of replica-1, on its clock (true time here), around the partition from 1 s to
/// 5 s: tonic's 300 ms call timeout fails the renew sent into the cut at 1034 ms at 1334, and
/// the channel is dropped; each later renew (every 500 ms after the last outcome) dials a fresh
/// connection whose SYNs are cut, and the 300 ms connect timeout fails it. After the heal, the
/// renew at 5034 connects (SYN 5034 → 5039, SYN-ACK → 5044, request 5045 → 5050) and is
/// refused: token 2 is live. The reply arrives at 5056.
const RENEWS_IN_THE_PARTITION: [&str; 6] = [
    "1334 replica-1 renew Unavailable",
    "2134 replica-1 renew Unavailable",
    "2934 replica-1 renew Unavailable",
    "3734 replica-1 renew Unavailable",
    "4534 replica-1 renew Unavailable",
    "5056 replica-1 renew Held by Some(2): lost",
];

/// `trace` without replica-1's renews during the partition, after checking them.
fn outside_the_partition(trace: Vec<String>) -> Vec<String> {
    let (renews, rest): (Vec<String>, Vec<String>) = trace
        .into_iter()
        .partition(|line| line.contains("replica-1 renew "));
    assert_eq!(renews, RENEWS_IN_THE_PARTITION);
    rest
}

#[test]
fn a_partitioned_holders_renews_fail_unavailable_and_the_successor_takes_over_at_the_expiry() {
    let trace = outside_the_partition(takeover_trace(|_, _| {}));
    // The lease host's clock is true time. replica-1 connects at 11 ms, its acquire arrives at
    // 17 (token 1) and the grant at 23; its renew at 523 arrives at 528 (expiry 2528) and the
    // reply at 534. replica-2's attempts (from 100 ms, a handshake, then one every 21 ms: a
    // 5 ms crossing each way, a tick, the 10 ms wait) reach the authority at 116 + 21k ms:
    // refused up to 2510, granted at 2531, the first after token 1's expiry at 2528.
    assert_eq!(
        trace,
        [
            "23 replica-1 acquired token 1 granted at lease 17 ms",
            "534 replica-1 renewed token 1 granted at lease 528 ms",
            "2537 replica-2 acquired token 2 granted at lease 2531 ms after 115 refusals",
        ]
    );
}

#[test]
fn an_authority_clock_ten_percent_slow_moves_the_takeover_later() {
    let trace = outside_the_partition(takeover_trace(|engine, lease| {
        engine.schedule(
            Duration::ZERO,
            Event::Host(lease, HostFault::Drift(-100_000)),
        );
    }));
    // The same crossings in true time; the lease host's clock reads 0.9 of it, to the whole
    // millisecond its runtime stands on between slices (docs/engine.md#hosts): the renew
    // arriving at true 528 is granted at 475 (475.2 ms), so token 1 expires at 2475 on the
    // authority's clock, true 2750 — 222 ms later than on a true clock (the TTL of 2 s on a
    // clock 10 % slow lasts 2.222 s). replica-2's attempt arriving at true 2741 (lease 2466.9)
    // is refused, the one at true 2762 (lease 2485.8, read as 2485) granted: the takeover
    // moves from 2537 to 2768 ms, and the partitioned holder's view of it does not change.
    assert_eq!(
        trace,
        [
            "0 lease fault Drift(-100000) -> Running",
            "23 replica-1 acquired token 1 granted at lease 15 ms",
            "534 replica-1 renewed token 1 granted at lease 475 ms",
            "2768 replica-2 acquired token 2 granted at lease 2485 ms after 126 refusals",
        ]
    );
}

/// The transport itself: `incoming` names each connection's peer host as the engine knows it
/// (what a server's fault that singles out a caller reads, tonic's connect info), and `dialer`
/// fails a dial to a port nobody listens on as a socket does.
#[test]
fn the_transport_names_each_accepted_peer_and_refuses_a_closed_port() {
    use futures_util::StreamExt;

    let mut engine = Engine::with_network(1, NetConfig::default()).unwrap();
    let lease = engine.add_host("lease").unwrap();
    let replicas = [
        engine.add_host("replica-1").unwrap(),
        engine.add_host("replica-2").unwrap(),
    ];
    engine
        .spawn(lease, async {
            let mut incoming = transport::incoming("0.0.0.0:7070").await.unwrap();
            while let Some(conn) = incoming.next().await {
                let peer = conn.unwrap().peer().map(str::to_owned);
                leasesim_engine::trace(&format!("accepted from {peer:?}"));
            }
        })
        .unwrap();
    for (replica, wait) in replicas.into_iter().zip([0, 10]) {
        engine
            .spawn(replica, async move {
                tokio::time::sleep(wait * MS).await;
                let dial = transport::dialer();
                let conn = dial(LEASE_ADDR.to_owned()).await.unwrap();
                let refused = dial("lease:7071".to_owned()).await.map(|_| ());
                leasesim_engine::trace(&format!("7071: {:?}", refused.map_err(|e| e.kind())));
                drop(conn);
            })
            .unwrap();
    }
    engine.run_until(100 * MS).unwrap();
    // 1 ms links: replica-1's SYN leaves at the 1 ms tick, the SYN-ACK comes back at 3 and
    // the handshake's ACK reaches `lease` at 4; the SYN to 7071 (sent at 3) draws an RST at 5
    // that arrives at 6. replica-2 dials at 10, 9 ms later in every line.
    assert_eq!(
        trace_ms(&engine),
        [
            "4 lease accepted from Some(\"replica-1\")",
            "6 replica-1 7071: Err(ConnectionRefused)",
            "13 lease accepted from Some(\"replica-2\")",
            "15 replica-2 7071: Err(ConnectionRefused)",
        ]
    );
}
