//! Per-host freezes (docs/world.md#freezes-and-pause-points), driven by the nemesis.
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
//! stall is always armed, and so is a worker panic ([`FreezeKind::Panic`]: the task that
//! reaches the point panics there). Durations are on true simulated time.
//!
//! **Wake order.** Tasks blocked by a host-wide freeze wait at the host's gate. When the freeze
//! ends, they continue one at a time: the task frozen at the named point first (as a thread
//! resuming from a GC pause does), then the others in the order they reached the gate. The
//! next one's turn comes only once the host has run everything ready after the one before it
//! passed — that task up to its next await, and every task it woke, transitively — so a request
//! the named task hands to a connection task (tonic's buffer, then h2's connection) leaves before
//! any other held wait of the host continues, its own deadline wait included, as from a thread
//! resuming mid-call. (Until 2026-12-07 the next turn came as the task passed: a renewer frozen
//! before its send past its deadline lost the request to its own deadline wait, on both
//! engines, unless another held task happened to stand between them.) A task that reaches the
//! gate while others are still being released queues behind them.

use std::time::Duration;

use async_trait::async_trait;

use super::clock::HostClock;
use super::gate::{ArmedFreeze, FreezeKind, Gate, ObservationSink};
use super::true_time::{true_now, true_sleep};
use leasesim_core::hooks::{Hooks, Observation, PausePoint};

