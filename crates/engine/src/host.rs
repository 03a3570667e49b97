//! One host: a current-thread tokio runtime with paused time, whose tokio clock is the host's
//! monotonic clock (docs/engine.md#hosts).
//!
//! The engine runs a host in **slices**: "run every task of this host until its monotonic
//! clock reads `target` and nothing more is ready". Inside a slice tokio's own auto-advance
//! (test-util's paused clock) jumps the clock from timer to timer, so a slice costs the work
//! the host does, not the time it spans. The slice's future is
//! `sleep_until(target)` followed, when a task is ready then, by [`Idle`], which the runtime's
//! park hook completes: the hook runs only when the run queue and the deferred queue are both
//! empty (tokio 1.54 `current_thread::Context::park`), that is when every task woken by time
//! up to `target` has run. A slice that provably runs nothing is not run at all
//! (docs/engine.md#skipped-slices).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::runtime::{Builder, Runtime, RuntimeMetrics};

use crate::clock::HostClock;
use crate::context::{self, Current, Trace};

/// A host's index in its engine, in the order hosts were added.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct HostId(pub usize);

/// Whether a host's tasks run (docs/engine.md#pause-and-suspend).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HostState {
    /// Tasks run; the clocks run.
    Running,
    /// SIGSTOP: no task runs; the clocks run on, and the host reads the jump on resume (every
    /// timer that fell due meanwhile fires at once).
    Paused,
    /// The machine sleeps: no task runs and the monotonic clock stands still (boot time runs).
    Suspended,
    /// The machine is down between a crash and the end of its next boot ([`crate::Engine::reboot`]):
    /// no task runs, its network is down, its new boot's clocks run.
    Down,
}

/// Where a slice stops at its end `to` (docs/engine.md#one-instant).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum SliceEnd {
    /// Through `to`: timers due at `to`'s millisecond fire, and what they wake runs.
    Through,
    /// Just before `to`: the tokio clock stops a millisecond short of `to`'s, so the host's
    /// work at that instant (its timers due then) waits for the next slice, after the
    /// caller's faults at `to`.
    Before,
}

/// Whether a host's slice ran or was proven empty and skipped (docs/engine.md#skipped-slices).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Slice {
    /// One `block_on` of the host's runtime.
    Ran,
    /// Nothing could run: the slice was not run.
    Skipped,
}

/// The idle signal between a runtime's park hook and the slice's [`Idle`] future.
#[derive(Debug, Default)]
struct IdleSlot {
    /// The slice's future, waiting for the runtime to run out of work.
    waiter: Option<Waker>,
    /// The hook fired for the waiter.
    fired: bool,
}

/// Completes the first time the runtime is about to park after it is first polled.
struct Idle(Arc<Mutex<IdleSlot>>);

impl Future for Idle {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut slot = lock(&self.0);
        if std::mem::take(&mut slot.fired) {
            return Poll::Ready(());
        }
        slot.waiter = Some(cx.waker().clone());
        Poll::Pending
    }
}

fn lock(slot: &Mutex<IdleSlot>) -> std::sync::MutexGuard<'_, IdleSlot> {
    slot.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One host of an engine: its runtime, its clock and its state.
