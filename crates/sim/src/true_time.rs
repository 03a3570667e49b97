//! True simulated time: the world's one clock for the whole simulation — turmoil's, or the
//! engine's when the world runs on it (docs/world.md#the-world-on-the-engine) — which every
//! [`super::clock::HostClock`] maps to a host's own local time. Its own module because the
//! clocks, the freezes, the recorder and the workload all read it.

use std::time::Duration;

/// The current true simulated time, to the nanosecond: the simulation's elapsed time inside a
/// turmoil host or client, the engine's true time inside an engine host
/// (`leasesim_engine::now_true`).
///
/// # Panics
/// Outside every host (turmoil and the engine only expose their time while a host runs).
/// From the nemesis, between steps, pass the world's time to the `*_at` methods instead.
pub fn true_now() -> Duration {
    try_true_now().expect(
        "a simulated host clock was read outside a turmoil host or client: \
         `turmoil::sim_elapsed()` only exists while a host runs (and the engine's true time \
         while an engine host runs). Read it from inside `sim.host`/`sim.client`, or from \
         outside use the `*_at(sim.elapsed())` methods",
    )
}

/// True simulated time inside a host of either engine; `None` outside every host.
pub(crate) fn try_true_now() -> Option<Duration> {
    leasesim_engine::try_now_true().or_else(turmoil::sim_elapsed)
}

/// Whether the caller runs in a task of an engine host (docs/world.md#the-world-on-the-engine).
pub(crate) fn on_engine_host() -> bool {
    leasesim_engine::try_now_true().is_some()
}

/// A timer on true time. Harness code only. Inside a turmoil host, tokio's time is the
/// simulation's, so this sleeps exactly `duration` of true time (rounded up to tokio's 1 ms
/// timer resolution, which is turmoil's default tick). Inside an engine host tokio's time is
/// the host's own clock, so the sleep is scaled by the host's drift at its start
/// (`leasesim_engine::local_delay`): a drift that changes during it moves its end, and
/// callers that need the exact end check true time again when it fires (the clocks' timers,
/// the gate and the recorder do).
// The system under test must never do this (clippy.toml); the harness measures freezes and
// per-host timers on true time, which is what tokio's clock is inside turmoil.
#[allow(clippy::disallowed_methods)]
pub(crate) fn true_sleep(duration: Duration) -> tokio::time::Sleep {
    if on_engine_host() && !duration.is_zero() {
        return tokio::time::sleep(leasesim_engine::local_delay(duration));
    }
    tokio::time::sleep(duration)
}
