//! Scenario files (TOML, schema `v = 1`): a world, a workload (a script or a generated mix),
//! faults (an explicit schedule, a swarm profile, or none) and the expectations of a run
//! (DESIGN.md, "Campaigns and reports"). `sims/README.md` documents the format with an
//! example of every section.
//!
//! Loading resolves everything a run needs: the script and schedule files named (paths are
//! relative to the scenario file) are read and checked against the world. Every error names
//! the file, the line and column, the field, and how to fix it; bad input never panics.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::swarm::SwarmProfile;
use crate::check::Check;
use crate::lease::SessionId;
use crate::mutant::Mutant;
use crate::results::CoverageEvent;
use crate::sim::schedule::FaultSchedule;
use crate::sim::script::Script;
use crate::sim::world::{WorkloadMix, WorldConfig};

/// Schema version of scenario files.
pub const SCENARIO_SCHEMA_VERSION: u32 = 1;

/// The lease and ledger backend a world runs. Only the gRPC services for now.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// The remote lease and ledger services over gRPC on turmoil's TCP.
    #[default]
    Grpc,
}

/// The `[world]` section: the shape of the simulated world. Every field is optional in a
/// scenario (the defaults are [`WorldConfig::default`]'s); a run file holds all of them.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorldSpec {
    /// Replica hosts, 1..=64 (default 3).
    pub replicas: u32,
    /// The contended sessions (default `["s1", "s2"]`).
    pub sessions: Vec<String>,
    /// Lease TTL, ms (default 10000). Renewals come every third of it.
    pub ttl_ms: u64,
    /// Skew margin, percent of the TTL, 0..=99 (default 10).
    pub skew_margin_percent: u8,
    /// Simulated duration of a run, s, 1..=86400 (default 60).
    pub duration_s: u64,
    /// Deadline of every client call, ms (default 2000).
    pub call_timeout_ms: u64,
    /// Network latency range, ms, `[least, most]` (default `[1, 5]`).
    pub latency_ms: (u64, u64),
    /// The backend (default and only choice: `"grpc"`).
    pub backend: Backend,
}

impl Default for WorldSpec {
    fn default() -> Self {
        let config = WorldConfig::default();
        WorldSpec {
            replicas: config.replicas,
            sessions: config.sessions,
            ttl_ms: config.ttl.as_millis() as u64,
            skew_margin_percent: config.skew_margin_percent,
            duration_s: config.duration.as_secs(),
            call_timeout_ms: config.call_timeout.as_millis() as u64,
            latency_ms: config.latency_ms,
            backend: Backend::Grpc,
        }
    }
}

impl WorldSpec {
    /// The world's configuration for `seed`, with a generated workload's `mix` (the default
    /// mix for a script) and no mutant.
    pub fn config(&self, seed: u64, mix: WorkloadMix) -> WorldConfig {
        WorldConfig {
            seed,
            replicas: self.replicas,
            sessions: self.sessions.clone(),
            ttl: Duration::from_millis(self.ttl_ms),
            skew_margin_percent: self.skew_margin_percent,
            duration: Duration::from_secs(self.duration_s),
            call_timeout: Duration::from_millis(self.call_timeout_ms),
            latency_ms: self.latency_ms,
            mix,
            ..WorldConfig::default()
        }
    }

    /// Checks the values; `Err((field, message))` names the field and what is allowed.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        const DAY_MS: u64 = 86_400_000;
        if !(1..=64).contains(&self.replicas) {
            return Err(("replicas", format!("must be 1..=64, got {}", self.replicas)));
        }
        if self.sessions.is_empty() {
            return Err((
                "sessions",
                "give at least one session, e.g. [\"s1\"]".into(),
            ));
        }
        for session in &self.sessions {
            if SessionId::new(session.clone()).is_err() {
                return Err(("sessions", format!("`{session}` is not a valid session id")));
            }
        }
        if !(1..=DAY_MS).contains(&self.ttl_ms) {
            return Err((
                "ttl_ms",
                format!("must be 1..={DAY_MS} ms, got {}", self.ttl_ms),
            ));
        }
        if self.skew_margin_percent > 99 {
            return Err((
                "skew_margin_percent",
                format!("must be 0..=99, got {}", self.skew_margin_percent),
            ));
        }
        if !(1..=86_400).contains(&self.duration_s) {
            return Err((
                "duration_s",
                format!("must be 1..=86400 s, got {}", self.duration_s),
            ));
        }
        if !(1..=DAY_MS).contains(&self.call_timeout_ms) {
            return Err((
                "call_timeout_ms",
                format!("must be 1..={DAY_MS} ms, got {}", self.call_timeout_ms),
            ));
        }
        let (low, high) = self.latency_ms;
        if low > high || high > 60_000 {
            return Err((
                "latency_ms",
                format!("must be [least, most] with least <= most <= 60000, got [{low}, {high}]"),
            ));
        }
        Ok(())
    }
}

