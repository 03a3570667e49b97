//! Run files (JSON, schema `v: 3`): one fully resolved run — the scenario it came from (or
//! `command-line`), the seed, the world, the swarm options drawn (if any), the explicit fault
//! schedule, the workload (a generated mix, a workload plan, or the whole script inline), the
//! mutant, whether
//! the run has a liveness phase, and the expectations it is judged by. Every run is one:
//! `leasesim run` resolves its flags or its scenario to a run file before anything runs, and
//! the banner, the replay line and `--check-determinism` are derived from that file;
//! `leasesim replay <run.json>` reproduces the run exactly; the shrinker edits one and saves
//! the smaller run as one.
//!
//! ```json
//! {"v": 3, "scenario": "swarm-freezes", "scenario_path": "sims/swarm-freezes.toml",
//!  "seed": 7,
//!  "world": {"replicas": 3, "sessions": ["s1", "s2"], "ttl_ms": 10000,
//!            "skew_margin_percent": 10, "duration_s": 40, "call_timeout_ms": 2000,
//!            "latency_ms": [1, 5], "backend": "grpc"},
//!  "drawn": {"kinds": ["pause"], "faults": 3, "heal_at_ms": 26400, "intensity": {…}},
//!  "schedule": {"v": 1, "faults": [{"at_ms": 2000, "fault": "pause", …}], "heal_at_ms": 26400},
//!  "workload": {"generated": {"appends": [1, 6], "think_ms": [50, 1500],
//!                             "shutdown_chance": [1, 25]}},
//!  "mutant": null,
//!  "liveness_phase": true,
//!  "expect": {"hold": ["TOKEN", …], "violate": [], "coverage": []}}
//! ```
//! A scripted run's workload is `{"script": {"v": 1, "calls": [...]}}`; a planned run's (what
//! the shrinker makes of a generated workload: [`crate::plan`]) is
//! `{"plan": {"runs": [{"replica": "replica-1", "incarnation": 0, "at_ms": 0, "session": "s1",
//! "appends": 2, "think_ms": 300, "shutdown": false}, ...]}}`.
//!
//! **Versions.** [`RunFile::load`] reads every version it knows and upgrades it in memory
//! ([`upgrade`]): v1 had no `liveness_phase` (a generated workload always had one, a script
//! never); v2 had no `plan` workload (a v2 file reads as v3 unchanged, and runs the same
//! world). A version newer than this leasesim, or none, is refused with a message saying so.
//! To change the schema: bump [`RUN_FILE_SCHEMA_VERSION`], add the step from the previous
//! version to [`upgrade`], and keep `tests/world/run_files.rs` replaying every committed file.

mod drawn;
pub mod pair;
mod spec;
pub mod validate;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use drawn::Drawn;
pub use leasesim_history::limits::{DURATION_S_MAX, REPLICAS_MAX, TTL_MS_MAX};
pub use spec::{BackendSpec, ScenarioWorld, WorldSpec};

use crate::config::{Workload, WorkloadMix, WorldConfig};
use crate::plan::Plan;
use crate::runner::{self, RunResult, RunnerError};
use crate::schedule::FaultSchedule;
use crate::script::Script;
use crate::world::RunOutput;
use leasesim_core::mutant::Mutant;
use leasesim_history::History;
use leasesim_history::catalogue::Check;

/// Schema version of the run files this leasesim writes.
pub const RUN_FILE_SCHEMA_VERSION: u32 = 3;

/// The scenario name of a run resolved from `leasesim run`'s flags alone.
pub const COMMAND_LINE: &str = "command-line";

/// What the replicas of a run do.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RunWorkload {
    /// Drawn from the seed with this mix.
    Generated(WorkloadMix),
    /// Exactly these runs (a generated workload as data: [`crate::plan`]).
    Plan(Plan),
    /// Exactly these calls (the whole script, inline).
    Script(Script),
}

/// What a run should show: the scenario's `[expect]` section, carried into its run files so
/// a replay is judged by it.
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
    /// [`leasesim_results::CoverageEvent`]; default none).
    #[serde(default)]
    pub coverage: Vec<String>,
}

