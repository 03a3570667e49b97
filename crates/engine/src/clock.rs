//! One host's clocks as functions of true time (docs/engine.md#time).
//!
//! The same model as the world's per-host clocks today (docs/world.md#clocks): a **monotonic**
//! clock that is true time scaled by a drift in ppm and stands still while the host is
//! suspended, and a **boot-time** clock (`CLOCK_BOOTTIME`) that is the monotonic reading plus
//! the time spent suspended. A SIGSTOP-style pause does not touch the clocks at all: they run
//! on while no task runs, and the host reads the jump when it resumes.
//!
//! A **wall** clock (`CLOCK_REALTIME`) is, as in the world, the monotonic reading plus the
//! wall reading at the boot's monotonic zero plus a step offset that faults move forward and
//! back (docs/engine.md#wall-clocks-and-reboots). A **reboot** starts a new boot: monotonic and
//! boot time from zero again, the wall clock continuing where it was.
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
    /// The wall reading at this boot's monotonic zero, in ns since the Unix epoch.
    wall_epoch_ns: i128,
    /// The wall clock's step offset, in ns (the sum of the jumps, or the offset last set).
    wall_offset_ns: i128,
    /// Which boot this is: 0 at the start, one more at each [`HostClock::reboot`].
    boot: u64,
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
    /// A clock with no drift that reads zero at true time zero, and whose wall clock reads
    /// the Unix epoch there.
    pub const fn new() -> Self {
        Self::with_wall_epoch(0)
    }

    /// A clock with no drift that reads zero at true time zero, and whose wall clock reads
    /// `wall_epoch_ns` (ns since the Unix epoch) there.
    pub const fn with_wall_epoch(wall_epoch_ns: i128) -> Self {
        HostClock {
            from_true: Duration::ZERO,
            local_from: Duration::ZERO,
            drift_ppm: 0,
            suspended: false,
            slept: Duration::ZERO,
            wall_epoch_ns,
            wall_offset_ns: 0,
            boot: 0,
        }
    }

    /// The wall reading for a monotonic reading `local` of this boot, in ns since the Unix
    /// epoch: the boot's wall epoch + `local` + the step offset. The world's wall clock
    /// (docs/world.md#clocks): it follows the monotonic clock, drift and suspension included.
    pub fn wall_for(&self, local: Duration) -> i128 {
        self.wall_epoch_ns + local.as_nanos() as i128 + self.wall_offset_ns
    }

    /// The wall reading at true time `t` (`t` at or after the last change), in ns since the
    /// Unix epoch.
    pub fn wall_at(&self, t: Duration) -> i128 {
        self.wall_for(self.local_at(t))
    }

    /// The wall clock's step offset now, in ns.
    pub fn wall_offset_ns(&self) -> i128 {
        self.wall_offset_ns
    }

    /// Steps the wall clock by `delta_ns` (forward when positive, back when negative); the
    /// monotonic clock and every timer are untouched.
    pub fn jump_wall(&mut self, delta_ns: i64) {
        self.wall_offset_ns += i128::from(delta_ns);
    }

    /// Sets the wall clock's step offset to `offset_ns`, replacing every earlier jump.
    pub fn set_wall_offset(&mut self, offset_ns: i64) {
        self.wall_offset_ns = i128::from(offset_ns);
    }

    /// The wall clock reads `unix_ns` (ns since the Unix epoch, before the offset) where this
    /// boot's monotonic clock reads zero.
    pub fn set_wall_epoch(&mut self, unix_ns: i128) {
        self.wall_epoch_ns = unix_ns;
    }

    /// Which boot this is: 0 at the start, one more at each [`HostClock::reboot`].
    pub fn boot(&self) -> u64 {
        self.boot
    }

    /// The machine reboots at true time `t`: a new boot whose monotonic and boot-time clocks
    /// read zero at `t` (as the world's `Segment::boot`, docs/world.md#clocks), the drift kept
    /// (it is the oscillator's), a suspension ended, and the wall clock continuing: the new
    /// boot's wall epoch is the wall reading at `t` less the offset, which is kept.
    pub fn reboot(&mut self, t: Duration) {
        let t = t.max(self.from_true);
        self.wall_epoch_ns += self.local_at(t).as_nanos() as i128;
        self.from_true = t;
        self.local_from = Duration::ZERO;
        self.suspended = false;
        self.slept = Duration::ZERO;
        self.boot += 1;
    }

    /// The monotonic reading at true time `t` (`t` at or after the last change):
    /// `local_from + floor(elapsed × rate)`.
    pub fn local_at(&self, t: Duration) -> Duration {
        if self.suspended {
            return self.local_from;
        }
        let elapsed = t.saturating_sub(self.from_true);
        if self.drift_ppm == 0 {
            // The same reading without the 128-bit division (the engine asks for one or two
            // per host per slice).
            return self.local_from + elapsed.min(Duration::from_nanos(u64::MAX));
        }
        let local = elapsed.as_nanos() as i128 * (PPM + i128::from(self.drift_ppm)) / PPM;
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
    fn a_wall_jump_back_moves_the_wall_clock_only_and_an_offset_replaces_the_jumps() {
        let mut clock = HostClock::with_wall_epoch(1_000 * S.as_nanos() as i128);
        clock.set_drift(Duration::ZERO, -100_000).unwrap();
        clock.jump_wall(-5_000_000_000);
        assert_eq!(clock.local_at(10 * S), 9 * S);
        assert_eq!(clock.wall_at(10 * S), 1_004_000_000_000);
        clock.set_wall_offset(250);
        assert_eq!(clock.wall_at(10 * S), 1_009_000_000_250);
        assert_eq!(clock.wall_offset_ns(), 250);
    }

    #[test]
    fn a_reboot_starts_monotonic_and_boot_time_from_zero_and_the_wall_clock_runs_on() {
        let mut clock = HostClock::with_wall_epoch(0);
        clock.set_drift(Duration::ZERO, -500_000).unwrap();
        clock.jump_wall(7);
        clock.suspend(S);
        clock.reboot(3 * S);
        // Half speed: 0.5 s at the suspension, frozen since; the wall read 0.5 s + 7 ns.
        assert_eq!((clock.boot(), clock.is_suspended()), (1, false));
        assert_eq!(clock.local_at(3 * S), Duration::ZERO);
        assert_eq!(clock.boottime_at(3 * S), Duration::ZERO);
        assert_eq!(clock.wall_at(3 * S), 500_000_007);
        assert_eq!(clock.local_at(5 * S), S);
        assert_eq!(clock.boottime_at(5 * S), S);
        assert_eq!(clock.wall_at(5 * S), 1_500_000_007);
        assert_eq!(clock.true_at(S), Some(5 * S));
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
