//! Time for the system under test.
//!
//! [`Clock`] is the only source of time in `lease/`, `journal/` and `service/`: every reading
//! and every timer (renew interval, validity deadline, backoff) goes through it, so that a
//! simulated host's drift, suspend and wall-clock jumps change when timers fire exactly as
//! they would on a real host (docs/contracts.md#time).
//!
//! Implementations here: [`ManualClock`] (time moves only when a test advances it) and
//! [`RealClock`] (the process's monotonic and wall clocks). The simulated world adds per-host
//! clocks of its own.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::ops::{Add, Sub};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use async_trait::async_trait;

use std::sync::Arc;

use crate::sync::{Mutex, lock};

/// A reading of one host's monotonic clock: the time elapsed since that clock's origin.
///
/// Readings of different clocks are not comparable (two hosts' origins and rates differ);
/// nothing in the type stops you, so keep each reading with the clock it came from. Resolution
/// is one nanosecond.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(Duration);

impl Instant {
    /// The clock's origin.
    pub const ZERO: Instant = Instant(Duration::ZERO);

    /// The reading `elapsed` after the origin.
    pub const fn from_origin(elapsed: Duration) -> Self {
        Instant(elapsed)
    }

    /// Time elapsed from the origin to this reading.
    pub const fn since_origin(self) -> Duration {
        self.0
    }

    /// `self - earlier`, or zero when `earlier` is later than `self`.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    /// `self - d`, or the origin when `d` reaches back before it.
    pub fn saturating_sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0 + d)
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Panics when `earlier > self`, like `std::time::Instant`; use
    /// [`Instant::saturating_duration_since`] when the order is not known.
    fn sub(self, earlier: Instant) -> Duration {
        assert!(
            earlier <= self,
            "clock order (docs/contracts.md#time): {earlier:?} is after {self:?}; use \
             saturating_duration_since for readings that may be out of order"
        );
        self.0 - earlier.0
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mono+{:?}", self.0)
    }
}

/// A reading of a wall clock, in nanoseconds since the Unix epoch (negative before it).
///
/// For display only: a wall clock can step forward and back, so nothing in the system under
/// test judges expiry or validity by it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct WallTime {
    /// Nanoseconds since 1970-01-01T00:00:00Z.
    pub unix_ns: i128,
}

/// The source of time for one host.
///
/// `now` is monotonic (never goes back; it may stop while the host is suspended), `wall` is
/// for display, and the sleeps are the only timers the system under test uses.
#[async_trait]
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current reading of this host's monotonic clock.
    fn now(&self) -> Instant;

    /// The current reading of this host's wall clock.
    fn wall(&self) -> WallTime;

    /// Completes once `now() >= deadline`; at once if it already is.
    async fn sleep_until(&self, deadline: Instant);

    /// Completes once `duration` has passed on this clock.
    async fn sleep(&self, duration: Duration) {
        let deadline = self.now() + duration;
        self.sleep_until(deadline).await
    }
}

/// A clock that moves only when told to: [`ManualClock::advance`] moves monotonic and wall time
/// together and wakes every sleeper whose deadline has been reached.
///
/// Cloning gives another handle to the same clock. The wall clock starts at the Unix epoch
/// plus [`ManualClock::with_wall_start`]'s value (default 0).
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    inner: Arc<Mutex<ManualState>>,
}

#[derive(Debug, Default)]
struct ManualState {
    now: Instant,
    wall_start: WallTime,
    /// Sleepers keyed by (deadline, sleeper id), so waking takes a prefix of the map.
    sleepers: BTreeMap<(Instant, u64), Waker>,
    next_sleeper: u64,
}

impl ManualClock {
    /// A clock at its origin.
    pub fn new() -> Self {
        Self::default()
    }

    /// A clock at its origin whose wall clock reads `wall_start` there.
    pub fn with_wall_start(wall_start: WallTime) -> Self {
        let clock = Self::new();
        lock(&clock.inner).wall_start = wall_start;
        clock
    }

    /// Moves time forward by `duration` and wakes the sleepers whose deadline it reaches.
    ///
    /// Woken tasks run when the executor next polls them, not inside this call.
    pub fn advance(&self, duration: Duration) {
        let woken = {
            let mut state = lock(&self.inner);
            let before = state.now;
            state.now = state.now + duration;
            debug_assert!(
                state.now >= before,
                "clock order (docs/contracts.md#time): a manual clock never goes backwards"
            );
            let first_later = (state.now + Duration::from_nanos(1), 0);
            let later = state.sleepers.split_off(&first_later);
            let woken = std::mem::replace(&mut state.sleepers, later);
            debug_assert!(
                woken.keys().all(|(deadline, _)| *deadline <= state.now)
                    && state
                        .sleepers
                        .keys()
                        .all(|(deadline, _)| *deadline > state.now),
                "sleepers in deadline order: exactly those due by {:?} wake",
                state.now
            );
            woken
        };
        woken.into_values().for_each(Waker::wake);
    }

