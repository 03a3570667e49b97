//! The network on turmoil-net (docs/engine.md#network): hosts' TCP through its `tokio::net`
//! shim, with deliveries, latency, partitions and holds in true time.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Duration;

use leasesim_engine::{Engine, Event, HostFault, HostId, NetConfig, NetFault};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil_net::shim::tokio::net::{TcpListener, TcpStream};

mod common;
use common::{echo_server, pinging_world};

const MS: Duration = Duration::from_millis(1);

/// A server that echoes every read back, and a client that connects at true time zero, sends
/// `ping` and traces the reply.
fn echo_world(latency: Duration) -> (Engine, HostId, HostId) {
    let config = NetConfig {
        latency: latency.into(),
        ..NetConfig::default()
    };
    let mut engine = Engine::with_network(1, config).unwrap();
    let server = engine.add_host("server").unwrap();
    let client = engine.add_host("client").unwrap();
    engine
        .spawn(server, async {
            let listener = TcpListener::bind("0.0.0.0:9000").await.unwrap();
            let (mut stream, _) = listener.accept().await.unwrap();
            leasesim_engine::trace("accepted");
            let mut buf = [0u8; 64];
            loop {
                let n = stream.read(&mut buf).await.unwrap();
                if n == 0 {
                    return;
                }
                stream.write_all(&buf[..n]).await.unwrap();
            }
        })
        .unwrap();
    engine
        .spawn(client, async {
            let mut stream = match TcpStream::connect("server:9000").await {
                Ok(stream) => stream,
                Err(e) => return leasesim_engine::trace(&format!("connect {:?}", e.kind())),
            };
            leasesim_engine::trace("connected");
            stream.write_all(b"ping").await.unwrap();
            let mut buf = [0u8; 4];
            match stream.read_exact(&mut buf).await {
                Ok(_) => leasesim_engine::trace(&String::from_utf8_lossy(&buf)),
                Err(e) => leasesim_engine::trace(&format!("error {:?}", e.kind())),
            }
        })
        .unwrap();
    (engine, server, client)
}

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

#[test]
fn a_tcp_echo_takes_the_links_latency_per_crossing() {
    let (mut engine, _, _) = echo_world(5 * MS);
    engine.run_until(100 * MS).unwrap();
    // SYN sent at 0 leaves at the 1 ms tick, arrives at 6; the SYN-ACK leaves at once and
    // arrives at 11, where the client is connected and writes; the write leaves at the 12 ms
    // tick and arrives at 17 (the handshake's ACK at 16, where the server accepts); the echo
    // is written at 17, leaves at 18 and arrives at 23.
    assert_eq!(
        trace_ms(&engine),
        [
            "11 client connected",
            "16 server accepted",
            "23 client ping"
        ]
    );
}

/// The trace of a client pinging an echo server at 5 ms twice, 77 ms apart (the second ping
/// sent by a timer at 100 ms), the engine stopped at the start of each instant of `stops`
/// (`run_to_instant`) on its way to 300 ms.
fn pings_stopping_at(stops: impl IntoIterator<Item = Duration>) -> Vec<String> {
    let (mut engine, _, _) = pinging_world(77 * MS);
    for stop in stops {
        engine.run_to_instant(stop).unwrap();
    }
    engine.run_until(300 * MS).unwrap();
    trace_ms(&engine)
}

#[test]
fn stopping_at_the_start_of_an_instant_with_no_fault_there_moves_nothing() {
    // The hosts' work at a stop runs when time moves on, before that instant's fabric tick:
    // a packet the timer at 100 ms sends still leaves in the 100 ms tick.
    let straight = pings_stopping_at([]);
    assert_eq!(
        straight
            .iter()
            .filter(|line| line.ends_with("client ping"))
            .count(),
        2,
        "{straight:?}"
    );
    assert_eq!(pings_stopping_at((90..=125).map(|ms| ms * MS)), straight);
}

fn both_ways(engine: &mut Engine, a: HostId, b: HostId, at: Duration, fault: NetFault) {
    engine.schedule(at, one_way(a, b, fault));
    engine.schedule(at, one_way(b, a, fault));
}

/// `fault` on the link from `from` to `to` only.
fn one_way(from: HostId, to: HostId, fault: NetFault) -> Event {
    Event::Net { from, to, fault }
}

/// The trace without the network's own fault lines.
fn hosts_ms(engine: &Engine) -> Vec<String> {
    let mut lines = trace_ms(engine);
    lines.retain(|line| !line.contains(" net link "));
    lines
}