/// One fully resolved run.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFile {
    /// Schema version ([`RUN_FILE_SCHEMA_VERSION`]).
    pub v: u32,
    /// The scenario's name (its file stem), or [`COMMAND_LINE`].
    pub scenario: String,
    /// The scenario file, as it was given, if the run came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_path: Option<String>,
    /// The master seed.
    pub seed: u64,
    /// The world, every field resolved.
    pub world: WorldSpec,
    /// The swarm options the seed drew, if the scenario has a swarm profile (the schedule
    /// below was drawn from them; it is what runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drawn: Option<Drawn>,
    /// The faults, explicitly.
    pub schedule: FaultSchedule,
    /// The workload.
    pub workload: RunWorkload,
    /// A planted bug by name (`Mutant::name`), or none.
    #[serde(default)]
    pub mutant: Option<String>,
    /// Whether the run goes on after the heal until LIVE's bound has run out, so LIVE is
    /// judged (scenario runs with a generated workload; issue 6, "Liveness phase").
    pub liveness_phase: bool,
    /// The scenario's expectations, so a replay can judge the run by them.
    #[serde(default)]
    pub expect: Expect,
}

/// A run file that cannot be resolved, read or written.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RunFileError(pub String);

/// Upgrades a run file of version `v` (as JSON) to [`RUN_FILE_SCHEMA_VERSION`], one version at
/// a time.
///
/// # Errors
/// A message for a version this leasesim does not know: 0 or none, or newer than it.
pub fn upgrade(mut json: serde_json::Value) -> Result<serde_json::Value, String> {
    let version = json.get("v").and_then(serde_json::Value::as_u64);
    if let (None, Some(given)) = (version, json.get("v")) {
        return Err(format!(
            "the schema version `v` must be a whole number from 1 to \
             {RUN_FILE_SCHEMA_VERSION}, got {given}"
        ));
    }
    let mut v = match version {
        Some(v) if (1..=u64::from(RUN_FILE_SCHEMA_VERSION)).contains(&v) => v,
        Some(v) if v > u64::from(RUN_FILE_SCHEMA_VERSION) => {
            return Err(format!(
                "run file schema version {v} was written by a newer leasesim; this one reads \
                 versions 1 to {RUN_FILE_SCHEMA_VERSION} (upgrade leasesim, or replay it with \
                 the leasesim that wrote it)"
            ));
        }
        _ => {
            return Err(format!(
                "not a run file: it needs a schema version `\"v\"` from 1 to \
                 {RUN_FILE_SCHEMA_VERSION}"
            ));
        }
    };
    let object = json
        .as_object_mut()
        .ok_or("not a run file: expected a JSON object")?;
    if v == 1 {
        // v1 → v2: the liveness phase was implied by the workload.
        let generated = object
            .get("workload")
            .is_some_and(|workload| workload.get("generated").is_some());
        object.insert("liveness_phase".into(), generated.into());
        v = 2;
    }
    if v == 2 {
        // v2 → v3: the `plan` workload is new; nothing else changed.
        v = 3;
    }
    object.insert("v".into(), v.into());
    Ok(json)
}

impl RunFile {
    /// Reads a run file of any version this leasesim knows (see [`upgrade`]).
    ///
    /// # Errors
    /// [`RunFileError`] naming the file: not a regular file, over
    /// [`leasesim_history::input::DOCUMENT_LIMIT`], unreadable, malformed JSON (with line and column),
    /// an unknown field, an unknown schema version, or a value a scenario file would be
    /// refused for ([`RunFile::validate`]), naming its field.
    pub fn load(path: &Path) -> Result<RunFile, RunFileError> {
        let text =
            leasesim_history::input::read_to_string(path, leasesim_history::input::DOCUMENT_LIMIT)
                .map_err(|e| RunFileError(e.to_string()))?;
        RunFile::parse(&text).map_err(|e| RunFileError(format!("{}: {}", path.display(), e.0)))
    }

