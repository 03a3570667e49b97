//! Scenario files (TOML, schema `v = 1`): a world, a workload (a script or a generated mix),
//! faults (an explicit schedule, a swarm profile, or none) and the expectations of a run
//! (docs/campaigns.md). `sims/README.md` documents the format with an
//! example of every section.
//!
//! Loading resolves everything a run needs: the script and schedule files named (paths are
//! relative to the scenario file and must stay inside its folder) are read and checked
//! against the world, with the checks a run file gets ([`crate::sim::runfile::validate`]).
//! Every error names the file, the line and column, the field, and how to fix it; bad input
//! never panics.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::swarm::{self, SwarmProfile};
use crate::check::Check;
use crate::mutant::Mutant;
use crate::results::CoverageEvent;
use crate::results::coverage::MAX_WITHIN_SEEDS;
use crate::sim::config::{WorkloadMix, WorldConfig};
use crate::sim::runfile::pair::Pair;
use crate::sim::runfile::validate::check_mix;
use crate::sim::runfile::{
    BackendSpec, Expect, RUN_FILE_SCHEMA_VERSION, RunFile, RunFileError, RunWorkload,
    ScenarioWorld, WorldSpec,
};
use crate::sim::schedule::FaultSchedule;
use crate::sim::script::Script;
use crate::sim::world::check_backend_faults;

