//! A host's freeze gate: where its tasks block while the host is frozen (pause points and
//! clock waits), with the freeze state behind it. Shared by [`super::clock::HostClock`] (its
//! timers wait here) and [`super::freeze::HostFreeze`] (which starts and ends freezes), so
//! neither imports the other's internals.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::true_time::{true_now, true_sleep};
use leasesim_core::hooks::{Observation, PausePoint};

/// What a freeze does to its host.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum FreezeKind {
    /// Stop-the-world: every task blocks at its next pause point or clock wait; the monotonic
    /// clock runs on.
    Pause,
    /// A pause whose monotonic clock stops too.
    Suspend,
    /// Only the task that reaches the named point blocks.
    Stall,
    /// Not a freeze: the task that reaches the named point panics there (a worker that
    /// panics, `worker_panic`); the rest of the host runs.
    Panic,
}

/// A freeze waiting for a task of the host to reach `point`; it fires once.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ArmedFreeze {
    /// Where it starts.
    pub point: PausePoint,
    /// What it does.
    pub kind: FreezeKind,
    /// How long it lasts from the moment a task reaches `point`, in true simulated time.
    pub duration: Duration,
}

/// Where [`crate::freeze::HostFreeze`] forwards the system under test's observations (the world installs
/// one that records them).
pub type ObservationSink = Arc<dyn Fn(Observation) + Send + Sync>;

/// A host's freeze gate: where its tasks block while it is frozen (pause points and clock
/// waits), and the freeze state behind it. Shared by [`crate::clock::HostClock`] and [`crate::freeze::HostFreeze`].
#[derive(Clone, Default)]
pub(crate) struct Gate {
    inner: Arc<Mutex<GateState>>,
}

#[derive(Default)]
pub(super) struct GateState {
    pub(super) next_id: u64,
    /// The host-wide freeze in force, if any.
    pub(super) window: Option<Window>,
    /// Tasks blocked at the gate, by arrival (id order), with their latest waker.
    pub(super) held: BTreeMap<u64, Waker>,
    /// After a freeze ends: the blocked tasks in the order they continue; the head goes next.
    pub(super) release: VecDeque<u64>,
    pub(super) armed: Vec<ArmedFreeze>,
    /// The armed freezes that fired, with the true time each started (for the history's
    /// `nemesis` lines: only the host knows when its pause point was reached).
    pub(super) fired: Vec<(Duration, ArmedFreeze)>,
    pub(super) sink: Option<ObservationSink>,
    /// The latest true time seen, so that time passed in never goes back.
    pub(super) last_true: Duration,
    /// Whether a suspend at a pause point is left to the nemesis ([`GateState::deferred`])
    /// instead of stopping the host's clock where the task reached its point: on the engine,
    /// whose clock of a host only changes between slices (docs/world.md#the-world-on-the-engine).
    pub(super) defer_suspends: bool,
    /// The suspends at a point that fired and wait for the nemesis, in firing order: each
    /// one's index in `fired` and its duration.
    pub(super) deferred: Vec<(usize, Duration)>,
    /// Whether the head of `release` waits for the task ahead of it to settle: set when a
    /// task passes with others behind it, cleared once its host has run everything that task
    /// set going (the `hand_on` task).
    pub(super) turn_held: bool,
}

/// A host-wide freeze.
#[derive(Clone, Copy, Debug)]
pub(super) struct Window {
    /// When it ends, in true time.
    until: Duration,
    /// The task frozen at the named point, which continues first.
    leader: Option<u64>,
}

/// What a task at the gate does next.
enum Step {
    Pass,
    /// Passes with others behind it, whose turn comes once the host has run what this one
    /// sets going.
    PassAndHandOn,
    /// Frozen until the true time `until` (it is `now_true`).
    Frozen {
        until: Duration,
        now_true: Duration,
    },
    /// Waiting for its turn after a freeze.
    Queued,
}

impl Gate {
    /// Passes the gate as a new task.
    pub(crate) fn pass(&self) -> GatePass {
        let id = self.next_id();
        self.pass_as(id)
    }