    /// Reads and checks a run file's text, as [`RunFile::load`] does.
    ///
    /// # Errors
    /// As [`RunFile::load`], without the file's name.
    pub fn parse(text: &str) -> Result<RunFile, RunFileError> {
        let error = |message: String| RunFileError(message);
        let json: serde_json::Value =
            serde_json::from_str(text).map_err(|e| error(e.to_string()))?;
        let upgraded = upgrade(json.clone()).map_err(error)?;
        // A file of this version is read from its text, so a bad field is named with its line
        // and column; an older one only after its upgrade.
        let run: RunFile = if upgraded == json {
            serde_json::from_str(text)
        } else {
            serde_json::from_value(upgraded)
        }
        .map_err(|e| error(e.to_string()))?;
        run.validate().map_err(|e| error(e.to_string()))?;
        Ok(run)
    }

    /// Checks the run as a scenario load checks its scenario ([`validate::validate`]), and
    /// its mutant's name.
    ///
    /// # Errors
    /// The first value refused, naming its field.
    pub fn validate(&self) -> Result<(), validate::Invalid> {
        validate::validate(
            &self.world,
            &self.workload,
            &self.schedule,
            self.liveness_phase,
            &self.expect,
        )?;
        let mutant = self.mutant().map_err(|e| validate::Invalid {
            field: "mutant".into(),
            message: e.to_string(),
        })?;
        let backend = self.world.backend.name();
        match mutant.map(|mutant| (mutant, crate::mutants::check_planted_in(mutant, backend))) {
            Some((mutant, Err(refusal))) => Err(validate::Invalid {
                field: "mutant".into(),
                message: match mutant.backend() {
                    Some("etcd") => format!(
                        "{refusal}; etcd runs only against a real etcd (`leasesim live \
                         --backend etcd`, the tests of tests/etcd)"
                    ),
                    other => format!("{refusal}; run it on a {} scenario", other.unwrap_or("any")),
                },
            }),
            _ => Ok(()),
        }
    }

    /// The latest true simulated time this run can reach, ms: its duration, or with the
    /// liveness phase its heal (held back by its freezes) and LIVE's bound after it
    /// ([`crate::schedule::FaultSchedule::run_end_ms`]); what its wall-clock limit is
    /// derived from ([`crate::wall`]).
    pub fn simulated_end_ms(&self) -> u64 {
        self.schedule
            .run_end_ms(&self.world_config_unchecked().schedule_bounds())
    }

    /// The number of replica hosts of this run's world.
    pub fn replicas(&self) -> u32 {
        self.world_config_unchecked().replicas
    }

    /// The wall-clock limit of this run: `given` (a campaign's `--run-timeout`, checked when
    /// the campaign starts), or the default for its simulated length
    /// ([`crate::wall::default_timeout`]).
    pub fn wall_timeout(&self, given: Option<Duration>) -> Duration {
        given.unwrap_or_else(|| {
            crate::wall::default_timeout(self.simulated_end_ms(), self.replicas())
        })
    }

