//! Swarm testing (Groce, Zhang, Eide, Chen and Regehr, "Swarm testing", ISSTA 2012): rather
//! than every run drawing from every fault kind at once, each seed turns on a random subset
//! of the profile's kinds and a random strength for each, so that some runs are all pauses,
//! some all clock faults, some a mix — faults that mask each other in an all-kinds run get
//! runs of their own.
//!
//! A seed's choices come from its own stream ([`Subsystem::Swarm`]), so they reshuffle neither
//! the workload nor the faults; the schedule itself is then drawn by the one drawing code path,
//! [`crate::sim::generate::draw_schedule`], on the `Faults` stream.

use serde::{Deserialize, Serialize};

use crate::hooks::PausePoint;
use crate::sim::backend::AuthorityKind;
use crate::sim::config::WorldConfig;
use crate::sim::generate::{
    DECISION_POINTS, FaultKind, Intensity, REPLICA_POINTS, SWARM_HOLDER_CHANCE, lacked_capability,
    replica,
};
use crate::sim::runfile::Drawn;
use crate::sim::schedule::{ErrorStatus, check_run_end, limits};
use crate::sim::seed::{Subsystem, between, chance, rng};

/// A swarm profile: a scenario's `[faults.swarm]` section.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwarmProfile {
    /// The fault kinds a seed may turn on (each seed turns on a random non-empty subset).
    pub kinds: Vec<FaultKind>,
    /// Odds `[numerator, denominator]` that a seed turns each of `kinds` on; `None` (left
    /// out): one in two, swarm testing's coin per feature (Groce et al., ISSTA 2012). A seed
    /// that turned none on takes one drawn uniformly. A profile whose fault class is two
    /// kinds meeting on one host (a write's reply held while its holder is paused) turns
    /// both on in one seed in four at the default odds; `[1, 1]` turns every kind on in every
    /// seed. The same draws are made at any odds, so a profile's other choices do not move.
    /// Refused: a numerator of 0, a denominator of 0, or a numerator above it.
    #[serde(default, deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub kind_chance: Option<(u32, u32)>,
    /// Faults per run, `[least, most]` (at most 100).
    #[serde(deserialize_with = "crate::sim::runfile::pair::exact")]
    pub faults: (u64, u64),
    /// When everything heals, in percent of the run's duration (default 66); the rest of the
    /// run shows recovery (LIVE).
    #[serde(default = "default_heal_at_percent")]
    pub heal_at_percent: u8,
    /// The pause points a `pause` at a point, a `stall` or a `worker_panic` of a replica is
    /// drawn at, uniformly, each named once in the schedule's words (`before_append_send`);
    /// `None` (the field left out): every point a replica reaches on every backend
    /// ([`REPLICA_POINTS`]); a profile on a backend whose client decides from a read
    /// (`kube`) may name [`DECISION_POINTS`] too, refused on one whose authority decides. A
    /// profile narrows them so its freezes land where the decision it is about is made (a
    /// pause between an append's check and its send is what a fence has to refuse). A
    /// `worker_panic` drawn at a point no run's work reaches panics at one of
    /// [`PausePoint::WORKER`] instead. Refused: a word that is not a replica's point (the
    /// error lists them), an empty list, a point named twice, or `points` without a kind that
    /// uses them.
    #[serde(default, deserialize_with = "replica_points")]
    pub points: Option<Vec<PausePoint>>,
    /// Odds `[numerator, denominator]` that a seed aims every fault it draws for a replica
    /// at one replica, its victim (drawn uniformly for the seed); `None` (left out): each
    /// fault draws its own replica. A race that needs several faults on one host — a slow
    /// clock, renewals cut off and a long run of appends, all on the holder a contender takes
    /// over from — is one that independent draws over `n` replicas meet about `1/n` as often
    /// per extra fault. Refused: a denominator of 0, a numerator above it, or `kinds` that
    /// all strike services.
    #[serde(default, deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub victim_chance: Option<(u32, u32)>,
    /// How hard faults may be; each seed draws a sub-range of each range.
    #[serde(default)]
    pub intensity: IntensityProfile,
}

/// The kinds a profile's `points` apply to.
const POINT_KINDS: [FaultKind; 3] = [FaultKind::Pause, FaultKind::Stall, FaultKind::WorkerPanic];