#[test]
fn a_partition_both_ways_holds_the_handshake_until_the_first_retransmission_after_the_heal() {
    let (mut engine, server, client) = echo_world(5 * MS);
    both_ways(&mut engine, server, client, Duration::ZERO, NetFault::Cut);
    both_ways(&mut engine, server, client, 500 * MS, NetFault::Release);
    engine.run_until(2000 * MS).unwrap();
    // The SYN (1 ms) and its retransmissions every 200 ms of true time (the RTO) are cut until
    // 500 ms; the one at 600 ms gets through: the echo above, 600 ms later.
    assert_eq!(
        hosts_ms(&engine),
        [
            "610 client connected",
            "615 server accepted",
            "622 client ping"
        ]
    );
}

#[test]
fn a_partition_that_outlasts_every_retransmission_times_the_connect_out_in_true_time() {
    let (mut engine, server, client) = echo_world(5 * MS);
    both_ways(&mut engine, server, client, Duration::ZERO, NetFault::Cut);
    engine.run_until(3000 * MS).unwrap();
    // Five retransmissions (200 … 1000 ms), then the sixth RTO gives up.
    assert_eq!(hosts_ms(&engine), ["1200 client connect TimedOut"]);
}

#[test]
fn a_one_way_partition_of_the_replies_stalls_the_handshake_as_well() {
    let (mut engine, server, client) = echo_world(5 * MS);
    let replies = |fault| one_way(server, client, fault);
    engine.schedule(Duration::ZERO, replies(NetFault::Cut));
    engine.schedule(500 * MS, replies(NetFault::Release));
    engine.run_until(2000 * MS).unwrap();
    // The SYN gets through at 6 ms but every SYN-ACK is cut until 500 ms; the client's SYN
    // retransmitted at 600 ms draws one that gets through.
    assert_eq!(
        hosts_ms(&engine),
        [
            "610 client connected",
            "615 server accepted",
            "622 client ping"
        ]
    );
}

#[test]
fn a_hold_delivers_the_held_packets_at_the_release_without_loss() {
    let (mut engine, server, client) = echo_world(5 * MS);
    let replies = |fault| one_way(server, client, fault);
    engine.schedule(Duration::ZERO, replies(NetFault::Hold));
    engine.schedule(150 * MS, replies(NetFault::Release));
    engine.run_until(2000 * MS).unwrap();
    // The SYN-ACK, held from 6 ms, leaves at the release (150 ms, before any RTO) and
    // arrives 5 ms later; the rest is the echo above.
    assert_eq!(
        hosts_ms(&engine),
        [
            "155 client connected",
            "160 server accepted",
            "167 client ping"
        ]
    );
}

#[test]
fn a_link_latency_fault_moves_the_crossings_after_it() {
    let (mut engine, server, client) = echo_world(5 * MS);
    let latency = Event::Net {
        from: server,
        to: client,
        fault: NetFault::Latency((50 * MS).into()),
    };
    engine.schedule(Duration::ZERO, latency);
    engine.run_until(1000 * MS).unwrap();
    // Server-to-client crossings take 50 ms: the SYN-ACK arrives at 6 + 50; the ping leaves
    // at 57 and arrives at 62; the echo leaves at 63 and arrives at 113.
    assert_eq!(
        hosts_ms(&engine),
        [
            "56 client connected",
            "61 server accepted",
            "113 client ping"
        ]
    );
}

/// The echo with holds both ways, its links `latency_ms` long.
fn faulty_echo_trace(latency_ms: u64) -> Vec<u8> {
    let (mut engine, server, client) = echo_world(Duration::from_millis(latency_ms));
    both_ways(&mut engine, server, client, 3 * MS, NetFault::Hold);
    both_ways(&mut engine, server, client, 300 * MS, NetFault::Release);
    engine.run_until(2000 * MS).unwrap();
    engine.trace()
}

#[test]
fn the_same_run_gives_the_same_network_trace_bytes() {
    let first = faulty_echo_trace(4);
    assert!(String::from_utf8_lossy(&first).contains("client ping"));
    assert_eq!(first, faulty_echo_trace(4));
    assert_ne!(first, faulty_echo_trace(7));
}

#[test]
fn a_second_engine_with_a_network_on_one_thread_is_refused_with_a_clear_error() {
    let (mut first, _, _) = echo_world(MS);
    first.run_until(MS).unwrap();
    let (mut second, _, _) = echo_world(MS);
    let err = second.run_until(MS).unwrap_err();
    assert_eq!(
        err.to_string(),
        "another turmoil-net Net is installed on this thread: drop the other engine with a \
         network before running this one"
    );
}