    /// The run file as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a run file always serialises")
    }

    /// Writes the run file.
    ///
    /// # Errors
    /// [`RunFileError`] naming the file when it cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), RunFileError> {
        leasesim_results::output::replace(path, (self.to_json() + "\n").as_bytes())
            .map_err(|e| RunFileError(e.to_string()))
    }

    /// What `leasesim run` and `leasesim replay` print before running: the scenario, every
    /// resolved option, and the swarm options drawn (if any), one per line.
    pub fn describe(&self, out: &Path, timeout: Duration) -> String {
        self.describe_on(self.world.backend.name(), out, timeout)
    }

    /// [`RunFile::describe`] for a run on `backend` rather than its world's (live mode's
    /// `--backend flock`, whose run file keeps the simulated world's `grpc`).
    pub fn describe_on(&self, backend: &str, out: &Path, timeout: Duration) -> String {
        let w = &self.world;
        let workload = match &self.workload {
            RunWorkload::Generated(mix) => format!(
                "generated (appends={}..{} think_ms={}..{} shutdown={}/{})",
                mix.appends.0,
                mix.appends.1,
                mix.think_ms.0,
                mix.think_ms.1,
                mix.shutdown_chance.0,
                mix.shutdown_chance.1
            ),
            RunWorkload::Plan(plan) => format!("plan ({} runs)", plan.runs.len()),
            RunWorkload::Script(script) => format!("script ({} calls)", script.calls.len()),
        };
        let mut text = format!(
            "scenario: {}{}\noptions: replicas={} sessions={} ttl_ms={}{} skew_margin_percent={} \
             duration_s={} call_timeout_ms={} latency_ms={}..{} backend={}{} workload={workload} \
             faults={} mutant={} liveness_phase={} out={} timeout={}\n",
            self.scenario,
            self.scenario_path
                .as_ref()
                .map_or(String::new(), |p| format!(" ({p})")),
            w.replicas,
            w.sessions.join(","),
            w.ttl_ms,
            w.replica_ttl_ms
                .map_or(String::new(), |ms| format!(" replica_ttl_ms={ms}")),
            w.skew_margin_percent,
            w.duration_s,
            w.call_timeout_ms,
            w.latency_ms.0,
            w.latency_ms.1,
            backend,
            // Named only off turmoil, so a turmoil run's header is as it always was.
            match w.engine {
                crate::config::WorldEngine::Turmoil => String::new(),
                engine => format!(" engine={}", engine.name()),
            },
            self.schedule.faults.len(),
            self.mutant.as_deref().unwrap_or("none"),
            self.liveness_phase,
            out.display(),
            duration_token(timeout),
        );
        if let Some(drawn) = &self.drawn {
            text += &format!("drawn: {}\n", drawn.summary());
        }
        text
    }

    /// The command that replays this run once saved at `path`, by the binary that knows its
    /// backend ([`BackendSpec::binary`]).
    pub fn replay_command(&self, path: &Path) -> String {
        format!(
            "{} replay {}",
            self.world.backend.binary(),
            shell_word(&path.display().to_string())
        )
    }

    /// The mutant, by name.
    ///
    /// # Errors
    /// [`RunnerError::BadInput`] for a name no mutant has, listing the names.
    pub fn mutant(&self) -> Result<Option<Mutant>, RunnerError> {
        let Some(name) = &self.mutant else {
            return Ok(None);
        };
        Mutant::from_name(name).map(Some).ok_or_else(|| {
            let names: Vec<&str> = Mutant::ALL.iter().map(|m| m.name()).collect();
            RunnerError::BadInput(format!(
                "unknown mutant `{name}`; the mutants are {}",
                names.join(", ")
            ))
        })
    }

    /// The world's configuration without the checks of [`RunFile::world_config`]: for
    /// drawing a schedule while the run file is being resolved.
    pub fn world_config_unchecked(&self) -> WorldConfig {
        let mut config = self.world.config(self.seed, self.workload.mix());
        config.liveness_phase = self.liveness_phase;
        config
    }

    /// The world's configuration: the world, the seed, the mix, the mutant and the liveness
    /// phase.
    ///
    /// # Errors
    /// [`RunnerError::BadInput`] for an unknown mutant or out-of-range world values.
    pub fn world_config(&self) -> Result<WorldConfig, RunnerError> {
        self.world.check().map_err(|(field, message)| {
            RunnerError::BadInput(format!("world.{field}: {message}"))
        })?;
        let mut config = self.world_config_unchecked();
        config.mutant = self.mutant()?;
        Ok(config)
    }

    /// The world's workload.
    pub fn world_workload(&self) -> Workload {
        match &self.workload {
            RunWorkload::Generated(_) => Workload::Generated,
            RunWorkload::Plan(plan) => Workload::Planned(plan.clone()),
            RunWorkload::Script(script) => Workload::Scripted(script.clone()),
        }
    }

    /// The run with its generated workload replaced by the plan it drew, and the run's
    /// history: `run` itself when its workload is not generated. One execution of the run,
    /// since which drawn runs its replicas get to make depends on how it goes
    /// ([`crate::plan`]); the planned run gives the same history, byte for byte.
    ///
    /// # Errors
    /// As [`execute`].
    pub fn planned(&self, timeout: Duration) -> Result<(RunFile, History), RunnerError> {
        let ran = execute_world(self, timeout)?;
        let mut run = self.clone();
        if let RunWorkload::Generated(_) = &run.workload {
            run.workload = RunWorkload::Plan(ran.started);
        }
        Ok((run, ran.history))
    }
}