/// The kinds that never name a replica, so a victim does not change them.
const SERVICE_KINDS: [FaultKind; 3] = [
    FaultKind::LeaseServiceRestarts,
    FaultKind::CrashService,
    FaultKind::DeleteLeaseRecord,
];

/// The names of [`REPLICA_POINTS`] and [`DECISION_POINTS`], comma-separated: the list an
/// error at an unknown word gives.
fn replica_point_names() -> String {
    let names: Vec<&str> = swarm_points().map(|p| p.name()).collect();
    names.join(", ")
}

/// The names of [`REPLICA_POINTS`], comma-separated: what a profile without `points` draws.
fn default_point_names() -> String {
    let names: Vec<&str> = REPLICA_POINTS.iter().map(|p| p.name()).collect();
    names.join(", ")
}

/// The points a profile may name: [`REPLICA_POINTS`], then [`DECISION_POINTS`].
fn swarm_points() -> impl Iterator<Item = PausePoint> {
    REPLICA_POINTS.into_iter().chain(DECISION_POINTS)
}

/// Reads `points`: each word one of [`REPLICA_POINTS`] or [`DECISION_POINTS`], or an error at
/// that word naming the points a swarm may draw.
fn replica_points<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<PausePoint>>, D::Error> {
    /// One word of `points`.
    struct Word(PausePoint);
    impl<'de> Deserialize<'de> for Word {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            let word = String::deserialize(deserializer)?;
            match swarm_points().find(|point| point.name() == word) {
                Some(point) => Ok(Word(point)),
                None => {
                    let why = if PausePoint::ALL.iter().any(|point| point.name() == word) {
                        "is a service host's pause point, not a replica's"
                    } else {
                        "is not a pause point"
                    };
                    Err(serde::de::Error::custom(format!(
                        "`{word}` {why}; a swarm pauses and stalls replicas at {}",
                        replica_point_names()
                    )))
                }
            }
        }
    }
    let words: Vec<Word> = Vec::deserialize(deserializer)?;
    Ok(Some(words.into_iter().map(|Word(point)| point).collect()))
}

fn default_heal_at_percent() -> u8 {
    66
}

/// The `[faults.swarm.intensity]` section: ranges `[least, most]`, each optional (default:
/// [`Intensity::for_ttl`]'s). TTL-relative ranges are in percent of the world's TTL.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntensityProfile {
    /// Pause and suspend length, percent of the TTL (default `[50, 200]`).
    #[serde(deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub freeze_ttl_percent: Option<(u64, u64)>,
    /// Stall length, ms (default `[100, ttl]`).
    #[serde(deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub stall_ms: Option<(u64, u64)>,
    /// Clock drift, ppm (default `[-400000, 400000]`).
    #[serde(deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub drift_ppm: Option<(i64, i64)>,
    /// Wall-clock steps, ms, negative back (default `[-3600000, 3600000]`).
    #[serde(deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub wall_jump_ms: Option<(i64, i64)>,
    /// Interval between lease service restarts, ms (default `[1000, ttl]`).
    #[serde(deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub restart_every_ms: Option<(u64, u64)>,
    /// Lease service restarts per fault (default `[1, 3]`).
    #[serde(deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub restarts: Option<(u32, u32)>,
    /// Least latency of a slowed link, ms (default `[1, 200]`).
    #[serde(deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub latency_ms: Option<(u64, u64)>,
    /// Jitter on a slowed link, ms (default `[0, 200]`).
    #[serde(deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub jitter_ms: Option<(u64, u64)>,
    /// Link failure rate of a flapping link, ppm per tick (default `[1, 2000]`).
    #[serde(deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub flap_ppm: Option<(u32, u32)>,
    /// Lease replies held back, percent of the TTL (default `[100, 200]`).
    #[serde(deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub delay_ttl_percent: Option<(u64, u64)>,
    /// Downtime of a crashed service before its restart, ms (default `[1000, ttl]`).
    #[serde(deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub downtime_ms: Option<(u64, u64)>,
    /// Sweeps of a record collector (`delete_lease_record`), one a second (default `[1, 20]`).
    #[serde(deserialize_with = "crate::sim::runfile::pair::exact_option")]
    pub gc_sweeps: Option<(u64, u64)>,
    /// The statuses an `authority_errors` window draws from, each once (default
    /// [`ErrorStatus::DRAWN_BY_DEFAULT`]: `internal`, `unavailable`, `permission_denied`).
    pub error_statuses: Option<Vec<ErrorStatus>>,
}