    /// How many sleepers are waiting (for tests that wait for a timer to be armed).
    pub fn sleepers(&self) -> usize {
        lock(&self.inner).sleepers.len()
    }
}

#[async_trait]
impl Clock for ManualClock {
    fn now(&self) -> Instant {
        lock(&self.inner).now
    }

    fn wall(&self) -> WallTime {
        let state = lock(&self.inner);
        WallTime {
            unix_ns: state.wall_start.unix_ns + state.now.since_origin().as_nanos() as i128,
        }
    }

    async fn sleep_until(&self, deadline: Instant) {
        ManualSleep {
            clock: self.clone(),
            deadline,
            id: None,
        }
        .await
    }
}

/// The future behind [`ManualClock::sleep_until`]; unregisters itself when dropped.
struct ManualSleep {
    clock: ManualClock,
    deadline: Instant,
    id: Option<u64>,
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = lock(&self.clock.inner);
        if state.now >= self.deadline {
            return Poll::Ready(());
        }
        let id = match self.id {
            Some(id) => id,
            None => {
                state.next_sleeper += 1;
                state.next_sleeper
            }
        };
        debug_assert!(
            id >= 1 && id <= state.next_sleeper,
            "sleepers are numbered from 1 in arrival order: sleeper {id} of {}",
            state.next_sleeper
        );
        state
            .sleepers
            .insert((self.deadline, id), cx.waker().clone());
        drop(state);
        self.id = Some(id);
        Poll::Pending
    }
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            lock(&self.clock.inner)
                .sleepers
                .remove(&(self.deadline, id));
        }
    }
}

/// The process's own clocks: tokio's monotonic clock from the moment of creation, and the
/// system wall clock. For live use only; simulations never construct it.
#[derive(Clone, Debug)]
pub struct RealClock {
    // The one sanctioned use of real time in the system under test (clippy.toml).
    #[allow(clippy::disallowed_types)]
    origin: tokio::time::Instant,
}

impl RealClock {
    /// A clock whose origin is now.
    #[allow(clippy::disallowed_types)]
    pub fn new() -> Self {
        RealClock {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for RealClock {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Clock for RealClock {
    #[allow(clippy::disallowed_types)]
    fn now(&self) -> Instant {
        Instant(tokio::time::Instant::now().duration_since(self.origin))
    }

    #[allow(clippy::disallowed_types)]
    fn wall(&self) -> WallTime {
        let unix_ns = match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            Ok(after) => after.as_nanos() as i128,
            Err(before) => -(before.duration().as_nanos() as i128),
        };
        WallTime { unix_ns }
    }

    #[allow(clippy::disallowed_methods)]
    async fn sleep_until(&self, deadline: Instant) {
        tokio::time::sleep_until(self.origin + deadline.since_origin()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task that sleeps `duration` on `clock`.
    fn sleeper(clock: &ManualClock, duration: Duration) -> tokio::task::JoinHandle<()> {
        let clock = clock.clone();
        tokio::spawn(async move { clock.sleep(duration).await })
    }

    #[tokio::test]
    async fn manual_sleepers_wake_when_time_reaches_their_deadline() {
        let clock = ManualClock::new();
        let sleeper = sleeper(&clock, Duration::from_secs(10));
        tokio::task::yield_now().await;
        assert_eq!(clock.sleepers(), 1);
        clock.advance(Duration::from_secs(9));
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished(), "woke 1 s early");
        clock.advance(Duration::from_secs(1));
        sleeper.await.unwrap();
        assert_eq!(clock.sleepers(), 0);
        assert_eq!(clock.now(), Instant::from_origin(Duration::from_secs(10)));
    }

    #[tokio::test]
    async fn dropped_sleepers_unregister() {
        let clock = ManualClock::new();
        let sleeper = sleeper(&clock, Duration::from_secs(1));
        tokio::task::yield_now().await;
        sleeper.abort();
        let _ = sleeper.await;
        assert_eq!(clock.sleepers(), 0);
    }

    #[test]
    fn wall_moves_with_monotonic_time_from_its_start() {
        let clock = ManualClock::with_wall_start(WallTime { unix_ns: 1_000 });
        clock.advance(Duration::from_nanos(500));
        assert_eq!(clock.wall(), WallTime { unix_ns: 1_500 });
    }
}
