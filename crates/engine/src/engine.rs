//! The engine: hosts, true time and the queue of what is due (docs/engine.md#time).

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use turmoil_net::Packet;

use crate::clock::DriftOutOfRange;
use crate::context::Trace;
use crate::host::{Host, HostId, HostState, Slice, SliceEnd};
use crate::net::{Latency, NetConfig, NetFault, Network, PPM, Route};

/// A fault step the engine applies to one host at a true time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HostFault {
    /// SIGSTOP: the host's tasks stop; its clocks run on.
    Pause,
    /// SIGCONT: the host's tasks run again, and read the time that passed.
    Resume,
    /// The machine sleeps: tasks stop and the monotonic clock stands still.
    Suspend,
    /// The machine wakes: tasks run and the monotonic clock runs on from where it stopped.
    Wake,
    /// The host's clock runs at this drift from now on, in ppm (−100_000 is 10 % slow).
    Drift(i64),
    /// The wall clock steps by this many ns, forward when positive and back when negative
    /// (the world's `wall_jump`); the monotonic clock and every timer are untouched.
    WallJump(i64),
    /// The wall clock's step offset becomes this many ns, replacing every earlier jump (the
    /// world's `wall_offset`).
    WallOffset(i64),
}

/// Something due at a true time: a fault step, or any change to the engine (a restart, a
/// delivery) as a call.
pub enum Event {
    /// A fault step on one host.
    Host(HostId, HostFault),
    /// A network fault on the link `from → to` (one direction).
    Net {
        /// The sending host.
        from: HostId,
        /// The receiving host.
        to: HostId,
        /// What happens to the link.
        fault: NetFault,
    },
    /// A packet handed to its destination's kernel (the engine queues these itself).
    Deliver(Packet),
    /// A call on the engine at the event's time, between two slices.
    Call(Box<dyn FnOnce(&mut Engine)>),
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::Host(id, fault) => write!(f, "Host({id:?}, {fault:?})"),
            Event::Net { from, to, fault } => write!(f, "Net({from:?} -> {to:?}, {fault:?})"),
            Event::Deliver(p) => write!(f, "Deliver({} -> {})", p.src, p.dst),
            Event::Call(_) => f.write_str("Call(..)"),
        }
    }
}

/// What the engine refused: a fault (with the host and the time it was due at), or a host or
/// network set-up.
#[derive(Debug, PartialEq, Eq)]
pub enum EngineError {
    /// A drift out of range (the host's clock is unchanged).
    Drift(HostId, Duration, DriftOutOfRange),
    /// An event named a host the engine does not have.
    NoSuchHost(HostId),
    /// A host was added to a network that is already running (add every host first).
    NetworkStarted,
    /// A network fault on an engine built without a network ([`Engine::with_network`]).
    NoNetwork,
    /// Another engine's (or fixture's) turmoil-net `Net` is installed on this thread: one
    /// network per thread at a time (drop the other engine first).
    NetInstalled,
    /// A network whose tick is zero (nothing would ever bound a slice).
    ZeroTick,
    /// tokio could not build a host's runtime (its message).
    Runtime(String),
    /// A latency whose `most` is shorter than its `least` (in the config, or in a fault due
    /// at this time).
    LatencyRange(Latency, Duration),
    /// A loss above [`crate::net::PPM`] (a fault due at this time).
    LossOutOfRange(u32, Duration),
    /// [`Engine::start`] of a host that is not down (crash it first).
    NotDown(HostId),
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::Drift(id, at, e) => write!(f, "host {} at {at:?}: {e}", id.0),
            EngineError::NoSuchHost(id) => write!(f, "no host {} in the engine", id.0),
            EngineError::NetworkStarted => f.write_str(
                "a host was added after the engine's network started: add every host before \
                 the first run_until",
            ),
            EngineError::NetInstalled => f.write_str(
                "another turmoil-net Net is installed on this thread: drop the other engine \
                 with a network before running this one",
            ),
            EngineError::NoNetwork => f.write_str(
                "a network fault on an engine without a network: build it with \
                 Engine::with_network",
            ),
            EngineError::ZeroTick => f.write_str("a network's tick must be longer than zero"),
            EngineError::Runtime(e) => write!(f, "a host's tokio runtime: {e}"),
            EngineError::LatencyRange(l, at) => write!(
                f,
                "a latency from {:?} to {:?} at {at:?}: the most must not be shorter than the \
                 least",
                l.least, l.most
            ),
            EngineError::LossOutOfRange(ppm, at) => write!(
                f,
                "a loss of {ppm} ppm at {at:?}: at most 1000000 ppm (every packet)"
            ),
            EngineError::NotDown(id) => {
                write!(f, "host {} is not down: crash it before starting it", id.0)
            }
        }
    }
}

