//! The network: turmoil-net's socket stack, with its packets moved through true time by the
//! engine (docs/engine.md#network).
//!
//! Hosts' code uses `turmoil_net::shim::tokio::net` (the `tokio::net` shim). turmoil-net owns
//! the kernels (TCP, UDP, loopback) and routes a packet synchronously; it owns neither time
//! nor a pending queue. The engine does: at every **fabric tick** (every `tick` of true time)
//! it drains every host's outbound packets (`EnterGuard::egress_all`), judges each — the
//! engine's link faults first, then the rules installed in the `Net` (`evaluate`) — and queues
//! a delivery at the tick plus the link's latency plus the rule's delay. A delivery is an
//! engine event (`EnterGuard::deliver` between two slices), which wakes the receiving socket's
//! task; the task runs in its host's next slice. Latencies are drawn per packet in the link's
//! range and losses per packet, from a ChaCha20 stream keyed by the engine's seed; each
//! direction of a link is FIFO unless the config allows reordering
//! (docs/engine.md#latency-and-loss).
//!
//! A paused host (SIGSTOP) keeps its kernel: it still answers the handshake and ACKs what it
//! receives, while its tasks read nothing. A suspended host's network is down: nothing it
//! sends leaves and what is sent to it is lost.
//!
//! turmoil-net retransmits after a *count* of egress passes without ACK progress. The engine
//! makes every pass one tick of true time, so `retx_threshold = ceil(rto / tick)` retransmits
//! after `rto` of true time (to the tick), for every host alike.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use turmoil_net::{
    EnterGuard, KernelConfig, Net, Packet, Proto, TcpFlags, TcpSegment, Transport, Verdict,
};

use crate::kernels::Kernels;

/// A link's latency: each packet's is drawn from `least`, `least + tick`, … up to `most`, with
/// the [`Spread`]'s odds, from the network's seeded RNG (docs/engine.md#latency-and-loss).
/// `least == most` is a fixed latency and draws nothing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Latency {
    /// The shortest crossing.
    pub least: Duration,
    /// The longest crossing; not shorter than `least` ([`crate::EngineError::LatencyRange`]).
    pub most: Duration,
    /// How the draws spread over the range.
    pub spread: Spread,
}

/// How a [`Latency`]'s draws spread over its range, in whole ticks above `least`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Spread {
    /// Every whole tick of the range equally likely (mean: the middle of the range).
    #[default]
    Uniform,
    /// turmoil 0.7's: `least + (most − least) × Exp(λ = 5)`, truncated to whole ticks and
    /// clamped at `most`; for a range of `n` ticks, at least `k` ticks above `least` with odds
    /// e^(−5k/n). Drawn as a geometric number of ticks (one `u32` per tick gone past, at most
    /// `n`), its ratio computed with integers only. For 1–5 ms: 1 ms 71 %, mean 1.4 ms.
    Turmoil,
}

impl Latency {
    /// Every packet takes `latency`.
    pub const fn fixed(latency: Duration) -> Self {
        Latency::range(latency, latency)
    }

    /// Each packet takes between `least` and `most`, both included, every whole tick equally
    /// likely.
    pub const fn range(least: Duration, most: Duration) -> Self {
        Latency {
            least,
            most,
            spread: Spread::Uniform,
        }
    }

    /// Each packet takes between `least` and `most` with turmoil 0.7's odds ([`Spread::Turmoil`]).
    pub const fn turmoil(least: Duration, most: Duration) -> Self {
        Latency {
            least,
            most,
            spread: Spread::Turmoil,
        }
    }

    /// Whether `least <= most`.
    pub(crate) fn is_valid(self) -> bool {
        self.least <= self.most
    }
}

impl From<Duration> for Latency {
    /// A fixed latency.
    fn from(latency: Duration) -> Self {
        Latency::fixed(latency)
    }
}

/// One packet in a million: the unit of [`NetFault::Loss`].
pub const PPM: u32 = 1_000_000;