pub struct Host {
    name: Arc<str>,
    runtime: Runtime,
    /// The runtime's counters, read to prove a slice empty ([`Host::provably_empty`]).
    metrics: RuntimeMetrics,
    idle: Arc<Mutex<IdleSlot>>,
    /// The tokio instant at which the current runtime started, and the host's monotonic
    /// reading then (zero, or where the clock stood at the last restart).
    #[allow(clippy::disallowed_types, reason = "the host's own paused tokio clock")]
    origin: (tokio::time::Instant, Duration),
    seed: u64,
    /// Process restarts so far.
    restarts: u64,
    pub(crate) clock: HostClock,
    pub(crate) state: HostState,
    /// The monotonic reading the last slice ended at.
    local: Duration,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("name", &self.name)
            .field("clock", &self.clock)
            .field("state", &self.state)
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

/// tokio's timer wheel counts whole milliseconds from the runtime's start, so a slice ends on
/// a millisecond: stopping the clock between two ticks would let the next timer fire early
/// or late by the remainder.
fn floor_tick(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Host {
    /// A host named `name` whose tokio RNG (`select!`'s branch order) is seeded from `seed`.
    ///
    /// # Errors
    /// The runtime could not be built (tokio's error).
    pub(crate) fn new(name: &str, seed: u64) -> std::io::Result<Host> {
        let idle = Arc::new(Mutex::new(IdleSlot::default()));
        let (runtime, origin) = build_runtime(&idle, seed)?;
        Ok(Host {
            name: name.into(),
            metrics: runtime.metrics(),
            runtime,
            idle,
            origin: (origin, Duration::ZERO),
            seed,
            restarts: 0,
            clock: HostClock::new(),
            state: HostState::Running,
            local: Duration::ZERO,
        })
    }

    /// The host's process dies and starts again: every task is dropped (its sockets closed by
    /// the kernel, as for a killed process) and a fresh runtime takes its place, whose tokio
    /// clock continues the host's monotonic clock (the machine did not reboot). Spawn the new
    /// process's tasks afterwards.
    ///
    /// # Errors
    /// The new runtime could not be built (tokio's error); the host keeps its old process.
    pub(crate) fn restart(&mut self) -> std::io::Result<()> {
        self.restarts += 1;
        let seed = self.seed ^ self.restarts.wrapping_mul(0xD1B5_4A32_D192_ED03);
        let (runtime, origin) = build_runtime(&self.idle, seed)?;
        self.metrics = runtime.metrics();
        drop(std::mem::replace(&mut self.runtime, runtime));
        *lock(&self.idle) = IdleSlot::default();
        self.origin = (origin, self.local);
        Ok(())
    }

    /// The process incarnation: it moves on at every restart, reboot and crash.
    pub(crate) fn incarnation(&self) -> u64 {
        self.restarts
    }

    /// The machine reboots at true time `t`: the process dies as in [`Host::restart`], the
    /// clock starts a new boot ([`HostClock::reboot`]) and the fresh runtime's tokio clock
    /// starts at the new boot's monotonic zero; a pause or suspension ends.
    ///
    /// # Errors
    /// The new runtime could not be built (tokio's error); the host is unchanged.
    pub(crate) fn reboot(&mut self, t: Duration) -> std::io::Result<()> {
        self.restart()?;
        self.clock.reboot(t);
        self.origin.1 = Duration::ZERO;
        self.local = Duration::ZERO;
        self.state = HostState::Running;
        Ok(())
    }

    /// The wall clock reads `unix_ns` where the monotonic clock of the current boot reads
    /// zero; the drift, offset and segment are kept.
    pub(crate) fn set_wall_epoch(&mut self, unix_ns: i128) {
        self.clock.set_wall_epoch(unix_ns);
    }

    /// The host's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The host's clock segment now.
    pub fn clock(&self) -> HostClock {
        self.clock
    }

    /// Running, paused or suspended.
    pub fn state(&self) -> HostState {
        self.state
    }

    /// The monotonic reading the host's last slice that ran ended at (its tokio clock now). A
    /// slice skipped because no task was alive leaves it behind the host's clock
    /// (docs/engine.md#skipped-slices).
    pub fn local(&self) -> Duration {
        self.local
    }

    /// Spawns `task` on the host; it first runs in the host's next slice.
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        drop(self.runtime.spawn(task));
    }

    /// Runs the host from true time `from` to true time `to`: first, if the host's clock reads
    /// more at `from` than its tokio clock (it was paused meanwhile), the tokio clock jumps
    /// there and every timer the jump passed fires at once; then tasks run, the clock moving
    /// from timer to timer, until it reads `to`'s millisecond and nothing is ready.
    ///
    /// With [`SliceEnd::Before`] the clock stops short of `to`'s millisecond instead.
    ///
    /// A slice that provably runs nothing ([`Host::provably_empty`]) is skipped when `skip`
    /// is set; the return value says whether the slice ran.
    pub(crate) fn run_slice(
        &mut self,
        (from, to, edge): (Duration, Duration, SliceEnd),
        trace: &Trace,
        id: HostId,
        skip: bool,
    ) -> Slice {
        let start = floor_tick(self.clock.local_at(from)).max(self.local);
        let last = match edge {
            SliceEnd::Through => self.clock.local_at(to),
            SliceEnd::Before => self
                .clock
                .local_at(to)
                .saturating_sub(Duration::from_nanos(1)),
        };
        let end = floor_tick(last).max(start);
        if skip && self.provably_empty(start, end) {
            self.skip_slice();
            return Slice::Skipped;
        }
        let _current = context::enter(Current {
            id,
            name: Arc::clone(&self.name),
            clock: self.clock,
            origin: self.origin,
            trace: trace.clone(),
        });
        let ((origin, origin_local), jump) = (self.origin, start - self.local);
        let idle = Idle(Arc::clone(&self.idle));
        let m = &self.metrics;
        #[allow(
            clippy::disallowed_methods,
            reason = "the host's own paused tokio clock"
        )]
        self.runtime.block_on(async {
            let idle = idle;
            if !jump.is_zero() {
                // Every timer the jump passed has expired: the next driver pass fires them
                // all at the new reading, before auto-advance can move the clock again.
                tokio::time::advance(jump).await;
            }
            tokio::time::sleep_until(origin + (end - origin_local)).await;
            // The clock reads `end`. With no task ready the slice is over now: the park that
            // `Idle` waits for would run no task and fire no timer (every timer due by `end`
            // fired in the driver pass that woke this future, and nothing ran since), so
            // skipping it changes nothing but the scheduler's tick (docs/engine.md#hosts).
            if !nothing_ready(m) {
                idle.await;
            }
        });
        self.local = end;
        Slice::Ran
    }

    /// Whether a slice whose tokio clock would run from `start` to `end` (whole milliseconds
    /// of the host's clock) provably runs no task and fires no timer
    /// (docs/engine.md#skipped-slices): no task is ready — none in the runtime's local queue
    /// (tasks woken inside the runtime) nor in its injection queue (tasks woken or spawned
    /// from outside it: deliveries, [`crate::Engine::spawn`]) — and either
    ///
    /// - the clock would not move (`start == end == local`): tokio's timer wheel counts whole
    ///   milliseconds and fires a timer only when a driver pass sees its millisecond, every
    ///   timer due at the current one fired in the last pass (or at its registration, which
    ///   fires a deadline already passed), and no task ran since; or
    /// - no task is alive: every timer belongs to a task's future, so there is none to fire.
    ///   The tokio clock then stays behind the host's clock, and the next slice that runs
    ///   moves it forward in one jump, as after a pause (nothing can observe the jump: no task
    ///   was alive to read the clock in between).
    ///
    /// Without `--cfg tokio_unstable` the local queue's depth cannot be read and no slice is
    /// proven empty.
    fn provably_empty(&self, start: Duration, end: Duration) -> bool {
        #[cfg(tokio_unstable)]
        {
            let still = start == self.local && end == start;
            (still || self.metrics.num_alive_tasks() == 0) && nothing_ready(&self.metrics)
        }
        #[cfg(not(tokio_unstable))]
        {
            let _ = (start, end);
            false
        }
    }

    /// Stands for a slice that provably runs nothing: everything it would have changed is
    /// changed, and nothing else. A slice enters the runtime once, and each entry draws the
    /// next seed of the runtime's seed generator for the thread RNG of that slice (which
    /// `select!` draws its branch order from; tokio 1.54 `context::enter_runtime`); so a
    /// skipped slice enters it once too, through the handle's `block_on` of a ready future,
    /// which draws the seed and neither polls a task nor drives the timer wheel. The only
    /// other state an empty slice moves is the scheduler's tick, which orders nothing here:
    /// every runtime takes the injection queue first at every tick ([`build_runtime`]).
    fn skip_slice(&self) {
        self.runtime.handle().block_on(std::future::ready(()));
    }
}

