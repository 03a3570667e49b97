//! The time and randomness code the world hosts unmodified reads (docs/targets.md#the-worlds-side).
//!
//! Code nobody here wrote reads the clock and draws entropy through libc (`clock_gettime`,
//! `getrandom`), not through our [`leasesim_core::clock::Clock`]. A targets binary answers those
//! calls from [`clock_now`] and [`fill_random`], which say what the world would:
//!
//! - inside a simulated host (the current tokio runtime is the one the world registered for
//!   the host at its latest boot) — that host's [`HostClock`]: its wall clock with its offset
//!   and steps, its monotonic clock from its latest boot;
//! - on a thread running a world, outside every host — the world's true time on the wall
//!   epoch, and a monotonic clock at zero (see [`clock_now`]);
//! - on any other thread — `None`: the real clock.
//!
//! The registry is per world and per thread: [`WorldThread`] holds it while a world runs on
//! the thread, each host registers its runtime at every boot ([`register_host`]), and it is
//! gone when the world ends. A world that no targets binary reads pays one registration per
//! boot and one store per step.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::time::Duration;

use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;

use super::clock::HostClock;
use super::config::WALL_EPOCH;
use super::seed::{Subsystem, rng};
use leasesim_core::clock::WallTime;

/// Which clock a caller reads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ClockKind {
    /// The wall clock (`CLOCK_REALTIME`, `gettimeofday`): time since the Unix epoch.
    Wall,
    /// The monotonic clock (`CLOCK_MONOTONIC` and its kin): time since the host booted.
    Monotonic,
}

/// One world's registry: its hosts' runtimes, its random stream and its true time.
struct Registry {
    /// `(runtime id, the host's clock)`, one entry per host, replaced at each boot.
    hosts: RefCell<Vec<(tokio::runtime::Id, HostClock)>>,
    /// The bytes hosted code draws, from the run's seed ([`Subsystem::Hosted`]).
    random: RefCell<ChaCha20Rng>,
    /// The world's true time at its latest step (what the world thread reads outside hosts).
    true_now: Cell<Duration>,
    /// The true time of the latest read of a host's clock, and how many reads were made at it
    /// ([`Registry::spin_nudge`]).
    reads_at: Cell<(Duration, u64)>,
}

/// Reads of the hosts' clocks at one true instant after which each further read moves on by a
/// nanosecond more ([`Registry::spin_nudge`]); a step makes a few dozen (tokio's metrics read
/// the monotonic clock at every poll of a runtime).
const STILL_READS: u64 = 10_000;

/// The most [`Registry::spin_nudge`] moves a read on: a microsecond, far under a step (1 ms),
/// so a host's clock never runs back at the next step.
const MAX_SPIN_NUDGE: Duration = Duration::from_micros(1);

impl Registry {
    /// How far a host's clock read at true time `now` moves on past `now`: nothing for the
    /// first [`STILL_READS`] reads at one instant, then a nanosecond more per read, at most
    /// [`MAX_SPIN_NUDGE`]. A real clock never stands still, and code that sleeps until a
    /// wall-clock expiry and then checks `now > expiry` spins on a clock that does: the
    /// sleep of `expiry - now = 0` never lets turmoil's step end (a world that hangs), where
    /// on a real host it lasts a nanosecond (docs/targets.md#a-clock-that-never-stands-still).
    fn spin_nudge(&self, now: Duration) -> Duration {
        let (at, reads) = self.reads_at.get();
        let reads = if at == now { reads + 1 } else { 1 };
        self.reads_at.set((now, reads));
        Duration::from_nanos(reads.saturating_sub(STILL_READS)).min(MAX_SPIN_NUDGE)
    }
}

thread_local! {
    /// The registry of the world this thread runs, if it runs one.
    static WORLD: RefCell<Option<Registry>> = const { RefCell::new(None) };
}

/// While it lives, this thread runs the world of `seed`: [`clock_now`] and [`fill_random`]
/// answer for it. Dropping it ends the world on the thread (the thread's earlier world, if a
/// world ran inside another, is back). Not `Send`: it belongs to the thread that made it.
#[must_use = "the world's registry lives only as long as this guard"]
pub struct WorldThread {
    previous: Option<Registry>,
    _thread_bound: PhantomData<*const ()>,
}

impl WorldThread {
    /// Starts the registry of the world of `seed` on this thread: no hosts yet, true time 0.
    pub fn enter(seed: u64) -> Self {
        let registry = Registry {
            hosts: RefCell::new(Vec::new()),
            random: RefCell::new(rng(seed, Subsystem::Hosted)),
            true_now: Cell::new(Duration::ZERO),
            reads_at: Cell::new((Duration::ZERO, 0)),
        };
        let previous = WORLD.with(|world| world.borrow_mut().replace(registry));
        WorldThread {
            previous,
            _thread_bound: PhantomData,
        }
    }
}

