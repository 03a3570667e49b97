//! Per-host simulated clocks (docs/world.md#clocks).
//!
//! turmoil has one clock for the whole simulation (the *true* simulated time); real hosts do
//! not. A [`HostClock`] gives one host its own monotonic clock — true time scaled by a drift in
//! ppm, stopped while the host is suspended, reset by a restart — and a wall clock that can be
//! stepped forward and back. It implements [`Clock`], timers included, so drift and suspend
//! change when the host's renewals and deadlines fire, exactly as they would on a real host.
//!
//! The mapping from true time to local time is a list of [`Segment`]s: each starts at a true
//! time and a local reading and runs at one drift (or not at all, while suspended). All
//! arithmetic is on integer nanoseconds with `i128` intermediates, so a run replays to the
//! nanosecond.
//!
//! True time is read with [`super::true_time::true_now`], which only works inside a turmoil host or client.
//! The nemesis runs outside the hosts, so every control method takes the current true time
//! explicitly (`sim.elapsed()`), and the `*_at` readers let it read a clock from outside.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Notify;

use super::gate::Gate;
use super::true_time::{true_now, true_sleep};
use leasesim_core::clock::{Clock, Instant, WallTime};

/// The slowest drift a clock can run at, in ppm: −1_000_000 ppm would stop it (use
/// [`HostClock::suspend`] for that) and anything below would run it backwards.
pub const MIN_DRIFT_PPM: i64 = -999_999;

/// The fastest drift a clock can run at, in ppm: +1_000_000 ppm runs it twice as fast as true
/// time, far beyond any real oscillator, and keeps every product well inside `i128`.
pub const MAX_DRIFT_PPM: i64 = 1_000_000;

/// One million: parts per million.
const PPM: i128 = 1_000_000;

const NS_PER_S: i128 = 1_000_000_000;

/// One piece of a host clock's history: from true time `from_true` on (until the next
/// segment), the clock reads `local_from` plus the true time elapsed since, scaled by
/// `drift_ppm` — or stays at `local_from` while `suspended`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Segment {
    /// True simulated time at which the segment starts (ns resolution).
    pub from_true: Duration,
    /// The host's monotonic reading at `from_true`.
    pub local_from: Instant,
    /// Drift in ppm: the local clock advances `(1_000_000 + drift_ppm) / 1_000_000` ns per
    /// true ns.
    pub drift_ppm: i64,
    /// Whether the host is suspended: the monotonic clock stands still.
    pub suspended: bool,
    /// Which boot of the host this is: 0 at the start, bumped by each [`HostClock::restart`],
    /// whose monotonic clock starts again from zero.
    pub boot: u64,
}

impl Segment {
    /// The local reading at `now_true` (`>= from_true`): `local_from + floor(elapsed × rate)`.
    pub fn local_at(&self, now_true: Duration) -> Instant {
        if self.suspended {
            return self.local_from;
        }
        let elapsed_ns = ns(now_true.saturating_sub(self.from_true));
        let local_ns = elapsed_ns * (PPM + i128::from(self.drift_ppm)) / PPM;
        self.local_from + from_ns(local_ns)
    }

    /// The earliest true time at which this segment's clock reads at least `local`, or `None`
    /// while suspended (the clock never gets there without a change).
    ///
    /// Exact: `floor(x × rate) >= d` holds exactly when `x >= ceil(d / rate)`.
    pub fn true_at(&self, local: Instant) -> Option<Duration> {
        if self.suspended {
            return None;
        }
        let ahead_ns = ns(local.saturating_duration_since(self.local_from));
        let rate = PPM + i128::from(self.drift_ppm);
        let elapsed_ns = (ahead_ns * PPM + rate - 1) / rate;
        Some(self.from_true + from_ns(elapsed_ns))
    }
}

