//! Per-host freezes (DESIGN.md, "The simulated world": freezes), driven by the nemesis.
//!
//! - A **pause** freezes the whole host (stop-the-world): every task of the host blocks at its
//!   next pause point or clock wait until the pause ends; the monotonic clock runs on.
//! - A **suspend** is a pause whose monotonic clock stops too ([`HostClock::suspend_for`]), so
//!   on resume the host under-counts the time that passed.
//! - A **stall** blocks only the one task that reaches the named point, for a duration, while
//!   the rest of the host runs.
//!
//! A pause or suspend starts when the nemesis calls [`HostFreeze::pause`] /
//! [`HostFreeze::suspend`], or is armed ([`HostFreeze::arm`]) to start when a task of the host
//! first reaches a named [`PausePoint`]; that task is *the task frozen at the named point*. A
//! stall is always armed. Durations are on true simulated time.
//!
//! **Wake order.** Tasks blocked by a host-wide freeze wait at the host's gate. When the freeze
//! ends, they continue one at a time: the task frozen at the named point first (as a thread
//! resuming from a GC pause does), then the others in the order they reached the gate. Each
//! task wakes the next only once it has been polled and returned from the gate, so on turmoil's
//! single-threaded runtimes it runs up to its next await before the next one starts, whatever
//! order tokio's timers fire in. A task that reaches the gate while others are still being
//! released queues behind them.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use async_trait::async_trait;

use super::clock::{HostClock, true_now, true_sleep};
use crate::hooks::{Hooks, Observation, PausePoint};

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

/// Where [`HostFreeze`] forwards the system under test's observations (the world installs
/// one that records them).
pub type ObservationSink = Arc<dyn Fn(Observation) + Send + Sync>;

/// The freeze control of one host, and the [`Hooks`] its tasks call. Cloning, or calling
/// [`HostFreeze::new`] again with the same clock, gives another handle to the same control.
///
/// The control methods are called by the nemesis from outside the hosts with the current true
/// time (`sim.elapsed()`); the hooks run inside the host. While nothing is armed or frozen a
/// pause point returns at once without reading time, so the hooks are free (and work) outside
/// a simulation; anything else needs a turmoil host (see [`super::clock::true_now`]).
#[derive(Clone, Debug)]
pub struct HostFreeze {
    clock: HostClock,
}

impl HostFreeze {
    /// The freeze control of the host whose clock is `clock` (its timers obey the freezes).
    pub fn new(clock: &HostClock) -> Self {
        HostFreeze {
            clock: clock.clone(),
        }
    }

    /// The host's clock.
    pub fn clock(&self) -> &HostClock {
        &self.clock
    }

    /// Pauses the whole host from `now_true` for `duration` of true time. Overlapping
    /// host-wide freezes merge: the later end wins.
    pub fn pause(&self, now_true: Duration, duration: Duration) {
        self.gate().start(now_true, duration, None);
    }

    /// Suspends the whole host from `now_true` for `duration` of true time: a pause whose
    /// monotonic clock stops too.
    pub fn suspend(&self, now_true: Duration, duration: Duration) {
        self.clock.suspend_for(now_true, duration);
        self.gate().start(now_true, duration, None);
    }

    /// Arms a freeze of `kind` for `duration` (true time) that starts when a task of the host
    /// first reaches `point`. Armed freezes fire once each, in the order they were armed.
    pub fn arm(&self, point: PausePoint, kind: FreezeKind, duration: Duration) {
        self.gate().lock().armed.push(ArmedFreeze {
            point,
            kind,
            duration,
        });
    }

    /// Ends the host-wide freeze at `now_true`, before its time, and resumes a suspended
    /// monotonic clock. Stalls run to their end.
    pub fn resume(&self, now_true: Duration) {
        self.gate().end(now_true);
        self.clock.resume(now_true);
    }

    /// Forgets every armed freeze and ends the host-wide one at `now_true` (for a host that
    /// crashes: its freezes die with it).
    pub fn clear(&self, now_true: Duration) {
        self.gate().lock().armed.clear();
        self.resume(now_true);
    }

    /// Whether the host is frozen host-wide (paused or suspended) at `now_true`.
    pub fn is_frozen_at(&self, now_true: Duration) -> bool {
        let mut state = self.gate().lock();
        state.settle(now_true);
        state.window.is_some()
    }