impl std::error::Error for EngineError {}

/// Hosts that keep their own time, driven by one thread through true time.
///
/// True time moves only forward, from one **horizon** to the next: the earliest of the next
/// queued event, the end asked for, and `now + lookahead` when a lookahead is set (the
/// minimum link latency: nothing a host sends in a slice can reach another host before the
/// slice ends; docs/engine.md#lookahead) and, with a network, the next fabric tick
/// (docs/engine.md#network). Every running host runs one slice to the horizon, in [`HostId`]
/// order; then every event due by the horizon is applied, in (time, order scheduled) order,
/// and the fabric tick runs if one is due.
pub struct Engine {
    hosts: Vec<Host>,
    queue: BTreeMap<(Duration, u64), Event>,
    scheduled: u64,
    now: Duration,
    lookahead: Option<Duration>,
    seed: u64,
    trace: Trace,
    slices: u64,
    /// Slices proven empty and not run (docs/engine.md#skipped-slices).
    skipped: u64,
    /// Whether slices proven empty are skipped (the default).
    skip_empty: bool,
    net: Option<Network>,
    /// The hosts still owe their work at `now` ([`Engine::run_to_instant`]): it runs, then
    /// the fabric tick, when time next moves on.
    owed: bool,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("now", &self.now)
            .field("hosts", &self.hosts.len())
            .field("queued", &self.queue.len())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine at true time zero with no hosts; `seed` seeds each host's tokio RNG.
    pub fn new(seed: u64) -> Self {
        Engine {
            hosts: Vec::new(),
            queue: BTreeMap::new(),
            scheduled: 0,
            now: Duration::ZERO,
            lookahead: None,
            seed,
            trace: Trace::default(),
            slices: 0,
            skipped: 0,
            skip_empty: true,
            net: None,
            owed: false,
        }
    }

    /// An engine whose hosts talk over turmoil-net (docs/engine.md#network): every host added
    /// gets the address its name resolves to, and the network's tick bounds every slice.
    ///
    /// One engine with a network per thread at a time: the first [`Engine::run_until`] fails
    /// with [`EngineError::NetInstalled`] while another is alive on the thread.
    ///
    /// Latencies and losses are drawn from ChaCha20 keyed by `seed` on the network's own
    /// stream (docs/engine.md#latency-and-loss).
    ///
    /// # Errors
    /// [`EngineError::ZeroTick`]; [`EngineError::LatencyRange`] (at time zero).
    pub fn with_network(seed: u64, config: NetConfig) -> Result<Self, EngineError> {
        if config.tick.is_zero() {
            return Err(EngineError::ZeroTick);
        }
        if !config.latency.is_valid() {
            return Err(EngineError::LatencyRange(config.latency, Duration::ZERO));
        }
        let mut engine = Engine::new(seed);
        engine.net = Some(Network::new(config, seed));
        Ok(engine)
    }