    /// Passes the gate as task `id` (from [`Gate::next_id`]).
    pub(crate) fn pass_as(&self, id: u64) -> GatePass {
        GatePass {
            gate: self.clone(),
            id,
            registered: false,
            timer: None,
        }
    }

    pub(super) fn next_id(&self) -> u64 {
        let mut state = self.lock();
        state.next_id += 1;
        state.next_id
    }

    /// Nothing armed, frozen or being released: pause points may return at once.
    pub(super) fn is_idle(&self) -> bool {
        let state = self.lock();
        state.is_open() && state.armed.is_empty()
    }

    /// Fires the first freeze armed for `point`, if any, with task `id` as the one frozen at
    /// the named point.
    pub(super) fn trigger(
        &self,
        now_true: Duration,
        point: PausePoint,
        id: u64,
    ) -> Option<ArmedFreeze> {
        let mut state = self.lock();
        let t = state.settle(now_true);
        let index = state.armed.iter().position(|armed| armed.point == point)?;
        let armed = state.armed.remove(index);
        state.fired.push((t, armed));
        if matches!(armed.kind, FreezeKind::Pause | FreezeKind::Suspend) {
            state.start(t, armed.duration, Some(id));
        }
        Some(armed)
    }

    pub(super) fn start(&self, now_true: Duration, duration: Duration, leader: Option<u64>) {
        let mut state = self.lock();
        let t = state.settle(now_true);
        state.start(t, duration, leader);
    }

    pub(super) fn end(&self, now_true: Duration) {
        let mut state = self.lock();
        state.settle(now_true);
        state.end();
    }

    /// One poll of task `id` at the gate.
    fn step(&self, id: u64, waker: &Waker) -> Step {
        let mut state = self.lock();
        if state.is_open() {
            state.held.remove(&id);
            return Step::Pass;
        }
        if state.window.is_some() {
            let now_true = state.settle(true_now());
            if let Some(window) = state.window {
                state.held.insert(id, waker.clone());
                return Step::Frozen {
                    until: window.until,
                    now_true,
                };
            }
            // The freeze ended just now, on this task's arrival, with no task held: the gate
            // is open (queueing here would wait for a turn nobody is left to give).
            if state.is_open() {
                state.held.remove(&id);
                return Step::Pass;
            }
        }
        state.take_turn(id, waker)
    }

    /// Task `id` left the gate without passing it (its future was dropped).
    pub(super) fn leave(&self, id: u64) {
        let mut state = self.lock();
        state.held.remove(&id);
        if let Some(window) = &mut state.window {
            window.leader = window.leader.filter(|leader| *leader != id);
        }
        if let Some(position) = state.release.iter().position(|queued| *queued == id) {
            state.release.remove(position);
            if position == 0 {
                state.wake_head();
            }
        }
    }

