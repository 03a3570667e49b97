//! The engine beside bare turmoil 0.7.2, one workload on both (docs/engine.md#costs; issue 44's
//! goals compare against bare turmoil, kept here only as this bench's reference).
//!
//! The workload is written once, generic over a [`Stack`]: one server host echoes every request
//! it reads; N client hosts each open one TCP connection and send a 16-byte request at every
//! 100 ms of their own clock (at 0, 100, …, `seconds` − 100 ms), read the 16-byte reply, and
//! sleep until `seconds` on their clock. Both runs span exactly `seconds` of simulated time
//! and must answer `clients × 10 × seconds` requests: the bench prints both counts and exits
//! non-zero when either differs from that.
//!
//! Network, chosen equal on both: 1 ms between two steps (turmoil's `tick_duration`, its
//! default; the engine's fabric tick, its default) and 1 ms per link crossing (turmoil's
//! `min_message_latency` = `max_message_latency` = 1 ms, in place of its default random
//! 0–100 ms; the engine's `NetConfig::latency`, its default). The stacks differ below that:
//! turmoil's TCP is a message stream (one message per write, no ACKs), turmoil-net's is TCP
//! segments and ACKs, so the engine moves more packets for the same requests.
//!
//! `cargo bench -p leasesim-engine --bench beside_turmoil`. Figures, not assertions (apart
//! from the counts). Settings (environment):
//! - `LEASESIM_BESIDE_CLIENTS`: the sizes, comma-separated (default `3,16,64`);
//! - `LEASESIM_BESIDE_SECONDS`: simulated seconds per run, a whole number (default 60);
//! - `LEASESIM_BESIDE_REPEAT`: runs per size and engine; the best is reported (default 3);
//! - `LEASESIM_BESIDE_ONLY`: `engine` or `turmoil` to run one side only (for callgrind).
//!
//! The time is the run only (`Sim::run`, `Engine::run_until`), not building the hosts. For
//! instructions, count the run only under callgrind, one side at a time:
//! `LEASESIM_BESIDE_CLIENTS=3 LEASESIM_BESIDE_SECONDS=5 LEASESIM_BESIDE_REPEAT=1
//! LEASESIM_BESIDE_ONLY=engine valgrind --tool=callgrind --collect-atstart=no
//! --toggle-collect='leasesim_engine::engine::Engine::run_until'
//! target/release/deps/beside_turmoil-<hash>` (turmoil: `--toggle-collect='turmoil::sim::Sim::run'`).
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "a benchmark reads real time; the hosts' tasks sleep on their own clocks"
)]

mod support;
use support::env_list;

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use leasesim_engine::{Engine, NetConfig};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The port the server listens on.
const PORT: u16 = 9000;
/// Simulated time between two requests of one client, on its host's clock.
const EVERY: Duration = Duration::from_millis(100);
/// Bytes per request and per reply.
const SIZE: usize = 16;

/// A TCP stack the workload runs on: bare turmoil's `turmoil::net`, or turmoil-net's
/// `tokio::net` shim under the engine.
trait Stack: 'static {
    /// A connected stream.
    type Stream: AsyncRead + AsyncWrite + Unpin + 'static;
    /// A bound listener.
    type Listener;
    /// Binds `0.0.0.0:PORT` on the current host.
    fn bind() -> impl Future<Output = io::Result<Self::Listener>>;
    /// The next connection accepted on `listener`.
    fn accept(listener: &Self::Listener) -> impl Future<Output = io::Result<Self::Stream>>;
    /// Connects to `server:PORT`.
    fn connect() -> impl Future<Output = io::Result<Self::Stream>>;
}

/// Bare turmoil 0.7.2.
struct Turmoil;

impl Stack for Turmoil {
    type Stream = turmoil::net::TcpStream;
    type Listener = turmoil::net::TcpListener;
    async fn bind() -> io::Result<Self::Listener> {
        turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await
    }
    async fn accept(listener: &Self::Listener) -> io::Result<Self::Stream> {
        Ok(listener.accept().await?.0)
    }
    async fn connect() -> io::Result<Self::Stream> {
        turmoil::net::TcpStream::connect(("server", PORT)).await
    }
}