/// The network's settings.
#[derive(Clone, Debug)]
pub struct NetConfig {
    /// True time between two fabric ticks; also the engine's lookahead, and the resolution of
    /// a latency draw. Must not be zero.
    pub tick: Duration,
    /// Latency of every link until a [`NetFault::Latency`] changes one, and again after
    /// [`crate::Engine::heal`].
    pub latency: Latency,
    /// TCP's retransmission timeout (fixed: turmoil-net 0.1 does not back off).
    pub rto: Duration,
    /// Retransmissions of one segment before the connection is reset.
    pub retx_max: u32,
    /// `false` (the default): each direction of a link is FIFO, a packet never arrives before
    /// one sent earlier the same way (it waits for it). `true` lets a shorter draw overtake,
    /// as turmoil 0.7's links do; turmoil-net's TCP drops every segment that is not the next
    /// one expected, so each overtaking costs the sender an RTO
    /// (docs/engine.md#latency-and-loss).
    pub reorder: bool,
}

impl Default for NetConfig {
    /// 1 ms ticks, fixed 1 ms links, a 200 ms RTO (Linux's minimum), 5 retransmissions
    /// (turmoil-net's default) and FIFO links.
    fn default() -> Self {
        NetConfig {
            tick: Duration::from_millis(1),
            latency: Latency::fixed(Duration::from_millis(1)),
            rto: Duration::from_millis(200),
            retx_max: 5,
            reorder: false,
        }
    }
}

/// A network fault on the link from one host to another (a directed link).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NetFault {
    /// Packets on the link are dropped (one way; schedule both directions for both ways).
    Cut,
    /// Packets on the link are kept in order, undelivered, until [`NetFault::Release`].
    Hold,
    /// The link carries packets again; held packets leave now, in the order they were held.
    Release,
    /// The link's latency from now on (each packet's drawn in the range).
    Latency(Latency),
    /// Each packet on the link is lost with this probability, in parts per million
    /// ([`PPM`] loses all; 0 ends the loss); TCP retransmits what is lost. At most [`PPM`]
    /// ([`crate::EngineError::LossOutOfRange`]).
    Loss(u32),
    /// Now, the receiving host gets an RST, as from the sender, on each TCP connection it has
    /// with the sender: its tasks read `ConnectionReset`. Delivered at once, ahead of what
    /// is in flight and whatever the link's state (a middlebox beside the receiver), and lost
    /// if the receiver is suspended or down. The sender's side learns only when it next sends
    /// and is answered with an RST: schedule both directions to reset both ends
    /// (docs/engine.md#resets). Not a state of the link: nothing to heal.
    Reset,
}

#[derive(Clone, Debug)]
struct Link {
    latency: Latency,
    /// Loss probability, ppm.
    loss: u32,
    cut: bool,
    held: Option<Vec<Packet>>,
    /// The latest delivery time queued on the link: a FIFO link queues none before it.
    last: Duration,
}

impl Link {
    fn new(latency: Latency) -> Self {
        Link {
            latency,
            loss: 0,
            cut: false,
            held: None,
            last: Duration::ZERO,
        }
    }

    /// The delivery time of a packet that leaves at `now` after a rule's `delay`: `now` plus
    /// a latency drawn from `rng` in whole `tick`s, plus `delay`; on a FIFO link not before
    /// the link's last delivery.
    fn delivery(
        &mut self,
        rng: &mut ChaCha20Rng,
        now: Duration,
        delay: Duration,
        fifo: (Duration, bool),
    ) -> Duration {
        let (tick, reorder) = fifo;
        let mut at = now + draw_latency(rng, self.latency, tick) + delay;
        if !reorder {
            at = at.max(self.last);
        }
        self.last = self.last.max(at);
        at
    }
}