    /// Adds a running host with no drift whose monotonic clock reads true time (zero at true
    /// time zero).
    ///
    /// # Errors
    /// [`EngineError::NetworkStarted`]; [`EngineError::Runtime`].
    pub fn add_host(&mut self, name: &str) -> Result<HostId, EngineError> {
        let id = HostId(self.hosts.len());
        let seed = self.seed ^ (id.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let host = Host::new(name, seed).map_err(|e| EngineError::Runtime(e.to_string()))?;
        if let Some(net) = &mut self.net {
            net.add_host(name).ok_or(EngineError::NetworkStarted)?;
        }
        self.hosts.push(host);
        Ok(id)
    }

    /// Reserves `n` fresh kernels for host `id`'s next `n` new boots
    /// (docs/engine.md#fresh-kernels): each [`Engine::reboot`] or [`Engine::crash`] moves the
    /// host onto the next one, so the new boot's sockets start from an empty table, as after
    /// a real reboot, and its ports are free whatever the old boot's connections are doing.
    /// Once they are used up the host keeps its kernel (the old sockets linger: see
    /// [`Engine::reboot`]). Call it before the first run; a second call replaces the first.
    ///
    /// # Errors
    /// [`EngineError::NoSuchHost`]; [`EngineError::NoNetwork`];
    /// [`EngineError::NetworkStarted`].
    pub fn reserve_kernels(&mut self, id: HostId, n: usize) -> Result<(), EngineError> {
        if self.hosts.get(id.0).is_none() {
            return Err(EngineError::NoSuchHost(id));
        }
        let net = self.net.as_mut().ok_or(EngineError::NoNetwork)?;
        net.reserve_kernels(id.0, n)
            .ok_or(EngineError::NetworkStarted)
    }

    /// Moves host `id` onto its next reserved kernel, if any, after its tasks were dropped
    /// (docs/engine.md#fresh-kernels), and traces it.
    fn fresh_kernel(&mut self, id: HostId) {
        let Some(net) = &mut self.net else {
            return;
        };
        if let Some(addr) = net.fresh_kernel(id.0) {
            let name = self.hosts[id.0].name();
            self.trace
                .record(self.now, name, &format!("fresh kernel {addr}"));
        }
    }

    /// The host `id`, if the engine has it.
    pub fn host(&self, id: HostId) -> Option<&Host> {
        self.hosts.get(id.0)
    }

    /// Spawns `task` on host `id`; it first runs in the host's next slice.
    ///
    /// # Errors
    /// [`EngineError::NoSuchHost`].
    pub fn spawn<F>(&self, id: HostId, task: F) -> Result<(), EngineError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let host = self.hosts.get(id.0).ok_or(EngineError::NoSuchHost(id))?;
        host.spawn(task);
        Ok(())
    }

    /// The process on host `id` is killed and starts again empty, now: every task is dropped
    /// (turmoil-net closes its sockets, as a kernel does a killed process's) and a fresh
    /// runtime continues the host's clocks. Spawn the new process's tasks afterwards; from a
    /// queued fault, do both in an [`Event::Call`].
    ///
    /// # Errors
    /// [`EngineError::NoSuchHost`]; [`EngineError::Runtime`] (the old process keeps running).
    pub fn restart(&mut self, id: HostId) -> Result<(), EngineError> {
        let host = entered(&mut self.hosts, self.net.as_ref(), id)?;
        host.restart()
            .map_err(|e| EngineError::Runtime(e.to_string()))?;
        self.trace.record(self.now, host.name(), "restart");
        Ok(())
    }

