//! True simulated time: turmoil's one clock for the whole simulation, which every
//! [`super::clock::HostClock`] maps to a host's own local time. Its own module because the
//! clocks, the freezes, the recorder and the workload all read it.

use std::time::Duration;

/// The current true simulated time: the simulation's elapsed time, to the nanosecond.
///
/// # Panics
/// Outside a turmoil host or client (turmoil only exposes its time while one of them runs).
/// From the nemesis, between steps, pass `sim.elapsed()` to the `*_at` methods instead.
pub fn true_now() -> Duration {
    turmoil::sim_elapsed().expect(
        "a simulated host clock was read outside a turmoil host or client: \
         `turmoil::sim_elapsed()` only exists while a host runs. Read it from inside \
         `sim.host`/`sim.client`, or from outside use the `*_at(sim.elapsed())` methods",
    )
}

/// A timer on true time. Harness code only: inside a turmoil host, tokio's time is the
/// simulation's, so this sleeps exactly `duration` of true time (rounded up to tokio's 1 ms
/// timer resolution, which is turmoil's default tick).
// The system under test must never do this (clippy.toml); the harness measures freezes and
// per-host timers on true time, which is what tokio's clock is inside turmoil.
#[allow(clippy::disallowed_methods)]
pub(crate) fn true_sleep(duration: Duration) -> tokio::time::Sleep {
    tokio::time::sleep(duration)
}