/// Schema version of scenario files.
pub const SCENARIO_SCHEMA_VERSION: u32 = 1;

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
    /// Per expected coverage event, the seeds within which a campaign of the scenario must
    /// reach it (`expect.coverage_within_seeds`); an event not listed must be reached within
    /// [`crate::results::coverage::DEFAULT_WITHIN_SEEDS`]. Below that many seeds, an event not
    /// reached is a note, not a warning (docs/campaigns.md#coverage-promises).
    pub coverage_within_seeds: BTreeMap<String, u64>,
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
    world: Option<Spanned<ScenarioWorld>>,
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
    appends: Option<Spanned<Pair<u64>>>,
    think_ms: Option<Spanned<Pair<u64>>>,
    shutdown_chance: Option<Spanned<Pair<u32>>>,
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
    coverage_within_seeds: Option<Spanned<BTreeMap<String, u64>>>,
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
        Scenario::load_on(path, None)
    }

    /// [`Scenario::load`], its world on `backend` when one is given (`--backend`), in place
    /// of the file's `[world] backend`: every check the file gets is made on that backend (a
    /// schedule naming a fault it cannot take, a profile none of whose kinds it can take, a
    /// TTL it cannot grant are refused).
    ///
    /// # Errors
    /// As [`Scenario::load`]; a refusal the backend causes says it was given by `--backend`.
    pub fn load_on(path: &Path, backend: Option<&BackendSpec>) -> Result<Scenario, ScenarioError> {
        let text =
            crate::input::read_to_string(path, crate::input::DOCUMENT_LIMIT).map_err(|e| {
                ScenarioError {
                    path: path.to_owned(),
                    at: None,
                    field: None,
                    message: format!("cannot read the scenario file: {e}"),
                }
            })?;
        Scenario::parse_on(path, &text, backend).map_err(|mut error| {
            if let Some(backend) = backend {
                error.message = format!("with --backend {}: {}", backend.name(), error.message);
            }
            error
        })
    }

    /// Checks a scenario file's `text`, as if read from `path` (files it names are read
    /// relative to `path`'s folder).
    ///
    /// # Errors
    /// As [`Scenario::load`].
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_on(path, text, None)
    }

    /// [`Scenario::parse`] with the world on `backend` when one is given
    /// ([`Scenario::load_on`]).
    ///
    /// # Errors
    /// As [`Scenario::load`].
    pub fn parse_on(
        path: &Path,
        text: &str,
        backend: Option<&BackendSpec>,
    ) -> Result<Scenario, ScenarioError> {
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
        let (world_span, mut world) = match raw.world {
            Some(world) => (world.span().start, world.into_inner().0),
            None => (0, WorldSpec::default()),
        };
        if let Some(backend) = backend {
            world.backend = backend.clone();
        }
        if let Err((field, message)) = world.check() {
            return Err(errors.at(world_span, &format!("world.{field}"), message));
        }
        let mut config = world.config(0, WorkloadMix::default());
        let workload = resolve_workload(&errors, folder, &config, raw.workload)?;
        config.liveness_phase = matches!(workload, ScenarioWorkload::Generated(_));
        check_world_run_end(&errors, world_span, &config)?;
        let faults = resolve_faults(&errors, folder, &config, raw.faults)?;
        let (expect, coverage_within_seeds) = resolve_expect(&errors, raw.expect)?;
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
            coverage_within_seeds,
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

    /// Resolves one run of this scenario with `seed` into a run file: draws the swarm options
    /// and their schedule (or takes the scenario's schedule), and inlines the script. A
    /// generated workload gets the liveness phase.
    ///
    /// # Errors
    /// [`RunFileError`] when a drawn schedule does not fit the world (a profile whose ranges
    /// the world refuses), naming the scenario and the seed.
    pub fn resolve(&self, seed: u64) -> Result<RunFile, RunFileError> {
        let mut run = self.run_without_faults(seed);
        let config = run.world_config_unchecked();
        match &self.faults {
            ScenarioFaults::None => {}
            ScenarioFaults::Schedule { schedule, .. } => run.schedule = schedule.clone(),
            ScenarioFaults::Swarm(profile) => {
                let drawn = swarm::draw(profile, &config);
                run.schedule = drawn.schedule(&config);
                run.drawn = Some(drawn);
            }
        }
        run.validate().map_err(|e| {
            RunFileError(format!(
                "scenario {} with seed {seed} resolved to a run the world refuses: {e}",
                self.name()
            ))
        })?;
        Ok(run)
    }

    /// The kinds of its swarm profile its world never draws, its backend lacking what they
    /// need ([`SwarmProfile::left_out`]); none for a scenario without a profile.
    pub fn left_out_kinds(&self) -> Vec<crate::sim::generate::FaultKind> {
        match &self.faults {
            ScenarioFaults::Swarm(profile) => {
                profile.left_out(&self.run_without_faults(0).world_config_unchecked())
            }
            _ => Vec::new(),
        }
    }

    /// Whether its faults are drawn from a swarm profile.
    pub fn is_swarm(&self) -> bool {
        matches!(self.faults, ScenarioFaults::Swarm(_))
    }

    /// The latest true simulated time any of its runs can reach, ms: its schedule's
    /// ([`FaultSchedule::run_end_ms`]), or for a swarm profile the latest heal with the
    /// longest freeze drawn just before it ([`SwarmProfile::longest_run_end_ms`]).
    pub fn longest_run_end_ms(&self) -> u64 {
        let run = self.run_without_faults(0);
        let config = run.world_config_unchecked();
        match &self.faults {
            ScenarioFaults::None => run.simulated_end_ms(),
            ScenarioFaults::Schedule { schedule, .. } => {
                schedule.run_end_ms(&config.schedule_bounds())
            }
            ScenarioFaults::Swarm(profile) => profile.longest_run_end_ms(&config),
        }
    }

    /// The number of replica hosts of its world.
    pub fn replicas(&self) -> u32 {
        self.run_without_faults(0).replicas()
    }

    /// Its run with `seed` before any fault is added.
    fn run_without_faults(&self, seed: u64) -> RunFile {
        let workload = match &self.workload {
            ScenarioWorkload::Script { script, .. } => RunWorkload::Script(script.clone()),
            ScenarioWorkload::Generated(mix) => RunWorkload::Generated(mix.clone()),
        };
        RunFile {
            v: RUN_FILE_SCHEMA_VERSION,
            scenario: self.name(),
            scenario_path: Some(self.path.display().to_string()),
            seed,
            world: self.world.clone(),
            drawn: None,
            schedule: FaultSchedule::new(),
            liveness_phase: matches!(workload, RunWorkload::Generated(_)),
            workload,
            mutant: self.mutant.clone(),
            expect: self.expect.clone(),
        }
    }
}

