//! The checks every run gets, whether it comes from a scenario file, from `leasesim run`'s
//! flags or from a run file (bad-input probe, D11): one code path, so a run file is refused
//! exactly where the scenario it came from would be. Scenario loading calls the pieces
//! ([`check_mix`], [`check_expect`], [`FaultSchedule::validate_in`]) to point at the line of
//! the offending value; [`validate`] applies them all to a resolved run.

use super::{Expect, RunWorkload, WorldSpec};
use crate::config::WorkloadMix;
use crate::schedule::{FaultSchedule, SCHEDULE_SCHEMA_VERSION};
use crate::script::SCRIPT_SCHEMA_VERSION;
use crate::versioned;
use leasesim_results::CoverageEvent;

pub use crate::plan::{APPENDS_MAX, THINK_MS_MAX};

/// A value a run cannot have: the field, dotted as in a run file (`world.sessions`,
/// `workload.generated.appends`, `schedule`, `expect.coverage`), and what is allowed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("`{field}`: {message}")]
pub struct Invalid {
    /// The field.
    pub field: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> Invalid {
    Invalid {
        field: field.into(),
        message: message.into(),
    }
}

/// Checks a generated workload's mix; `Err((field, message))` names the field of the mix.
pub fn check_mix(mix: &WorkloadMix) -> Result<(), (&'static str, String)> {
    let range = |field, (low, high): (u64, u64), max: u64| {
        if low > high || high > max {
            Err((
                field,
                format!("must be [least, most] with least <= most <= {max}, got [{low}, {high}]"),
            ))
        } else {
            Ok(())
        }
    };
    range("appends", mix.appends, APPENDS_MAX)?;
    range("think_ms", mix.think_ms, THINK_MS_MAX)?;
    let (numerator, denominator) = mix.shutdown_chance;
    if denominator == 0 || numerator > denominator {
        return Err((
            "shutdown_chance",
            format!(
                "odds are [numerator, denominator] with 0 <= numerator <= denominator and \
                 denominator >= 1 (e.g. [1, 25]), got [{numerator}, {denominator}]"
            ),
        ));
    }
    Ok(())
}

/// Checks expectations: no check both held and violated, every coverage event known;
/// `Err((field, message))` names the field of `expect`.
pub fn check_expect(expect: &Expect) -> Result<(), (&'static str, String)> {
    if let Some(check) = expect.hold.iter().find(|c| expect.violate.contains(c)) {
        return Err((
            "hold",
            format!("`{check}` is in both `hold` and `violate`; keep it in one"),
        ));
    }
    for name in &expect.coverage {
        name.parse::<CoverageEvent>()
            .map_err(|unknown| ("coverage", unknown.to_string()))?;
    }
    Ok(())
}

/// Checks a whole run: the world's values, the workload (a mix's ranges, a plan's runs
/// against the world, or a script's schema version and its calls against the world), the schedule (its schema version, and
/// against the world: hosts, sessions, values, the heal within the run, the whole run within
/// [`crate::schedule::limits::RUN_MS_MAX`]) and the expectations.
///
/// # Errors
/// The first value refused, naming its field.
pub fn validate(
    world: &WorldSpec,
    workload: &RunWorkload,
    schedule: &FaultSchedule,
    liveness_phase: bool,
    expect: &Expect,
) -> Result<(), Invalid> {
    world
        .check()
        .map_err(|(field, message)| invalid(format!("world.{field}"), message))?;
    let mut config = world.config(0, workload.mix());
    config.liveness_phase = liveness_phase;
    match workload {
        RunWorkload::Generated(mix) => check_mix(mix)
            .map_err(|(field, message)| invalid(format!("workload.generated.{field}"), message))?,
        RunWorkload::Plan(plan) => plan
            .check(world.replicas, &world.sessions)
            .map_err(|message| invalid("workload.plan", message))?,
        RunWorkload::Script(script) => {
            versioned::check("script", script.v, SCRIPT_SCHEMA_VERSION)
                .map_err(|message| invalid("workload.script.v", message))?;
            crate::world::check_script(&config, script)
                .map_err(|e| invalid("workload.script", e.to_string()))?;
        }
    }
    versioned::check("schedule", schedule.v, SCHEDULE_SCHEMA_VERSION)
        .map_err(|message| invalid("schedule.v", message))?;
    schedule
        .validate_in(&config.schedule_bounds())
        .map_err(|e| invalid("schedule", e.to_string()))?;
    check_expect(expect).map_err(|(field, message)| invalid(format!("expect.{field}"), message))
}