    /// The freezes still waiting for their pause point, in arming order.
    pub fn armed(&self) -> Vec<ArmedFreeze> {
        self.gate().lock().armed.clone()
    }

    /// Forwards every later observation to `sink`.
    pub fn set_sink(&self, sink: ObservationSink) {
        self.gate().lock().sink = Some(sink);
    }

    fn gate(&self) -> &Gate {
        self.clock.gate()
    }
}

#[async_trait]
impl Hooks for HostFreeze {
    /// Starts an armed freeze for `point` if there is one, serves a stall, then blocks while
    /// the host is frozen.
    async fn pause_point(&self, point: PausePoint) {
        let gate = self.gate();
        if gate.is_idle() {
            return;
        }
        let now_true = true_now();
        let id = gate.next_id();
        if let Some(armed) = gate.trigger(now_true, point, id) {
            match armed.kind {
                FreezeKind::Stall => true_sleep(armed.duration).await,
                FreezeKind::Suspend => self.clock.suspend_for(now_true, armed.duration),
                FreezeKind::Pause => {}
            }
        }
        gate.pass_as(id).await
    }

    /// Forwards `observation` to the sink, if one is installed.
    fn observe(&self, observation: Observation) {
        // Called outside the lock, so a sink may use this control.
        let sink = self.gate().lock().sink.clone();
        if let Some(sink) = sink {
            sink(observation);
        }
    }
}

/// A host's freeze gate: where its tasks block while it is frozen (pause points and clock
/// waits), and the freeze state behind it. Shared by [`HostClock`] and [`HostFreeze`].
#[derive(Clone, Default)]
pub(crate) struct Gate {
    inner: Arc<Mutex<GateState>>,
}

#[derive(Default)]
struct GateState {
    next_id: u64,
    /// The host-wide freeze in force, if any.
    window: Option<Window>,
    /// Tasks blocked at the gate, by arrival (id order), with their latest waker.
    held: BTreeMap<u64, Waker>,
    /// After a freeze ends: the blocked tasks in the order they continue; the head goes next.
    release: VecDeque<u64>,
    armed: Vec<ArmedFreeze>,
    sink: Option<ObservationSink>,
    /// The latest true time seen, so that time passed in never goes back.
    last_true: Duration,
}

/// A host-wide freeze.
#[derive(Clone, Copy, Debug)]
struct Window {
    /// When it ends, in true time.
    until: Duration,
    /// The task frozen at the named point, which continues first.
    leader: Option<u64>,
}

/// What a task at the gate does next.
enum Step {
    Pass,
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

    fn next_id(&self) -> u64 {
        let mut state = self.lock();
        state.next_id += 1;
        state.next_id
    }

    /// Nothing armed, frozen or being released: pause points may return at once.
    fn is_idle(&self) -> bool {
        let state = self.lock();
        state.is_open() && state.armed.is_empty()
    }

    /// Fires the first freeze armed for `point`, if any, with task `id` as the one frozen at
    /// the named point.
    fn trigger(&self, now_true: Duration, point: PausePoint, id: u64) -> Option<ArmedFreeze> {
        let mut state = self.lock();
        let t = state.settle(now_true);
        let index = state.armed.iter().position(|armed| armed.point == point)?;
        let armed = state.armed.remove(index);
        if armed.kind != FreezeKind::Stall {
            state.start(t, armed.duration, Some(id));
        }
        Some(armed)
    }

    fn start(&self, now_true: Duration, duration: Duration, leader: Option<u64>) {
        let mut state = self.lock();
        let t = state.settle(now_true);
        state.start(t, duration, leader);
    }

