//! One host's clocks as functions of true time (docs/engine.md#time).
//!
//! The same model as the world's per-host clocks today (docs/world.md#clocks): a **monotonic**
//! clock that is true time scaled by a drift in ppm and stands still while the host is
//! suspended, and a **boot-time** clock (`CLOCK_BOOTTIME`) that is the monotonic reading plus
//! the time spent suspended. A SIGSTOP-style pause does not touch the clocks at all: they run
//! on while no task runs, and the host reads the jump when it resumes.
//!
//! All arithmetic is on integer nanoseconds with `i128` intermediates, so a run replays to the
//! nanosecond.

use std::time::Duration;

/// The slowest drift a clock can run at, in ppm (−1_000_000 would stop it: suspend instead).
pub const MIN_DRIFT_PPM: i64 = -999_999;

/// The fastest drift a clock can run at, in ppm: twice as fast as true time.
pub const MAX_DRIFT_PPM: i64 = 1_000_000;

const PPM: i128 = 1_000_000;

/// The host clock's current segment: from true time `from_true` on, the monotonic clock reads
/// `local_from` plus the true time elapsed since, scaled by `(1e6 + drift_ppm) / 1e6` — or
/// stays at `local_from` while `suspended`.
///
/// Segments change only between an engine's slices (at a fault), so inside a slice the
/// mapping between a host's tokio time and true time is one exact linear function.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct HostClock {
    from_true: Duration,
    local_from: Duration,
    drift_ppm: i64,
    suspended: bool,
    /// True time spent suspended before `from_true` (boot time minus monotonic time).
    slept: Duration,
}

/// A drift outside [`MIN_DRIFT_PPM`]`..=`[`MAX_DRIFT_PPM`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DriftOutOfRange(pub i64);

impl std::fmt::Display for DriftOutOfRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "clock drift {} ppm is outside {MIN_DRIFT_PPM}..={MAX_DRIFT_PPM}: -1000000 ppm or \
             less would stop or reverse a monotonic clock (suspend the host to stop it)",
            self.0
        )
    }
}

impl std::error::Error for DriftOutOfRange {}

impl Default for HostClock {
    fn default() -> Self {
        Self::new()
    }
}

impl HostClock {
    /// A clock with no drift that reads zero at true time zero.
    pub const fn new() -> Self {
        HostClock {
            from_true: Duration::ZERO,
            local_from: Duration::ZERO,
            drift_ppm: 0,
            suspended: false,
            slept: Duration::ZERO,
        }
    }

    /// The monotonic reading at true time `t` (`t` at or after the last change):
    /// `local_from + floor(elapsed × rate)`.
    pub fn local_at(&self, t: Duration) -> Duration {
        if self.suspended {
            return self.local_from;
        }
        let elapsed = t.saturating_sub(self.from_true).as_nanos() as i128;
        let local = elapsed * (PPM + i128::from(self.drift_ppm)) / PPM;
        self.local_from + from_ns(local)
    }

    /// The earliest true time at which the monotonic clock reads at least `local`, or `None`
    /// while suspended. Exact: `floor(x × rate) >= d` exactly when `x >= ceil(d / rate)`.
    pub fn true_at(&self, local: Duration) -> Option<Duration> {
        if self.suspended {
            return None;
        }
        let ahead = local.saturating_sub(self.local_from).as_nanos() as i128;
        let rate = PPM + i128::from(self.drift_ppm);
        Some(self.from_true + from_ns((ahead * PPM + rate - 1) / rate))
    }

    /// The boot-time reading at true time `t`: monotonic plus every suspended stretch.
    pub fn boottime_at(&self, t: Duration) -> Duration {
        let asleep_now = if self.suspended {
            t.saturating_sub(self.from_true)
        } else {
            Duration::ZERO
        };
        self.local_at(t) + self.slept + asleep_now
    }

    /// The drift now, in ppm.
    pub fn drift_ppm(&self) -> i64 {
        self.drift_ppm
    }

    /// Whether the monotonic clock is stopped (the host is suspended).
    pub fn is_suspended(&self) -> bool {
        self.suspended
    }

    /// From true time `t` on, the clock runs at `drift_ppm`.
    ///
    /// # Errors
    /// [`DriftOutOfRange`] outside [`MIN_DRIFT_PPM`]`..=`[`MAX_DRIFT_PPM`]; the clock is
    /// unchanged.
    pub fn set_drift(&mut self, t: Duration, drift_ppm: i64) -> Result<(), DriftOutOfRange> {
        if !(MIN_DRIFT_PPM..=MAX_DRIFT_PPM).contains(&drift_ppm) {
            return Err(DriftOutOfRange(drift_ppm));
        }
        self.restart_segment(t);
        self.drift_ppm = drift_ppm;
        Ok(())
    }

    /// From true time `t` on, the monotonic clock stands still (boot time runs on).
    pub fn suspend(&mut self, t: Duration) {
        self.restart_segment(t);
        self.suspended = true;
    }

    /// From true time `t` on, the monotonic clock runs again from where it stopped.
    pub fn wake(&mut self, t: Duration) {
        self.restart_segment(t);
        self.suspended = false;
    }

    /// Starts a new segment at `t` that continues the current readings.
    fn restart_segment(&mut self, t: Duration) {
        let t = t.max(self.from_true);
        if self.suspended {
            self.slept += t - self.from_true;
        }
        self.local_from = self.local_at(t);
        self.from_true = t;
    }
}

fn from_ns(ns: i128) -> Duration {
    let ns = u64::try_from(ns).unwrap_or(u64::MAX);
    Duration::from_nanos(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn a_clock_ten_percent_slow_reads_nine_tenths_of_true_time_and_maps_back_exactly() {
        let mut clock = HostClock::new();
        clock.set_drift(Duration::ZERO, -100_000).unwrap();
        assert_eq!(clock.local_at(10 * S), 9 * S);
        assert_eq!(
            clock.true_at(10 * S),
            Some(Duration::from_nanos(11_111_111_112))
        );
    }

    #[test]
    fn a_suspended_clock_stands_still_while_boot_time_counts_the_sleep() {
        let mut clock = HostClock::new();
        clock.suspend(S);
        assert_eq!(clock.local_at(3 * S), S);
        assert_eq!(clock.true_at(2 * S), None);
        assert_eq!(clock.boottime_at(3 * S), 3 * S);
        clock.wake(3 * S);
        assert_eq!(clock.local_at(4 * S), 2 * S);
        assert_eq!(clock.boottime_at(4 * S), 4 * S);
        assert_eq!(clock.true_at(2 * S), Some(4 * S));
    }

    #[test]
    fn a_drift_that_would_stop_the_clock_is_refused_and_changes_nothing() {
        let mut clock = HostClock::new();
        assert_eq!(
            clock.set_drift(S, -1_000_000),
            Err(DriftOutOfRange(-1_000_000))
        );
        assert_eq!(clock, HostClock::new());
    }
}