impl Drop for WorldThread {
    fn drop(&mut self) {
        let previous = self.previous.take();
        // During the thread's exit the slot may be gone already: nothing is left to clear.
        let _ = WORLD.try_with(|world| *world.borrow_mut() = previous);
    }
}

/// Registers the current tokio runtime as `clock`'s host: called first thing in a host's
/// software at every boot (a restart builds a new runtime, and runtime ids are reused once
/// a runtime is gone, so an id another host held before is taken from it). Outside a world
/// or a runtime it does nothing.
pub fn register_host(clock: &HostClock) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let id = handle.id();
    with_registry(|registry| {
        let mut hosts = registry.hosts.borrow_mut();
        hosts.retain(|(held, other)| *held != id && !other.same_clock(clock));
        hosts.push((id, clock.clone()));
    });
}

/// The world's true time now (the nemesis calls it before each step): what the world's
/// thread reads outside every host.
pub(crate) fn set_true_now(now: Duration) {
    with_registry(|registry| registry.true_now.set(now));
}

/// What `kind` reads now on this thread, as a time since the clock's origin (the Unix epoch
/// for [`ClockKind::Wall`], the host's boot for [`ClockKind::Monotonic`]):
///
/// - inside a registered host: the host's wall clock ([`HostClock::wall_at`], with its
///   offset and steps) or its monotonic clock ([`HostClock::now_at`], zero at each boot as a
///   real `CLOCK_MONOTONIC` after a reboot), at true time now;
/// - on a world's thread outside every host: the wall epoch plus the world's true time, and a
///   monotonic clock at zero — what a host reads at its boot, since turmoil builds a host's
///   runtime outside every host at the same true time the host's clock restarts: tokio's
///   paused clock takes its base from this read, so a host's `tokio::time::Instant` and its
///   `std::time::Instant` agree (while it neither drifts nor is suspended);
/// - elsewhere `None`: the caller reads the real clock.
pub fn clock_now(kind: ClockKind) -> Option<Duration> {
    let host = tokio::runtime::Handle::try_current().ok().map(|h| h.id());
    with_registry(|registry| {
        let clock = host.and_then(|id| {
            let hosts = registry.hosts.borrow();
            hosts
                .iter()
                .find(|(held, _)| *held == id)
                .map(|(_, clock)| clock.clone())
        });
        let Some(clock) = clock else {
            return match kind {
                ClockKind::Wall => since_epoch(WallTime {
                    unix_ns: WALL_EPOCH.unix_ns + registry.true_now.get().as_nanos() as i128,
                }),
                ClockKind::Monotonic => Duration::ZERO,
            };
        };
        // Inside a host turmoil (or the engine) knows true time; `true_now` is the fallback
        // should turmoil's world be busy (it answers `None` then rather than panic).
        let now = super::true_time::try_true_now().unwrap_or_else(|| registry.true_now.get());
        let nudge = registry.spin_nudge(now);
        match kind {
            ClockKind::Wall => since_epoch(clock.wall_at(now)) + nudge,
            ClockKind::Monotonic => clock.now_at(now).since_origin() + nudge,
        }
    })
}

/// Fills `buf` from the world's random stream (drawn from the run's seed on a stream of its
/// own, so no other draw of the run moves) and returns true; on a thread that runs no world,
/// leaves it and returns false (the caller draws real entropy).
pub fn fill_random(buf: &mut [u8]) -> bool {
    with_registry(|registry| registry.random.borrow_mut().fill_bytes(buf)).is_some()
}

/// Runs `f` inside a simulated host of a one-host world of its own (seed 0), on this thread,
/// and returns what it returned: what the targets binary's self-test needs, to prove that
/// this build's reads of time and entropy reach the world (docs/targets.md#the-targets-binary).
///
/// # Errors
/// turmoil's, should the host fail (a panic in `f`).
pub fn in_a_host<R: 'static>(f: impl FnOnce() -> R + 'static) -> Result<R, String> {
    let _world = WorldThread::enter(0);
    let clock = HostClock::new(WALL_EPOCH);
    let out = std::rc::Rc::new(RefCell::new(None));
    let mut sim = turmoil::Builder::new().build();
    let slot = out.clone();
    sim.client("self-test", async move {
        register_host(&clock);
        *slot.borrow_mut() = Some(f());
        Ok(())
    });
    sim.run().map_err(|e| e.to_string())?;
    out.take().ok_or_else(|| "the host never ran".to_owned())
}

/// `f` of this thread's world registry, or `None` when it runs no world.
fn with_registry<R>(f: impl FnOnce(&Registry) -> R) -> Option<R> {
    WORLD
        .try_with(|world| world.try_borrow().ok()?.as_ref().map(f))
        .ok()
        .flatten()
}

/// A wall reading as a time since the Unix epoch (zero before it).
fn since_epoch(wall: WallTime) -> Duration {
    let ns = wall.unix_ns.max(0);
    let ns_per_s = 1_000_000_000;
    Duration::new(
        u64::try_from(ns / ns_per_s).unwrap_or(u64::MAX),
        (ns % ns_per_s) as u32,
    )
}