fn read_json<T>(
    errors: &Errors<'_>,
    folder: &Path,
    field: &str,
    file: &Spanned<String>,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<(PathBuf, T), ScenarioError> {
    let at = file.span().start;
    let path = inside(folder, file.get_ref()).map_err(|message| errors.at(at, field, message))?;
    let text = crate::input::read_to_string(&path, crate::input::DOCUMENT_LIMIT).map_err(|e| {
        let e = match e {
            crate::input::InputError::Read(crate::input::FileError::Io { source, .. }) => {
                source.to_string()
            }
            other => other.to_string(),
        };
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

/// Refuses a world whose runs, liveness phase included, cannot end within
/// [`crate::sim::schedule::limits::RUN_MS_MAX`] even without faults (a TTL so long that the
/// liveness phase outlasts the bound, or a duration that leaves it no room).
fn check_world_run_end(
    errors: &Errors<'_>,
    at: usize,
    config: &WorldConfig,
) -> Result<(), ScenarioError> {
    let duration_ms = config.duration.as_millis() as u64;
    crate::sim::schedule::check_run_end(&config.schedule_bounds(), duration_ms, 0).map_err(
        |message| {
            let field = if config.ttl.as_millis() as u64 * 3 > duration_ms {
                "world.ttl_ms"
            } else {
                "world.duration_s"
            };
            errors.at(at, field, message)
        },
    )
}

/// `file` (as a scenario names it) joined to the scenario's `folder`, if it stays inside:
/// relative, and no `..` leaving the folder (the path is judged as written; a symbolic link
/// placed in the folder is how a scenario reaches a file elsewhere on purpose).
fn inside(folder: &Path, file: &str) -> Result<PathBuf, String> {
    let mut depth = 0usize;
    for component in Path::new(file).components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir if depth > 0 => depth -= 1,
            Component::ParentDir => {
                return Err(format!(
                    "`{file}` leaves the scenario's folder; name a file inside it (a symbolic \
                     link placed there can point elsewhere)"
                ));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "`{file}` is an absolute path; name a file relative to the scenario's \
                     folder (a symbolic link placed there can point elsewhere)"
                ));
            }
        }
    }
    if depth == 0 {
        return Err(format!(
            "`{file}` names no file inside the scenario's folder"
        ));
    }
    Ok(folder.join(file))
}

/// The `[workload]` section: a script (checked against the world) or a generated mix (with
/// the defaults for fields left out, each range checked), never both.
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
    match &raw.script {
        Some(script) => resolve_script(errors, folder, config, &raw, script),
        None => resolve_mix(errors, &raw).map(ScenarioWorkload::Generated),
    }
}

/// `workload.script`: read, and checked against the world; no mix field beside it.
fn resolve_script(
    errors: &Errors<'_>,
    folder: &Path,
    config: &WorldConfig,
    raw: &RawWorkload,
    file: &Spanned<String>,
) -> Result<ScenarioWorkload, ScenarioError> {
    let mix_fields = [
        raw.appends.as_ref().map(|s| ("appends", s.span().start)),
        raw.think_ms.as_ref().map(|s| ("think_ms", s.span().start)),
        raw.shutdown_chance
            .as_ref()
            .map(|s| ("shutdown_chance", s.span().start)),
    ];
    if let Some((field, at)) = mix_fields.iter().flatten().next() {
        return Err(errors.at(
            *at,
            &format!("workload.{field}"),
            "a workload is either a script or a generated mix, not both: remove `script` \
             or the mix fields (appends, think_ms, shutdown_chance)",
        ));
    }
    let (path, script) = read_json(errors, folder, "workload.script", file, |text| {
        Script::from_json(text)
    })?;
    crate::sim::world::check_script(config, &script).map_err(|e| {
        errors.at(
            file.span().start,
            "workload.script",
            format!("{}: {e}", path.display()),
        )
    })?;
    Ok(ScenarioWorkload::Script { path, script })
}

