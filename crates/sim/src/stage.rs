//! What runs the world's hosts, as the world and the nemesis see it: turmoil 0.7.2
//! ([`TurmoilStage`]) or leasesim's engine ([`super::on_engine::EngineStage`]), chosen per run
//! by [`super::config::WorldEngine`] (docs/world.md#the-world-on-the-engine).
//!
//! The world hands each host's software to the stage ([`Stage::host`]); the nemesis moves time
//! on ([`Stage::advance`]) and applies faults through the other methods, in the same order on
//! both stages. On turmoil every call is the one the nemesis made before the stage existed, in
//! the same order, so its random draws and its histories are unchanged.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use super::backend::HostResult;
use super::gate::FreezeKind;

/// One host's software: started at the host's first boot and again at every restart.
pub(crate) type Software = Rc<dyn Fn() -> Pin<Box<dyn Future<Output = HostResult>>>>;

/// A change to a host's clock that the engine must make too, so that its tokio clock keeps
/// agreeing with the world's [`super::clock::HostClock`] (turmoil has one clock: nothing to do).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClockChange {
    /// The clock runs at this drift from now on, ppm.
    Drift(i64),
    /// The wall clock steps by this many ns.
    WallJump(i64),
    /// The wall clock's step offset becomes this many ns.
    WallOffset(i64),
    /// The monotonic clock stops until the host restarts (a crashed authority).
    Suspend,
}

/// What runs the hosts of one world and its time.
pub(crate) trait Stage {
    /// Adds host `name`, running `software` from its first boot.
    fn host(&mut self, name: &str, software: Software);
    /// True time now.
    fn elapsed(&self) -> Duration;
    /// Moves time on: turmoil one step (1 ms); the engine to `next` (the nemesis's next
    /// action), or 1 ms when `watch` (the nemesis looks at the hosts at every millisecond).
    ///
    /// # Errors
    /// A host failed (an error returned or a panic), or the engine refused a fault.
    fn advance(&mut self, next: Duration, watch: bool) -> Result<(), String>;
    /// Cuts the link between `a` and `b`, both ways.
    fn partition(&mut self, a: &str, b: &str);
    /// Cuts the link from `from` to `to` only.
    fn partition_oneway(&mut self, from: &str, to: &str);
    /// Holds what crosses the link between `a` and `b`, both ways.
    fn hold(&mut self, a: &str, b: &str);
    /// Lets go what was held between `a` and `b` (a cut stays cut).
    fn release(&mut self, a: &str, b: &str);
    /// Sets the latency of the link between `a` and `b`: `least` to `most`.
    fn set_latency(&mut self, a: &str, b: &str, least: Duration, most: Duration);
    /// Sets the fail rate of the link between `a` and `b` (0 to 1).
    fn set_fail_rate(&mut self, a: &str, b: &str, rate: f64);
    /// Repairs, releases and resets the link between `a` and `b` to `latency` (`least`, `most`).
    fn heal_link(&mut self, a: &str, b: &str, latency: (Duration, Duration));
    /// Whether the host's software runs (it has not finished nor been crashed).
    fn is_running(&mut self, host: &str) -> bool;
    /// Kills the host's software.
    fn crash(&mut self, host: &str);
    /// Starts the host's software again (killing it first if it runs), on a new boot.
    fn bounce(&mut self, host: &str);
    /// Freezes every task of the host for `duration` (a pause or a suspend): `false` when the
    /// stage cannot (turmoil), and the freeze gates do it.
    fn freeze_host(&mut self, host: &str, kind: FreezeKind, duration: Duration) -> bool;
    /// Ends every host-wide freeze of the host now.
    fn end_freeze(&mut self, host: &str);
    /// Makes `change` to the host's clock.
    fn clock(&mut self, host: &str, change: ClockChange);
}

/// The world on turmoil 0.7.2, and every host's address (resolved once: turmoil resolves a
/// name by allocating a `String` and hashing it, which the nemesis's look at every replica at
/// every step paid 1.4 % of a 64-replica run for, benches/world.rs).
pub(crate) struct TurmoilStage {
    sim: turmoil::Sim<'static>,
    addrs: BTreeMap<String, IpAddr>,
}

impl TurmoilStage {
    /// A stage over `sim`, whose hosts are added through [`Stage::host`].
    pub(crate) fn new(sim: turmoil::Sim<'static>) -> Self {
        TurmoilStage {
            sim,
            addrs: BTreeMap::new(),
        }
    }
}

impl Stage for TurmoilStage {
    fn host(&mut self, name: &str, software: Software) {
        self.sim.host(name, move || software());
        self.addrs.insert(name.to_owned(), self.sim.lookup(name));
    }

    fn elapsed(&self) -> Duration {
        self.sim.elapsed()
    }

    fn advance(&mut self, _next: Duration, _watch: bool) -> Result<(), String> {
        self.sim.step().map(|_| ()).map_err(|e| e.to_string())
    }

    fn partition(&mut self, a: &str, b: &str) {
        self.sim.partition(a, b);
    }

    fn partition_oneway(&mut self, from: &str, to: &str) {
        self.sim.partition_oneway(from, to);
    }

    fn hold(&mut self, a: &str, b: &str) {
        self.sim.hold(a, b);
    }

    fn release(&mut self, a: &str, b: &str) {
        self.sim.release(a, b);
    }

    fn set_latency(&mut self, a: &str, b: &str, least: Duration, most: Duration) {
        self.sim.set_link_latency(a, b, least);
        self.sim.set_link_max_message_latency(a, b, most);
    }

    fn set_fail_rate(&mut self, a: &str, b: &str, rate: f64) {
        self.sim.set_link_fail_rate(a, b, rate);
    }

    fn heal_link(&mut self, a: &str, b: &str, latency: (Duration, Duration)) {
        let sim = &mut self.sim;
        sim.repair(a, b);
        sim.repair_oneway(a, b);
        sim.repair_oneway(b, a);
        sim.release(a, b);
        sim.set_link_fail_rate(a, b, 0.0);
        sim.set_link_latency(a, b, latency.0);
        sim.set_link_max_message_latency(a, b, latency.1);
    }

    fn is_running(&mut self, host: &str) -> bool {
        match self.addrs.get(host) {
            Some(addr) => self.sim.is_host_running(*addr),
            None => self.sim.is_host_running(host),
        }
    }

    fn crash(&mut self, host: &str) {
        self.sim.crash(host);
    }

    fn bounce(&mut self, host: &str) {
        self.sim.bounce(host);
    }

    fn freeze_host(&mut self, _host: &str, _kind: FreezeKind, _duration: Duration) -> bool {
        false
    }

    fn end_freeze(&mut self, _host: &str) {}

    fn clock(&mut self, _host: &str, _change: ClockChange) {}
}
