//! The userspace TCP proxy of live mode: one [`Link`] per (replica, service) pair, listening on
//! `127.0.0.1:0`; the replica connects to the link, the link to the service. The nemesis
//! faults a link by changing its [`LinkFaults`]; every connection of the link sees the change
//! at once.
//!
//! What each fault does to the bytes (`up` is client → service, `down` the replies):
//! - **cut** (partition, isolate): every connection is reset (closed with `SO_LINGER` 0, so
//!   the peer sees a RST), and new ones are reset on accept, until healed;
//! - **drop** one direction (a one-way partition): that direction's bytes are read and
//!   thrown away; a connection that lost bytes is reset when the drop ends (a stream with a
//!   hole in it is no TCP stream);
//! - **hold** one or both directions (hold, delay_replies): the link stops reading that
//!   direction, so the bytes wait in the kernel's buffers and are delivered in order on
//!   release;
//! - **latency** (+ jitter): each chunk read is delivered that much later, in order (a burst
//!   read as several chunks is delayed once per chunk);
//! - **flaps** (`fail_ppm` per ms): every connection is reset at instants drawn from the seed;
//! - **reset**: every connection is reset once, now.
//!
//! The upstream address can change (a service restarted on a new port): new connections go
//! to the new one.

// Live mode is real by design (docs/live.md): the proxy moves real bytes on real TCP, in real
// time; never on a simulated path.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// How long a link waits for the service to accept before it resets the client.
const CONNECT_BOUND: Duration = Duration::from_secs(1);

/// How often a flapping link draws whether to reset its connections.
const FLAP_TICK: Duration = Duration::from_millis(10);

/// A link's faults; the default passes everything.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct LinkFaults {
    /// Both directions cut: connections reset, new ones refused.
    pub cut: bool,
    /// Client → service bytes thrown away.
    pub drop_up: bool,
    /// Service → client bytes thrown away.
    pub drop_down: bool,
    /// Client → service bytes held.
    pub hold_up: bool,
    /// Service → client bytes held.
    pub hold_down: bool,
    /// Added one-way delay of each chunk.
    pub latency: Duration,
    /// Up to this much more, drawn per chunk.
    pub jitter: Duration,
    /// Random resets, ppm per ms (0: none).
    pub flap_ppm: u32,
    /// Bumped by every reset; a connection opened under an older count is reset.
    pub resets: u64,
}

/// One proxied link.
pub struct Link {
    /// `replica-1` (the client host).
    pub client: String,
    /// `lease` or `ledger` (the service host).
    pub service: String,
    listen: SocketAddr,
    upstream: Arc<Mutex<SocketAddr>>,
    faults: watch::Sender<LinkFaults>,
    task: tokio::task::JoinHandle<()>,
    flapper: tokio::task::JoinHandle<()>,
}

impl Link {
    /// Starts a link for `client` → `service` at `upstream`, listening on `127.0.0.1:0`;
    /// `seed` draws its flaps and jitter.
    ///
    /// # Errors
    /// No port could be bound.
    pub async fn start(
        client: &str,
        service: &str,
        upstream: SocketAddr,
        seed: u64,
    ) -> std::io::Result<Link> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let listen = listener.local_addr()?;
        let upstream = Arc::new(Mutex::new(upstream));
        let (faults, watcher) = watch::channel(LinkFaults::default());
        let rng = Arc::new(Mutex::new(ChaCha8Rng::seed_from_u64(seed)));
        let task = tokio::spawn(accept_loop(
            listener,
            upstream.clone(),
            watcher.clone(),
            rng.clone(),
        ));
        let flapper = tokio::spawn(flap_loop(faults.clone(), rng));
        Ok(Link {
            client: client.to_owned(),
            service: service.to_owned(),
            listen,
            upstream,
            faults,
            task,
            flapper,
        })
    }

    /// Where the client connects.
    pub fn listen(&self) -> SocketAddr {
        self.listen
    }

    /// Points new connections at `upstream` (the service restarted elsewhere).
    pub fn set_upstream(&self, upstream: SocketAddr) {
        *self.upstream.lock().unwrap_or_else(|p| p.into_inner()) = upstream;
    }

    /// The faults now.
    pub fn faults(&self) -> LinkFaults {
        self.faults.borrow().clone()
    }

    /// Changes the faults; every connection sees the change at once.
    pub fn update(&self, change: impl FnOnce(&mut LinkFaults)) {
        self.faults.send_modify(change);
    }

    /// Resets every connection now.
    pub fn reset(&self) {
        self.update(|f| f.resets += 1);
    }

    /// Clears every fault (a heal); connections that lost bytes are reset.
    pub fn heal(&self) {
        self.update(|f| {
            *f = LinkFaults {
                resets: f.resets,
                ..LinkFaults::default()
            }
        });
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.task.abort();
        self.flapper.abort();
    }
}