/// One simulated host's clocks. Cloning gives another handle to the same clock.
///
/// - **Monotonic** ([`Clock::now`]): true time scaled by the drift, stopped while suspended;
///   it starts at zero at true time zero and again at each [`HostClock::restart`].
/// - **Wall** ([`Clock::wall`]): the wall epoch + the monotonic reading + an offset that
///   [`HostClock::jump_wall`] and [`HostClock::set_wall_offset`] step forward and back.
///   Steps never move `now()` nor any timer.
/// - **Timers** ([`Clock::sleep_until`]): wait on true time until the monotonic clock reaches
///   the deadline, re-planned whenever drift, suspension or boot changes; while the host is
///   frozen (see [`super::freeze`]) a timer that falls due waits until the freeze ends.
///
/// The readers `now()`/`wall()` and the timers must run inside the host (they read true time
/// with [`true_now`]); the nemesis uses the `*_at` readers and the control methods, passing
/// the current true time. True time passed in never goes back: an earlier value is treated as
/// the latest one seen.
#[derive(Clone, Debug)]
pub struct HostClock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<ClockState>,
    /// Woken on every change that can move a timer (drift, suspend, resume, restart).
    changed: Notify,
    /// The host's freeze gate: a timer that falls due while the host is frozen waits here.
    gate: Gate,
}

#[derive(Debug)]
struct ClockState {
    /// The wall reading at the current boot's monotonic origin.
    wall_epoch: WallTime,
    /// The wall clock's step offset, in ns.
    wall_offset_ns: i128,
    /// The drift the clock runs at when not suspended, in ppm.
    drift_ppm: i64,
    /// When a suspension ends on its own, in true time; `Duration::MAX` = until `resume`.
    suspended_until: Option<Duration>,
    boot: u64,
    /// The latest true time seen, so that time passed in never goes back.
    last_true: Duration,
    /// Never empty; the last one is current.
    segments: Vec<Segment>,
}

/// What a timer does next.
enum Wake {
    /// The deadline has been reached.
    Now,
    /// Nothing can change before this true time (unless a control call notifies).
    At(Duration),
    /// Only a control call can move the clock (suspended until resumed).
    OnChange,
}

impl HostClock {
    /// A clock with no drift whose monotonic reading is zero at true time zero and whose wall
    /// clock reads `wall_epoch` there.
    pub fn new(wall_epoch: WallTime) -> Self {
        let state = ClockState {
            wall_epoch,
            wall_offset_ns: 0,
            drift_ppm: 0,
            suspended_until: None,
            boot: 0,
            last_true: Duration::ZERO,
            segments: vec![Segment {
                from_true: Duration::ZERO,
                local_from: Instant::ZERO,
                drift_ppm: 0,
                suspended: false,
                boot: 0,
            }],
        };
        let inner = Inner {
            state: Mutex::new(state),
            changed: Notify::new(),
            gate: Gate::default(),
        };
        HostClock {
            inner: Arc::new(inner),
        }
    }

    /// From `now_true` on, the clock runs at `drift_ppm` (while suspended, once resumed).
    ///
    /// # Panics
    /// When `drift_ppm` is outside [`MIN_DRIFT_PPM`]`..=`[`MAX_DRIFT_PPM`]: validate fault
    /// schedules against those bounds before running them.
    pub fn set_drift_ppm(&self, now_true: Duration, drift_ppm: i64) {
        assert!(
            (MIN_DRIFT_PPM..=MAX_DRIFT_PPM).contains(&drift_ppm),
            "clock drift {drift_ppm} ppm is outside {MIN_DRIFT_PPM}..={MAX_DRIFT_PPM}: a drift \
             of -1_000_000 ppm or less would stop or reverse a monotonic clock (use suspend to \
             stop one); fix the fault schedule"
        );
        self.change(now_true, |state, t| {
            state.drift_ppm = drift_ppm;
            state.continue_at(t);
        });
    }

    /// Suspends the host at `now_true` until [`HostClock::resume`]: its monotonic clock stops.
    pub fn suspend(&self, now_true: Duration) {
        self.change(now_true, |state, t| state.suspend_until(t, Duration::MAX));
    }

    /// Suspends the host from `now_true` for `duration` of true time. Overlapping suspensions
    /// merge: the later end wins.
    pub fn suspend_for(&self, now_true: Duration, duration: Duration) {
        self.change(now_true, |state, t| {
            state.suspend_until(t, t.saturating_add(duration))
        });
    }

    /// Ends a suspension at `now_true` (no-op when the host is not suspended).
    pub fn resume(&self, now_true: Duration) {
        self.change(now_true, |state, t| {
            if state.suspended_until.take().is_some() {
                state.continue_at(t);
            }
        });
    }