#[test]
fn a_paused_servers_kernel_still_answers_while_its_tasks_read_nothing() {
    let (mut engine, server, _) = echo_world(5 * MS);
    engine.schedule(14 * MS, Event::Host(server, HostFault::Pause));
    engine.schedule(500 * MS, Event::Host(server, HostFault::Resume));
    engine.run_until(2000 * MS).unwrap();
    // Listening since 0, the server is paused at 14: the handshake's last ACK (16) and the
    // ping (17) are taken in by its kernel, but its task only accepts and echoes at the
    // resume; the echo leaves at 501 and arrives at 506.
    assert_eq!(
        hosts_ms(&engine),
        [
            "11 client connected",
            "14 server fault Pause -> Paused",
            "500 server fault Resume -> Running",
            "500 server accepted",
            "506 client ping"
        ]
    );
}

#[test]
fn a_suspended_servers_network_is_down_until_it_wakes() {
    let (mut engine, server, _) = echo_world(5 * MS);
    engine.schedule(Duration::ZERO, Event::Host(server, HostFault::Suspend));
    engine.schedule(500 * MS, Event::Host(server, HostFault::Wake));
    engine.run_until(2000 * MS).unwrap();
    // The SYN and its retransmissions are lost until 500 ms; the one at 600 ms is answered.
    assert_eq!(
        hosts_ms(&engine),
        [
            "0 server fault Suspend -> Suspended",
            "500 server fault Wake -> Running",
            "610 client connected",
            "615 server accepted",
            "622 client ping"
        ]
    );
}

/// An HTTP/1 server (hyper) on `server`, answering `GET /lease` with `held by r1`, and a
/// client (hyper's client connection) on `client` that asks it once at true time zero.
fn http_world(latency: Duration) -> Engine {
    use http_body_util::{BodyExt, Empty, Full};
    use hyper::body::Bytes;
    use hyper_util::rt::TokioIo;

    let config = NetConfig {
        latency: latency.into(),
        ..NetConfig::default()
    };
    let mut engine = Engine::with_network(1, config).unwrap();
    let server = engine.add_host("server").unwrap();
    let client = engine.add_host("client").unwrap();
    engine
        .spawn(server, async {
            let listener = TcpListener::bind("0.0.0.0:80").await.unwrap();
            let (stream, _) = listener.accept().await.unwrap();
            let service = hyper::service::service_fn(|request: hyper::Request<_>| async move {
                leasesim_engine::trace(&format!("{} {}", request.method(), request.uri()));
                let body = Full::new(Bytes::from_static(b"held by r1"));
                Ok::<_, std::convert::Infallible>(hyper::Response::new(body))
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            connection.await.unwrap();
        })
        .unwrap();
    engine
        .spawn(client, async {
            let stream = TcpStream::connect("server:80").await.unwrap();
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream))
                    .await
                    .unwrap();
            tokio::spawn(connection);
            let request = hyper::Request::get("http://server/lease")
                .body(Empty::<Bytes>::new())
                .unwrap();
            let response = sender.send_request(request).await.unwrap();
            let status = response.status();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let text = String::from_utf8_lossy(&body);
            leasesim_engine::trace(&format!("{status} {text}"));
        })
        .unwrap();
    engine
}

#[test]
fn an_http_call_through_hyper_crosses_the_links_like_the_echo() {
    let mut engine = http_world(5 * MS);
    engine.run_until(100 * MS).unwrap();
    // Connected at 11, the request leaves at 12 and arrives at 17, where the server answers;
    // the response leaves at 18 and arrives at 23.
    assert_eq!(
        hosts_ms(&engine),
        [
            "17 server GET http://server/lease",
            "23 client 200 OK held by r1"
        ]
    );
}

#[test]
fn a_restarted_servers_connections_close_and_its_successor_serves_new_ones() {
    let (mut engine, server, _) = pinging_world(77 * MS);
    let restart = move |engine: &mut Engine| {
        engine.restart(server).unwrap();
        engine.spawn(server, echo_server()).unwrap();
    };
    engine.schedule(50 * MS, Event::Call(Box::new(restart)));
    engine.run_until(1000 * MS).unwrap();
    // The first echo as in the TCP echo (23). Killed at 50, the old process's connection is
    // closed by its kernel (FIN at the 51 ms tick, at the client at 56); its successor cannot
    // bind while that connection holds the port (turmoil-net has no SO_REUSEADDR for it). At
    // 100 the client's timer fires in the slice ending there: its ping reads the FIN (EOF),
    // it closes and connects again; FIN and SYN leave at the 100 ms tick, the RST comes back
    // at 110. The successor binds at its retry (150); the client's, at 210, connects at 220
    // and its echo arrives at 232.
    assert_eq!(
        hosts_ms(&engine),
        [
            "0 server listening",
            "23 client ping",
            "50 server restart",
            "50 server bind AddrInUse",
            "100 client error UnexpectedEof",
            "110 client connect ConnectionRefused",
            "150 server listening",
            "232 client ping"
        ]
    );
}
