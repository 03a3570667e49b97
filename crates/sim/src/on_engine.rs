//! The world on leasesim's engine (`crates/engine`, docs/engine.md): each world host is an
//! engine host on its own paused tokio runtime whose clock is the host's clock, talking TCP
//! over turmoil-net; the nemesis's faults become the engine's link and host faults
//! (docs/world.md#the-world-on-the-engine).
//!
//! The world's [`super::clock::HostClock`] stays the book of every host's clock segments (it
//! writes the history's `clock` lines); every change the nemesis makes to it is made to the
//! engine's clock of that host too ([`Stage::clock`], [`Stage::freeze_host`], a reboot at each
//! restart), so both read the same to the nanosecond and a timer on the world's clock is a
//! tokio timer on the host's.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::thread::ThreadId;
use std::time::Duration;

use futures_util::FutureExt;
use leasesim_engine::{Engine, Event, HostFault, HostId, Latency, NetConfig, NetFault};

use super::config::{WALL_EPOCH, WorldConfig};
use super::gate::FreezeKind;
use super::schedule::FaultSchedule;
use super::seed::{Subsystem, sub_seed};
use super::stage::{ClockChange, Software, Stage};

/// The engine's fabric tick, and so the resolution of every crossing (docs/engine.md#network).
const TICK: Duration = Duration::from_millis(1);

/// TCP's RTO in the world: Linux's minimum (`TCP_RTO_MIN`).
const RTO: Duration = Duration::from_millis(200);

/// Retransmissions before TCP gives up on a connection, so that it gives up when Linux does:
/// `tcp_retries2 = 15` backs off from 200 ms to `TCP_RTO_MAX` (120 s), about 924.6 s without
/// ACK progress (RFC 6298; Linux's `tcp_retransmit_timer`); turmoil-net's RTO is fixed, so
/// the same time is `(RETX_MAX + 1) × RTO`. A partition or hold as long as a run's then leaves
/// its connections alive, to deliver late after the heal, as on a real network; the
/// application's own deadlines and keepalives end them (docs/engine.md#network).
const RETX_MAX: u32 = 4_622;

/// One world host on the engine.
struct EngineHost {
    id: HostId,
    software: Software,
    /// Whether its software runs: set when it starts, cleared when it ends or is crashed.
    running: Rc<Cell<bool>>,
    /// When its latest host-wide freeze (pause or suspend) ends, in true time.
    frozen_until: Rc<Cell<Duration>>,
}

/// The world's hosts on the engine, and the links the nemesis has cut (a release lets held
/// packets go but leaves a cut link cut, as on turmoil).
pub(crate) struct EngineStage {
    engine: Engine,
    hosts: BTreeMap<String, EngineHost>,
    cut: BTreeSet<(String, String)>,
    /// The first failure of a host's software (an error returned, or a panic).
    failure: Rc<RefCell<Option<String>>>,
    /// How many fresh kernels each host gets: one for each new boot the schedule can give it
    /// (docs/world.md#the-world-on-the-engine). Each costs its idle egress at every fabric
    /// tick, so none more: a replica that stops by itself and is started again unscheduled
    /// keeps its kernel, which holds no port it needs (docs/engine.md#fresh-kernels).
    kernels: BTreeMap<String, usize>,
}

impl EngineStage {
    /// An engine for `config`'s world, with no hosts yet: its network's links draw the world's
    /// latency range with turmoil 0.7's odds (`Latency::turmoil`,
    /// docs/world.md#the-world-on-the-engine), its TCP gives up when Linux's does ([`RETX_MAX`]),
    /// its tokio runtimes are seeded from the world's network sub-seed.
    ///
    /// # Errors
    /// The engine's, should it refuse its network.
    pub(crate) fn new(config: &WorldConfig, schedule: &FaultSchedule) -> Result<Self, String> {
        let (least, most) = config.latency_ms;
        let net = NetConfig {
            tick: TICK,
            latency: Latency::turmoil(Duration::from_millis(least), Duration::from_millis(most)),
            rto: RTO,
            retx_max: RETX_MAX,
            ..NetConfig::default()
        };
        let seed = sub_seed(config.seed, Subsystem::Network);
        let engine = Engine::with_network(seed, net).map_err(|e| e.to_string())?;
        let authority = config.backend.view().host;
        let kernels = config
            .hosts()
            .into_iter()
            .map(|host| {
                let boots = schedule.boots_at_most(&host, &authority);
                (host, boots)
            })
            .collect();
        Ok(EngineStage {
            engine,
            hosts: BTreeMap::new(),
            cut: BTreeSet::new(),
            failure: Rc::new(RefCell::new(None)),
            kernels,
        })
    }

    fn id(&self, host: &str) -> HostId {
        self.hosts[host].id
    }

