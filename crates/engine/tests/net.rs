//! The network on turmoil-net (docs/engine.md#network): hosts' TCP through its `tokio::net`
//! shim, with deliveries, latency, partitions and holds in true time.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Duration;

use leasesim_engine::{Engine, Event, HostId, NetConfig, NetFault};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil_net::shim::tokio::net::{TcpListener, TcpStream};

const MS: Duration = Duration::from_millis(1);

/// A server that echoes every read back, and a client that connects at true time zero, sends
/// `ping` and traces the reply.
fn echo_world(latency: Duration) -> (Engine, HostId, HostId) {
    let config = NetConfig {
        latency,
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
            let mut stream = TcpStream::connect("server:9000").await.unwrap();
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