/// What the replicas do in a scenario's runs.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ScenarioWorkload {
    /// Exactly the calls of a script file.
    Script {
        /// The script file, as resolved from the scenario's directory.
        path: PathBuf,
        /// Its calls.
        script: Script,
    },
    /// Drawn from each run's seed with this mix.
    Generated(WorkloadMix),
}

/// Where a scenario's faults come from.
// One per loaded scenario: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ScenarioFaults {
    /// No faults.
    None,
    /// The same explicit schedule for every seed.
    Schedule {
        /// The schedule file, as resolved from the scenario's directory.
        path: PathBuf,
        /// Its faults.
        schedule: FaultSchedule,
    },
    /// Drawn per seed from a swarm profile ([`super::swarm`]).
    Swarm(SwarmProfile),
}

/// The `[expect]` section: what a run of the scenario should show.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Checks that must hold, by name ([`Check`]; default: every invariant of
    /// [`Check::INVARIANTS`] not in `violate`).
    pub hold: Vec<Check>,
    /// Checks a run is expected to violate (a mutant's scenario; default none).
    #[serde(default)]
    pub violate: Vec<Check>,
    /// Coverage events a campaign of the scenario is expected to reach (names from
    /// [`crate::results::CoverageEvent`]; default none).
    #[serde(default)]
    pub coverage: Vec<String>,
}

/// A loaded, checked scenario.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Scenario {
    /// The file it was loaded from.
    pub path: PathBuf,
    /// The planted bug its runs carry (`mutant = "name"`, a mutant's scenario), by name.
    pub mutant: Option<String>,
    /// One line saying what it is about.
    pub about: String,
    /// The world.
    pub world: WorldSpec,
    /// The workload.
    pub workload: ScenarioWorkload,
    /// The faults.
    pub faults: ScenarioFaults,
    /// The expectations.
    pub expect: Expect,
}

/// A scenario file that cannot be used, with where and how to fix it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ScenarioError {
    /// The scenario file.
    pub path: PathBuf,
    /// Line and column (from 1) of the offending text, when known.
    pub at: Option<(usize, usize)>,
    /// The field, dotted (`world.ttl_ms`), when known.
    pub field: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some((line, column)) = self.at {
            write!(f, ":{line}:{column}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// The file as TOML gives it, before checking.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    v: Spanned<u32>,
    about: String,
    #[serde(default)]
    world: Option<Spanned<WorldSpec>>,
    #[serde(default)]
    workload: Option<Spanned<RawWorkload>>,
    #[serde(default)]
    faults: Option<Spanned<RawFaults>>,
    #[serde(default)]
    expect: Option<Spanned<RawExpect>>,
    #[serde(default)]
    mutant: Option<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    script: Option<Spanned<String>>,
    appends: Option<Spanned<(u64, u64)>>,
    think_ms: Option<Spanned<(u64, u64)>>,
    shutdown_chance: Option<Spanned<(u32, u32)>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawFaults {
    schedule: Option<Spanned<String>>,
    swarm: Option<Spanned<SwarmProfile>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    hold: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    violate: Vec<Spanned<String>>,
    #[serde(default)]
    coverage: Vec<Spanned<String>>,
}

/// Builds errors for one file's text.
struct Errors<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Errors<'_> {
    fn at(&self, offset: usize, field: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            path: self.path.to_owned(),
            at: Some(line_column(self.text, offset)),
            field: Some(field.to_owned()),
            message: message.into(),
        }
    }

    fn whole(&self, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            path: self.path.to_owned(),
            at: None,
            field: None,
            message: message.into(),
        }
    }

    /// A TOML or serde error: its span gives the place, the line there the field.
    fn toml(&self, error: &toml::de::Error) -> ScenarioError {
        let message = error.message().trim().to_owned();
        match error.span() {
            Some(span) => ScenarioError {
                path: self.path.to_owned(),
                at: Some(line_column(self.text, span.start)),
                field: field_at(self.text, span.start),
                message,
            },
            None => self.whole(message),
        }
    }
}

/// The largest char boundary at or before `offset`.
fn floor_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// 1-based line and column (in characters) of byte `offset`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

/// The dotted field at byte `offset`: the table header above it plus the key on its line.
fn field_at(text: &str, offset: usize) -> Option<String> {
    let offset = floor_boundary(text, offset);
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or("").trim();
    let table = text[..start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_owned());
    if line.starts_with('[') {
        return Some(
            line.trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_owned(),
        );
    }
    let key = line
        .split_once('=')
        .map(|(key, _)| key.trim().trim_matches('"').to_owned())
        .filter(|key| {
            !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        });
    match (table, key) {
        (Some(table), Some(key)) => Some(format!("{table}.{key}")),
        (None, Some(key)) => Some(key),
        (Some(table), None) => Some(table),
        (None, None) => None,
    }
}