/// Whether no task of the runtime is ready to run: none in its local queue (tasks woken inside
/// it) nor in its injection queue (tasks woken or spawned from outside it). Exact between
/// slices and right after a driver pass, when tokio has just moved every deferred task
/// (`yield_now`) into the local queue. Without `--cfg tokio_unstable` the local queue's depth
/// cannot be read, and the answer is `false`.
fn nothing_ready(metrics: &RuntimeMetrics) -> bool {
    #[cfg(tokio_unstable)]
    {
        metrics.worker_local_queue_depth(0) == 0 && metrics.global_queue_depth() == 0
    }
    #[cfg(not(tokio_unstable))]
    {
        let _ = metrics;
        false
    }
}

/// A current-thread runtime with paused time whose park hook completes the slice's [`Idle`],
/// its RNG seeded from `seed`; and its tokio clock's reading at the start.
#[allow(clippy::disallowed_types, reason = "the host's own paused tokio clock")]
fn build_runtime(
    idle: &Arc<Mutex<IdleSlot>>,
    seed: u64,
) -> std::io::Result<(Runtime, tokio::time::Instant)> {
    let hook = Arc::clone(idle);
    let mut builder = Builder::new_current_thread();
    builder
        .enable_time()
        .start_paused(true)
        // Tasks woken from outside the runtime (deliveries, spawns: its injection queue) run
        // before tasks woken inside it, at every scheduler tick. tokio's default (the
        // injection queue first at every 31st tick only) would make the order of two ready
        // tasks depend on how many ticks every earlier slice took, so a slice that runs no
        // task could not be skipped without reordering later ones (docs/engine.md#hosts).
        .global_queue_interval(1)
        .on_thread_park(move || {
            let mut slot = lock(&hook);
            if let Some(waiter) = slot.waiter.take() {
                slot.fired = true;
                waiter.wake();
            }
        });
    #[cfg(tokio_unstable)]
    builder
        .rng_seed(tokio::runtime::RngSeed::from_bytes(&seed.to_le_bytes()))
        .unhandled_panic(tokio::runtime::UnhandledPanic::ShutdownRuntime);
    #[cfg(not(tokio_unstable))]
    let _ = seed;
    let runtime = builder.build()?;
    let origin = runtime.block_on(async { tokio::time::Instant::now() });
    Ok((runtime, origin))
}