/// A generated mix: each field given or its default, each range checked
/// ([`check_mix`]).
fn resolve_mix(errors: &Errors<'_>, raw: &RawWorkload) -> Result<WorkloadMix, ScenarioError> {
    let defaults = WorkloadMix::default();
    let given = |field: &Option<Spanned<Pair<u64>>>, default| {
        field.as_ref().map_or(default, |s| s.get_ref().tuple())
    };
    let mix = WorkloadMix {
        appends: given(&raw.appends, defaults.appends),
        think_ms: given(&raw.think_ms, defaults.think_ms),
        shutdown_chance: raw
            .shutdown_chance
            .as_ref()
            .map_or(defaults.shutdown_chance, |s| s.get_ref().tuple()),
    };
    check_mix(&mix).map_err(|(field, message)| {
        let at = match field {
            "appends" => raw.appends.as_ref().map(|s| s.span().start),
            "think_ms" => raw.think_ms.as_ref().map(|s| s.span().start),
            _ => raw.shutdown_chance.as_ref().map(|s| s.span().start),
        };
        errors.at(at.unwrap_or(0), &format!("workload.{field}"), message)
    })?;
    Ok(mix)
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
            let refusal = schedule
                .validate_in(&config.schedule_bounds())
                .map_err(|e| e.to_string())
                .and_then(|()| {
                    check_backend_faults(&config.backend, &schedule).map_err(|e| e.to_string())
                });
            refusal.map_err(|e| {
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
            swarm
                .check()
                .and_then(|()| swarm.check_in(config))
                .map_err(|(field, message)| {
                    errors.at(at, &format!("faults.swarm.{field}"), message)
                })?;
            Ok(ScenarioFaults::Swarm(swarm))
        }
        (None, None) => Ok(ScenarioFaults::None),
    }
}

/// The expectations, and each expected coverage event's seeds (`coverage_within_seeds`).
fn resolve_expect(
    errors: &Errors<'_>,
    raw: Option<Spanned<RawExpect>>,
) -> Result<(Expect, BTreeMap<String, u64>), ScenarioError> {
    let mut raw = raw.map(Spanned::into_inner).unwrap_or_default();
    let within = raw.coverage_within_seeds.take();
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
    let within = resolve_within_seeds(errors, within, &coverage)?;
    let expect = Expect {
        hold,
        violate,
        coverage,
    };
    Ok((expect, within))
}

/// `expect.coverage_within_seeds`: each key an event `expect.coverage` lists, each number of
/// seeds from 1 to [`MAX_WITHIN_SEEDS`].
fn resolve_within_seeds(
    errors: &Errors<'_>,
    raw: Option<Spanned<BTreeMap<String, u64>>>,
    coverage: &[String],
) -> Result<BTreeMap<String, u64>, ScenarioError> {
    let Some(raw) = raw else {
        return Ok(BTreeMap::new());
    };
    let at = raw.span().start;
    let field = "expect.coverage_within_seeds";
    let raw = raw.into_inner();
    for (event, seeds) in &raw {
        if let Err(unknown) = event.parse::<CoverageEvent>() {
            return Err(errors.at(at, field, unknown.to_string()));
        }
        if !coverage.contains(event) {
            return Err(errors.at(
                at,
                field,
                format!(
                    "`{event}` has a number of seeds but is not expected; add it to \
                     `expect.coverage`, or remove it here"
                ),
            ));
        }
        if !(1..=MAX_WITHIN_SEEDS).contains(seeds) {
            return Err(errors.at(
                at,
                field,
                format!(
                    "`{event} = {seeds}`: give 1 to {MAX_WITHIN_SEEDS} seeds (the length of \
                     campaign that must reach it)"
                ),
            ));
        }
    }
    Ok(raw)
}