    /// The machine `id` crashes now and boots again (docs/engine.md#wall-clocks-and-reboots).
    ///
    /// Now: every task is dropped, a fresh runtime takes the old one's place, and a new boot
    /// starts: the monotonic and boot-time clocks read zero, the wall clock runs on with its
    /// offset, a pause or suspension ends. For `down` (the machine booting) the host is
    /// [`HostState::Down`]: no task runs, and with a network nothing it sends leaves and
    /// nothing sent to it arrives, so the old process's sockets close silently, as the crash of a
    /// kernel loses them. Then it runs: its tasks first read a monotonic clock of `down`
    /// (scaled by its drift), the uptime of a machine that took that long to boot. Spawn the
    /// new boot's tasks after this call; from a queued fault, do both in an [`Event::Call`].
    ///
    /// turmoil-net 0.1 offers no kernel reset, so the old sockets stay in the kernel until TCP
    /// gives up on them: a `down` of at least `(retx_max + 1) × rto` (1.2 s by default) lets
    /// every one of them time out and free its port before the new boot, and the peers' next
    /// segments are answered with a RST, as by a rebooted Linux. A shorter `down` leaves them
    /// lingering (docs/engine.md#wall-clocks-and-reboots says what a peer sees then).
    ///
    /// # Errors
    /// [`EngineError::NoSuchHost`]; [`EngineError::Runtime`] (the host is unchanged).
    pub fn reboot(&mut self, id: HostId, down: Duration) -> Result<(), EngineError> {
        let now = self.now;
        let host = entered(&mut self.hosts, self.net.as_ref(), id)?;
        let was_down = host.state == HostState::Down;
        host.reboot(now)
            .map_err(|e| EngineError::Runtime(e.to_string()))?;
        let boot = host.clock.boot();
        let line = format!("reboot -> boot {boot}, down for {down:?}");
        self.trace.record(now, host.name(), &line);
        if !was_down {
            self.fresh_kernel(id);
        }
        let host = &mut self.hosts[id.0];
        if !down.is_zero() {
            host.state = HostState::Down;
            let incarnation = host.incarnation();
            let up = move |engine: &mut Engine| engine.boot_done(id, boot, incarnation);
            self.schedule(now.saturating_add(down), Event::Call(Box::new(up)));
        }
        if let Some(net) = &mut self.net {
            net.set_asleep(id.0, !down.is_zero());
        }
        Ok(())
    }

    /// Boot `boot` of host `id` is done: its tasks run and its network is up (unless a
    /// crash, a start or another reboot came meanwhile: the incarnation moved on).
    fn boot_done(&mut self, id: HostId, boot: u64, incarnation: u64) {
        let Some(host) = self.hosts.get_mut(id.0) else {
            return;
        };
        let current = (host.clock.boot(), host.incarnation());
        if host.state != HostState::Down || current != (boot, incarnation) {
            return;
        }
        host.state = HostState::Running;
        self.trace.record(self.now, host.name(), "up");
        if let Some(net) = &mut self.net {
            net.set_asleep(id.0, false);
        }
    }

    /// The machine `id` crashes now and stays down until [`Engine::start`]
    /// (docs/engine.md#crash-and-start): every task is dropped and the host is
    /// [`HostState::Down`] — no task runs, and with a network nothing it sends leaves and
    /// nothing sent to it arrives, so its sockets close **silently**, as a crashed machine's
    /// kernel loses them (peers hear nothing until they send). Its clocks run on until the
    /// start begins a new boot. A crash of a host already down drops what was spawned on it.
    /// A killed process whose kernel lives on (a FIN to each peer) is [`Engine::restart`].
    ///
    /// # Errors
    /// [`EngineError::NoSuchHost`]; [`EngineError::Runtime`] (the host is unchanged).
    pub fn crash(&mut self, id: HostId) -> Result<(), EngineError> {
        let host = entered(&mut self.hosts, self.net.as_ref(), id)?;
        host.restart()
            .map_err(|e| EngineError::Runtime(e.to_string()))?;
        let was_down = std::mem::replace(&mut host.state, HostState::Down) == HostState::Down;
        self.trace.record(self.now, host.name(), "crash -> Down");
        // A host already down opened no socket since its kernel was lost.
        if !was_down {
            self.fresh_kernel(id);
        }
        if let Some(net) = &mut self.net {
            net.set_asleep(id.0, true);
        }
        Ok(())
    }