    /// Applies `event` now: queued at the engine's time and applied at once (no slice runs,
    /// and the fabric tick of this time has already run).
    fn now_event(&mut self, event: Event) {
        let now = self.engine.now();
        self.engine.schedule(now, event);
        self.flush();
    }

    fn flush(&mut self) {
        let now = self.engine.now();
        if let Err(e) = self.engine.run_until(now) {
            self.fail(format!("the engine refused a fault: {e}"));
        }
    }

    fn fail(&self, failure: String) {
        self.failure.borrow_mut().get_or_insert(failure);
    }

    fn link(&mut self, from: &str, to: &str, fault: NetFault) {
        let (from, to) = (self.id(from), self.id(to));
        self.now_event(Event::Net { from, to, fault });
    }

    fn host_fault(&mut self, host: &str, fault: HostFault) {
        let id = self.id(host);
        self.now_event(Event::Host(id, fault));
    }

    /// Starts `host`'s software in a task of its engine host.
    fn start(&mut self, host: &str) {
        let entry = &self.hosts[host];
        let (software, running) = (entry.software.clone(), entry.running.clone());
        let (failure, name) = (self.failure.clone(), host.to_owned());
        running.set(true);
        let task = async move {
            let outcome = AssertUnwindSafe(async move { software().await })
                .catch_unwind()
                .await;
            running.set(false);
            let failed = match outcome {
                Ok(Ok(())) => return,
                Ok(Err(e)) => format!("host {name} failed: {e}"),
                Err(panic) => format!("host {name} panicked: {}", panic_message(&*panic)),
            };
            failure.borrow_mut().get_or_insert(failed);
        };
        let id = entry.id;
        if let Err(e) = self.engine.spawn(id, OneThread::new(Box::pin(task))) {
            self.fail(format!("cannot start {host}: {e}"));
        }
    }
}

/// A panic's message, when it carries one.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

impl Stage for EngineStage {
    fn host(&mut self, name: &str, software: Software) {
        let id = match self.engine.add_host(name) {
            Ok(id) => id,
            Err(e) => return self.fail(format!("cannot add host {name}: {e}")),
        };
        if let Err(e) = self.engine.set_wall_epoch(id, WALL_EPOCH.unix_ns) {
            return self.fail(format!("cannot set {name}'s wall clock: {e}"));
        }
        let kernels = self.kernels.get(name).copied().unwrap_or(0);
        if let Err(e) = self.engine.reserve_kernels(id, kernels) {
            return self.fail(format!("cannot reserve {name}'s kernels: {e}"));
        }
        let host = EngineHost {
            id,
            software,
            running: Rc::new(Cell::new(false)),
            frozen_until: Rc::new(Cell::new(Duration::ZERO)),
        };
        self.hosts.insert(name.to_owned(), host);
        self.start(name);
    }

    fn elapsed(&self) -> Duration {
        self.engine.now()
    }

    fn advance(&mut self, next: Duration, watch: bool) -> Result<(), String> {
        let now = self.engine.now();
        let mut target = if watch { next.min(now + TICK) } else { next };
        if target <= now {
            target = now + TICK;
        }
        // The nemesis acts at `next` before any host's work at that instant, as on turmoil
        // (docs/engine.md#one-instant).
        let run = if target == next {
            self.engine.run_to_instant(target)
        } else {
            self.engine.run_until(target)
        };
        run.map_err(|e| e.to_string())?;
        match self.failure.borrow_mut().take() {
            Some(failure) => Err(failure),
            None => Ok(()),
        }
    }

    fn partition(&mut self, a: &str, b: &str) {
        self.partition_oneway(a, b);
        self.partition_oneway(b, a);
    }

    fn partition_oneway(&mut self, from: &str, to: &str) {
        self.cut.insert((from.to_owned(), to.to_owned()));
        self.link(from, to, NetFault::Cut);
    }

    fn hold(&mut self, a: &str, b: &str) {
        self.link(a, b, NetFault::Hold);
        self.link(b, a, NetFault::Hold);
    }

    fn release(&mut self, a: &str, b: &str) {
        for (from, to) in [(a, b), (b, a)] {
            self.link(from, to, NetFault::Release);
            if self.cut.contains(&(from.to_owned(), to.to_owned())) {
                self.link(from, to, NetFault::Cut);
            }
        }
    }

    fn set_latency(&mut self, a: &str, b: &str, least: Duration, most: Duration) {
        let latency = Latency::turmoil(least, most);
        self.link(a, b, NetFault::Latency(latency));
        self.link(b, a, NetFault::Latency(latency));
    }