/// `latency.least` plus a whole number of `tick`s drawn with the latency's spread, at most
/// `latency.most`; nothing is drawn for a range shorter than a tick.
fn draw_latency(rng: &mut ChaCha20Rng, latency: Latency, tick: Duration) -> Duration {
    let span = latency.most.saturating_sub(latency.least).as_nanos() / tick.as_nanos().max(1);
    let steps = u64::try_from(span).unwrap_or(u64::MAX);
    if steps == 0 {
        return latency.least;
    }
    let k = match latency.spread {
        Spread::Uniform => rng.next_u64() % steps.saturating_add(1),
        Spread::Turmoil => {
            let ratio = turmoil_ratio_ppm(steps);
            let mut k = 0;
            while k < steps && rng.next_u32() % PPM < ratio {
                k += 1;
            }
            k
        }
    };
    latency.least + tick.saturating_mul(u32::try_from(k).unwrap_or(u32::MAX))
}

/// e^(−5/n) in ppm, rounded down: the odds, under [`Spread::Turmoil`] over `n` ticks, of one
/// more tick. Integers only (the series of e^(5/n) in units of 10^−15), so every platform
/// draws the same.
pub(crate) fn turmoil_ratio_ppm(n: u64) -> u32 {
    const ONE: u128 = 1_000_000_000_000_000;
    let n = u128::from(n.max(1));
    let (mut term, mut sum) = (ONE, ONE);
    for i in 1..=64u128 {
        term = term * 5 / (n * i);
        if term == 0 {
            break;
        }
        sum += term;
    }
    u32::try_from(ONE * u128::from(PPM) / sum).unwrap_or(PPM)
}

/// Whether a packet on a link losing `ppm` is lost: an integer ratio, drawn only for a
/// partial loss.
fn lost(rng: &mut ChaCha20Rng, ppm: u32) -> bool {
    match ppm {
        0 => false,
        PPM.. => true,
        _ => rng.next_u32() % PPM < ppm,
    }
}

thread_local! {
    /// The running network's hosts, address and name, in host order: set when the network
    /// starts on this thread (with turmoil-net's `Net`), cleared when it is dropped.
    static NAMES: RefCell<Vec<(IpAddr, Arc<str>)>> = const { RefCell::new(Vec::new()) };
}

/// The name of the engine host at `addr` (a peer's address, as `accept` gives it), if the
/// network running on this thread has one there; `None` outside a running network and for
/// loopback. A linear scan over the hosts: for a connection's set-up, not a packet's path.
pub fn host_name(addr: IpAddr) -> Option<Arc<str>> {
    NAMES.with(|table| {
        let table = table.borrow();
        let found = table.iter().find(|(a, _)| *a == addr);
        found.map(|(_, name)| Arc::clone(name))
    })
}

impl Drop for Network {
    /// Clears the name table if this network installed it (a second engine refused at its
    /// first run never did, and leaves the first one's table alone).
    fn drop(&mut self) {
        if self.guard.is_some() {
            NAMES.with(|table| table.borrow_mut().clear());
        }
    }
}

/// What the fabric decided for one outbound packet.
pub(crate) enum Route {
    /// Deliver at this true time.
    At(Duration, Packet),
    /// Dropped or held.
    Kept,
}

/// The network state the engine keeps beside turmoil-net's `Net`.
pub(crate) struct Network {
    config: NetConfig,
    /// Until the first run: hosts are still being added.
    building: Option<Net>,
    guard: Option<EnterGuard>,
    /// Each engine host's address, by host index.
    pub(crate) addrs: Vec<IpAddr>,
    /// Each engine host's id in the `Net`, by host index.
    pub(crate) ids: Vec<turmoil_net::HostId>,
    /// Each engine host's name, by host index: the table [`host_name`] answers from.
    names: Vec<Arc<str>>,
    links: BTreeMap<(IpAddr, IpAddr), Link>,
    pub(crate) next_tick: Duration,
    egress: Vec<Packet>,
    /// The addresses of suspended hosts: their network is down.
    asleep: BTreeSet<IpAddr>,
    /// Latency and loss draws, in the order packets leave (docs/engine.md#latency-and-loss).
    rng: ChaCha20Rng,
    /// The spare kernels and the addresses of hosts that moved onto one
    /// (docs/engine.md#fresh-kernels).
    kernels: Kernels,
}

