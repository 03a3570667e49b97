//! What the engine's network tests share: an echo server and a client that pings it, over
//! turmoil-net's `tokio::net` shim, each tracing what it sees on its host's clock.

use std::time::Duration;

use leasesim_engine::{Engine, HostId, NetConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil_net::shim::tokio::net::{TcpListener, TcpStream};

const MS: Duration = Duration::from_millis(1);

/// An echo server; binding retries every 100 ms of the host's clock while the port is taken.
pub async fn echo_server() {
    let listener = loop {
        match TcpListener::bind("0.0.0.0:9000").await {
            Ok(listener) => break listener,
            Err(e) => leasesim_engine::trace(&format!("bind {:?}", e.kind())),
        }
        tokio::time::sleep(100 * MS).await;
    };
    leasesim_engine::trace("listening");
    loop {
        let (mut stream, _) = listener.accept().await.unwrap();
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

/// Sends `ping` on `stream` and traces the echo or the error; whether the echo came.
pub async fn ping(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4];
    let sent = stream.write_all(b"ping").await;
    match sent.and(stream.read_exact(&mut buf).await.map(|_| ())) {
        Ok(()) => {
            leasesim_engine::trace(&String::from_utf8_lossy(&buf));
            true
        }
        Err(e) => {
            leasesim_engine::trace(&format!("error {:?}", e.kind()));
            false
        }
    }
}

/// Connects (retrying every 100 ms of the host's clock) and pings once.
pub async fn connect_and_ping() {
    loop {
        match TcpStream::connect("server:9000").await {
            Ok(mut stream) => {
                ping(&mut stream).await;
                return;
            }
            Err(e) => leasesim_engine::trace(&format!("connect {:?}", e.kind())),
        }
        tokio::time::sleep(100 * MS).await;
    }
}

/// Connects and pings, sleeps `pause` of the host's clock and pings again on the same
/// connection; when that fails, connects again (as [`connect_and_ping`]) and pings.
pub async fn ping_twice(pause: Duration) {
    let mut stream = TcpStream::connect("server:9000").await.expect("connect");
    ping(&mut stream).await;
    tokio::time::sleep(pause).await;
    if !ping(&mut stream).await {
        drop(stream);
        connect_and_ping().await;
    }
}

/// An engine (seed 1) whose hosts `server` (the echo) and `client` ([`ping_twice`] with
/// `second_ping` between its pings) talk over 5 ms links.
#[allow(
    dead_code,
    reason = "not every test binary that includes this file builds this world"
)]
pub fn pinging_world(second_ping: Duration) -> (Engine, HostId, HostId) {
    let config = NetConfig {
        latency: (5 * MS).into(),
        ..NetConfig::default()
    };
    let mut engine = Engine::with_network(1, config).unwrap();
    let server = engine.add_host("server").unwrap();
    let client = engine.add_host("client").unwrap();
    engine.spawn(server, echo_server()).unwrap();
    engine.spawn(client, ping_twice(second_ping)).unwrap();
    (engine, server, client)
}
