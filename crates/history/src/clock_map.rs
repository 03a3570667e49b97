//! [`ClockMap`]: one host's monotonic clock as a function of true time, and back.

use super::line::ClockLine;
use std::fmt;

const PPM: i128 = 1_000_000;

/// How one host's monotonic clock maps to true simulated time, built from its `clock`
/// segments in order.
///
/// Segment `i` covers true times `[from_us_i, from_us_{i+1})` (the last one runs forever).
/// Within it the reading is `local_from_us + ⌊(t − from_us) × (1_000_000 + drift_ppm) /
/// 1_000_000⌋`, or `local_from_us` throughout when `suspended`. All arithmetic is exact
/// integer arithmetic on µs.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ClockMap {
    host: String,
    segments: Vec<ClockLine>,
}

/// Why segments do not make a [`ClockMap`]. `index` is the segment's position (from 0) among
/// the host's segments.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum ClockMapError {
    /// No segments at all.
    Empty,
    /// A segment names another host than the first.
    MixedHosts {
        /// Position of the segment.
        index: usize,
        /// The first segment's host.
        expected: String,
        /// This segment's host.
        found: String,
    },
    /// A segment does not start after the one before it.
    NotIncreasing {
        /// Position of the segment.
        index: usize,
        /// The host.
        host: String,
        /// Its start.
        from_us: u64,
        /// The previous segment's start.
        previous_from_us: u64,
    },
    /// A segment's boot is lower than the one before it.
    BootWentBack {
        /// Position of the segment.
        index: usize,
        /// The host.
        host: String,
        /// Its boot.
        boot: u64,
        /// The previous segment's boot.
        previous_boot: u64,
    },
    /// A running clock must advance: `drift_ppm` must exceed −1 000 000 (a stopped clock is
    /// `suspended`).
    Drift {
        /// Position of the segment.
        index: usize,
        /// The host.
        host: String,
        /// The drift given.
        drift_ppm: i64,
    },
}

impl fmt::Display for ClockMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClockMapError::Empty => write!(f, "a clock map needs at least one segment"),
            ClockMapError::MixedHosts {
                index,
                expected,
                found,
            } => write!(f, "segment {index} is for host {found:?}, not {expected:?}"),
            ClockMapError::NotIncreasing {
                host,
                from_us,
                previous_from_us,
                ..
            } => write!(
                f,
                "clock segment of host {host:?} starts at from_us {from_us}, not after the previous \
         segment's {previous_from_us}"
            ),
            ClockMapError::BootWentBack {
                host,
                boot,
                previous_boot,
                ..
            } => write!(
                f,
                "clock segment of host {host:?} has boot {boot}, below the previous segment's {previous_boot}"
            ),
            ClockMapError::Drift {
                host, drift_ppm, ..
            } => write!(
                f,
                "clock segment of host {host:?} has drift_ppm {drift_ppm}; it must be above -1000000 \
         (a stopped clock is `suspended`)"
            ),
        }
    }
}

impl std::error::Error for ClockMapError {}

impl ClockMapError {
    /// Position of the offending segment among the host's segments, if one is to blame.
    pub fn index(&self) -> Option<usize> {
        match self {
            ClockMapError::Empty => None,
            ClockMapError::MixedHosts { index, .. }
            | ClockMapError::NotIncreasing { index, .. }
            | ClockMapError::BootWentBack { index, .. }
            | ClockMapError::Drift { index, .. } => Some(*index),
        }
    }
}