/// The ChaCha stream of the network's draws, under the engine's seed. Fixed: changing it
/// changes every seed's latencies and losses.
const NET_STREAM: u64 = 3;

impl Network {
    /// A network with no hosts yet, drawing latencies and losses from ChaCha20 keyed by
    /// `seed` (the engine's) on its own stream.
    pub(crate) fn new(config: NetConfig, seed: u64) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        rng.set_stream(NET_STREAM);
        let ticks = config
            .rto
            .as_nanos()
            .div_ceil(config.tick.as_nanos().max(1));
        let kernel = KernelConfig::default()
            .retx_threshold(u32::try_from(ticks).unwrap_or(u32::MAX).max(1))
            .retx_max(config.retx_max);
        Network {
            next_tick: config.tick,
            config,
            building: Some(Net::with_config(kernel)),
            guard: None,
            addrs: Vec::new(),
            ids: Vec::new(),
            names: Vec::new(),
            links: BTreeMap::new(),
            egress: Vec::new(),
            asleep: BTreeSet::new(),
            rng,
            kernels: Kernels::default(),
        }
    }

    /// Registers the engine's next host under `name`; `None` once the network is running.
    pub(crate) fn add_host(&mut self, name: &str) -> Option<()> {
        let net = self.building.as_mut()?;
        self.ids.push(net.add_host(name));
        self.addrs.push(net.lookup(name));
        self.names.push(Arc::from(name));
        Some(())
    }

    /// Reserves `n` spare kernels for the engine's host `index`, one for each of its next
    /// `n` boots; `None` once the network is running.
    pub(crate) fn reserve_kernels(&mut self, index: usize, n: usize) -> Option<()> {
        self.building.as_ref()?;
        self.kernels.reserve(index, n);
        Some(())
    }

    /// Moves the engine's host `index` onto its next spare kernel (its sockets so far stay in
    /// the old one, which is dead from the next fabric tick); the new kernel's address, or
    /// `None` when it has no spare left and keeps its kernel.
    pub(crate) fn fresh_kernel(&mut self, index: usize) -> Option<IpAddr> {
        let own = *self.addrs.get(index)?;
        let (id, addr) = self.kernels.take(index, own)?;
        self.ids[index] = id;
        let name = Arc::clone(&self.names[index]);
        NAMES.with(|table| table.borrow_mut().push((addr, name)));
        Some(addr)
    }

    /// Installs the `Net` on this thread (at the first run), with the spare kernels reserved;
    /// `false` when another `Net` is installed there already.
    pub(crate) fn start(&mut self) -> bool {
        if self.building.is_some() && turmoil_net::lookup_host("127.0.0.1").is_some() {
            return false;
        }
        if let Some(mut net) = self.building.take() {
            self.kernels.add_spares(&mut net, &self.addrs);
            self.guard = Some(net.enter());
            let names = self.addrs.iter().copied().zip(self.names.iter().cloned());
            NAMES.with(|table| *table.borrow_mut() = names.collect());
        }
        true
    }

    /// Points turmoil-net's socket calls at the engine's host `index`.
    pub(crate) fn set_current(&self, index: usize) {
        if let (Some(guard), Some(id)) = (&self.guard, self.ids.get(index)) {
            guard.set_current(*id);
        }
    }

    /// Applies `fault` to the link `from → to` at true time `now`; returns the packets a
    /// release lets go, each with its delivery time.
    pub(crate) fn apply(
        &mut self,
        from: IpAddr,
        to: IpAddr,
        fault: NetFault,
        now: Duration,
    ) -> Vec<Route> {
        let link = link(&mut self.links, &self.config, from, to);
        match fault {
            NetFault::Cut => link.cut = true,
            NetFault::Hold => {
                link.held.get_or_insert_with(Vec::new);
            }
            NetFault::Latency(latency) => link.latency = latency,
            NetFault::Loss(ppm) => link.loss = ppm,
            NetFault::Reset => return self.resets(from, to, now),
            NetFault::Release => {
                link.cut = false;
                let fifo = (self.config.tick, self.config.reorder);
                return release(link, &mut self.rng, now, fifo);
            }
        }
        Vec::new()
    }

    /// An RST from `from` to `to`, due `now`, for each TCP connection `to`'s kernel has with
    /// `from`, in its socket table's order (turmoil-net's `netstat`, a public snapshot).
    /// turmoil-net aborts a connection on any RST of its 4-tuple, whatever its sequence
    /// number, so the RST carries 0 (a kernel that checks it, as Linux does since RFC 5961,
    /// would need the connection's `rcv_nxt`, which `netstat` does not give).
    fn resets(&self, from: IpAddr, to: IpAddr, now: Duration) -> Vec<Route> {
        if self.guard.is_none() {
            return Vec::new();
        }
        let kernel = self.kernel_addr(to);
        let table = turmoil_net::netstat(kernel);
        let peers = table.entries.into_iter().filter_map(|entry| {
            let peer = entry
                .peer
                .filter(|peer| self.host_addr(peer.ip()) == from)?;
            (entry.proto == Proto::Tcp).then_some((peer.ip(), peer.port(), entry.local.port()))
        });
        let rst = TcpFlags {
            rst: true,
            ..TcpFlags::default()
        };
        let rst = |(src, src_port, dst_port)| segment((src, src_port), (kernel, dst_port), rst);
        peers.map(|ports| Route::At(now, rst(ports))).collect()
    }

    /// The own address of the host with kernel address `addr` (docs/engine.md#fresh-kernels).
    fn host_addr(&self, addr: IpAddr) -> IpAddr {
        self.kernels.host_addr(addr, &self.addrs)
    }

    /// The current kernel address of the host whose own address is `own`.
    fn kernel_addr(&self, own: IpAddr) -> IpAddr {
        match self.addrs.iter().position(|a| *a == own) {
            Some(index) => self.kernels.current(index, own),
            None => own,
        }
    }

    /// Ends every link fault at true time `now`: cuts and losses end, latencies go back to the
    /// config's, and held packets leave now, link by link in (from, to) address order.
    pub(crate) fn heal(&mut self, now: Duration) -> Vec<Route> {
        let fifo = (self.config.tick, self.config.reorder);
        let mut routes = Vec::new();
        for link in self.links.values_mut() {
            link.cut = false;
            link.loss = 0;
            link.latency = self.config.latency;
            routes.extend(release(link, &mut self.rng, now, fifo));
        }
        routes
    }

    /// One fabric tick at true time `now`: every host's outbound packets, routed.
    pub(crate) fn fabric_tick(&mut self, now: Duration) -> Vec<Route> {
        let Some(guard) = self.guard.take() else {
            return Vec::new();
        };
        let mut egress = std::mem::take(&mut self.egress);
        guard.egress_all(&mut egress);
        let mut routes = Vec::with_capacity(egress.len());
        for packet in egress.drain(..) {
            routes.push(self.route(&guard, packet, now));
        }
        self.kernels.drained();
        self.egress = egress;
        self.guard = Some(guard);
        self.next_tick = now + self.config.tick;
        routes
    }

    /// Marks the engine's host `index` suspended (`true`: its network is down: nothing it
    /// sends leaves, nothing sent to it arrives) or awake.
    pub(crate) fn set_asleep(&mut self, index: usize, asleep: bool) {
        if let Some(addr) = self.addrs.get(index) {
            if asleep {
                self.asleep.insert(*addr);
            } else {
                self.asleep.remove(addr);
            }
        }
    }

    fn route(&mut self, guard: &EnterGuard, mut packet: Packet, now: Duration) -> Route {
        if !self.kernels.outbound(&mut packet) {
            return Route::Kept;
        }
        let (from, to) = (self.host_addr(packet.src), self.host_addr(packet.dst));
        if self.asleep.contains(&from) {
            return Route::Kept;
        }
        let link = link(&mut self.links, &self.config, from, to);
        if link.cut || lost(&mut self.rng, link.loss) {
            return Route::Kept;
        }
        if let Some(held) = &mut link.held {
            held.push(packet);
            return Route::Kept;
        }
        let delay = match guard.evaluate(&packet) {
            Verdict::Drop => return Route::Kept,
            Verdict::Deliver(delay) => delay,
            Verdict::Pass => Duration::ZERO,
        };
        let fifo = (self.config.tick, self.config.reorder);
        Route::At(link.delivery(&mut self.rng, now, delay, fifo), packet)
    }

    /// Hands `packet` to its destination's kernel (which wakes the socket's task), unless the
    /// destination is suspended: a sleeping machine's network is down, and the packet is lost.
    pub(crate) fn deliver(&mut self, mut packet: Packet) {
        if self.asleep.contains(&self.host_addr(packet.dst)) {
            return;
        }
        self.kernels.inbound(&mut packet);
        if let Some(guard) = &self.guard {
            guard.deliver(packet);
        }
    }
}

