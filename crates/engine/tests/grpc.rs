//! A gRPC call (tonic over HTTP/2) between two engine hosts through turmoil-net's shim
//! (docs/engine.md#network): the generated ledger service of `proto/leasesim.proto`, unchanged,
//! on a server given the shim's accepted streams, and a client given a connector that dials
//! the shim.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use leasesim_engine::{Engine, Event, HostFault, HostId, NetConfig, NetFault};
use leasesim_remote::proto::ledger_service_client::LedgerServiceClient;
use leasesim_remote::proto::ledger_service_server::{LedgerService, LedgerServiceServer};
use leasesim_remote::proto::{
    AppendReply, AppendRequest, ReadReply, ReadRequest, TipReply, TipRequest,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::{Request, Response, Status};
use turmoil_net::shim::tokio::net::{TcpListener, TcpStream};

const MS: Duration = Duration::from_millis(1);

/// A ledger whose every session's tip is 41.
struct FixedTip;

#[tonic::async_trait]
impl LedgerService for FixedTip {
    async fn tip(&self, request: Request<TipRequest>) -> Result<Response<TipReply>, Status> {
        leasesim_engine::trace(&format!("tip {}", request.get_ref().session));
        Ok(Response::new(TipReply { tip: 41 }))
    }
    async fn append(&self, _: Request<AppendRequest>) -> Result<Response<AppendReply>, Status> {
        Err(Status::unimplemented("append"))
    }
    async fn read(&self, _: Request<ReadRequest>) -> Result<Response<ReadReply>, Status> {
        Err(Status::unimplemented("read"))
    }
}

/// An accepted shim stream, as tonic's server takes it (`Connected`).
struct Accepted(TcpStream);

impl tonic::transport::server::Connected for Accepted {
    type ConnectInfo = ();
    fn connect_info(&self) {}
}

impl AsyncRead for Accepted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for Accepted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

async fn serve(listener: TcpListener) {
    let incoming = futures_util::stream::unfold(listener, |listener| async move {
        let accepted = listener.accept().await.map(|(stream, _)| Accepted(stream));
        Some((accepted, listener))
    });
    tonic::transport::Server::builder()
        .add_service(LedgerServiceServer::new(FixedTip))
        .serve_with_incoming(incoming)
        .await
        .unwrap();
}

/// Asks the ledger for `s1`'s tip, each call bounded by a 100 ms timeout (tonic's, on
/// `tokio::time`: the replica's clock); the tip, or the error's gRPC code.
async fn ask_tip() -> Result<u64, String> {
    let connector = tower::service_fn(|_: tonic::transport::Uri| async {
        let stream = TcpStream::connect("ledger:50051").await?;
        Ok::<_, io::Error>(TokioIo::new(stream))
    });
    let channel = tonic::transport::Endpoint::from_static("http://ledger:50051")
        .timeout(100 * MS)
        .connect_with_connector(connector)
        .await
        .map_err(|e| format!("connect {e}"))?;
    let mut client = LedgerServiceClient::new(channel);
    let request = TipRequest {
        session: "s1".to_owned(),
    };
    match client.tip(request).await {
        Ok(reply) => Ok(reply.into_inner().tip),
        Err(status) => Err(format!("{:?}", status.code())),
    }
}

/// The trace in whole milliseconds, after `setup` queued its faults.
fn grpc_trace(setup: impl FnOnce(&mut Engine, HostId, HostId)) -> Vec<String> {
    let config = NetConfig {
        latency: (5 * MS).into(),
        ..NetConfig::default()
    };
    let mut engine = Engine::with_network(1, config).unwrap();
    let ledger = engine.add_host("ledger").unwrap();
    let replica = engine.add_host("replica").unwrap();
    setup(&mut engine, ledger, replica);
    engine
        .spawn(ledger, async {
            serve(TcpListener::bind("0.0.0.0:50051").await.unwrap()).await;
        })
        .unwrap();
    engine
        .spawn(replica, async {
            match ask_tip().await {
                Ok(tip) => leasesim_engine::trace(&format!("tip is {tip}")),
                Err(e) => leasesim_engine::trace(&format!("error {e}")),
            }
        })
        .unwrap();
    engine.run_until(500 * MS).unwrap();
    let trace = String::from_utf8(engine.trace()).unwrap();
    trace
        .lines()
        .map(|line| {
            let (ns, rest) = line.trim_start().split_once(' ').unwrap();
            format!("{} {rest}", ns.parse::<u128>().unwrap() / 1_000_000)
        })
        .collect()
}

#[test]
fn a_grpc_call_through_tonic_crosses_the_links_in_true_time() {
    // Connected at 11 (the TCP echo's handshake); HTTP/2's preface, SETTINGS and the request
    // leave together at the 12 ms tick and arrive at 17; the reply leaves at 18, arrives at 23.
    assert_eq!(
        grpc_trace(|_, _, _| {}),
        ["17 ledger tip s1", "23 replica tip is 41"]
    );
}

#[test]
fn tonics_own_timeout_fires_by_the_replicas_slow_clock() {
    let trace = grpc_trace(|engine, ledger, replica| {
        engine.schedule(
            Duration::ZERO,
            Event::Host(replica, HostFault::Drift(-500_000)),
        );
        let cut = NetFault::Cut;
        let replies = Event::Net {
            from: ledger,
            to: replica,
            fault: cut,
        };
        engine.schedule(12 * MS, replies);
    });
    let trace: Vec<&str> = trace
        .iter()
        .map(String::as_str)
        .filter(|l| !l.contains(" fault ") && !l.contains(" net "))
        .collect();
    // The reply is cut. The call starts when the connection is up, at true 11 ms, where the
    // replica's half-speed clock reads 5 ms; its 100 ms timeout ends at 105 ms on that clock,
    // true 210 ms.
    assert_eq!(trace, ["17 ledger tip s1", "210 replica error Cancelled"]);
}