    /// Gives the next released task its turn once the host has run every task ready now
    /// (the one that just passed, and what it woke: a request it handed to a connection task
    /// leaves first, as from a thread resuming mid-call).
    fn hand_on_when_settled(&self) {
        let gate = self.clone();
        let hand_on = move || {
            let mut state = gate.lock();
            state.turn_held = false;
            state.wake_head();
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    tokio::task::yield_now().await;
                    hand_on();
                });
            }
            Err(_) => hand_on(),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, GateState> {
        // Every critical section leaves the state consistent before anything can panic.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl GateState {
    pub(super) fn is_open(&self) -> bool {
        self.window.is_none() && self.release.is_empty()
    }

    /// Brings the gate up to true time `now_true` (clamped so it never goes back) and returns
    /// it: a freeze whose end has passed ends.
    pub(super) fn settle(&mut self, now_true: Duration) -> Duration {
        let t = now_true.max(self.last_true);
        self.last_true = t;
        if self.window.is_some_and(|window| window.until <= t) {
            self.end();
        }
        t
    }

    pub(super) fn start(&mut self, t: Duration, duration: Duration, leader: Option<u64>) {
        let until = t.saturating_add(duration);
        match &mut self.window {
            Some(window) => {
                window.until = window.until.max(until);
                window.leader = window.leader.or(leader);
            }
            None => {
                // Tasks still queued from an earlier freeze are held again; the new freeze's
                // end orders them afresh.
                self.release.clear();
                self.turn_held = false;
                self.window = Some(Window { until, leader });
            }
        }
        self.settle(t);
    }

    /// Ends the host-wide freeze: the blocked tasks continue one by one, the task frozen at
    /// the named point first, then the others in arrival order.
    pub(super) fn end(&mut self) {
        let Some(window) = self.window.take() else {
            return;
        };
        let leader = window.leader.filter(|id| self.held.contains_key(id));
        let others = self.held.keys().copied().filter(|id| Some(*id) != leader);
        self.release = leader.into_iter().chain(others).collect();
        self.wake_head();
    }

    /// After a freeze: task `id` passes if it is next, otherwise waits for its turn.
    fn take_turn(&mut self, id: u64, waker: &Waker) -> Step {
        if self.release.front() == Some(&id) && !self.turn_held {
            self.release.pop_front();
            self.held.remove(&id);
            if self.release.is_empty() {
                return Step::Pass;
            }
            self.turn_held = true;
            return Step::PassAndHandOn;
        }
        if !self.release.contains(&id) {
            self.release.push_back(id);
        }
        self.held.insert(id, waker.clone());
        Step::Queued
    }

    /// Wakes every task held by the freeze, so that each polls the gate again when its host
    /// next runs and waits on a timer armed then (one armed before its host's clock stopped
    /// would count the stopped time too).
    pub(super) fn wake_held(&self) {
        for waker in self.held.values() {
            waker.wake_by_ref();
        }
    }

    pub(super) fn wake_head(&self) {
        let head = self.release.front().and_then(|id| self.held.get(id));
        if let Some(waker) = head {
            waker.wake_by_ref();
        }
    }
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `try_lock`, so that printing a gate can never deadlock on it.
        let Ok(state) = self.inner.try_lock() else {
            return f.write_str("Gate { <locked> }");
        };
        f.debug_struct("Gate")
            .field("window", &state.window)
            .field("held", &state.held.keys().collect::<Vec<_>>())
            .field("release", &state.release)
            .field("armed", &state.armed)
            .field("sink", &state.sink.is_some())
            .finish()
    }
}

/// A task passing a host's gate: ready at once unless the host is frozen or still releasing
/// the tasks of a freeze that just ended.
pub(crate) struct GatePass {
    gate: Gate,
    id: u64,
    /// Whether the gate knows this task (so dropping it must tell the gate).
    registered: bool,
    /// A true-time timer to the end of the freeze, and that end.
    timer: Option<(Duration, Pin<Box<tokio::time::Sleep>>)>,
}

impl GatePass {
    /// Frozen: sleeps on true time until the freeze ends (re-armed when it is extended).
    fn wait_for_end(&mut self, until: Duration, now_true: Duration, cx: &mut Context<'_>) {
        if self.timer.as_ref().is_none_or(|(end, _)| *end != until) {
            let sleep = Box::pin(true_sleep(until.saturating_sub(now_true)));
            self.timer = Some((until, sleep));
        }
        let fired = match &mut self.timer {
            Some((_, sleep)) => sleep.as_mut().poll(cx).is_ready(),
            None => false,
        };
        if fired {
            // The freeze has ended on true time: poll again so the gate sees it.
            cx.waker().wake_by_ref();
        }
    }
}

impl Future for GatePass {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        match this.gate.step(this.id, cx.waker()) {
            Step::Pass => {
                this.registered = false;
                Poll::Ready(())
            }
            Step::PassAndHandOn => {
                this.registered = false;
                this.gate.hand_on_when_settled();
                Poll::Ready(())
            }
            Step::Frozen { until, now_true } => {
                this.registered = true;
                this.wait_for_end(until, now_true, cx);
                Poll::Pending
            }
            Step::Queued => {
                this.registered = true;
                // Its turn comes from the task ahead, not from a timer.
                this.timer = None;
                Poll::Pending
            }
        }
    }
}

impl Drop for GatePass {
    fn drop(&mut self) {
        if self.registered {
            self.gate.leave(self.id);
        }
    }
}