impl IntensityProfile {
    /// The full ranges for a world whose TTL is `ttl_ms`.
    pub fn resolve(&self, ttl_ms: u64) -> Intensity {
        let base = Intensity::for_ttl(ttl_ms);
        let percent = |(low, high): (u64, u64)| (ttl_ms * low / 100, ttl_ms * high / 100);
        Intensity {
            freeze_ms: self.freeze_ttl_percent.map_or(base.freeze_ms, percent),
            stall_ms: self.stall_ms.unwrap_or(base.stall_ms),
            drift_ppm: self.drift_ppm.unwrap_or(base.drift_ppm),
            wall_jump_ms: self.wall_jump_ms.unwrap_or(base.wall_jump_ms),
            restart_every_ms: self.restart_every_ms.unwrap_or(base.restart_every_ms),
            restarts: self.restarts.unwrap_or(base.restarts),
            latency_ms: self.latency_ms.unwrap_or(base.latency_ms),
            jitter_ms: self.jitter_ms.unwrap_or(base.jitter_ms),
            flap_ppm: self.flap_ppm.unwrap_or(base.flap_ppm),
            delay_ms: self.delay_ttl_percent.map_or(base.delay_ms, percent),
            downtime_ms: self.downtime_ms.unwrap_or(base.downtime_ms),
            gc_sweeps: self.gc_sweeps.unwrap_or(base.gc_sweeps),
            error_statuses: self.error_statuses.clone().unwrap_or(base.error_statuses),
        }
    }

    /// Checks every range given; `Err((field, message))`.
    fn check(&self) -> Result<(), (String, String)> {
        fn unsigned<T: Into<u64>>(
            field: &str,
            range: Option<(T, T)>,
            least: u64,
            most: u64,
        ) -> Result<(), (String, String)> {
            match range.map(|(low, high)| (low.into(), high.into())) {
                Some((low, high)) if low > high || low < least || high > most => Err((
                    format!("intensity.{field}"),
                    format!(
                        "must be [least, most] with {least} <= least <= most <= {most}, got \
                         [{low}, {high}]"
                    ),
                )),
                _ => Ok(()),
            }
        }
        fn signed(
            field: &str,
            range: Option<(i64, i64)>,
            bound: i64,
        ) -> Result<(), (String, String)> {
            match range {
                Some((low, high)) if low > high || low < -bound || high > bound => Err((
                    format!("intensity.{field}"),
                    format!(
                        "must be [least, most] with -{bound} <= least <= most <= {bound}, got \
                         [{low}, {high}]"
                    ),
                )),
                _ => Ok(()),
            }
        }
        unsigned("freeze_ttl_percent", self.freeze_ttl_percent, 1, 10_000)?;
        unsigned("stall_ms", self.stall_ms, 1, limits::DURATION_MS_MAX)?;
        signed("drift_ppm", self.drift_ppm, 999_999)?;
        signed("wall_jump_ms", self.wall_jump_ms, limits::WALL_MS_MAX)?;
        unsigned(
            "restart_every_ms",
            self.restart_every_ms,
            1,
            limits::DURATION_MS_MAX,
        )?;
        unsigned("restarts", self.restarts, 1, limits::RESTARTS_MAX.into())?;
        unsigned("latency_ms", self.latency_ms, 0, 60_000)?;
        unsigned("jitter_ms", self.jitter_ms, 0, 60_000)?;
        unsigned("flap_ppm", self.flap_ppm, 0, limits::FAIL_PPM_MAX.into())?;
        unsigned("delay_ttl_percent", self.delay_ttl_percent, 1, 10_000)?;
        unsigned("downtime_ms", self.downtime_ms, 1, limits::DURATION_MS_MAX)?;
        unsigned("gc_sweeps", self.gc_sweeps, 1, 1_000)?;
        check_error_statuses(self.error_statuses.as_deref())
    }
}