    /// The crashed machine `id` starts now, empty: a fresh runtime, a new boot whose
    /// monotonic and boot-time clocks read zero now (the wall clock runs on with its offset;
    /// the drift is kept), its network up. Spawn its tasks after this call; from a queued
    /// fault, do both in an [`Event::Call`]. Old sockets still lingering in its kernel are
    /// those of docs/engine.md#wall-clocks-and-reboots: gone if it was down at least
    /// `(retx_max + 1) × rto`.
    ///
    /// # Errors
    /// [`EngineError::NoSuchHost`]; [`EngineError::NotDown`] (a host that runs, is paused or
    /// suspended: crash it first); [`EngineError::Runtime`] (the host stays down).
    pub fn start(&mut self, id: HostId) -> Result<(), EngineError> {
        let now = self.now;
        let host = entered(&mut self.hosts, self.net.as_ref(), id)?;
        if host.state != HostState::Down {
            return Err(EngineError::NotDown(id));
        }
        host.reboot(now)
            .map_err(|e| EngineError::Runtime(e.to_string()))?;
        let line = format!("start -> boot {}", host.clock.boot());
        self.trace.record(now, host.name(), &line);
        if let Some(net) = &mut self.net {
            net.set_asleep(id.0, false);
        }
        Ok(())
    }

    /// The host named `name` (as it was added), if the engine has one; the first if several
    /// share the name. A linear scan: for a fault's target, not a packet's path.
    pub fn host_id(&self, name: &str) -> Option<HostId> {
        self.hosts.iter().position(|h| h.name() == name).map(HostId)
    }

    /// Ends every link fault now, as the world's `heal` does (docs/engine.md#heal): cuts both
    /// ways and one way end, held packets leave now (each with its latency draw, link by link
    /// in address order), losses end and every link's latency is the config's again. Host
    /// faults (pauses, suspensions, crashes) are the caller's to end.
    ///
    /// # Errors
    /// [`EngineError::NoNetwork`].
    pub fn heal(&mut self) -> Result<(), EngineError> {
        let now = self.now;
        let net = self.net.as_mut().ok_or(EngineError::NoNetwork)?;
        let routes = net.heal(now);
        self.trace.record(now, "net", "heal");
        self.queue_routes(routes);
        Ok(())
    }

    /// Sets host `id`'s wall clock to read `unix_ns` (ns since the Unix epoch) where its
    /// monotonic clock reads zero; call it before the host's first slice.
    ///
    /// # Errors
    /// [`EngineError::NoSuchHost`].
    pub fn set_wall_epoch(&mut self, id: HostId, unix_ns: i128) -> Result<(), EngineError> {
        let host = self
            .hosts
            .get_mut(id.0)
            .ok_or(EngineError::NoSuchHost(id))?;
        host.set_wall_epoch(unix_ns);
        Ok(())
    }

    /// Sets the lookahead: the longest slice while hosts can reach each other (the minimum
    /// link latency), or `None` when no host's work depends on another's.
    pub fn set_lookahead(&mut self, lookahead: Option<Duration>) {
        self.lookahead = lookahead.filter(|l| !l.is_zero());
    }

    /// Queues `event` at true time `at` (now, if `at` is already past).
    pub fn schedule(&mut self, at: Duration, event: Event) {
        let at = at.max(self.now);
        self.queue.insert((at, self.scheduled), event);
        self.scheduled += 1;
    }

    /// True time now.
    pub fn now(&self) -> Duration {
        self.now
    }

    /// How many host slices there have been: one per running host per horizon, whether it
    /// ran (one `block_on` of the host's runtime) or was proven empty and skipped
    /// ([`Engine::skipped_slices`]).
    pub fn slices(&self) -> u64 {
        self.slices
    }

    /// How many of [`Engine::slices`] were proven empty and not run
    /// (docs/engine.md#skipped-slices).
    pub fn skipped_slices(&self) -> u64 {
        self.skipped
    }

    /// Whether slices proven empty are skipped (the default, `true`). Skipping changes no
    /// trace, timer, delivery or `select!` order, only the cost: `false` runs every slice,
    /// to show that.
    pub fn set_skip_empty_slices(&mut self, skip: bool) {
        self.skip_empty = skip;
    }

    /// The trace so far: the engine's own lines and the hosts' ([`crate::trace`]).
    pub fn trace(&self) -> Vec<u8> {
        self.trace.bytes()
    }

