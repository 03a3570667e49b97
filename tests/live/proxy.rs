//! The proxy's faults in isolation, on a small echo server.

// Real processes and real sockets: bounded waits in real time.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
use std::time::Duration;

use leasesim::live::proxy::Link;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::support;

async fn echo_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = stream.read(&mut buf).await {
                    if n == 0 || stream.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

async fn read_some(stream: &mut TcpStream, within: Duration) -> Option<std::io::Result<Vec<u8>>> {
    let mut buf = [0u8; 1024];
    match tokio::time::timeout(within, stream.read(&mut buf)).await {
        Ok(Ok(n)) => Some(Ok(buf[..n].to_vec())),
        Ok(Err(e)) => Some(Err(e)),
        Err(_) => None,
    }
}

/// Writes `bytes` to `stream` and asserts the echo server sends them back within 5 s.
async fn echoed(stream: &mut TcpStream, bytes: &[u8]) {
    stream.write_all(bytes).await.unwrap();
    let back = read_some(stream, Duration::from_secs(5))
        .await
        .expect("an echo within 5 s")
        .unwrap();
    assert_eq!(back, bytes);
}

/// A link from `from` to `to` in front of a fresh echo server, and a client connected
/// through it that has seen one echo (`first`) pass.
async fn linked_client(from: &str, to: &str, first: &[u8]) -> (Link, TcpStream) {
    let link = Link::start(from, to, echo_server().await, 1).await.unwrap();
    let mut client = TcpStream::connect(link.listen()).await.unwrap();
    echoed(&mut client, first).await;
    (link, client)
}

#[test]
fn bytes_pass_a_healthy_link_and_a_partition_stops_them() {
    let _serial = support::serial();
    support::runtime().block_on(async {
        let (link, mut client) = linked_client("replica-1", "ledger", b"hello").await;
        link.update(|f| f.cut = true);
        // The connection is reset, and a new one too.
        let cut = read_some(&mut client, Duration::from_secs(5))
            .await
            .unwrap();
        assert!(cut.map_or(true, |b| b.is_empty()), "no bytes after the cut");
        // On loopback the reset may come before connect(2) even returns.
        match TcpStream::connect(link.listen()).await {
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset),
            Ok(mut again) => {
                let _ = again.write_all(b"x").await;
                let refused = read_some(&mut again, Duration::from_secs(5)).await.unwrap();
                assert!(refused.map_or(true, |b| b.is_empty()));
            }
        }
        link.heal();
        let mut healed = TcpStream::connect(link.listen()).await.unwrap();
        echoed(&mut healed, b"back").await;
    });
}

#[test]
fn a_hold_delivers_later_in_order() {
    let _serial = support::serial();
    support::runtime().block_on(async {
        let (link, mut client) = linked_client("replica-1", "ledger", b"0").await;
        link.update(|f| {
            f.hold_up = true;
            f.hold_down = true;
        });
        client.write_all(b"12").await.unwrap();
        client.write_all(b"34").await.unwrap();
        assert!(
            read_some(&mut client, Duration::from_millis(300))
                .await
                .is_none(),
            "held"
        );
        link.update(|f| {
            f.hold_up = false;
            f.hold_down = false;
        });
        let mut got = Vec::new();
        while got.len() < 4 {
            got.extend(
                read_some(&mut client, Duration::from_secs(5))
                    .await
                    .unwrap()
                    .unwrap(),
            );
        }
        assert_eq!(got, b"1234");
    });
}

#[test]
fn a_reset_closes_the_connection() {
    let _serial = support::serial();
    support::runtime().block_on(async {
        let (link, mut client) = linked_client("replica-1", "lease", b"a").await;
        link.reset();
        let after = read_some(&mut client, Duration::from_secs(5))
            .await
            .unwrap();
        match after {
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset),
            Ok(bytes) => assert!(bytes.is_empty(), "closed"),
        }
    });
}