/// turmoil-net 0.1's shim, on the engine.
struct Shim;

impl Stack for Shim {
    type Stream = turmoil_net::shim::tokio::net::TcpStream;
    type Listener = turmoil_net::shim::tokio::net::TcpListener;
    async fn bind() -> io::Result<Self::Listener> {
        turmoil_net::shim::tokio::net::TcpListener::bind(("0.0.0.0", PORT)).await
    }
    async fn accept(listener: &Self::Listener) -> io::Result<Self::Stream> {
        Ok(listener.accept().await?.0)
    }
    async fn connect() -> io::Result<Self::Stream> {
        turmoil_net::shim::tokio::net::TcpStream::connect(("server", PORT)).await
    }
}

/// The server: accepts every connection and echoes each request on it, counting the answers.
/// Connections are served by one task (no `spawn`: turmoil's hosts need no `Send`, the
/// engine's do), each connection's next read raced against the next accept.
async fn server<S: Stack>(answered: Arc<AtomicU64>) -> io::Result<()> {
    let listener = S::bind().await?;
    let mut conns = futures_util::stream::FuturesUnordered::new();
    loop {
        tokio::select! {
            accepted = S::accept(&listener) => conns.push(serve::<S>(accepted?, answered.clone())),
            Some(()) = futures_util::StreamExt::next(&mut conns) => {}
        }
    }
}

/// Echoes every request on `stream` until the peer closes it.
async fn serve<S: Stack>(mut stream: S::Stream, answered: Arc<AtomicU64>) {
    let mut buf = [0u8; SIZE];
    while stream.read_exact(&mut buf).await.is_ok() {
        if stream.write_all(&buf).await.is_err() {
            return;
        }
        answered.fetch_add(1, Ordering::Relaxed);
    }
}

/// One client: a request at every [`EVERY`] of its clock from 0 to `seconds` (exclusive), each
/// reply read before the next; then it sleeps until `seconds` on its clock.
async fn client<S: Stack>(seconds: u64, replies: Arc<AtomicU64>) -> io::Result<()> {
    let start = tokio::time::Instant::now();
    let end = start + Duration::from_secs(seconds);
    let mut stream = S::connect().await?;
    let mut buf = [0u8; SIZE];
    let mut at = start;
    while at < end {
        tokio::time::sleep_until(at).await;
        stream.write_all(&[7; SIZE]).await?;
        stream.read_exact(&mut buf).await?;
        replies.fetch_add(1, Ordering::Relaxed);
        at += EVERY;
    }
    tokio::time::sleep_until(end).await;
    Ok(())
}

/// What one run did: wall time of the run, requests answered by the server, replies read by
/// the clients.
struct Run {
    wall: Duration,
    answered: u64,
    replies: u64,
}

/// The workload on bare turmoil 0.7.2: 1 ms ticks, 1 ms links, seed 1, socket queues that
/// hold every client's SYN.
fn on_turmoil(clients: u64, seconds: u64) -> Run {
    let answered = Arc::new(AtomicU64::new(0));
    let replies = Arc::new(AtomicU64::new(0));
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(seconds + 1))
        .tick_duration(Duration::from_millis(1))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(1))
        .epoch(SystemTime::UNIX_EPOCH)
        .rng_seed(1)
        // Every client connects at time zero: the server's queue (64 by default) must hold
        // every SYN, or turmoil panics ("socket buffer full"). Costs nothing while unused.
        .tcp_capacity(64.max(usize::try_from(clients).unwrap_or(usize::MAX)))
        .build();
    let counter = answered.clone();
    sim.host("server", move || {
        let answered = counter.clone();
        async move { Ok(server::<Turmoil>(answered).await?) }
    });
    for i in 0..clients {
        let replies = replies.clone();
        sim.client(format!("c{i}"), async move {
            Ok(client::<Turmoil>(seconds, replies).await?)
        });
    }
    let start = Instant::now();
    if let Err(e) = sim.run() {
        fail(&format!("turmoil, {clients} clients: {e}"));
    }
    let wall = start.elapsed();
    Run {
        wall,
        answered: answered.load(Ordering::Relaxed),
        replies: replies.load(Ordering::Relaxed),
    }
}