impl RunWorkload {
    /// The mix a world is configured with: a generated workload's own, else the default
    /// (which nothing then draws from).
    pub fn mix(&self) -> WorkloadMix {
        match self {
            RunWorkload::Generated(mix) => mix.clone(),
            RunWorkload::Plan(_) | RunWorkload::Script(_) => WorkloadMix::default(),
        }
    }
}

/// `word` as one shell word: as it is when it holds only characters no shell treats
/// specially, else in single quotes (a `'` inside written `'\''`).
pub fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// A duration as one token a command line takes back: `90s`, `1500ms` (never `1m 30s`).
pub fn duration_token(duration: Duration) -> String {
    if duration.subsec_millis() == 0 && duration.subsec_nanos() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{}ms", duration.as_millis())
    }
}

/// Runs `run` once with a wall-clock `timeout` (the runner's own harness thread): the history
/// and the trace (JSON lines).
///
/// # Errors
/// [`RunnerError::BadInput`] for a run the world refuses (bad schedule, script, mutant);
/// [`RunnerError::Harness`] for a hang, a panic or a failed host, naming the seed.
pub fn execute(run: &RunFile, timeout: Duration) -> Result<(History, Vec<u8>), RunnerError> {
    let config = run.world_config()?;
    runner::run_with_timeout(&config, run.schedule.clone(), run.world_workload(), timeout)
}

/// Runs `run` once as [`execute`] does: what the world produced (the history and the runs
/// its replicas started), without the trace.
///
/// # Errors
/// As [`execute`].
pub fn execute_world(run: &RunFile, timeout: Duration) -> Result<RunOutput, RunnerError> {
    let config = run.world_config()?;
    runner::run_world_with_timeout(&config, run.schedule.clone(), run.world_workload(), timeout)
        .map(|(output, _)| output)
}

/// Runs `run` and writes into `out`: `run.json`, `history.jsonl`, `trace.jsonl`,
/// `schedule.json` (the faults applied) and `script.json` for a scripted run; returns what
/// the world did (whose `replay` is `leasesim replay <out>/run.json`) and the history, for
/// the caller to judge and write `result.json` from (the campaign's single run,
/// docs/campaigns.md#run-files).
///
/// # Errors
/// As [`execute`], and [`RunnerError::Harness`] when a file cannot be written.
pub fn execute_to(
    run: &RunFile,
    out: &Path,
    timeout: Duration,
) -> Result<(RunResult, History), RunnerError> {
    runner::create_out(out)?;
    runner::clear_outputs(out)?;
    let run_path = out.join("run.json");
    run.save(&run_path)
        .map_err(|e| RunnerError::Harness(e.to_string()))?;
    let script = match &run.workload {
        RunWorkload::Script(script) => Some(script),
        RunWorkload::Generated(_) | RunWorkload::Plan(_) => None,
    };
    runner::write_inputs(out, &run.schedule, script)?;
    let (history, trace) = execute(run, timeout)?;
    runner::write_outputs(out, &history, &trace)?;
    let result = RunResult {
        seed: run.seed,
        replicas: run.world.replicas,
        duration_ms: run.world.duration_s * 1_000,
        ended_ms: history
            .phase_at_us(leasesim_history::Phase::RunEnded)
            .map_or(0, |us| us / 1_000),
        schedule: run.schedule.clone(),
        faults: run.schedule.faults.len(),
        script: script.map(|_| "script.json".to_owned()),
        history_lines: history.lines().len(),
        operations: history.ops().count(),
        replay: run.replay_command(&run_path),
        scenario: Some(run.scenario.clone()),
    };
    Ok((result, history))
}
