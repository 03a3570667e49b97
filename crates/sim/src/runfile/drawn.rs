//! The swarm options one seed drew (Groce et al. 2012, "Swarm testing"), as a run file
//! records them: the schedule in the run file was drawn from them and is what runs.

use serde::{Deserialize, Serialize};

use crate::config::WorldConfig;
use crate::generate::{
    DrawOptions, FaultKind, Intensity, REPLICA_POINTS, draw_schedule, fit_to_backend,
};
use crate::schedule::FaultSchedule;
use crate::seed::{Subsystem, rng};
use leasesim_core::hooks::PausePoint;

/// What one seed drew from a profile: the kinds turned on, how many faults, when they heal
/// and how hard (ms, ppm). Printed by `leasesim run` and stored in the run file.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Drawn {
    /// The kinds turned on (a non-empty subset of the profile's, in its order).
    pub kinds: Vec<FaultKind>,
    /// How many faults the schedule has (before crashed services' restarts).
    pub faults: u64,
    /// When everything heals, ms from the start.
    pub heal_at_ms: u64,
    /// The ranges faults draw their strength from.
    pub intensity: Intensity,
    /// The pause points a pause at a point, a stall or a worker panic is drawn at (the
    /// profile's `points`); left out of the file when it is every point a replica reaches
    /// ([`REPLICA_POINTS`]), so a run file from before the field reads as it was drawn.
    #[serde(
        default = "replica_points",
        skip_serializing_if = "is_every_replica_point"
    )]
    pub points: Vec<PausePoint>,
    /// The replica this seed aims every replica's fault at (the profile's `victim_chance`
    /// came up); left out of the file when none, as run files from before the field read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub victim: Option<String>,
    /// Odds a fault striking one replica is aimed at a session's holder instead
    /// ([`DrawOptions::holder_chance`]); left out of the file when none, as run files from
    /// before the field read (their schedules carry no target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_chance: Option<(u32, u32)>,
}

fn replica_points() -> Vec<PausePoint> {
    REPLICA_POINTS.to_vec()
}

fn is_every_replica_point(points: &[PausePoint]) -> bool {
    points == REPLICA_POINTS
}

impl Drawn {
    /// The options the schedule is drawn with: a swarm pauses and stalls replicas at its
    /// `points` (by default every point they reach, [`REPLICA_POINTS`]), aims every
    /// replica's fault at its victim if it drew one, else some at sessions' holders.
    pub fn options(&self) -> DrawOptions {
        DrawOptions {
            kinds: self.kinds.clone(),
            faults: (self.faults, self.faults),
            heal_at_ms: self.heal_at_ms,
            intensity: self.intensity.clone(),
            points: self.points.clone(),
            victim: self.victim.clone(),
            holder_chance: self.holder_chance,
        }
    }

    /// The seed's schedule, drawn on its `Faults` stream.
    pub fn schedule(&self, config: &WorldConfig) -> FaultSchedule {
        let schedule = draw_schedule(
            &self.options(),
            config,
            &mut rng(config.seed, Subsystem::Faults),
        );
        fit_to_backend(schedule, &config.backend.view(), config.skew_margin_percent)
    }

    /// One line: the kinds, the count, the heal and the strength of the kinds turned on.
    pub fn summary(&self) -> String {
        let kinds: Vec<&str> = self.kinds.iter().map(|k| k.name()).collect();
        let mut line = format!(
            "kinds={} faults={} heal_at={}ms",
            kinds.join(","),
            self.faults,
            self.heal_at_ms
        );
        let i = &self.intensity;
        let on = |kind: FaultKind| self.kinds.contains(&kind);
        let mut add = |name: &str, (low, high): (String, String)| {
            line += &format!(" {name}={low}..{high}");
        };
        let u = |(a, b): (u64, u64)| (a.to_string(), b.to_string());
        if on(FaultKind::Pause) || on(FaultKind::Suspend) {
            add("freeze_ms", u(i.freeze_ms));
        }
        if on(FaultKind::Stall) {
            add("stall_ms", u(i.stall_ms));
        }
        if on(FaultKind::ClockDrift) {
            add(
                "drift_ppm",
                (i.drift_ppm.0.to_string(), i.drift_ppm.1.to_string()),
            );
        }
        if on(FaultKind::WallJump) {
            add(
                "wall_jump_ms",
                (i.wall_jump_ms.0.to_string(), i.wall_jump_ms.1.to_string()),
            );
        }
        if on(FaultKind::LeaseServiceRestarts) {
            add("restart_every_ms", u(i.restart_every_ms));
            add(
                "restarts",
                (i.restarts.0.to_string(), i.restarts.1.to_string()),
            );
        }
        if on(FaultKind::Latency) {
            add("latency_ms", u(i.latency_ms));
            add("jitter_ms", u(i.jitter_ms));
        }
        if on(FaultKind::LinkFlaps) {
            add(
                "flap_ppm",
                (i.flap_ppm.0.to_string(), i.flap_ppm.1.to_string()),
            );
        }
        if on(FaultKind::DelayReplies) || on(FaultKind::HoldReplies) {
            add("delay_ms", u(i.delay_ms));
        }
        if on(FaultKind::CrashService) || on(FaultKind::AuthorityErrors) {
            add("downtime_ms", u(i.downtime_ms));
        }
        if on(FaultKind::DeleteLeaseRecord) {
            add("gc_sweeps", u(i.gc_sweeps));
        }
        let at_points = on(FaultKind::Pause) || on(FaultKind::Stall) || on(FaultKind::WorkerPanic);
        if at_points && !is_every_replica_point(&self.points) {
            let names: Vec<&str> = self.points.iter().map(|p| p.name()).collect();
            line += &format!(" points={}", names.join(","));
        }
        if let Some(victim) = &self.victim {
            line += &format!(" victim={victim}");
        }
        if let Some((numerator, denominator)) = self.holder_chance {
            line += &format!(" holder_chance={numerator}/{denominator}");
        }
        line
    }
}
