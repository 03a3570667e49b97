//! The bounds of the harness's input formats — run files, scenarios, fault schedules, swarm
//! profiles — each defined once here and derived from [`DAY_MS`] where it is "one simulated
//! day" (docs/world.md#limits). They keep every accepted run short enough to finish before
//! its wall-clock timeout and its arithmetic of time far from overflow; the format's own
//! bound on any time is [`crate::MAX_TIME_US`].

/// One simulated day, ms: the unit the bounds below are given in.
pub const DAY_MS: u64 = 24 * 60 * 60 * 1_000;

/// Latest true simulated time a whole run may reach, its liveness phase included, ms (one day).
pub const RUN_MS_MAX: u64 = DAY_MS;

/// Longest simulated duration of a run, s (one day: a run file's or scenario's `duration_s`,
/// `leasesim run --duration`).
pub const DURATION_S_MAX: u64 = RUN_MS_MAX / 1_000;

/// Longest lease TTL, ms (one day: `ttl_ms`, `replica_ttl_ms`). A run's liveness phase, about
/// 3 TTLs after the heal, must also fit [`RUN_MS_MAX`].
pub const TTL_MS_MAX: u64 = DAY_MS;

/// Longest call timeout of a replica, ms (one day: `call_timeout_ms`).
pub const CALL_TIMEOUT_MS_MAX: u64 = DAY_MS;

/// Longest duration of one fault — a freeze, delay, latency plus jitter, error window or
/// restart interval — ms (one day; a schedule's and a swarm profile's).
pub const DURATION_MS_MAX: u64 = DAY_MS;

/// Most lease service restarts one fault may ask for.
pub const RESTARTS_MAX: u32 = 1_000;

/// Largest wall-clock step or offset, ms, either way (100 Julian years).
pub const WALL_MS_MAX: i64 = 36_525 * DAY_MS as i64;

/// Largest link failure rate, ppm per tick (certain failure).
pub const FAIL_PPM_MAX: u32 = 1_000_000;

/// Most replica hosts a world may have (`replicas`, `leasesim run --replicas`,
/// `WorldBuilder::replicas`; docs/world.md#worlds-of-any-size). Host names, the history and
/// the reports take any number; the bound keeps a mistyped count from building a world that
/// cannot finish.
pub const REPLICAS_MAX: u32 = 1_000;

/// Replicas per session when a world does not name its sessions: `max(2, replicas / 10)`
/// sessions (docs/world.md#worlds-of-any-size).
pub const REPLICAS_PER_SESSION: u32 = 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_day_bounds_are_the_numbers_the_formats_document() {
        assert_eq!(DAY_MS, 86_400_000);
        assert_eq!(DURATION_S_MAX, 86_400);
        assert_eq!(
            [RUN_MS_MAX, TTL_MS_MAX, CALL_TIMEOUT_MS_MAX, DURATION_MS_MAX],
            [86_400_000; 4]
        );
        assert_eq!(WALL_MS_MAX, 3_155_760_000_000);
    }
}
