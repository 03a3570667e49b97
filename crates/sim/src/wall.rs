//! The wall-clock limit of one run: derived from how much simulated time the run can reach
//! ([`crate::schedule::run_end_ms`]), so that a run the tool accepts is never reported
//! as a hang only because it is long. A limit given on the command line (`run --timeout`,
//! `replay --timeout`, `campaign --run-timeout`) that is shorter than such a run surely takes
//! is refused before anything runs (exit 2), naming the values and the flag to raise
//! (docs/campaigns.md#wall-clock-limits).

use std::time::Duration;

/// Wall-clock time one second of simulated time took here, µs: a quiet world of 1,800
/// simulated seconds ran in 18.5 s, a busy 46 s swarm world (836 operations) in 0.33 s, and a
/// simulated day in about 10 minutes, on 2 cores shared with builds (issue 40).
pub const WALL_US_PER_SIM_S: u64 = 10_000;

/// How many times the measured cost a run gets by default (a busier world, a busier
/// machine, several campaign jobs on one core).
pub const DEFAULT_FACTOR: u64 = 4;

/// What every run gets by default on top of [`DEFAULT_FACTOR`] × its cost: starting the
/// world, judging nothing of it yet, a machine that stalls for a while.
pub const DEFAULT_BASE: Duration = Duration::from_secs(60);

/// The wall-clock time a run reaching `end_ms` of simulated time takes here
/// ([`WALL_US_PER_SIM_S`]).
pub fn measured(end_ms: u64) -> Duration {
    Duration::from_micros(end_ms.saturating_mul(WALL_US_PER_SIM_S) / 1_000)
}

/// The replicas of the world [`WALL_US_PER_SIM_S`] was measured on (the default world).
pub const REPLICAS_MEASURED: u32 = 3;

/// How many times the measured cost a world of `replicas` replicas gets by default:
/// `replicas / REPLICAS_MEASURED`, at least 1. A world's cost grows at least linearly in its
/// hosts — per simulated second, turmoil's world took 6.5 ms at 3 replicas and 382 ms at 64,
/// the engine's 4.1 ms and 535 ms at 500 (docs/benchmarks.md, docs/world.md#worlds-of-any-size)
/// — and without this a 100-replica run of 60 s was cut off at 62.4 s and reported as a hang.
pub fn size_factor(replicas: u32) -> u32 {
    (replicas / REPLICAS_MEASURED).max(1)
}

/// The limit a run of `replicas` replicas reaching `end_ms` of simulated time gets when none
/// is given: [`DEFAULT_BASE`] + [`DEFAULT_FACTOR`] × [`size_factor`] × [`measured`].
pub fn default_timeout(end_ms: u64, replicas: u32) -> Duration {
    let factor = (DEFAULT_FACTOR as u32).saturating_mul(size_factor(replicas));
    DEFAULT_BASE.saturating_add(measured(end_ms).saturating_mul(factor))
}

/// How many times the measured cost a given limit must allow at least.
pub const LEAST_FACTOR: u32 = 2;

/// The least limit that may be given for a run reaching `end_ms`: [`LEAST_FACTOR`] × its
/// measured cost. Below it a merely long run may well be cut off and reported as a hang.
pub fn least_timeout(end_ms: u64) -> Duration {
    measured(end_ms).saturating_mul(LEAST_FACTOR)
}

/// The limit of a run of `replicas` replicas reaching `end_ms` of simulated time: `given` (by
/// `flag`), or [`default_timeout`]. The least limit accepted does not grow with the world, so
/// a limit that suits a fast engine is never refused.
///
/// # Errors
/// A `given` limit below [`least_timeout`]: the message names the flag, the value, the run's
/// simulated length and the limit to give instead.
pub fn timeout(
    end_ms: u64,
    replicas: u32,
    given: Option<Duration>,
    flag: &str,
) -> Result<Duration, String> {
    let Some(given) = given else {
        return Ok(default_timeout(end_ms, replicas));
    };
    if given >= least_timeout(end_ms) {
        return Ok(given);
    }
    // The cost quoted is a 3-replica world's; the default offered grows with the world.
    let sized = match size_factor(replicas) {
        1 => String::new(),
        times => format!(", {times} times that for {replicas} replicas"),
    };
    Err(format!(
        "{flag} {}: the run reaches {} s of simulated time, which takes about {} of wall-clock \
         time here ({} ms per simulated second with {REPLICAS_MEASURED} replicas{sized}); below \
         {} it may be cut off and reported as a hang; give {flag} {} (the default for it) or \
         more, or a shorter run",
        humantime::format_duration(given),
        end_ms.div_ceil(1_000),
        token(measured(end_ms)),
        WALL_US_PER_SIM_S / 1_000,
        token(least_timeout(end_ms)),
        token(default_timeout(end_ms, replicas)),
    ))
}

/// `d` as a flag takes it, in whole seconds rounded up (`90s`).
fn token(d: Duration) -> String {
    format!("{}s", d.as_millis().div_ceil(1_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simulated_day_gets_a_default_past_its_measured_cost() {
        let day_ms = leasesim_history::limits::DAY_MS;
        assert_eq!(measured(day_ms), Duration::from_secs(864));
        assert_eq!(
            default_timeout(day_ms, 3),
            Duration::from_secs(60 + 4 * 864)
        );
    }

    #[test]
    fn a_short_run_gets_at_least_the_base() {
        assert_eq!(default_timeout(0, 3), DEFAULT_BASE);
        assert_eq!(
            timeout(60_000, 3, None, "--timeout"),
            Ok(Duration::from_millis(62_400))
        );
    }

    #[test]
    fn a_given_limit_below_twice_the_cost_is_refused_naming_the_flag_and_the_default() {
        let error = timeout(
            leasesim_history::limits::DAY_MS,
            3,
            Some(Duration::from_secs(30)),
            "--timeout",
        )
        .unwrap_err();
        assert!(
            error.starts_with("--timeout 30s: the run reaches 86400 s"),
            "{error}"
        );
        assert!(error.contains("give --timeout 3516s"), "{error}");
        assert!(
            error.contains("(10 ms per simulated second with 3 replicas)"),
            "{error}"
        );
        assert_eq!(
            timeout(
                leasesim_history::limits::DAY_MS,
                3,
                Some(Duration::from_secs(1728)),
                "--timeout"
            ),
            Ok(Duration::from_secs(1728))
        );
    }

    #[test]
    fn a_larger_world_gets_a_default_that_grows_with_its_replicas() {
        // 60 s: 0.6 s measured at 3 replicas; 100 replicas get 33 times that, 1,000 get 333.
        assert_eq!(default_timeout(60_000, 5), Duration::from_millis(62_400));
        assert_eq!(default_timeout(60_000, 6), Duration::from_millis(64_800));
        assert_eq!(
            default_timeout(60_000, 100),
            Duration::from_millis(60_000 + 4 * 33 * 600)
        );
        assert_eq!(
            default_timeout(60_000, 1_000),
            Duration::from_millis(60_000 + 4 * 333 * 600)
        );
    }

    #[test]
    fn the_least_limit_accepted_does_not_grow_with_the_world() {
        let given = Some(Duration::from_secs(2));
        assert_eq!(
            timeout(60_000, 1_000, given, "--timeout"),
            Ok(Duration::from_secs(2))
        );
        let error = timeout(60_000, 1_000, Some(Duration::from_secs(1)), "--timeout").unwrap_err();
        assert!(error.contains("give --timeout 860s"), "{error}");
        assert!(
            error.contains(
                "(10 ms per simulated second with 3 replicas, 333 times that for 1000 replicas)"
            ),
            "{error}"
        );
    }
}