    fn end(&self, now_true: Duration) {
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
        }
        state.take_turn(id, waker)
    }

    /// Task `id` left the gate without passing it (its future was dropped).
    fn leave(&self, id: u64) {
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

    fn lock(&self) -> MutexGuard<'_, GateState> {
        // Every critical section leaves the state consistent before anything can panic.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl GateState {
    fn is_open(&self) -> bool {
        self.window.is_none() && self.release.is_empty()
    }

    /// Brings the gate up to true time `now_true` (clamped so it never goes back) and returns
    /// it: a freeze whose end has passed ends.
    fn settle(&mut self, now_true: Duration) -> Duration {
        let t = now_true.max(self.last_true);
        self.last_true = t;
        if self.window.is_some_and(|window| window.until <= t) {
            self.end();
        }
        t
    }

    fn start(&mut self, t: Duration, duration: Duration, leader: Option<u64>) {
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
                self.window = Some(Window { until, leader });
            }
        }
        self.settle(t);
    }

    /// Ends the host-wide freeze: the blocked tasks continue one by one, the task frozen at
    /// the named point first, then the others in arrival order.
    fn end(&mut self) {
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
        if self.release.front() == Some(&id) {
            self.release.pop_front();
            self.held.remove(&id);
            self.wake_head();
            return Step::Pass;
        }
        if !self.release.contains(&id) {
            self.release.push_back(id);
        }
        self.held.insert(id, waker.clone());
        Step::Queued
    }

    fn wake_head(&self) {
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

#[cfg(test)]
mod tests {
    //! Freezes inside turmoil, with the nemesis acting between steps. Times are exact: turmoil
    //! ticks 1 ms and every freeze and timer here ends on a whole millisecond. Tasks that must
    //! reach a pause point while their host is frozen get there on a raw true-time timer
    //! ([`true_sleep`]), which freezes do not hold (a task blocked on I/O does the same).

    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::clock::{Clock, Instant};
    use crate::lease::SessionId;
    use crate::sim::clock::tests::{EPOCH, Log, entries, log, ms, run_until, sim};

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn host() -> (HostClock, HostFreeze) {
        let clock = HostClock::new(EPOCH);
        let freeze = HostFreeze::new(&clock);
        (clock, freeze)
    }

    /// The true times at which `label` was logged.
    fn times(log: &Log, label: &str) -> Vec<Duration> {
        let entries = entries(log).into_iter();
        entries
            .filter(|(l, _)| *l == label)
            .map(|(_, t)| t)
            .collect()
    }

    /// Spawns `n` clock ticks of 1 s, each logged as `label`.
    fn ticker(clock: &HostClock, log: &Log, label: &'static str, n: usize) -> JoinHandle {
        let (clock, log) = (clock.clone(), log.clone());
        tokio::spawn(async move {
            for _ in 0..n {
                clock.sleep(secs(1)).await;
                self::log(&log, label);
            }
        })
    }

    type JoinHandle = tokio::task::JoinHandle<()>;

    /// Spawns a task that reaches `point` after `after` of true time, then logs `label`.
    fn reach_on_true_time(
        freeze: &HostFreeze,
        log: &Log,
        after: Duration,
        point: PausePoint,
        label: &'static str,
    ) -> JoinHandle {
        let (freeze, log) = (freeze.clone(), log.clone());
        tokio::spawn(async move {
            true_sleep(after).await;
            freeze.pause_point(point).await;
            self::log(&log, label);
        })
    }

    /// Spawns a task that sleeps `local` on the host clock, then logs `label`.
    fn clock_wait(
        clock: &HostClock,
        log: &Log,
        local: Duration,
        label: &'static str,
    ) -> JoinHandle {
        let (clock, log) = (clock.clone(), log.clone());
        tokio::spawn(async move {
            clock.sleep(local).await;
            self::log(&log, label);
        })
    }

    async fn join(tasks: Vec<JoinHandle>) -> turmoil::Result {
        for task in tasks {
            task.await?;
        }
        Ok(())
    }

    #[test]
    fn a_paused_host_blocks_its_clock_waits_and_pause_points_while_another_host_runs_on() {
        let (clock_a, freeze_a) = host();
        let (clock_b, _) = host();
        let log: Log = Arc::default();
        let mut sim = sim();
        sim.client("a", {
            let (clock, freeze, log) = (clock_a.clone(), freeze_a.clone(), log.clone());
            async move {
                let point = PausePoint::BeforeAppendSend;
                let tasks = vec![
                    ticker(&clock, &log, "a-tick", 5),
                    reach_on_true_time(&freeze, &log, ms(3_200), point, "a-point"),
                ];
                join(tasks).await
            }
        });
        sim.client("b", {
            let (clock, log) = (clock_b.clone(), log.clone());
            async move { join(vec![ticker(&clock, &log, "b-tick", 5)]).await }
        });
        run_until(&mut sim, ms(2_500));
        freeze_a.pause(sim.elapsed(), secs(3));
        run_until(&mut sim, ms(5_499));
        assert!(freeze_a.is_frozen_at(sim.elapsed()));
        sim.run().unwrap();
        assert!(!freeze_a.is_frozen_at(sim.elapsed()));

        let on_a: Vec<_> = entries(&log)
            .into_iter()
            .filter(|(label, _)| label.starts_with("a-"))
            .collect();
        assert_eq!(
            on_a,
            [
                ("a-tick", ms(1_000)),
                ("a-tick", ms(2_000)),
                // Due at 3 s and 3.2 s, held until the end, released in arrival order.
                ("a-tick", ms(5_500)),
                ("a-point", ms(5_500)),
                // The monotonic clock ran on through the pause: 5.5 s + 1 s.
                ("a-tick", ms(6_500)),
                ("a-tick", ms(7_500)),
            ]
        );
        let b_ticks: Vec<_> = (1..=5).map(secs).collect();
        assert_eq!(times(&log, "b-tick"), b_ticks);
    }

    #[test]
    fn a_stall_at_a_named_point_blocks_only_the_task_that_reaches_it() {
        let (clock, freeze) = host();
        freeze.arm(PausePoint::BeforeRenewSend, FreezeKind::Stall, secs(4));
        let log: Log = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, freeze, log) = (clock.clone(), freeze.clone(), log.clone());
            async move {
                let renewer = tokio::spawn({
                    let (clock, freeze, log) = (clock.clone(), freeze.clone(), log.clone());
                    async move {
                        clock.sleep(secs(1)).await;
                        freeze.pause_point(PausePoint::BeforeRenewSend).await;
                        self::log(&log, "renewer");
                        freeze.pause_point(PausePoint::BeforeRenewSend).await;
                        self::log(&log, "renewer-again");
                    }
                });
                let other = tokio::spawn({
                    let (clock, freeze, log) = (clock.clone(), freeze.clone(), log.clone());
                    async move {
                        clock.sleep(secs(2)).await;
                        freeze.pause_point(PausePoint::BeforeRenewSend).await;
                        self::log(&log, "other");
                    }
                });
                join(vec![renewer, other, ticker(&clock, &log, "tick", 6)]).await
            }
        });
        run_until(&mut sim, ms(3_000));
        assert!(
            !freeze.is_frozen_at(sim.elapsed()),
            "a stall froze the host"
        );
        assert!(freeze.armed().is_empty());
        sim.run().unwrap();

        assert_eq!(times(&log, "renewer"), [ms(5_000)]);
        assert_eq!(
            times(&log, "renewer-again"),
            [ms(5_000)],
            "a stall fires once"
        );
        assert_eq!(
            times(&log, "other"),
            [ms(2_000)],
            "the stall caught another task"
        );
        let ticks: Vec<_> = (1..=6).map(secs).collect();
        assert_eq!(times(&log, "tick"), ticks, "the stall blocked the host");
    }

    #[test]
    fn a_freeze_armed_at_a_named_point_starts_there_and_that_task_continues_first() {
        let (clock, freeze) = host();
        freeze.arm(PausePoint::BeforeAppendSend, FreezeKind::Pause, secs(3));
        let log: Log = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, freeze, log) = (clock.clone(), freeze.clone(), log.clone());
            async move {
                let named = tokio::spawn({
                    let (clock, freeze, log) = (clock.clone(), freeze.clone(), log.clone());
                    async move {
                        clock.sleep(secs(2)).await;
                        self::log(&log, "named-reaches");
                        freeze.pause_point(PausePoint::BeforeAppendSend).await;
                        self::log(&log, "named");
                        clock.sleep(secs(1)).await;
                        freeze.pause_point(PausePoint::BeforeAppendSend).await;
                        self::log(&log, "named-again");
                    }
                });
                let point = PausePoint::BeforeRenewSend;
                join(vec![
                    named,
                    clock_wait(&clock, &log, secs(1), "early"),
                    clock_wait(&clock, &log, ms(2_500), "o1"),
                    reach_on_true_time(&freeze, &log, secs(3), point, "o2"),
                ])
                .await
            }
        });
        run_until(&mut sim, ms(1_999));
        assert!(
            !freeze.is_frozen_at(sim.elapsed()),
            "an armed freeze started early"
        );
        run_until(&mut sim, ms(2_100));
        assert!(freeze.is_frozen_at(sim.elapsed()) && freeze.armed().is_empty());
        sim.run().unwrap();

        assert_eq!(
            entries(&log),
            [
                ("early", ms(1_000)),
                ("named-reaches", ms(2_000)),
                ("named", ms(5_000)),
                ("o1", ms(5_000)),
                ("o2", ms(5_000)),
                ("named-again", ms(6_000)),
            ]
        );
    }

    #[test]
    fn on_resume_the_named_task_goes_before_tasks_frozen_earlier() {
        let (clock, freeze) = host();
        freeze.arm(PausePoint::BeforeAppendSend, FreezeKind::Pause, secs(3));
        let log: Log = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, freeze, log) = (clock.clone(), freeze.clone(), log.clone());
            async move {
                let point = PausePoint::BeforeAppendSend;
                join(vec![
                    clock_wait(&clock, &log, ms(1_500), "o1"),
                    clock_wait(&clock, &log, ms(1_700), "o2"),
                    reach_on_true_time(&freeze, &log, secs(2), point, "named"),
                ])
                .await
            }
        });
        run_until(&mut sim, ms(1_000));
        // o1 and o2 block at 1.5 s and 1.7 s; the named task arrives at 2 s and starts the
        // armed 3 s pause, which extends this one to 5 s.
        freeze.pause(sim.elapsed(), secs(3));
        sim.run().unwrap();

        let released = [("named", ms(5_000)), ("o1", ms(5_000)), ("o2", ms(5_000))];
        assert_eq!(entries(&log), released);
    }

    #[test]
    fn after_a_freeze_the_held_tasks_continue_in_the_order_they_arrived() {
        let (clock, freeze) = host();
        let log: Log = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, log) = (clock.clone(), log.clone());
            async move {
                join(vec![
                    clock_wait(&clock, &log, ms(1_500), "first"),
                    clock_wait(&clock, &log, ms(2_500), "second"),
                ])
                .await
            }
        });
        run_until(&mut sim, ms(1_000));
        freeze.pause(sim.elapsed(), secs(3));
        run_until(&mut sim, ms(2_000));
        // Extends the pause to 5 s: "first" re-arms its timer at 4 s, after "second" armed
        // its own at 2.5 s, so tokio fires "second" first; the gate still lets "first" go
        // first.
        freeze.pause(sim.elapsed(), secs(3));
        sim.run().unwrap();
        assert_eq!(entries(&log), [("first", ms(5_000)), ("second", ms(5_000))]);
    }

    #[test]
    fn an_early_resume_releases_every_held_task_named_one_first() {
        let (clock, freeze) = host();
        freeze.arm(PausePoint::BeforeRenewSend, FreezeKind::Pause, secs(10));
        let log: Log = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, freeze, log) = (clock.clone(), freeze.clone(), log.clone());
            async move {
                let point = PausePoint::BeforeRenewSend;
                join(vec![
                    clock_wait(&clock, &log, ms(1_500), "o1"),
                    clock_wait(&clock, &log, ms(1_700), "o2"),
                    reach_on_true_time(&freeze, &log, secs(2), point, "named"),
                    clock_wait(&clock, &log, ms(2_500), "o3"),
                ])
                .await
            }
        });
        run_until(&mut sim, ms(1_000));
        freeze.pause(sim.elapsed(), secs(10));
        run_until(&mut sim, ms(3_000));
        freeze.resume(sim.elapsed());
        sim.run().unwrap();
        let released = ["named", "o1", "o2", "o3"].map(|label| (label, ms(3_000)));
        assert_eq!(entries(&log), released);
    }

    #[test]
    fn a_named_task_that_gives_up_does_not_hold_the_others() {
        let (clock, freeze) = host();
        freeze.arm(PausePoint::BeforeAppendSend, FreezeKind::Pause, secs(3));
        let log: Log = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, freeze, log) = (clock.clone(), freeze.clone(), log.clone());
            async move {
                let named = tokio::spawn({
                    let (clock, freeze, log) = (clock.clone(), freeze.clone(), log.clone());
                    async move {
                        clock.sleep(secs(2)).await;
                        tokio::select! {
                            () = freeze.pause_point(PausePoint::BeforeAppendSend) => {
                                self::log(&log, "named");
                            }
                            () = true_sleep(secs(1)) => self::log(&log, "named-gave-up"),
                        }
                    }
                });
                join(vec![named, clock_wait(&clock, &log, ms(2_500), "o1")]).await
            }
        });
        sim.run().unwrap();
        assert_eq!(
            entries(&log),
            [("named-gave-up", ms(3_000)), ("o1", ms(5_000))]
        );
    }

    #[test]
    fn a_host_wide_suspend_stops_the_clock_and_blocks_pause_points() {
        let (clock, freeze) = host();
        let log: Log = Arc::default();
        let locals: Arc<Mutex<Vec<Instant>>> = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, freeze, log) = (clock.clone(), freeze.clone(), log.clone());
            let locals = locals.clone();
            async move {
                let point = PausePoint::ServiceHandlerStart;
                let handler = reach_on_true_time(&freeze, &log, secs(4), point, "handler");
                clock.sleep(secs(10)).await;
                self::log(&log, "sleeper");
                locals.lock().unwrap().push(clock.now());
                handler.await?;
                Ok(())
            }
        });
        run_until(&mut sim, ms(3_000));
        freeze.suspend(sim.elapsed(), secs(5));
        run_until(&mut sim, ms(7_999));
        assert_eq!(clock.now_at(sim.elapsed()), Instant::from_origin(secs(3)));
        sim.run().unwrap();

        assert_eq!(
            entries(&log),
            [("handler", ms(8_000)), ("sleeper", ms(15_000))]
        );
        assert_eq!(*locals.lock().unwrap(), [Instant::from_origin(secs(10))]);
    }

    #[test]
    fn a_suspend_armed_at_a_named_point_stops_the_clock_from_there() {
        let (clock, freeze) = host();
        freeze.arm(PausePoint::AfterGrantReceived, FreezeKind::Suspend, secs(3));
        let locals: Arc<Mutex<Vec<(Duration, Instant)>>> = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, freeze, locals) = (clock.clone(), freeze.clone(), locals.clone());
            async move {
                clock.sleep(secs(2)).await;
                freeze.pause_point(PausePoint::AfterGrantReceived).await;
                locals.lock().unwrap().push((true_now(), clock.now()));
                Ok(())
            }
        });
        sim.run().unwrap();
        assert_eq!(
            *locals.lock().unwrap(),
            [(ms(5_000), Instant::from_origin(secs(2)))]
        );
    }

    #[test]
    fn the_nemesis_can_end_a_pause_early() {
        let (clock, freeze) = host();
        let log: Log = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, log) = (clock.clone(), log.clone());
            async move { join(vec![clock_wait(&clock, &log, secs(2), "waiter")]).await }
        });
        run_until(&mut sim, ms(1_000));
        freeze.pause(sim.elapsed(), secs(10));
        run_until(&mut sim, ms(3_000));
        freeze.resume(sim.elapsed());
        sim.run().unwrap();
        assert_eq!(entries(&log), [("waiter", ms(3_000))]);
    }

    #[test]
    fn the_nemesis_can_end_a_suspend_early() {
        let (clock, freeze) = host();
        let log: Log = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, log) = (clock.clone(), log.clone());
            async move { join(vec![clock_wait(&clock, &log, secs(2), "waiter")]).await }
        });
        run_until(&mut sim, ms(1_000));
        freeze.suspend(sim.elapsed(), secs(10));
        run_until(&mut sim, ms(3_000));
        freeze.resume(sim.elapsed());
        sim.run().unwrap();
        // 1 s before the suspend, 2 s stopped, then the remaining 1 s.
        assert_eq!(entries(&log), [("waiter", ms(4_000))]);
    }

    #[tokio::test]
    async fn idle_hooks_cost_nothing_and_work_outside_a_simulation() {
        let (_, freeze) = host();
        freeze.pause_point(PausePoint::BeforeAppendSend).await;
        freeze.observe(validity_check());
        let seen: Arc<Mutex<Vec<Observation>>> = Arc::default();
        freeze.set_sink(Arc::new({
            let seen = seen.clone();
            move |observation| seen.lock().unwrap().push(observation)
        }));
        freeze.observe(validity_check());
        assert_eq!(*seen.lock().unwrap(), [validity_check()]);
    }

    fn validity_check() -> Observation {
        Observation::ValidityCheck {
            session: SessionId::new("s1").unwrap(),
            epoch: 3,
            local: Instant::from_origin(secs(1)),
            valid_until: Instant::from_origin(secs(9)),
        }
    }
}