impl Scenario {
    /// Loads and checks a scenario file, reading the script and schedule files it names.
    ///
    /// # Errors
    /// [`ScenarioError`] naming the file, the line and column, the field and the fix: an
    /// unreadable file, malformed TOML, an unknown field (with the accepted ones), a wrong
    /// schema version, a value out of range, both a script and a mix (or a schedule and a
    /// swarm), a missing or malformed script or schedule file, or one the world refuses.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            path: path.to_owned(),
            at: None,
            field: None,
            message: format!("cannot read the scenario file: {e}"),
        })?;
        Scenario::parse(path, &text)
    }

    /// Checks a scenario file's `text`, as if read from `path` (files it names are read
    /// relative to `path`'s folder).
    ///
    /// # Errors
    /// As [`Scenario::load`].
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let errors = Errors { path, text };
        let raw: RawScenario = toml::from_str(text).map_err(|e| errors.toml(&e))?;
        if *raw.v.get_ref() != SCENARIO_SCHEMA_VERSION {
            return Err(errors.at(
                raw.v.span().start,
                "v",
                format!(
                    "scenario schema version {} is not supported; this leasesim reads version \
                     {SCENARIO_SCHEMA_VERSION} (write `v = {SCENARIO_SCHEMA_VERSION}`)",
                    raw.v.get_ref()
                ),
            ));
        }
        let folder = path.parent().unwrap_or(Path::new("."));
        let world = match raw.world {
            Some(world) => {
                let span = world.span().start;
                let world = world.into_inner();
                if let Err((field, message)) = world.check() {
                    return Err(errors.at(span, &format!("world.{field}"), message));
                }
                world
            }
            None => WorldSpec::default(),
        };
        let config = world.config(0, WorkloadMix::default());
        let workload = resolve_workload(&errors, folder, &config, raw.workload)?;
        let faults = resolve_faults(&errors, folder, &config, raw.faults)?;
        let expect = resolve_expect(&errors, raw.expect)?;
        let mutant = match raw.mutant {
            Some(name) => {
                let at = name.span().start;
                let name = name.into_inner();
                if Mutant::from_name(&name).is_none() {
                    return Err(errors.at(
                        at,
                        "mutant",
                        format!(
                            "unknown mutant `{name}`; `leasesim mutants` lists them: {}",
                            Mutant::ALL
                                .iter()
                                .map(|m| m.name())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
                Some(name)
            }
            None => None,
        };
        Ok(Scenario {
            path: path.to_owned(),
            about: raw.about,
            world,
            workload,
            faults,
            expect,
            mutant,
        })
    }

    /// The scenario's name: its file stem (`sims/f1-pause.toml` → `f1-pause`).
    pub fn name(&self) -> String {
        self.path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

fn read_json<T>(
    errors: &Errors<'_>,
    folder: &Path,
    field: &str,
    file: &Spanned<String>,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<(PathBuf, T), ScenarioError> {
    let path = folder.join(file.get_ref());
    let at = file.span().start;
    let text = std::fs::read_to_string(&path).map_err(|e| {
        errors.at(
            at,
            field,
            format!(
                "cannot read {} ({e}); the path is relative to the scenario file's folder",
                path.display()
            ),
        )
    })?;
    let value =
        parse(&text).map_err(|e| errors.at(at, field, format!("{}: {e}", path.display())))?;
    Ok((path, value))
}

fn resolve_workload(
    errors: &Errors<'_>,
    folder: &Path,
    config: &WorldConfig,
    raw: Option<Spanned<RawWorkload>>,
) -> Result<ScenarioWorkload, ScenarioError> {
    let Some(raw) = raw else {
        return Ok(ScenarioWorkload::Generated(WorkloadMix::default()));
    };
    let raw = raw.into_inner();
    let mix_fields = [
        raw.appends.as_ref().map(|s| ("appends", s.span().start)),
        raw.think_ms.as_ref().map(|s| ("think_ms", s.span().start)),
        raw.shutdown_chance
            .as_ref()
            .map(|s| ("shutdown_chance", s.span().start)),
    ];
    if let Some(script) = &raw.script {
        if let Some((field, at)) = mix_fields.iter().flatten().next() {
            return Err(errors.at(
                *at,
                &format!("workload.{field}"),
                "a workload is either a script or a generated mix, not both: remove `script` \
                 or the mix fields (appends, think_ms, shutdown_chance)",
            ));
        }
        let (path, script) = read_json(errors, folder, "workload.script", script, |text| {
            Script::from_json(text)
        })?;
        crate::sim::world::check_script(config, &script).map_err(|e| {
            errors.at(
                raw.script.as_ref().map_or(0, |s| s.span().start),
                "workload.script",
                format!("{}: {e}", path.display()),
            )
        })?;
        return Ok(ScenarioWorkload::Script { path, script });
    }
    let defaults = WorkloadMix::default();
    let mix = WorkloadMix {
        appends: raw
            .appends
            .as_ref()
            .map_or(defaults.appends, |s| *s.get_ref()),
        think_ms: raw
            .think_ms
            .as_ref()
            .map_or(defaults.think_ms, |s| *s.get_ref()),
        shutdown_chance: raw
            .shutdown_chance
            .as_ref()
            .map_or(defaults.shutdown_chance, |s| *s.get_ref()),
    };
    let range = |field: &str, span: Option<usize>, (low, high): (u64, u64), max: u64| {
        if low > high || high > max {
            Err(errors.at(
                span.unwrap_or(0),
                &format!("workload.{field}"),
                format!("must be [least, most] with least <= most <= {max}, got [{low}, {high}]"),
            ))
        } else {
            Ok(())
        }
    };
    range(
        "appends",
        raw.appends.as_ref().map(|s| s.span().start),
        mix.appends,
        1_000,
    )?;
    range(
        "think_ms",
        raw.think_ms.as_ref().map(|s| s.span().start),
        mix.think_ms,
        3_600_000,
    )?;
    let (numerator, denominator) = mix.shutdown_chance;
    if denominator == 0 || numerator > denominator {
        return Err(errors.at(
            raw.shutdown_chance.as_ref().map_or(0, |s| s.span().start),
            "workload.shutdown_chance",
            format!(
                "odds are [numerator, denominator] with 0 <= numerator <= denominator and \
                 denominator >= 1 (e.g. [1, 25]), got [{numerator}, {denominator}]"
            ),
        ));
    }
    Ok(ScenarioWorkload::Generated(mix))
}

fn resolve_faults(
    errors: &Errors<'_>,
    folder: &Path,
    config: &WorldConfig,
    raw: Option<Spanned<RawFaults>>,
) -> Result<ScenarioFaults, ScenarioError> {
    let Some(raw) = raw else {
        return Ok(ScenarioFaults::None);
    };
    let raw = raw.into_inner();
    match (raw.schedule, raw.swarm) {
        (Some(_), Some(swarm)) => Err(errors.at(
            swarm.span().start,
            "faults.swarm",
            "faults come either from a schedule file or from a swarm profile, not both: \
             remove `schedule` or `[faults.swarm]`",
        )),
        (Some(file), None) => {
            let (path, schedule) = read_json(errors, folder, "faults.schedule", &file, |text| {
                FaultSchedule::from_json(text)
            })?;
            schedule.validate(&config.hosts()).map_err(|e| {
                errors.at(
                    file.span().start,
                    "faults.schedule",
                    format!("{}: {e}", path.display()),
                )
            })?;
            Ok(ScenarioFaults::Schedule { path, schedule })
        }
        (None, Some(swarm)) => {
            let at = swarm.span().start;
            let swarm = swarm.into_inner();
            swarm.check().map_err(|(field, message)| {
                errors.at(at, &format!("faults.swarm.{field}"), message)
            })?;
            Ok(ScenarioFaults::Swarm(swarm))
        }
        (None, None) => Ok(ScenarioFaults::None),
    }
}

fn resolve_expect(
    errors: &Errors<'_>,
    raw: Option<Spanned<RawExpect>>,
) -> Result<Expect, ScenarioError> {
    let raw = raw.map(Spanned::into_inner).unwrap_or_default();
    let invariant = |field: &str, name: &Spanned<String>| {
        name.get_ref()
            .parse::<Check>()
            .map_err(|unknown| errors.at(name.span().start, field, unknown.to_string()))
    };
    let violate = raw
        .violate
        .iter()
        .map(|name| invariant("expect.violate", name))
        .collect::<Result<Vec<_>, _>>()?;
    let hold = match &raw.hold {
        Some(hold) => {
            let mut names = Vec::new();
            for name in hold {
                let check = invariant("expect.hold", name)?;
                if violate.contains(&check) {
                    return Err(errors.at(
                        name.span().start,
                        "expect.hold",
                        format!("`{check}` is in both `hold` and `violate`; keep it in one"),
                    ));
                }
                names.push(check);
            }
            names
        }
        None => Check::INVARIANTS
            .into_iter()
            .filter(|check| !violate.contains(check))
            .collect(),
    };
    let coverage = raw
        .coverage
        .iter()
        .map(|event| match event.get_ref().parse::<CoverageEvent>() {
            Ok(known) => Ok(known.name().to_owned()),
            Err(unknown) => {
                Err(errors.at(event.span().start, "expect.coverage", unknown.to_string()))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Expect {
        hold,
        violate,
        coverage,
    })
}