impl ClockMap {
    /// The map of one host from its segments, in the order they were written.
    ///
    /// # Errors
    /// No segments, segments of several hosts, starts not strictly increasing, a boot lower
    /// than the previous one, or `drift_ppm <= -1_000_000`.
    pub fn new(segments: Vec<ClockLine>) -> Result<Self, ClockMapError> {
        let host = segments.first().ok_or(ClockMapError::Empty)?.host.clone();
        for (index, segment) in segments.iter().enumerate() {
            if segment.host != host {
                return Err(ClockMapError::MixedHosts {
                    index,
                    expected: host,
                    found: segment.host.clone(),
                });
            }
            if i128::from(segment.drift_ppm) <= -PPM {
                return Err(ClockMapError::Drift {
                    index,
                    host,
                    drift_ppm: segment.drift_ppm,
                });
            }
            let Some(previous) = index.checked_sub(1).map(|i| &segments[i]) else {
                continue;
            };
            if segment.from_us <= previous.from_us {
                return Err(ClockMapError::NotIncreasing {
                    index,
                    host,
                    from_us: segment.from_us,
                    previous_from_us: previous.from_us,
                });
            }
            if segment.boot < previous.boot {
                return Err(ClockMapError::BootWentBack {
                    index,
                    host,
                    boot: segment.boot,
                    previous_boot: previous.boot,
                });
            }
        }
        Ok(ClockMap { host, segments })
    }

    /// The host.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The segments, in order.
    pub fn segments(&self) -> &[ClockLine] {
        &self.segments
    }

    /// The host's monotonic reading at true time `true_us`, µs; `None` before the first
    /// segment.
    pub fn local_at(&self, true_us: u64) -> Option<u64> {
        self.segment_at(true_us)
            .map(|segment| reading(segment, true_us))
    }

    /// The host's boot at true time `true_us`; `None` before the first segment.
    pub fn boot_at(&self, true_us: u64) -> Option<u64> {
        self.segment_at(true_us).map(|segment| segment.boot)
    }

    /// The earliest true time at which the host's clock reads `local_us` or more, in any
    /// boot; `None` if it never does (it is suspended for good, or the value lies before the
    /// first segment's reading… and is never reached later).
    ///
    /// "Or more" because a fast clock skips readings when rounded to µs: this is when a
    /// timer set for `local_us` on that host fires.
    pub fn true_at(&self, local_us: u64) -> Option<u64> {
        self.first_reaching(local_us, |_| true)
    }

    /// As [`ClockMap::true_at`], but only among the segments of boot `boot` (a restarted
    /// host's clock starts again, so a reading is only meaningful with its boot).
    pub fn true_at_in_boot(&self, boot: u64, local_us: u64) -> Option<u64> {
        self.first_reaching(local_us, |segment| segment.boot == boot)
    }

    fn segment_at(&self, true_us: u64) -> Option<&ClockLine> {
        let after = self
            .segments
            .partition_point(|segment| segment.from_us <= true_us);
        after.checked_sub(1).map(|i| &self.segments[i])
    }

    fn first_reaching(&self, local_us: u64, keep: impl Fn(&ClockLine) -> bool) -> Option<u64> {
        self.segments
            .iter()
            .enumerate()
            .filter(|(_, segment)| keep(segment))
            .find_map(|(i, segment)| {
                let end = self.segments.get(i + 1).map(|next| next.from_us);
                earliest_reaching(segment, local_us).filter(|&t| end.is_none_or(|end| t < end))
            })
    }
}

/// `segment`'s reading at `true_us` (which is at or after its start).
fn reading(segment: &ClockLine, true_us: u64) -> u64 {
    if segment.suspended {
        return segment.local_from_us;
    }
    let elapsed = i128::from(true_us - segment.from_us);
    let advanced = elapsed * (PPM + i128::from(segment.drift_ppm)) / PPM;
    let local = i128::from(segment.local_from_us) + advanced;
    u64::try_from(local).unwrap_or(u64::MAX)
}