/// The workload on the engine: turmoil-net's defaults as the engine sets them (1 ms ticks,
/// 1 ms links), seed 1.
fn on_engine(clients: u64, seconds: u64) -> Run {
    let answered = Arc::new(AtomicU64::new(0));
    let replies = Arc::new(AtomicU64::new(0));
    let mut engine = Engine::with_network(1, NetConfig::default()).expect("a 1 ms tick");
    let host = engine.add_host("server").expect("a runtime");
    let counter = answered.clone();
    let task = async move {
        if let Err(e) = server::<Shim>(counter).await {
            fail(&format!("engine server: {e}"));
        }
    };
    engine.spawn(host, task).expect("the host exists");
    for i in 0..clients {
        let host = engine.add_host(&format!("c{i}")).expect("a runtime");
        let replies = replies.clone();
        let task = async move {
            if let Err(e) = client::<Shim>(seconds, replies).await {
                fail(&format!("engine client {i}: {e}"));
            }
        };
        engine.spawn(host, task).expect("the host exists");
    }
    let start = Instant::now();
    if let Err(e) = engine.run_until(Duration::from_secs(seconds)) {
        fail(&format!("engine, {clients} clients: {e}"));
    }
    let wall = start.elapsed();
    Run {
        wall,
        answered: answered.load(Ordering::Relaxed),
        replies: replies.load(Ordering::Relaxed),
    }
}

/// Reports `message` and exits non-zero.
fn fail(message: &str) -> ! {
    eprintln!("beside_turmoil: {message}");
    std::process::exit(1);
}

/// The best of `repeat` runs of `run`, each checked to answer `expected` requests.
fn best_of(repeat: u64, expected: u64, side: &str, run: impl Fn() -> Run) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..repeat.max(1) {
        let r = run();
        println!(
            "  {side:<7} answered {:>7}  replies {:>7}  wall {:>10.1} ms",
            r.answered,
            r.replies,
            r.wall.as_secs_f64() * 1e3
        );
        if r.answered != expected || r.replies != expected {
            fail(&format!(
                "{side}: expected {expected} requests answered and replied"
            ));
        }
        best = best.min(r.wall);
    }
    best
}

fn main() {
    let sizes = env_list("LEASESIM_BESIDE_CLIENTS", "3,16,64");
    let seconds = env_list("LEASESIM_BESIDE_SECONDS", "60")[0];
    let repeat = env_list("LEASESIM_BESIDE_REPEAT", "3")[0];
    let only = std::env::var("LEASESIM_BESIDE_ONLY").unwrap_or_default();
    if !["", "engine", "turmoil"].contains(&only.as_str()) {
        fail(&format!(
            "LEASESIM_BESIDE_ONLY: `{only}` is neither engine nor turmoil"
        ));
    }
    println!("{seconds} simulated s, best of {repeat}, wall ms per simulated s");
    for clients in sizes {
        let expected = clients * seconds * (1000 / EVERY.as_millis() as u64);
        println!("{clients} clients, {expected} requests expected");
        let per_s = |d: Duration| d.as_secs_f64() * 1e3 / seconds as f64;
        let engine = (only != "turmoil").then(|| {
            per_s(best_of(repeat, expected, "engine", || {
                on_engine(clients, seconds)
            }))
        });
        let turmoil = (only != "engine").then(|| {
            per_s(best_of(repeat, expected, "turmoil", || {
                on_turmoil(clients, seconds)
            }))
        });
        let show = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
        let ratio = match (engine, turmoil) {
            (Some(e), Some(t)) => format!("{:.2}x", t / e),
            _ => "-".to_owned(),
        };
        println!(
            "{clients:>5} clients  engine {:>9} ms/s  turmoil {:>9} ms/s  engine is {ratio} \
             turmoil's speed",
            show(engine),
            show(turmoil)
        );
    }
}