    /// Runs until true time `end`: events due at `end` are applied by the next run.
    ///
    /// # Errors
    /// The first fault refused ([`EngineError`]); the engine stops at that fault's time.
    /// [`EngineError::NetInstalled`] at the first run of a second engine with a network on
    /// one thread.
    pub fn run_until(&mut self, end: Duration) -> Result<(), EngineError> {
        self.run(end, SliceEnd::Through)
    }

    /// Runs until true time `end` and stops at the start of that instant: the events due at
    /// `end` are applied, but no host has done its work at `end` (its timers due then) and the
    /// fabric tick of `end` has not run. Faults the caller applies now (with
    /// [`Engine::schedule`] at [`Engine::now`] and `run_until(now)`) come before that work,
    /// as turmoil's nemesis acts before the hosts' step; the next run that moves time on
    /// runs the hosts' work at `end` first, then the tick (docs/engine.md#one-instant).
    ///
    /// # Errors
    /// As [`Engine::run_until`].
    pub fn run_to_instant(&mut self, end: Duration) -> Result<(), EngineError> {
        self.run(end, SliceEnd::Before)
    }

    fn run(&mut self, end: Duration, edge: SliceEnd) -> Result<(), EngineError> {
        if let Some(net) = &mut self.net
            && !net.start()
        {
            return Err(EngineError::NetInstalled);
        }
        loop {
            self.apply_due()?;
            if self.owed {
                if self.now >= end {
                    return Ok(());
                }
                self.owed = false;
                self.run_hosts_to(self.now, SliceEnd::Through);
                continue;
            }
            if self.fabric_tick_due() {
                continue;
            }
            if self.now >= end {
                return Ok(());
            }
            let next = self.queue.keys().next().map_or(end, |(at, _)| *at);
            let mut horizon = next.min(end);
            if let Some(lookahead) = self.lookahead {
                horizon = horizon.min(self.now.saturating_add(lookahead));
            }
            if let Some(net) = &self.net {
                horizon = horizon.min(net.next_tick);
            }
            if horizon == end && edge == SliceEnd::Before {
                self.run_hosts_to(horizon, SliceEnd::Before);
                self.owed = true;
            } else {
                self.run_hosts_to(horizon, SliceEnd::Through);
            }
        }
    }

    /// Runs the fabric tick when one is due now, queueing its deliveries; whether it ran.
    fn fabric_tick_due(&mut self) -> bool {
        let Some(net) = &mut self.net else {
            return false;
        };
        if net.next_tick > self.now {
            return false;
        }
        let routes = net.fabric_tick(self.now);
        self.queue_routes(routes);
        true
    }

    fn queue_routes(&mut self, routes: Vec<Route>) {
        for route in routes {
            if let Route::At(at, packet) = route {
                self.schedule(at, Event::Deliver(packet));
            }
        }
    }

    fn run_hosts_to(&mut self, horizon: Duration, edge: SliceEnd) {
        let from = self.now;
        for (i, host) in self.hosts.iter_mut().enumerate() {
            if host.state == HostState::Running {
                if let Some(net) = &self.net {
                    net.set_current(i);
                }
                let ran = host.run_slice(
                    (from, horizon, edge),
                    &self.trace,
                    HostId(i),
                    self.skip_empty,
                );
                self.slices += 1;
                self.skipped += u64::from(ran == Slice::Skipped);
            }
        }
        self.now = horizon;
    }

    /// Applies every event due by now, in (time, order scheduled) order. While the hosts owe
    /// their work at now, the packets due now wait for it, as they do at an instant the
    /// caller does not stop at (docs/engine.md#one-instant).
    fn apply_due(&mut self) -> Result<(), EngineError> {
        let mut waiting = Vec::new();
        let applied = self.apply_due_but(&mut waiting);
        self.queue.extend(waiting);
        applied
    }

