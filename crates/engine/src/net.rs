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
//! task; the task runs in its host's next slice.
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

use turmoil_net::{EnterGuard, KernelConfig, Net, Packet, Verdict};

/// The network's settings.
#[derive(Clone, Debug)]
pub struct NetConfig {
    /// True time between two fabric ticks; also the engine's lookahead. Must not be zero.
    pub tick: Duration,
    /// Latency of every link until a [`NetFault::Latency`] changes one.
    pub latency: Duration,
    /// TCP's retransmission timeout (fixed: turmoil-net 0.1 does not back off).
    pub rto: Duration,
    /// Retransmissions of one segment before the connection is reset.
    pub retx_max: u32,
}

impl Default for NetConfig {
    /// 1 ms ticks, 1 ms links, a 200 ms RTO (Linux's minimum) and 5 retransmissions
    /// (turmoil-net's default).
    fn default() -> Self {
        NetConfig {
            tick: Duration::from_millis(1),
            latency: Duration::from_millis(1),
            rto: Duration::from_millis(200),
            retx_max: 5,
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
    /// The link's latency from now on.
    Latency(Duration),
}

#[derive(Clone, Debug)]
struct Link {
    latency: Duration,
    cut: bool,
    held: Option<Vec<Packet>>,
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
}

impl Network {
    /// A network with no hosts yet.
    pub(crate) fn new(config: NetConfig) -> Self {
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

    /// Installs the `Net` on this thread (at the first run); `false` when another `Net` is
    /// installed there already.
    pub(crate) fn start(&mut self) -> bool {
        if self.building.is_some() && turmoil_net::lookup_host("127.0.0.1").is_some() {
            return false;
        }
        if let Some(net) = self.building.take() {
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

    fn link(&mut self, from: IpAddr, to: IpAddr) -> &mut Link {
        let latency = self.config.latency;
        self.links.entry((from, to)).or_insert(Link {
            latency,
            cut: false,
            held: None,
        })
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
        let link = self.link(from, to);
        match fault {
            NetFault::Cut => link.cut = true,
            NetFault::Hold => {
                link.held.get_or_insert_with(Vec::new);
            }
            NetFault::Latency(latency) => link.latency = latency,
            NetFault::Release => {
                link.cut = false;
                let at = now + link.latency;
                let held = link.held.take().unwrap_or_default();
                return held.into_iter().map(|p| Route::At(at, p)).collect();
            }
        }
        Vec::new()
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

    fn route(&mut self, guard: &EnterGuard, packet: Packet, now: Duration) -> Route {
        if self.asleep.contains(&packet.src) {
            return Route::Kept;
        }
        let link = self.link(packet.src, packet.dst);
        if link.cut {
            return Route::Kept;
        }
        if let Some(held) = &mut link.held {
            held.push(packet);
            return Route::Kept;
        }
        let latency = link.latency;
        match guard.evaluate(&packet) {
            Verdict::Drop => Route::Kept,
            Verdict::Deliver(delay) => Route::At(now + latency + delay, packet),
            Verdict::Pass => Route::At(now + latency, packet),
        }
    }

    /// Hands `packet` to its destination's kernel (which wakes the socket's task), unless the
    /// destination is suspended: a sleeping machine's network is down, and the packet is lost.
    pub(crate) fn deliver(&mut self, packet: Packet) {
        if self.asleep.contains(&packet.dst) {
            return;
        }
        if let Some(guard) = &self.guard {
            guard.deliver(packet);
        }
    }
}