    /// Each packet is lost with this probability, both ways (`NetFault::Loss`): TCP
    /// retransmits what is lost, where turmoil's fail rate loses a message for good.
    fn set_fail_rate(&mut self, a: &str, b: &str, rate: f64) {
        // A probability of 0..=1 in whole ppm (the schedule's own unit, checked when it loads).
        let ppm = (rate.clamp(0.0, 1.0) * 1_000_000.0).round() as u32;
        self.link(a, b, NetFault::Loss(ppm));
        self.link(b, a, NetFault::Loss(ppm));
    }

    fn heal_link(&mut self, a: &str, b: &str, latency: (Duration, Duration)) {
        for (from, to) in [(a, b), (b, a)] {
            self.cut.remove(&(from.to_owned(), to.to_owned()));
            self.link(from, to, NetFault::Release);
        }
        self.set_fail_rate(a, b, 0.0);
        self.set_latency(a, b, latency.0, latency.1);
    }

    fn is_running(&mut self, host: &str) -> bool {
        self.hosts[host].running.get()
    }

    /// The process dies; the machine's kernel stays (its sockets are closed, as a kernel
    /// closes a killed process's; docs/world.md#the-world-on-the-engine).
    fn crash(&mut self, host: &str) {
        self.hosts[host].running.set(false);
        let id = self.id(host);
        if let Err(e) = self.engine.restart(id) {
            self.fail(format!("cannot crash {host}: {e}"));
        }
    }

    /// A new boot: the engine's clock of the host starts again at zero, as the world's does.
    fn bounce(&mut self, host: &str) {
        self.flush();
        let id = self.id(host);
        self.hosts[host].frozen_until.set(Duration::ZERO);
        match self.engine.reboot(id, Duration::ZERO) {
            Ok(()) => self.start(host),
            Err(e) => self.fail(format!("cannot restart {host}: {e}")),
        }
    }

    fn freeze_host(&mut self, host: &str, kind: FreezeKind, duration: Duration) -> bool {
        let now = self.engine.now();
        let fault = match kind {
            FreezeKind::Suspend => HostFault::Suspend,
            _ => HostFault::Pause,
        };
        self.host_fault(host, fault);
        let until = self.hosts[host].frozen_until.clone();
        until.set(until.get().max(now.saturating_add(duration)));
        let id = self.id(host);
        // Overlapping freezes merge, the later end winning (as the world's gate does).
        let end = move |engine: &mut Engine| {
            if until.get() <= engine.now() {
                let now = engine.now();
                engine.schedule(now, Event::Host(id, HostFault::Resume));
                engine.schedule(now, Event::Host(id, HostFault::Wake));
            }
        };
        let at = now.saturating_add(duration);
        self.engine.schedule(at, Event::Call(Box::new(end)));
        true
    }

    fn end_freeze(&mut self, host: &str) {
        self.hosts[host].frozen_until.set(self.engine.now());
        self.host_fault(host, HostFault::Resume);
        self.host_fault(host, HostFault::Wake);
    }

    fn clock(&mut self, host: &str, change: ClockChange) {
        let fault = match change {
            ClockChange::Drift(ppm) => HostFault::Drift(ppm),
            ClockChange::WallJump(ns) => HostFault::WallJump(ns),
            ClockChange::WallOffset(ns) => HostFault::WallOffset(ns),
            ClockChange::Suspend => HostFault::Suspend,
        };
        self.host_fault(host, fault);
    }
}

/// A host's software as the engine's `Send` task, though it is not `Send` (the backends'
/// futures are not: [`super::backend::WorldBackend::serve`]): the engine runs every host's
/// runtime on the one thread that owns it and never moves a task (docs/engine.md#hosts), and
/// this wrapper checks it: it refuses to be polled on another thread, and leaks rather than
/// drops its future there.
struct OneThread {
    future: Option<Pin<Box<dyn Future<Output = ()>>>>,
    thread: ThreadId,
}

impl OneThread {
    fn new(future: Pin<Box<dyn Future<Output = ()>>>) -> Self {
        OneThread {
            future: Some(future),
            thread: std::thread::current().id(),
        }
    }
}

// SAFETY: the future inside is only ever polled or dropped on the thread that made it: `poll`
// panics on any other thread before touching it, and `drop` leaks it there.
unsafe impl Send for OneThread {}

impl Future for OneThread {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        assert_eq!(
            std::thread::current().id(),
            self.thread,
            "a world host's task was polled off the world's thread: the engine must run on \
             the thread that built the world (docs/world.md#the-world-on-the-engine)"
        );
        match &mut self.future {
            Some(future) => future.as_mut().poll(cx),
            None => Poll::Ready(()),
        }
    }
}

impl Drop for OneThread {
    fn drop(&mut self) {
        if std::thread::current().id() != self.thread {
            std::mem::forget(self.future.take());
        }
    }
}