    fn apply_due_but(
        &mut self,
        waiting: &mut Vec<((Duration, u64), Event)>,
    ) -> Result<(), EngineError> {
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 > self.now {
                return Ok(());
            }
            let (key, event) = entry.remove_entry();
            if self.owed && matches!(event, Event::Deliver(_)) {
                waiting.push((key, event));
                continue;
            }
            match event {
                Event::Host(id, fault) => self.apply_fault(id, fault)?,
                Event::Net { from, to, fault } => self.apply_net_fault(from, to, fault)?,
                Event::Deliver(packet) => {
                    if let Some(net) = &mut self.net {
                        net.deliver(packet);
                    }
                }
                Event::Call(call) => call(self),
            }
        }
        Ok(())
    }

    fn apply_net_fault(
        &mut self,
        from: HostId,
        to: HostId,
        fault: NetFault,
    ) -> Result<(), EngineError> {
        let now = self.now;
        let net = self.net.as_mut().ok_or(EngineError::NoNetwork)?;
        match fault {
            NetFault::Latency(l) if !l.is_valid() => {
                return Err(EngineError::LatencyRange(l, now));
            }
            NetFault::Loss(ppm) if ppm > PPM => return Err(EngineError::LossOutOfRange(ppm, now)),
            _ => {}
        }
        let addr = |id: HostId| {
            net.addrs
                .get(id.0)
                .copied()
                .ok_or(EngineError::NoSuchHost(id))
        };
        let (src, dst) = (addr(from)?, addr(to)?);
        let routes = net.apply(src, dst, fault, now);
        let line = format!("link {src} -> {dst} {fault:?}");
        self.trace.record(now, "net", &line);
        self.queue_routes(routes);
        Ok(())
    }

    fn apply_fault(&mut self, id: HostId, fault: HostFault) -> Result<(), EngineError> {
        let now = self.now;
        let host = self
            .hosts
            .get_mut(id.0)
            .ok_or(EngineError::NoSuchHost(id))?;
        match fault {
            HostFault::Pause if host.state == HostState::Running => {
                host.state = HostState::Paused;
            }
            HostFault::Resume if host.state == HostState::Paused => {
                host.state = HostState::Running;
            }
            HostFault::Suspend if matches!(host.state, HostState::Running | HostState::Paused) => {
                host.clock.suspend(now);
                host.state = HostState::Suspended;
            }
            HostFault::Wake if host.state == HostState::Suspended => {
                host.clock.wake(now);
                host.state = HostState::Running;
            }
            HostFault::Drift(ppm) => host
                .clock
                .set_drift(now, ppm)
                .map_err(|e| EngineError::Drift(id, now, e))?,
            HostFault::WallJump(delta_ns) => host.clock.jump_wall(delta_ns),
            HostFault::WallOffset(offset_ns) => host.clock.set_wall_offset(offset_ns),
            // A fault that does not apply to the host's state (a resume of a running host)
            // changes nothing; it is still traced.
            _ => {}
        }
        let line = format!("fault {fault:?} -> {:?}", host.state);
        self.trace.record(now, host.name(), &line);
        let asleep = matches!(host.state, HostState::Suspended | HostState::Down);
        if let Some(net) = &mut self.net {
            net.set_asleep(id.0, asleep);
        }
        Ok(())
    }
}

/// Host `id` of `hosts`, about to have its process killed or started: with a `net`, `id` is
/// turmoil-net's current host, so the sockets its dropped tasks close are closed as its own.
/// Over the fields rather than the engine, so the caller keeps the engine's other fields.
///
/// # Errors
/// [`EngineError::NoSuchHost`].
fn entered<'a>(
    hosts: &'a mut [Host],
    net: Option<&Network>,
    id: HostId,
) -> Result<&'a mut Host, EngineError> {
    let host = hosts.get_mut(id.0).ok_or(EngineError::NoSuchHost(id))?;
    if let Some(net) = net {
        net.set_current(id.0);
    }
    Ok(host)
}

impl Drop for Engine {
    /// Drops each host's runtime (and so its tasks and sockets) with turmoil-net pointed at
    /// that host, before the network itself goes: a socket's drop is a call into its kernel.
    fn drop(&mut self) {
        let hosts = std::mem::take(&mut self.hosts);
        for (i, host) in hosts.into_iter().enumerate() {
            if let Some(net) = &self.net {
                net.set_current(i);
            }
            drop(host);
        }
    }
}