/// The freeze control of one host, and the [`Hooks`] its tasks call. Cloning, or calling
/// [`HostFreeze::new`] again with the same clock, gives another handle to the same control.
///
/// The control methods are called by the nemesis from outside the hosts with the current true
/// time (`sim.elapsed()`); the hooks run inside the host. While nothing is armed or frozen a
/// pause point returns at once without reading time, so the hooks are free (and work) outside
/// a simulation; anything else needs a turmoil host (see [`super::true_time::true_now`]).
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

    /// Forgets every armed freeze and every suspend left to the nemesis, and ends the
    /// host-wide one at `now_true` (for a host that crashes: its freezes die with it).
    pub fn clear(&self, now_true: Duration) {
        let mut state = self.gate().lock();
        state.armed.clear();
        state.deferred.clear();
        drop(state);
        self.resume(now_true);
    }

    /// Leaves every later suspend at a pause point to the nemesis: the task that reaches the
    /// point blocks there at once, and the host's clock stops when the nemesis next acts
    /// ([`HostFreeze::take_deferred_suspends`]). The world on the engine does this: the
    /// engine's clock of a host changes only between slices, and both clocks must agree
    /// (docs/world.md#the-world-on-the-engine).
    pub fn defer_suspends(&self) {
        self.gate().lock().defer_suspends = true;
    }

    /// Whether a suspend at a pause point is armed on a host that defers them: the nemesis
    /// then looks at the host at every millisecond.
    pub fn awaits_deferred_suspend(&self) -> bool {
        let state = self.gate().lock();
        state.defer_suspends
            && state
                .armed
                .iter()
                .any(|armed| armed.kind == FreezeKind::Suspend)
    }

    /// Whether a suspend at a point fired and waits for the nemesis.
    pub fn has_deferred_suspends(&self) -> bool {
        !self.gate().lock().deferred.is_empty()
    }

    /// The durations of the suspends at a point that fired since the last call, in firing
    /// order, for the nemesis to start at `now_true` (always empty unless
    /// [`HostFreeze::defer_suspends`]). Each one's start ([`HostFreeze::fired`], the history's
    /// `nemesis` line) becomes `now_true`, when the host's clock stops; every task the gate
    /// holds is woken to wait again on the stopped clock.
    pub fn take_deferred_suspends(&self, now_true: Duration) -> Vec<Duration> {
        let mut state = self.gate().lock();
        let deferred = std::mem::take(&mut state.deferred);
        for (index, _) in &deferred {
            if let Some((start, _)) = state.fired.get_mut(*index) {
                *start = now_true;
            }
        }
        if !deferred.is_empty() {
            state.wake_held();
        }
        deferred.into_iter().map(|(_, duration)| duration).collect()
    }

    /// A suspend at a point reached at `now_true`: the clock stops now, or, when suspends are
    /// deferred, when the nemesis next acts (the gate already holds the task).
    fn suspend_at_point(&self, now_true: Duration, duration: Duration) {
        let mut state = self.gate().lock();
        if state.defer_suspends {
            let fired = state.fired.len().saturating_sub(1);
            state.deferred.push((fired, duration));
            return;
        }
        drop(state);
        self.clock.suspend_for(now_true, duration);
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

    /// The armed freezes that fired so far, each with the true time it started, in firing
    /// order.
    pub fn fired(&self) -> Vec<(Duration, ArmedFreeze)> {
        self.gate().lock().fired.clone()
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
    /// Starts an armed freeze for `point` if there is one, serves a stall (or panics for an
    /// armed [`FreezeKind::Panic`]), then blocks while the host is frozen.
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
                FreezeKind::Suspend => self.suspend_at_point(now_true, armed.duration),
                FreezeKind::Pause => {}
                // Unwinds as a panic does, without the panic hook's message and backtrace
                // on stderr at every injected panic of a campaign.
                FreezeKind::Panic => std::panic::resume_unwind(Box::new(format!(
                    "worker_panic: injected panic at {}",
                    point.name()
                ))),
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

#[cfg(test)]
mod tests {
    //! Freezes inside turmoil, with the nemesis acting between steps. Times are exact: turmoil
    //! ticks 1 ms and every freeze and timer here ends on a whole millisecond. Tasks that must
    //! reach a pause point while their host is frozen get there on a raw true-time timer
    //! ([`true_sleep`]), which freezes do not hold (a task blocked on I/O does the same).

    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::clock::tests::{EPOCH, Log, entries, log, ms, run_until, sim};
    use leasesim_core::clock::{Clock, Instant};
    use leasesim_core::lease::SessionId;

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

    /// A freeze that no task reached while it lasted (a suspended host's tasks all wait on its
    /// stopped clock) ends when the first task next reaches the gate: that task and the ones
    /// after it pass. They used to queue for a turn nobody held, and the host never ran again.
    #[test]
    fn a_host_suspended_while_every_task_waits_on_its_clock_runs_again_after_the_suspend() {
        let (clock, freeze) = host();
        let log: Log = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, log) = (clock.clone(), log.clone());
            async move {
                let tasks = vec![
                    clock_wait(&clock, &log, secs(2), "first"),
                    clock_wait(&clock, &log, secs(3), "second"),
                ];
                join(tasks).await
            }
        });
        run_until(&mut sim, ms(1_000));
        freeze.suspend(sim.elapsed(), secs(4));
        sim.run().unwrap();
        // Suspended 1–5 s: the clock reads 2 s at 6 s and 3 s at 7 s of true time.
        assert_eq!(entries(&log), [("first", ms(6_000)), ("second", ms(7_000))]);
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

    /// The renewer's shape: a task that waits on its deadline and, in the same `select!`, on
    /// a call that reaches a pause point and then hands its request to a relay (tonic's buffer
    /// worker), which hands it to the connection task (h2's), which sends it only if its
    /// caller still waits. The task is frozen at the point past its deadline.
    #[test]
    fn on_resume_what_the_named_task_set_going_runs_before_the_next_held_task_continues() {
        let (clock, freeze) = host();
        freeze.arm(PausePoint::BeforeRenewSend, FreezeKind::Pause, secs(3));
        let log: Log = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, freeze, log) = (clock.clone(), freeze.clone(), log.clone());
            async move {
                let (to_relay, mut relay_rx) = tokio::sync::mpsc::unbounded_channel();
                let (to_connection, mut connection_rx) = tokio::sync::mpsc::unbounded_channel();
                let relay = tokio::spawn(async move {
                    while let Some(request) = relay_rx.recv().await {
                        let _ = to_connection.send(request);
                    }
                });
                let connection = tokio::spawn({
                    let log = log.clone();
                    async move {
                        while let Some(reply) = connection_rx.recv().await {
                            let reply: tokio::sync::oneshot::Sender<()> = reply;
                            let sent = if reply.is_closed() {
                                "cancelled"
                            } else {
                                "sent"
                            };
                            self::log(&log, sent);
                        }
                    }
                });
                let deadline = clock.now() + ms(2_500);
                tokio::select! {
                    biased;
                    () = clock.sleep_until(deadline) => self::log(&log, "deadline"),
                    () = async {
                        clock.sleep(secs(2)).await;
                        freeze.pause_point(PausePoint::BeforeRenewSend).await;
                        let (reply, _answer) = tokio::sync::oneshot::channel();
                        let _ = to_relay.send(reply);
                        std::future::pending::<()>().await;
                    } => unreachable!("the call never completes"),
                }
                drop(to_relay);
                join(vec![relay, connection]).await
            }
        });
        sim.run().unwrap();

        // The request leaves, as from a thread resuming mid-call; only then does the task's
        // deadline wait, held from 2.5 s, continue.
        assert_eq!(
            entries(&log),
            [("sent", ms(5_000)), ("deadline", ms(5_000))]
        );
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

    /// A task on `sim`'s "host" that sleeps 2 s on `clock`, passes the `AfterGrantReceived`
    /// point and logs the true time and its clock's reading then.
    fn reach_the_point_at_two_seconds(
        sim: &mut turmoil::Sim<'_>,
        clock: &HostClock,
        freeze: &HostFreeze,
    ) -> Arc<Mutex<Vec<(Duration, Instant)>>> {
        let locals: Arc<Mutex<Vec<(Duration, Instant)>>> = Arc::default();
        sim.client("host", {
            let (clock, freeze, locals) = (clock.clone(), freeze.clone(), locals.clone());
            async move {
                clock.sleep(secs(2)).await;
                freeze.pause_point(PausePoint::AfterGrantReceived).await;
                locals.lock().unwrap().push((true_now(), clock.now()));
                Ok(())
            }
        });
        locals
    }

    #[test]
    fn a_suspend_armed_at_a_named_point_stops_the_clock_from_there() {
        let (clock, freeze) = host();
        freeze.arm(PausePoint::AfterGrantReceived, FreezeKind::Suspend, secs(3));
        let mut sim = sim();
        let locals = reach_the_point_at_two_seconds(&mut sim, &clock, &freeze);
        sim.run().unwrap();
        assert_eq!(
            *locals.lock().unwrap(),
            [(ms(5_000), Instant::from_origin(secs(2)))]
        );
    }

    /// The world on the engine: the task blocks at the point at 2 s, but the clock stops
    /// only when the nemesis takes the deferred suspend (at 2.5 s here), for its duration from
    /// there; its recorded start is that time, and the held task continues when it ends.
    #[test]
    fn a_deferred_suspend_at_a_point_stops_the_clock_when_the_nemesis_takes_it() {
        let (clock, freeze) = host();
        freeze.defer_suspends();
        freeze.arm(PausePoint::AfterGrantReceived, FreezeKind::Suspend, secs(3));
        assert!(freeze.awaits_deferred_suspend());
        let mut sim = sim();
        let locals = reach_the_point_at_two_seconds(&mut sim, &clock, &freeze);
        run_until(&mut sim, ms(2_500));
        assert!(!freeze.awaits_deferred_suspend());
        assert_eq!(clock.now_at(ms(2_500)), Instant::from_origin(ms(2_500)));
        assert_eq!(freeze.take_deferred_suspends(ms(2_500)), [secs(3)]);
        assert_eq!(
            freeze.take_deferred_suspends(ms(2_500)),
            Vec::<Duration>::new()
        );
        freeze.suspend(ms(2_500), secs(3));
        sim.run().unwrap();
        assert_eq!(
            *locals.lock().unwrap(),
            [(ms(5_500), Instant::from_origin(ms(2_500)))]
        );
        assert_eq!(freeze.fired()[0].0, ms(2_500));
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
            purpose: leasesim_core::hooks::LeaseUse::Append,
            epoch: 3,
            local: Instant::from_origin(secs(1)),
            valid_until: Instant::from_origin(secs(9)),
        }
    }
}