    /// The host restarts at `now_true` (its software starts again after a crash): like
    /// CLOCK_MONOTONIC after a reboot, the monotonic clock starts again from zero, in a new
    /// [`Segment::boot`]. The drift is the oscillator's and stays; a suspension ends. The wall
    /// clock does not jump: like a battery-backed clock it kept counting through the downtime,
    /// so its epoch moves forward by the reading the monotonic clock loses.
    pub fn restart(&self, now_true: Duration) {
        self.change(now_true, |state, t| state.restart_at(t));
    }

    /// Steps the wall clock by `delta_ns` (forward when positive, back when negative).
    pub fn jump_wall(&self, delta_ns: i64) {
        self.lock().wall_offset_ns += i128::from(delta_ns);
    }

    /// Sets the wall clock's step offset to `offset_ns`, replacing all earlier jumps.
    pub fn set_wall_offset(&self, offset_ns: i64) {
        self.lock().wall_offset_ns = i128::from(offset_ns);
    }

    /// The wall clock's current step offset, in ns.
    pub fn wall_offset_ns(&self) -> i128 {
        self.lock().wall_offset_ns
    }

    /// The drift the clock runs at when not suspended, in ppm.
    pub fn drift_ppm(&self) -> i64 {
        self.lock().drift_ppm
    }

    /// Whether the host's monotonic clock is stopped at `now_true`.
    pub fn is_suspended_at(&self, now_true: Duration) -> bool {
        let mut state = self.lock();
        state.settle(now_true);
        state.current().suspended
    }

    /// The monotonic reading at true time `now_true`.
    pub fn now_at(&self, now_true: Duration) -> Instant {
        let mut state = self.lock();
        let t = state.settle(now_true);
        state.current().local_at(t)
    }

    /// The wall reading at true time `now_true`.
    pub fn wall_at(&self, now_true: Duration) -> WallTime {
        let mut state = self.lock();
        let t = state.settle(now_true);
        state.wall_at(t)
    }

    /// Every segment so far, oldest first, as of true time `now_true` (a suspension that has
    /// ended on its own by then is closed). Consecutive segments always differ.
    pub fn segments(&self, now_true: Duration) -> Vec<Segment> {
        let mut state = self.lock();
        state.settle(now_true);
        state.segments.clone()
    }

    /// Whether `other` is a handle to this same clock.
    pub fn same_clock(&self, other: &HostClock) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The host's freeze gate, shared with [`super::freeze::HostFreeze`].
    pub(crate) fn gate(&self) -> &Gate {
        &self.inner.gate
    }

    /// Applies a control change at `now_true` and wakes the timers so they re-plan.
    fn change(&self, now_true: Duration, apply: impl FnOnce(&mut ClockState, Duration)) {
        {
            let mut state = self.lock();
            let t = state.settle(now_true);
            apply(&mut state, t);
        }
        self.inner.changed.notify_waiters();
    }