/// `error_statuses`, when given: at least one, none twice.
fn check_error_statuses(statuses: Option<&[ErrorStatus]>) -> Result<(), (String, String)> {
    let Some(statuses) = statuses else {
        return Ok(());
    };
    let field = "intensity.error_statuses".to_owned();
    if statuses.is_empty() {
        return Err((field, "must name at least one status".into()));
    }
    for (index, status) in statuses.iter().enumerate() {
        if statuses[..index].contains(status) {
            let message = format!("names {status:?} twice; name each status once");
            return Err((field, message));
        }
    }
    Ok(())
}

impl SwarmProfile {
    /// Checks the profile; `Err((field, message))` names the field (relative to
    /// `[faults.swarm]`) and what is allowed.
    pub fn check(&self) -> Result<(), (String, String)> {
        if self.kinds.is_empty() {
            let all: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
            return Err((
                "kinds".into(),
                format!(
                    "give at least one fault kind; the kinds are {}",
                    all.join(", ")
                ),
            ));
        }
        let (low, high) = self.faults;
        if low > high || high > 100 {
            return Err((
                "faults".into(),
                format!(
                    "must be [least, most] faults per run with least <= most <= 100, got \
                     [{low}, {high}]"
                ),
            ));
        }
        if !(1..=100).contains(&self.heal_at_percent) {
            return Err((
                "heal_at_percent".into(),
                format!("must be 1..=100, got {}", self.heal_at_percent),
            ));
        }
        self.check_points()?;
        self.check_kind_chance()?;
        self.check_victim_chance()?;
        self.intensity.check()
    }