async fn flap_loop(faults: watch::Sender<LinkFaults>, rng: Arc<Mutex<ChaCha8Rng>>) {
    let ms_per_tick = FLAP_TICK.as_millis() as u64;
    loop {
        tokio::time::sleep(FLAP_TICK).await;
        let ppm = u64::from(faults.borrow().flap_ppm);
        if ppm == 0 {
            continue;
        }
        let draw = rng.lock().unwrap_or_else(|p| p.into_inner()).next_u64() % 1_000_000;
        if draw < ppm.saturating_mul(ms_per_tick) {
            faults.send_modify(|f| f.resets += 1);
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: Arc<Mutex<SocketAddr>>,
    faults: watch::Receiver<LinkFaults>,
    rng: Arc<Mutex<ChaCha8Rng>>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let target = *upstream.lock().unwrap_or_else(|p| p.into_inner());
        tokio::spawn(connection(client, target, faults.clone(), rng.clone()));
    }
}

/// Closes `stream` with a RST.
fn reset(stream: TcpStream) {
    if let Ok(std) = stream.into_std() {
        let _ = socket_linger_zero(&std);
    }
}

fn socket_linger_zero(stream: &std::net::TcpStream) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on a socket we own, with a correctly sized linger struct.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

async fn connection(
    client: TcpStream,
    target: SocketAddr,
    mut faults: watch::Receiver<LinkFaults>,
    rng: Arc<Mutex<ChaCha8Rng>>,
) {
    let start = faults.borrow_and_update().clone();
    if start.cut {
        reset(client);
        return;
    }
    let server = match tokio::time::timeout(CONNECT_BOUND, TcpStream::connect(target)).await {
        Ok(Ok(server)) => server,
        _ => {
            reset(client);
            return;
        }
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = pump(
        client_read,
        server_write,
        Direction::Up,
        faults.clone(),
        start.resets,
        rng.clone(),
    );
    let down = pump(
        server_read,
        client_write,
        Direction::Down,
        faults.clone(),
        start.resets,
        rng,
    );
    // A reset ends both pumps; an EOF ends one and the other goes on (half-close).
    let _ = tokio::join!(up, down);
}

/// A borrowed std view of a tokio stream's socket (never closed: the caller forgets it).
fn socket_view(stream: &TcpStream) -> std::mem::ManuallyDrop<std::net::TcpStream> {
    use std::os::fd::{AsRawFd, FromRawFd};
    // SAFETY: the fd stays owned by `stream`; the ManuallyDrop view never closes it.
    std::mem::ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(stream.as_raw_fd()) })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

impl Direction {
    fn dropped(self, f: &LinkFaults) -> bool {
        match self {
            Direction::Up => f.drop_up,
            Direction::Down => f.drop_down,
        }
    }

    fn held(self, f: &LinkFaults) -> bool {
        match self {
            Direction::Up => f.hold_up,
            Direction::Down => f.hold_down,
        }
    }
}

/// Why a pump stopped.
enum End {
    /// EOF or an error on a socket: half-close.
    Closed,
    /// A reset, a cut, or a drop that ended after bytes were lost.
    Reset,
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    direction: Direction,
    mut faults: watch::Receiver<LinkFaults>,
    resets: u64,
    rng: Arc<Mutex<ChaCha8Rng>>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut lost_bytes = false;
    let must_reset =
        |f: &LinkFaults, lost: bool| f.cut || f.resets != resets || (lost && !direction.dropped(f));
    let end = 'pump: loop {
        // Held: read nothing (the bytes wait in the kernel) until the hold ends.
        loop {
            let now = faults.borrow_and_update().clone();
            if must_reset(&now, lost_bytes) {
                break 'pump End::Reset;
            }
            if !direction.held(&now) {
                break;
            }
            if faults.changed().await.is_err() {
                break 'pump End::Reset;
            }
        }
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => break 'pump End::Closed,
                Ok(n) => n,
            },
            changed = faults.changed() => {
                if changed.is_err() {
                    break 'pump End::Reset;
                }
                continue;
            }
        };
        // A chunk in hand: deliver it as the faults now say, waiting out a hold.
        loop {
            let now = faults.borrow_and_update().clone();
            if must_reset(&now, lost_bytes) {
                break 'pump End::Reset;
            }
            if direction.dropped(&now) {
                lost_bytes = true;
                break;
            }
            if direction.held(&now) {
                if faults.changed().await.is_err() {
                    break 'pump End::Reset;
                }
                continue;
            }
            let delay = now.latency + jitter(&rng, now.jitter);
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if to.write_all(&buf[..n]).await.is_err() {
                break 'pump End::Closed;
            }
            break;
        }
    };
    match end {
        End::Closed => {
            let _ = to.shutdown().await;
        }
        End::Reset => {
            // SO_LINGER 0, then dropping the halves closes the stream with a RST. The other
            // pump sees the same reset through the watch and does the same to its stream.
            let _ = socket_linger_zero(&socket_view(to.as_ref()));
        }
    }
}

fn jitter(rng: &Mutex<ChaCha8Rng>, most: Duration) -> Duration {
    let most_us = most.as_micros() as u64;
    if most_us == 0 {
        return Duration::ZERO;
    }
    let draw = rng.lock().unwrap_or_else(|p| p.into_inner()).next_u64() % (most_us + 1);
    Duration::from_micros(draw)
}