    /// Waits on true time until the monotonic clock reads at least `deadline`.
    async fn reach(&self, deadline: Instant) {
        loop {
            // Registered before the state is read, so a change in between is not missed.
            let changed = self.inner.changed.notified();
            let now_true = true_now();
            let wake = self.lock().plan(now_true, deadline);
            match wake {
                Wake::Now => return,
                Wake::At(at_true) => {
                    tokio::select! {
                        biased;
                        () = changed => {}
                        () = true_sleep(at_true.saturating_sub(now_true)) => {}
                    }
                }
                Wake::OnChange => changed.await,
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, ClockState> {
        // Every critical section leaves the state consistent before anything can panic.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl ClockState {
    fn current(&self) -> &Segment {
        self.segments
            .last()
            .expect("a host clock always has a segment")
    }

    /// Brings the state up to true time `now_true` (clamped so it never goes back) and
    /// returns it: a suspension whose end has passed is closed at its end.
    fn settle(&mut self, now_true: Duration) -> Duration {
        let t = now_true.max(self.last_true);
        self.last_true = t;
        if let Some(until) = self.suspended_until.filter(|until| *until <= t) {
            self.suspended_until = None;
            self.continue_at(until);
        }
        t
    }

    /// Starts a segment at `t` with the current parameters, from the current reading.
    fn continue_at(&mut self, t: Duration) {
        let next = Segment {
            from_true: t,
            local_from: self.current().local_at(t),
            drift_ppm: self.drift_ppm,
            suspended: self.suspended_until.is_some(),
            boot: self.boot,
        };
        self.push(next);
    }

    fn suspend_until(&mut self, t: Duration, until: Duration) {
        let until = self
            .suspended_until
            .map_or(until, |earlier| earlier.max(until));
        self.suspended_until = Some(until);
        self.continue_at(t);
    }

    fn restart_at(&mut self, t: Duration) {
        let lost = self.current().local_at(t).since_origin();
        self.wall_epoch.unix_ns += ns(lost);
        self.boot += 1;
        self.suspended_until = None;
        self.push(Segment {
            from_true: t,
            local_from: Instant::ZERO,
            drift_ppm: self.drift_ppm,
            suspended: false,
            boot: self.boot,
        });
    }

    /// Appends `next`, keeping the list minimal: a segment that lasted no true time is
    /// replaced, and one that changes nothing is not recorded.
    fn push(&mut self, next: Segment) {
        if self.current().from_true == next.from_true {
            if self.segments.len() == 1 {
                self.segments[0] = next;
                return;
            }
            self.segments.pop();
        }
        let prev = *self.current();
        let same = prev.drift_ppm == next.drift_ppm
            && prev.suspended == next.suspended
            && prev.boot == next.boot
            && prev.local_at(next.from_true) == next.local_from;
        if !same {
            self.segments.push(next);
        }
    }

    fn wall_at(&self, t: Duration) -> WallTime {
        let mono_ns = ns(self.current().local_at(t).since_origin());
        WallTime {
            unix_ns: self.wall_epoch.unix_ns + mono_ns + self.wall_offset_ns,
        }
    }

    /// What a timer for `deadline` does next, at true time `now_true`.
    fn plan(&mut self, now_true: Duration, deadline: Instant) -> Wake {
        let t = self.settle(now_true);
        let current = *self.current();
        if current.local_at(t) >= deadline {
            return Wake::Now;
        }
        match (current.true_at(deadline), self.suspended_until) {
            (Some(at_true), _) => Wake::At(at_true),
            (None, Some(until)) if until != Duration::MAX => Wake::At(until),
            (None, _) => Wake::OnChange,
        }
    }
}

#[async_trait]
impl Clock for HostClock {
    /// The host's monotonic reading now. Panics outside a turmoil host (see [`true_now`]).
    fn now(&self) -> Instant {
        self.now_at(true_now())
    }

    /// The host's wall reading now. Panics outside a turmoil host (see [`true_now`]).
    fn wall(&self) -> WallTime {
        self.wall_at(true_now())
    }

    /// Waits until the monotonic clock reads `deadline`, then, if the host is frozen, until
    /// the freeze ends: a timer does not fire in a frozen host. A deadline from an earlier
    /// boot is judged on the current boot's clock (a crash kills the tasks holding those).
    async fn sleep_until(&self, deadline: Instant) {
        self.reach(deadline).await;
        self.inner.gate.pass().await;
    }
}

fn ns(d: Duration) -> i128 {
    d.as_nanos() as i128
}

/// Nanoseconds to a `Duration`, clamped to `0..=Duration::MAX`.
fn from_ns(ns: i128) -> Duration {
    let max_ns = i128::from(u64::MAX) * NS_PER_S + (NS_PER_S - 1);
    let ns = ns.clamp(0, max_ns);
    Duration::new((ns / NS_PER_S) as u64, (ns % NS_PER_S) as u32)
}

#[cfg(test)]
pub(crate) mod tests {
    //! Per-host clocks inside turmoil. turmoil's tick is 1 ms and tokio rounds a timer's
    //! deadline up to the next whole millisecond, so a timer whose exact true end is `x` ns
    //! fires at `x` rounded up to the millisecond: the expected values below are exact.

    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;

    /// The wall clock's reading at true time zero in these tests: 2023-11-14T22:13:20Z.
    pub(crate) const EPOCH: WallTime = WallTime {
        unix_ns: 1_700_000_000 * NS_PER_S,
    };

    /// A log shared between the test and its simulated tasks: (label, true time).
    pub(crate) type Log = Arc<Mutex<Vec<(&'static str, Duration)>>>;

    pub(crate) fn sim() -> turmoil::Sim<'static> {
        turmoil::Builder::new()
            .rng_seed(7)
            .tick_duration(Duration::from_millis(1))
            .simulation_duration(Duration::from_secs(120))
            .build()
    }

    /// Steps the simulation until its elapsed (true) time is `t` (a whole tick).
    pub(crate) fn run_until(sim: &mut turmoil::Sim<'static>, t: Duration) {
        while sim.elapsed() < t {
            sim.step().expect("the simulation failed");
        }
        assert_eq!(sim.elapsed(), t, "run_until takes whole ticks");
    }

    pub(crate) fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    pub(crate) fn nanos(ns: u64) -> Duration {
        Duration::from_nanos(ns)
    }

    pub(crate) fn log(log: &Log, label: &'static str) {
        log.lock().unwrap().push((label, true_now()));
    }

    pub(crate) fn entries(log: &Log) -> Vec<(&'static str, Duration)> {
        log.lock().unwrap().clone()
    }

    /// Runs one `clock.sleep(local)` in a client from true time zero, with `nemesis` called
    /// between steps at each whole millisecond; returns (true end, `now()` at the end).
    fn sleep_once(
        clock: &HostClock,
        local: Duration,
        mut nemesis: impl FnMut(Duration, &HostClock),
    ) -> (Duration, Instant) {
        let end: Arc<Mutex<Option<(Duration, Instant)>>> = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, end) = (clock.clone(), end.clone());
            async move {
                clock.sleep(local).await;
                *end.lock().unwrap() = Some((true_now(), clock.now()));
                Ok(())
            }
        });
        while !sim.step().unwrap() {
            nemesis(sim.elapsed(), clock);
        }
        let end = *end.lock().unwrap();
        end.expect("the sleeper finished")
    }

    /// [`sleep_once`] of 10 s on a clock drifting `ppm` from the start.
    fn sleep_10_s_drifting(ppm: i64) -> (Duration, Instant) {
        let clock = HostClock::new(EPOCH);
        clock.set_drift_ppm(Duration::ZERO, ppm);
        sleep_once(&clock, Duration::from_secs(10), |_, _| {})
    }

    #[test]
    fn a_fast_clock_ends_a_10_s_sleep_at_9_091_s_true_time() {
        // 10 s / 1.1 = 9_090_909_090.9 ns → 9_090_909_091 ns → the 9_091st tick; the clock
        // then reads floor(9.091 s × 1.1).
        let end_local = Instant::from_origin(nanos(10_000_100_000));
        assert_eq!(sleep_10_s_drifting(100_000), (ms(9_091), end_local));
    }

    #[test]
    fn a_slow_clock_ends_a_10_s_sleep_at_16_667_s_true_time() {
        // 10 s / 0.6 = 16_666_666_666.7 ns → 16_666_666_667 ns → the 16_667th tick; the clock
        // then reads floor(16.667 s × 0.6).
        let end_local = Instant::from_origin(nanos(10_000_200_000));
        assert_eq!(sleep_10_s_drifting(-400_000), (ms(16_667), end_local));
    }

    #[test]
    fn a_drift_change_in_the_middle_of_a_sleep_moves_its_end() {
        let clock = HostClock::new(EPOCH);
        let (end_true, end_local) = sleep_once(&clock, Duration::from_secs(10), |t, clock| {
            if t == ms(4_000) {
                clock.set_drift_ppm(t, 100_000);
            }
        });
        // 4 s at rate 1, then the remaining 6 s local at 1.1: 5_454_545_454.5 → …455 ns.
        assert_eq!(end_true, ms(9_455));
        // 4 s + floor(5.455 s × 1.1)
        assert_eq!(end_local, Instant::from_origin(nanos(10_000_500_000)));
    }

    #[test]
    fn a_5_s_suspend_during_a_10_s_sleep_ends_it_at_15_s_and_now_under_counts_by_5_s() {
        let clock = HostClock::new(EPOCH);
        let (end_true, end_local) = sleep_once(&clock, Duration::from_secs(10), |t, clock| {
            if t == ms(3_000) {
                clock.suspend(t);
            }
            if t == ms(8_000) {
                clock.resume(t);
            }
        });
        assert_eq!(end_true, ms(15_000));
        assert_eq!(end_local, Instant::from_origin(ms(10_000)));
        assert_eq!(end_true - end_local.since_origin(), ms(5_000));
        assert_eq!(clock.segments(end_true)[1..], suspended_from_3_s_to_8_s());
    }

    /// The segments of a clock suspended from 3 s to 8 s of true time (its local 3 s), at
    /// rate 1 in its first boot.
    fn suspended_from_3_s_to_8_s() -> [Segment; 2] {
        let from_3_s = |from_true, suspended| Segment {
            from_true,
            local_from: Instant::from_origin(ms(3_000)),
            drift_ppm: 0,
            suspended,
            boot: 0,
        };
        [from_3_s(ms(3_000), true), from_3_s(ms(8_000), false)]
    }

    #[test]
    fn a_timed_suspend_ends_on_its_own_and_moves_the_timer() {
        let clock = HostClock::new(EPOCH);
        let (end_true, end_local) = sleep_once(&clock, Duration::from_secs(10), |t, clock| {
            if t == ms(3_000) {
                clock.suspend_for(t, ms(5_000));
            }
        });
        assert_eq!(end_true, ms(15_000));
        assert_eq!(end_local, Instant::from_origin(ms(10_000)));
        // The suspension closed itself at 3 s + 5 s, without a resume call.
        assert_eq!(clock.segments(end_true)[1..], suspended_from_3_s_to_8_s());
        assert!(!clock.is_suspended_at(end_true));
    }

    #[test]
    fn wall_jumps_change_wall_but_never_now_nor_timers() {
        let clock = HostClock::new(EPOCH);
        let readings: Arc<Mutex<Vec<(Instant, WallTime)>>> = Arc::default();
        let mut sim = sim();
        sim.client("host", {
            let (clock, readings) = (clock.clone(), readings.clone());
            async move {
                let timer = tokio::spawn({
                    let clock = clock.clone();
                    async move {
                        clock.sleep(Duration::from_secs(10)).await;
                        true_now()
                    }
                });
                for second in 1..=4 {
                    clock
                        .sleep_until(Instant::from_origin(ms(second * 1_000)))
                        .await;
                    readings.lock().unwrap().push((clock.now(), clock.wall()));
                }
                assert_eq!(
                    timer.await.unwrap(),
                    ms(10_000),
                    "a wall jump moved a timer"
                );
                assert_eq!(clock.now(), Instant::from_origin(ms(10_000)));
                Ok(())
            }
        });
        const HOUR_NS: i64 = 3_600 * 1_000_000_000;
        while !sim.step().unwrap() {
            match sim.elapsed().as_millis() {
                1_500 => clock.jump_wall(HOUR_NS),
                2_500 => clock.jump_wall(-2 * HOUR_NS),
                3_500 => clock.set_wall_offset(0),
                _ => {}
            }
        }
        let second = |s: i128| s * NS_PER_S;
        let expected: Vec<_> = [(1, 0), (2, 3_600), (3, -3_600), (4, 0)]
            .into_iter()
            .map(|(s, offset_s)| {
                let now = Instant::from_origin(Duration::from_secs(s as u64));
                let wall = EPOCH.unix_ns + second(s) + second(offset_s);
                (now, WallTime { unix_ns: wall })
            })
            .collect();
        assert_eq!(*readings.lock().unwrap(), expected);
    }

    #[test]
    fn a_restarted_host_s_monotonic_clock_starts_again_from_zero() {
        let clock = HostClock::new(EPOCH);
        let readings: Log = Arc::default();
        let locals: Arc<Mutex<Vec<Instant>>> = Arc::default();
        let mut sim = sim();
        sim.host("host", {
            let (clock, readings, locals) = (clock.clone(), readings.clone(), locals.clone());
            move || {
                let (clock, readings, locals) = (clock.clone(), readings.clone(), locals.clone());
                async move {
                    loop {
                        clock.sleep(Duration::from_secs(1)).await;
                        log(&readings, "tick");
                        locals.lock().unwrap().push(clock.now());
                    }
                }
            }
        });
        run_until(&mut sim, ms(2_500));
        sim.crash("host");
        run_until(&mut sim, ms(5_000));
        let wall_before = clock.wall_at(ms(5_000));
        clock.restart(ms(5_000));
        assert_eq!(clock.now_at(ms(5_000)), Instant::ZERO);
        assert_eq!(
            clock.wall_at(ms(5_000)),
            wall_before,
            "the wall clock jumped"
        );
        sim.bounce("host");
        run_until(&mut sim, ms(7_500));
        let ticks: Vec<_> = entries(&readings).into_iter().map(|(_, t)| t).collect();
        assert_eq!(ticks, [ms(1_000), ms(2_000), ms(6_000), ms(7_000)]);
        let seconds = |s| Instant::from_origin(Duration::from_secs(s));
        assert_eq!(
            *locals.lock().unwrap(),
            [seconds(1), seconds(2), seconds(1), seconds(2)]
        );
        assert_eq!(clock.segments(ms(7_500)).last().unwrap().boot, 1);
    }

    #[test]
    fn segments_are_recorded_exactly() {
        let clock = HostClock::new(EPOCH);
        clock.set_drift_ppm(Duration::ZERO, 50);
        clock.set_drift_ppm(ms(2_000), -20);
        clock.suspend_for(ms(3_000), ms(2_000));
        clock.restart(ms(7_000));
        // Changes that change nothing, or last no true time, leave no trace.
        clock.set_drift_ppm(ms(8_000), -20);
        clock.suspend(ms(8_000));
        clock.resume(ms(8_000));
        let segment = |from_ms, local_ns, drift_ppm, suspended, boot| Segment {
            from_true: ms(from_ms),
            local_from: Instant::from_origin(nanos(local_ns)),
            drift_ppm,
            suspended,
            boot,
        };
        assert_eq!(
            clock.segments(ms(9_000)),
            [
                segment(0, 0, 50, false, 0),
                // 2 s × 1.000_050
                segment(2_000, 2_000_100_000, -20, false, 0),
                // + 1 s × 0.999_980
                segment(3_000, 3_000_080_000, -20, true, 0),
                segment(5_000, 3_000_080_000, -20, false, 0),
                segment(7_000, 0, -20, false, 1),
            ]
        );
        assert_eq!(
            clock.now_at(ms(9_000)),
            Instant::from_origin(nanos(1_999_960_000))
        );
        // The wall clock kept counting through the restart: 3.00008 s + 2 s × 0.99998 before
        // it, 2 s × 0.99998 after.
        let wall_ns = 5_000_040_000 + 1_999_960_000;
        assert_eq!(
            clock.wall_at(ms(9_000)),
            WallTime {
                unix_ns: EPOCH.unix_ns + wall_ns
            }
        );
    }

    #[test]
    fn a_timed_suspend_is_over_exactly_at_its_end() {
        let clock = HostClock::new(EPOCH);
        clock.suspend_for(ms(1_000), ms(2_000));
        assert!(clock.is_suspended_at(ms(2_999)));
        assert_eq!(clock.now_at(ms(2_999)), Instant::from_origin(ms(1_000)));
        assert!(!clock.is_suspended_at(ms(3_000)));
        assert_eq!(clock.now_at(ms(3_500)), Instant::from_origin(ms(1_500)));
    }

    #[test]
    fn true_time_passed_in_never_goes_back() {
        let clock = HostClock::new(EPOCH);
        assert_eq!(clock.now_at(ms(5_000)), Instant::from_origin(ms(5_000)));
        assert_eq!(clock.now_at(ms(1_000)), Instant::from_origin(ms(5_000)));
    }

    #[test]
    #[should_panic(expected = "outside -999999..=1000000")]
    fn a_drift_that_would_stop_the_clock_is_refused() {
        HostClock::new(EPOCH).set_drift_ppm(Duration::ZERO, -1_000_000);
    }

    #[test]
    #[should_panic(expected = "outside a turmoil host")]
    fn reading_a_host_clock_outside_a_simulation_says_how_to_fix_it() {
        HostClock::new(EPOCH).now();
    }
}
