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

/// The limit a run reaching `end_ms` of simulated time gets when none is given:
/// [`DEFAULT_BASE`] + [`DEFAULT_FACTOR`] × [`measured`].
pub fn default_timeout(end_ms: u64) -> Duration {
    DEFAULT_BASE.saturating_add(measured(end_ms).saturating_mul(DEFAULT_FACTOR as u32))
}

/// How many times the measured cost a given limit must allow at least.
pub const LEAST_FACTOR: u32 = 2;

/// The least limit that may be given for a run reaching `end_ms`: [`LEAST_FACTOR`] × its
/// measured cost. Below it a merely long run may well be cut off and reported as a hang.
pub fn least_timeout(end_ms: u64) -> Duration {
    measured(end_ms).saturating_mul(LEAST_FACTOR)
}

/// The limit of a run reaching `end_ms` of simulated time: `given` (by `flag`), or
/// [`default_timeout`].
///
/// # Errors
/// A `given` limit below [`least_timeout`]: the message names the flag, the value, the run's
/// simulated length and the limit to give instead.
pub fn timeout(end_ms: u64, given: Option<Duration>, flag: &str) -> Result<Duration, String> {
    let Some(given) = given else {
        return Ok(default_timeout(end_ms));
    };
    if given >= least_timeout(end_ms) {
        return Ok(given);
    }
    Err(format!(
        "{flag} {}: the run reaches {} s of simulated time, which takes about {} of wall-clock \
         time here ({} ms per simulated second); below {} it may be cut off and reported as a \
         hang; give {flag} {} (the default for it) or more, or a shorter run",
        humantime::format_duration(given),
        end_ms.div_ceil(1_000),
        token(measured(end_ms)),
        WALL_US_PER_SIM_S / 1_000,
        token(least_timeout(end_ms)),
        token(default_timeout(end_ms)),
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
        assert_eq!(default_timeout(day_ms), Duration::from_secs(60 + 4 * 864));
    }

    #[test]
    fn a_short_run_gets_at_least_the_base() {
        assert_eq!(default_timeout(0), DEFAULT_BASE);
        assert_eq!(
            timeout(60_000, None, "--timeout"),
            Ok(Duration::from_millis(62_400))
        );
    }

    #[test]
    fn a_given_limit_below_twice_the_cost_is_refused_naming_the_flag_and_the_default() {
        let error = timeout(
            leasesim_history::limits::DAY_MS,
            Some(Duration::from_secs(30)),
            "--timeout",
        )
        .unwrap_err();
        assert!(
            error.starts_with("--timeout 30s: the run reaches 86400 s"),
            "{error}"
        );
        assert!(error.contains("give --timeout 3516s"), "{error}");
        assert_eq!(
            timeout(
                leasesim_history::limits::DAY_MS,
                Some(Duration::from_secs(1728)),
                "--timeout"
            ),
            Ok(Duration::from_secs(1728))
        );
    }
}