/// A bare TCP segment from `src` to `dst` (address, port) with `flags`: sequence and ack 0,
/// no window, no payload (what the engine injects; turmoil-net checks neither number on an RST).
pub(crate) fn segment(src: (IpAddr, u16), dst: (IpAddr, u16), flags: TcpFlags) -> Packet {
    Packet {
        src: src.0,
        dst: dst.0,
        ttl: 64,
        payload: Transport::Tcp(TcpSegment {
            src_port: src.1,
            dst_port: dst.1,
            seq: 0,
            ack: 0,
            flags,
            window: 0,
            payload: Default::default(),
        }),
    }
}

/// The link `from → to`, created with the config's latency at its first packet or fault.
fn link<'a>(
    links: &'a mut BTreeMap<(IpAddr, IpAddr), Link>,
    config: &NetConfig,
    from: IpAddr,
    to: IpAddr,
) -> &'a mut Link {
    links
        .entry((from, to))
        .or_insert_with(|| Link::new(config.latency))
}

/// Ends a hold on `link`: its packets leave at `now`, in the order they were held, each with
/// its own latency draw.
fn release(
    link: &mut Link,
    rng: &mut ChaCha20Rng,
    now: Duration,
    fifo: (Duration, bool),
) -> Vec<Route> {
    let held = link.held.take().unwrap_or_default();
    held.into_iter()
        .map(|p| Route::At(link.delivery(rng, now, Duration::ZERO, fifo), p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turmoils_ratio_is_e_to_the_minus_five_over_the_ticks_in_ppm() {
        // e^-5 = 0.006738, e^-1.25 = 0.286505, e^-0.05 = 0.951229.
        assert_eq!(turmoil_ratio_ppm(1), 6_737);
        assert_eq!(turmoil_ratio_ppm(4), 286_504);
        assert_eq!(turmoil_ratio_ppm(100), 951_229);
    }

    #[test]
    fn turmoils_spread_over_one_to_five_ms_gives_turmoils_odds() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let latency = Latency::turmoil(Duration::from_millis(1), Duration::from_millis(5));
        let mut counts = [0u32; 6];
        for _ in 0..100_000 {
            let ms = draw_latency(&mut rng, latency, Duration::from_millis(1)).as_millis();
            counts[usize::try_from(ms).expect("a few ms")] += 1;
        }
        // turmoil's odds in ‰: 713.5, 204.4, 58.6, 16.8, 6.7; 100,000 draws land within a
        // few ‰ of each.
        let per_mille: Vec<u32> = counts[1..].iter().map(|c| (c + 50) / 100).collect();
        let expected = [714, 204, 59, 17, 7];
        for (got, want) in per_mille.iter().zip(expected) {
            assert!(
                got.abs_diff(want) <= 4,
                "{per_mille:?} against {expected:?}"
            );
        }
        assert_eq!(counts[0], 0);
    }
}