    /// Checks `kind_chance`: odds that can turn a kind on.
    fn check_kind_chance(&self) -> Result<(), (String, String)> {
        match self.kind_chance {
            Some((numerator, denominator))
                if numerator == 0 || denominator == 0 || numerator > denominator =>
            {
                Err((
                    "kind_chance".to_owned(),
                    format!(
                        "odds are [numerator, denominator] with 1 <= numerator <= denominator \
                         (e.g. [1, 1]: every kind in every seed), got [{numerator}, {denominator}]"
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Checks `victim_chance`: odds, and a kind in `kinds` that names a replica.
    fn check_victim_chance(&self) -> Result<(), (String, String)> {
        let Some((numerator, denominator)) = self.victim_chance else {
            return Ok(());
        };
        let refuse = |message: String| Err(("victim_chance".to_owned(), message));
        if denominator == 0 || numerator > denominator {
            return refuse(format!(
                "odds are [numerator, denominator] with 0 <= numerator <= denominator and \
                 denominator >= 1 (e.g. [1, 2]), got [{numerator}, {denominator}]"
            ));
        }
        if self.kinds.iter().all(|kind| SERVICE_KINDS.contains(kind)) {
            return refuse(
                "every kind in `kinds` strikes a service, none a replica, so there is nothing \
                 to aim at a victim; add a replica's kind or remove `victim_chance`"
                    .to_owned(),
            );
        }
        Ok(())
    }

    /// Checks `points`: non-empty, each point once, and a kind in `kinds` that uses them.
    fn check_points(&self) -> Result<(), (String, String)> {
        let Some(points) = &self.points else {
            return Ok(());
        };
        let refuse = |message: String| Err(("points".to_owned(), message));
        if points.is_empty() {
            return refuse(format!(
                "give at least one pause point, or leave `points` out to draw from every one \
                 a replica reaches: {}",
                default_point_names()
            ));
        }
        let twice = (1..points.len()).find(|&i| points[..i].contains(&points[i]));
        if let Some(point) = twice.map(|i| points[i]) {
            return refuse(format!(
                "`{}` is named twice; name each point once",
                point.name()
            ));
        }
        if !self.kinds.iter().any(|kind| POINT_KINDS.contains(kind)) {
            let names: Vec<&str> = POINT_KINDS.iter().map(|k| k.name()).collect();
            return refuse(format!(
                "only {} draw a pause point, and none of them is in `kinds`; add one or \
                 remove `points`",
                names.join(", ")
            ));
        }
        Ok(())
    }

    /// Checks the profile against the world it draws for (`config`: its TTL, duration and
    /// liveness phase), so that every seed draws a schedule the world takes: each range of a
    /// kind in `kinds`, resolved for the TTL, within the schedule's limit
    /// ([`limits::DURATION_MS_MAX`]), and the longest run it can draw within
    /// [`limits::RUN_MS_MAX`]. `Err((field, message))` names the field (relative to
    /// `[faults.swarm]`) and the limit.
    pub fn check_in(&self, config: &WorldConfig) -> Result<(), (String, String)> {
        self.check_backend(config)?;
        let ttl_ms = config.ttl.as_millis() as u64;
        let full = self.intensity.resolve(ttl_ms);
        let on = |kinds: &[FaultKind]| kinds.iter().any(|k| self.kinds.contains(k));
        let ranges = [
            (
                on(&[FaultKind::Pause, FaultKind::Suspend]),
                "freeze_ttl_percent",
                full.freeze_ms,
            ),
            (on(&[FaultKind::Stall]), "stall_ms", full.stall_ms),
            (
                on(&[FaultKind::DelayReplies, FaultKind::HoldReplies]),
                "delay_ttl_percent",
                full.delay_ms,
            ),
            (
                on(&[FaultKind::LeaseServiceRestarts]),
                "restart_every_ms",
                full.restart_every_ms,
            ),
            (
                on(&[FaultKind::CrashService, FaultKind::AuthorityErrors]),
                "downtime_ms",
                full.downtime_ms,
            ),
            (
                on(&[FaultKind::Latency]),
                "latency_ms",
                (0, full.latency_ms.1.saturating_add(full.jitter_ms.1)),
            ),
        ];
        for (_, field, (_, most)) in ranges.iter().filter(|(on, ..)| *on) {
            if *most > limits::DURATION_MS_MAX {
                return Err((
                    format!("intensity.{field}"),
                    format!(
                        "draws faults of up to {most} ms with ttl_ms = {ttl_ms}, over the \
                         schedule's limit of {} ms per fault; lower the range (or the TTL)",
                        limits::DURATION_MS_MAX
                    ),
                ));
            }
        }
        let (heal_ms, freeze_end_ms) = self.latest_heal_and_freeze_end_ms(config);
        limits_check(config, heal_ms, freeze_end_ms)
    }

    /// The latest true simulated time a run of `config` drawn from this profile can reach,
    /// ms ([`crate::sim::schedule::run_end_ms`] with the longest freeze drawn just before the
    /// heal): what bounds a campaign's wall-clock timeout for it.
    pub fn longest_run_end_ms(&self, config: &WorldConfig) -> u64 {
        let (heal_ms, freeze_end_ms) = self.latest_heal_and_freeze_end_ms(config);
        crate::sim::schedule::run_end_ms(&config.schedule_bounds(), heal_ms, freeze_end_ms)
    }

    /// The heal, ms, and the latest a freeze drawn just before it can end, ms.
    fn latest_heal_and_freeze_end_ms(&self, config: &WorldConfig) -> (u64, u64) {
        let full = self.intensity.resolve(config.ttl.as_millis() as u64);
        let on = |kinds: &[FaultKind]| kinds.iter().any(|k| self.kinds.contains(k));
        let freeze_ms = [
            (
                on(&[FaultKind::Pause, FaultKind::Suspend]),
                full.freeze_ms.1,
            ),
            (on(&[FaultKind::Stall]), full.stall_ms.1),
        ]
        .into_iter()
        .filter_map(|(on, most)| on.then_some(most))
        .max()
        .unwrap_or(0);
        let heal_ms = config.duration.as_millis() as u64 * u64::from(self.heal_at_percent) / 100;
        (heal_ms, heal_ms.saturating_add(freeze_ms))
    }
}

impl SwarmProfile {
    /// The profile's kinds a world of `config` never draws: those its backend lacks a
    /// capability for (freezes or drift, for code the world hosts unmodified;
    /// docs/targets.md#what-a-target-world-refuses). The campaign's banner names them.
    pub fn left_out(&self, config: &WorldConfig) -> Vec<FaultKind> {
        let view = config.backend.view();
        self.kinds
            .iter()
            .filter(|kind| lacked_capability(&view, **kind).is_some())
            .copied()
            .collect()
    }

    /// A kind the world's backend cannot take would be dropped from every drawn schedule
    /// while the banner says it was drawn: refused instead, naming the backend. Kinds it
    /// lacks a capability for are left out instead ([`SwarmProfile::left_out`]), unless
    /// that leaves none.
    fn check_backend(&self, config: &WorldConfig) -> Result<(), (String, String)> {
        let view = config.backend.view();
        let decision_point = self
            .points
            .iter()
            .flatten()
            .find(|p| DECISION_POINTS.contains(p));
        if let (Some(point), AuthorityKind::Decides) = (decision_point, view.authority) {
            return Err((
                "points".into(),
                format!(
                    "no replica of the {} backend reaches `{}`: its authority decides, its \
                     client sends the call and reads no state to decide from \
                     (docs/world.md#freezes-and-pause-points); remove it from `points`",
                    config.backend.name(),
                    point.name()
                ),
            ));
        }
        if self.left_out(config).len() == self.kinds.len() {
            return Err((
                "kinds".into(),
                format!(
                    "the {} backend lacks what every kind of this profile needs ({}; \
                     docs/targets.md#what-a-target-world-refuses); add a kind it takes",
                    config.backend.name(),
                    self.kinds
                        .iter()
                        .filter_map(|kind| lacked_capability(&view, *kind)
                            .map(|lacks| format!("`{}` needs {lacks}", kind.name())))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        let unsupported = |kind: &FaultKind| match kind {
            FaultKind::DeleteLeaseRecord => !view.record_deletion,
            FaultKind::AuthorityErrors => !view.error_windows,
            _ => false,
        };
        match self.kinds.iter().find(|kind| unsupported(kind)) {
            Some(kind) => Err((
                "kinds".into(),
                format!(
                    "`{}` cannot happen on the {} backend (docs/backends.md); remove it \
                     from this profile's kinds",
                    kind.name(),
                    config.backend.name()
                ),
            )),
            None => Ok(()),
        }
    }
}

/// [`check_run_end`] for a profile: a freeze drawn just before the heal holds it back.
fn limits_check(
    config: &WorldConfig,
    heal_ms: u64,
    freeze_end_ms: u64,
) -> Result<(), (String, String)> {
    check_run_end(&config.schedule_bounds(), heal_ms, freeze_end_ms).map_err(|message| {
        let field = if freeze_end_ms > heal_ms {
            "intensity.freeze_ttl_percent"
        } else {
            "heal_at_percent"
        };
        (field.to_owned(), message)
    })
}

/// The odds a seed turns each of a profile's kinds on when it names none (`kind_chance`).
pub const DEFAULT_KIND_CHANCE: (u32, u32) = (1, 2);

/// The kinds a seed turns on: each of `profile`'s kinds the world's backend can take
/// ([`SwarmProfile::left_out`] are not drawn) with the profile's `kind_chance`, one coin per
/// kind in order, or, if none came up, one of them drawn uniformly. Never empty.
fn draw_kinds(
    profile: &SwarmProfile,
    config: &WorldConfig,
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Vec<FaultKind> {
    let left_out = profile.left_out(config);
    let drawable: Vec<FaultKind> = profile
        .kinds
        .iter()
        .filter(|kind| !left_out.contains(kind))
        .copied()
        .collect();
    let (numerator, denominator) = profile.kind_chance.unwrap_or(DEFAULT_KIND_CHANCE);
    let mut kinds: Vec<FaultKind> = Vec::new();
    for kind in &drawable {
        if chance(rng, numerator, denominator) && !kinds.contains(kind) {
            kinds.push(*kind);
        }
    }
    if kinds.is_empty() {
        let last = drawable.len().saturating_sub(1) as u64;
        kinds.push(drawable[between(rng, 0, last) as usize]);
    }
    kinds
}

/// Draws a seed's options from `profile` for `config` (its seed, TTL and duration), from the
/// profile's kinds the world's backend can take ([`SwarmProfile::left_out`] are not drawn).
pub fn draw(profile: &SwarmProfile, config: &WorldConfig) -> Drawn {
    let mut rng = rng(config.seed, Subsystem::Swarm);
    let kinds = draw_kinds(profile, config, &mut rng);
    let faults = between(&mut rng, profile.faults.0, profile.faults.1);
    let heal_at_ms = config.duration.as_millis() as u64 * u64::from(profile.heal_at_percent) / 100;
    let full = profile.intensity.resolve(config.ttl.as_millis() as u64);
    let mut sub = |(low, high): (u64, u64)| {
        let (a, b) = (between(&mut rng, low, high), between(&mut rng, low, high));
        (a.min(b), a.max(b))
    };
    let mut intensity = Intensity {
        freeze_ms: sub(full.freeze_ms),
        stall_ms: sub(full.stall_ms),
        drift_ppm: (0, 0),
        wall_jump_ms: (0, 0),
        restart_every_ms: sub(full.restart_every_ms),
        restarts: (0, 0),
        latency_ms: sub(full.latency_ms),
        jitter_ms: sub(full.jitter_ms),
        flap_ppm: (0, 0),
        delay_ms: sub(full.delay_ms),
        downtime_ms: sub(full.downtime_ms),
        gc_sweeps: sub(full.gc_sweeps),
        // Taken whole: no draw, so the seed's other draws stay where they were.
        error_statuses: full.error_statuses.clone(),
    };
    let widen = |(a, b): (u32, u32)| (u64::from(a), u64::from(b));
    let narrow = |(a, b): (u64, u64)| (a as u32, b as u32);
    intensity.restarts = narrow(sub(widen(full.restarts)));
    intensity.flap_ppm = narrow(sub(widen(full.flap_ppm)));
    let mut signed = |(low, high): (i64, i64)| {
        let span = high.abs_diff(low);
        let (a, b) = (between(&mut rng, 0, span), between(&mut rng, 0, span));
        (low + a.min(b) as i64, low + a.max(b) as i64)
    };
    intensity.drift_ppm = signed(full.drift_ppm);
    intensity.wall_jump_ms = signed(full.wall_jump_ms);
    // Drawn last, and only for a profile that asks: every other profile's seeds draw as
    // they did before the field.
    let victim = profile.victim_chance.and_then(|(numerator, denominator)| {
        chance(&mut rng, numerator, denominator).then(|| replica(&mut rng, config))
    });
    // A victim is every fault's target already.
    let holder_chance = victim.is_none().then_some(SWARM_HOLDER_CHANCE);
    Drawn {
        kinds,
        faults,
        heal_at_ms,
        intensity,
        points: profile
            .points
            .clone()
            .unwrap_or_else(|| REPLICA_POINTS.to_vec()),
        victim,
        holder_chance,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> SwarmProfile {
        SwarmProfile {
            kinds: FaultKind::ALL.to_vec(),
            kind_chance: None,
            faults: (1, 8),
            heal_at_percent: 66,
            points: None,
            victim_chance: None,
            intensity: IntensityProfile::default(),
        }
    }

    #[test]
    fn seeds_draw_different_non_empty_subsets_and_valid_schedules() {
        let mut config = WorldConfig::default();
        let mut subsets = std::collections::BTreeSet::new();
        for seed in 0..200 {
            config.seed = seed;
            let drawn = draw(&profile(), &config);
            assert!(!drawn.kinds.is_empty());
            assert_eq!(drawn, draw(&profile(), &config), "seed {seed}");
            let schedule = drawn.schedule(&config);
            assert_eq!(schedule.validate(&config.hosts()), Ok(()), "seed {seed}");
            assert_eq!(schedule.heal_at_ms, Some(39_600));
            subsets.insert(drawn.kinds);
        }
        assert!(subsets.len() > 150, "only {} subsets", subsets.len());
    }

    /// `kind_chance = [1, 1]` turns every kind on in every seed; the default odds, named or
    /// left out, draw exactly what a profile without the field always drew (one coin per
    /// kind), and every other draw of the seed (faults, intensity) is the same at any odds.
    #[test]
    fn kind_chance_sets_the_odds_of_each_kind_and_moves_no_other_draw() {
        let mut config = WorldConfig::default();
        let every = SwarmProfile {
            kind_chance: Some((1, 1)),
            ..profile()
        };
        let named_default = SwarmProfile {
            kind_chance: Some(DEFAULT_KIND_CHANCE),
            ..profile()
        };
        // Every kind the default (gRPC) world can take: it cannot fork.
        let takeable: Vec<FaultKind> = FaultKind::ALL
            .iter()
            .copied()
            .filter(|kind| !profile().left_out(&config).contains(kind))
            .collect();
        assert!(!takeable.contains(&FaultKind::Fork));
        for seed in 0..50 {
            config.seed = seed;
            let (coin, all) = (draw(&profile(), &config), draw(&every, &config));
            assert_eq!(all.kinds, takeable, "seed {seed}");
            assert!(coin.kinds.len() < FaultKind::ALL.len(), "seed {seed}");
            assert_eq!((all.faults, &all.intensity), (coin.faults, &coin.intensity));
            assert_eq!(draw(&named_default, &config), coin, "seed {seed}");
        }
    }

    #[test]
    fn kind_chance_must_be_odds_that_can_turn_a_kind_on() {
        for odds in [(0, 2), (1, 0), (3, 2)] {
            let profile = SwarmProfile {
                kind_chance: Some(odds),
                ..profile()
            };
            let (field, message) = profile.check().unwrap_err();
            assert_eq!(field, "kind_chance");
            assert!(
                message.contains("1 <= numerator <= denominator"),
                "{message}"
            );
        }
        let profile = SwarmProfile {
            kind_chance: Some((3, 4)),
            ..profile()
        };
        assert_eq!(profile.check(), Ok(()));
    }

    #[test]
    fn a_one_kind_profile_draws_only_that_kind() {
        let mut profile = profile();
        profile.kinds = vec![FaultKind::Pause];
        profile.intensity.freeze_ttl_percent = Some((150, 300));
        let config = WorldConfig::default();
        let drawn = draw(&profile, &config);
        assert_eq!(drawn.kinds, [FaultKind::Pause]);
        assert!(drawn.intensity.freeze_ms.0 >= 15_000 && drawn.intensity.freeze_ms.1 <= 30_000);
        for fault in drawn.schedule(&config).faults {
            assert!(
                matches!(fault.fault, crate::sim::schedule::Fault::Pause { duration_ms, .. }
                    if (15_000..=30_000).contains(&duration_ms)),
                "{fault:?}"
            );
        }
    }

    #[test]
    fn an_error_window_draws_only_the_profiles_statuses() {
        let mut profile = profile();
        profile.kinds = vec![FaultKind::AuthorityErrors];
        profile.faults = (8, 8);
        let wanted = [ErrorStatus::Conflict, ErrorStatus::TooManyRequests];
        profile.intensity.error_statuses = Some(wanted.to_vec());
        let mut config = WorldConfig::default();
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..20 {
            config.seed = seed;
            for fault in draw(&profile, &config).schedule(&config).faults {
                if let crate::sim::schedule::Fault::AuthorityErrors { status, .. } = fault.fault {
                    seen.insert(status);
                }
            }
        }
        assert_eq!(seen, wanted.into());
    }

    #[test]
    fn error_statuses_left_out_draw_the_original_three_and_stay_out_of_run_files() {
        let drawn = draw(&profile(), &WorldConfig::default());
        assert_eq!(
            drawn.intensity.error_statuses,
            ErrorStatus::DRAWN_BY_DEFAULT
        );
        let text = serde_json::to_string(&drawn.intensity).unwrap();
        assert!(!text.contains("error_statuses"), "{text}");
    }

    #[test]
    fn error_statuses_must_be_non_empty_and_each_named_once() {
        let mut profile = profile();
        profile.intensity.error_statuses = Some(vec![]);
        assert_eq!(profile.check().unwrap_err().0, "intensity.error_statuses");
        profile.intensity.error_statuses = Some(vec![ErrorStatus::Timeout, ErrorStatus::Timeout]);
        let (field, message) = profile.check().unwrap_err();
        assert_eq!(field, "intensity.error_statuses");
        assert!(message.contains("twice"), "{message}");
        profile.intensity.error_statuses = Some(vec![ErrorStatus::Timeout, ErrorStatus::Invalid]);
        assert_eq!(profile.check(), Ok(()));
    }
}