/// The earliest true time, from `segment`'s start on (ignoring where it ends), at which its
/// reading is `local_us` or more.
fn earliest_reaching(segment: &ClockLine, local_us: u64) -> Option<u64> {
    if local_us <= segment.local_from_us {
        return Some(segment.from_us);
    }
    if segment.suspended {
        return None;
    }
    // Smallest `dt` with ⌊dt × rate / 10⁶⌋ ≥ d, i.e. dt × rate ≥ d × 10⁶: dt = ⌈d × 10⁶ / rate⌉.
    let needed = i128::from(local_us - segment.local_from_us) * PPM;
    let rate = PPM + i128::from(segment.drift_ppm);
    let dt = (needed + rate - 1) / rate;
    u64::try_from(i128::from(segment.from_us) + dt).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(boot: u64, from_us: u64, local_from_us: u64, drift_ppm: i64) -> ClockLine {
        ClockLine {
            host: "replica-1".into(),
            boot,
            from_us,
            local_from_us,
            drift_ppm,
            suspended: false,
        }
    }

    fn suspended(boot: u64, from_us: u64, local_from_us: u64) -> ClockLine {
        ClockLine {
            suspended: true,
            ..seg(boot, from_us, local_from_us, 0)
        }
    }

    fn map(segments: Vec<ClockLine>) -> ClockMap {
        ClockMap::new(segments).expect("valid segments")
    }

    /// A clock that reads true time from 0 until it is suspended at true `at_us`, then the
    /// segment `after` (none: suspended for good).
    fn suspended_at(at_us: u64, after: Option<ClockLine>) -> ClockMap {
        let mut segments = vec![seg(0, 0, 0, 0), suspended(0, at_us, at_us)];
        segments.extend(after);
        map(segments)
    }

    /// `clock` reads `local_us` at true `true_us`, and that reading maps back to `true_us`.
    fn assert_reads(clock: &ClockMap, true_us: u64, local_us: u64) {
        assert_eq!(
            clock.local_at(true_us),
            Some(local_us),
            "reading at {true_us}"
        );
        assert_eq!(
            clock.true_at(local_us),
            Some(true_us),
            "true time of {local_us}"
        );
    }

    #[test]
    fn a_perfect_clock_reads_true_time_plus_its_offset() {
        let clock = map(vec![seg(0, 0, 250, 0)]);
        assert_reads(&clock, 0, 250);
        assert_reads(&clock, 1_000_000, 1_000_250);
        // Readings the clock showed before it was first observed map to its first segment.
        assert_eq!(clock.true_at(100), Some(0));
    }

    #[test]
    fn there_is_no_reading_before_the_first_segment() {
        let clock = map(vec![seg(0, 1_000, 0, 0)]);
        assert_eq!(clock.local_at(999), None);
        assert_eq!(clock.boot_at(999), None);
        assert_eq!(clock.local_at(1_000), Some(0));
    }

    #[test]
    fn a_fast_clock_gains_drift_ppm_microseconds_per_second_rounded_down() {
        let clock = map(vec![seg(0, 0, 0, 100)]);
        assert_reads(&clock, 1_000_000, 1_000_100);
        assert_eq!(clock.local_at(9_999), Some(9_999)); // 9 999.9999 rounds down
        assert_eq!(clock.local_at(10_000), Some(10_001)); // so 10 000 is never shown…
        assert_eq!(clock.true_at(10_000), Some(10_000)); // …but reached at true 10 000
        assert_eq!(clock.true_at(10_001), Some(10_000));
    }

    #[test]
    fn a_slow_clock_loses_drift_ppm_microseconds_per_second() {
        let clock = map(vec![seg(0, 0, 0, -500)]);
        assert_reads(&clock, 2_000_000, 1_999_000);
        assert_eq!(clock.local_at(1), Some(0));
        assert_eq!(clock.true_at(1), Some(2)); // ⌈1 / 0.9995⌉
    }

    #[test]
    fn drift_changes_at_a_segment_boundary_and_the_reading_carries_on() {
        // +1000 ppm for the first second, then −1000 ppm.
        let clock = map(vec![
            seg(0, 0, 0, 1_000),
            seg(0, 1_000_000, 1_001_000, -1_000),
        ]);
        assert_eq!(clock.local_at(999_999), Some(1_000_998));
        assert_reads(&clock, 1_000_000, 1_001_000);
        assert_reads(&clock, 2_000_000, 2_000_000);
        assert_eq!(clock.true_at(1_500_000), Some(1_499_500));
    }

    #[test]
    fn a_suspended_clock_stands_still_and_resumes_from_where_it_stopped() {
        // Suspended from true 5 s to 8 s: the host under-counts by 3 s afterwards.
        let clock = suspended_at(5_000_000, Some(seg(0, 8_000_000, 5_000_000, 0)));
        assert_eq!(clock.local_at(6_000_000), Some(5_000_000));
        assert_eq!(clock.local_at(7_999_999), Some(5_000_000));
        assert_reads(&clock, 9_000_000, 6_000_000);
        assert_eq!(clock.true_at(5_000_000), Some(5_000_000)); // the earliest time it read so
        assert_eq!(clock.true_at(5_000_001), Some(8_000_001));
    }

    #[test]
    fn a_clock_suspended_for_good_never_reaches_later_readings() {
        let clock = suspended_at(5_000_000, None);
        assert_eq!(clock.local_at(60_000_000), Some(5_000_000));
        assert_eq!(clock.true_at(5_000_000), Some(5_000_000));
        assert_eq!(clock.true_at(5_000_001), None);
    }

    #[test]
    fn a_restart_starts_the_clock_again_and_readings_are_resolved_per_boot() {
        // Boot 0 runs 10 s, the host is down (stopped) 2 s, boot 1 starts again from 0.
        let clock = suspended_at(10_000_000, Some(seg(1, 12_000_000, 0, 0)));
        assert_eq!(clock.boot_at(11_000_000), Some(0));
        assert_eq!(clock.boot_at(12_000_000), Some(1));
        assert_eq!(clock.local_at(12_000_500), Some(500));
        // Reading 500 happened in both boots: any boot gives the first, a boot its own.
        assert_eq!(clock.true_at(500), Some(500));
        assert_eq!(clock.true_at_in_boot(0, 500), Some(500));
        assert_eq!(clock.true_at_in_boot(1, 500), Some(12_000_500));
        // Boot 0 never got past 10 s; boot 1 gets to 20 s at true 32 s.
        assert_eq!(clock.true_at_in_boot(0, 20_000_000), None);
        assert_eq!(clock.true_at(20_000_000), Some(32_000_000));
        assert_eq!(clock.true_at_in_boot(2, 0), None);
    }

    #[test]
    fn bad_segments_are_refused_naming_the_segment() {
        assert_eq!(ClockMap::new(vec![]), Err(ClockMapError::Empty));
        let not_increasing = ClockMap::new(vec![seg(0, 5, 0, 0), seg(0, 5, 0, 0)]).unwrap_err();
        assert_eq!(not_increasing.index(), Some(1));
        assert!(
            not_increasing
                .to_string()
                .contains("starts at from_us 5, not after the previous segment's 5"),
            "{not_increasing}"
        );
        let boot = ClockMap::new(vec![seg(1, 0, 0, 0), seg(0, 5, 0, 0)]).unwrap_err();
        assert!(matches!(boot, ClockMapError::BootWentBack { index: 1, .. }));
        let drift = ClockMap::new(vec![seg(0, 0, 0, -1_000_000)]).unwrap_err();
        assert!(matches!(drift, ClockMapError::Drift { index: 0, .. }));
        let mut other = seg(0, 5, 0, 0);
        other.host = "lease".into();
        let mixed = ClockMap::new(vec![seg(0, 0, 0, 0), other]).unwrap_err();
        assert!(matches!(mixed, ClockMapError::MixedHosts { index: 1, .. }));
    }

    #[test]
    fn extreme_values_saturate_instead_of_overflowing() {
        let clock = map(vec![seg(0, 0, u64::MAX - 10, 999_999)]);
        assert_eq!(clock.local_at(u64::MAX), Some(u64::MAX));
        assert_eq!(clock.true_at(u64::MAX), Some(6)); // ⌈10 / 1.999999⌉
        let slow = map(vec![seg(0, u64::MAX - 1, 0, -999_999)]);
        assert_eq!(slow.true_at(u64::MAX), None);
    }
}
