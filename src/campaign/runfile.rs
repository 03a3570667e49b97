//! Run files (JSON, schema `v: 1`): one fully resolved run — the scenario it came from, the
//! seed, the world, the swarm options drawn (if any), the explicit fault schedule and the
//! workload (a generated mix, or the whole script inline), and the mutant. `leasesim replay
//! <run.json>` reproduces the run exactly; a shrinker edits the schedule, the script's calls
//! and `world.replicas` and saves the smaller run as a run file.
//!
//! ```json
//! {"v": 1, "scenario": "swarm-freezes", "scenario_path": "sims/swarm-freezes.toml",
//!  "seed": 7,
//!  "world": {"replicas": 3, "sessions": ["s1", "s2"], "ttl_ms": 10000,
//!            "skew_margin_percent": 10, "duration_s": 40, "call_timeout_ms": 2000,
//!            "latency_ms": [1, 5], "backend": "grpc"},
//!  "drawn": {"kinds": ["pause"], "faults": 3, "heal_at_ms": 26400, "intensity": {…}},
//!  "schedule": {"v": 1, "faults": [{"at_ms": 2000, "fault": "pause", …}], "heal_at_ms": 26400},
//!  "workload": {"generated": {"appends": [1, 6], "think_ms": [50, 1500],
//!                             "shutdown_chance": [1, 25]}},
//!  "mutant": null,
//!  "expect": {"hold": ["TOKEN", …], "violate": [], "coverage": []}}
//! ```
//! A scripted run's workload is `{"script": {"v": 1, "calls": [...]}}`.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::scenario::{Expect, Scenario, ScenarioFaults, ScenarioWorkload, WorldSpec};
use super::swarm::{self, Drawn};
use crate::history::History;
use crate::mutant::Mutant;
use crate::sim::runner::{self, RunResult, RunnerError};
use crate::sim::schedule::FaultSchedule;
use crate::sim::script::Script;
use crate::sim::world::{Workload, WorkloadMix, WorldConfig};

/// Schema version of run files.
pub const RUN_FILE_SCHEMA_VERSION: u32 = 1;

/// What the replicas of a run do.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RunWorkload {
    /// Drawn from the seed with this mix.
    Generated(WorkloadMix),
    /// Exactly these calls (the whole script, inline).
    Script(Script),
}

/// One fully resolved run.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFile {
    /// Schema version ([`RUN_FILE_SCHEMA_VERSION`]).
    pub v: u32,
    /// The scenario's name (its file stem).
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
    /// The scenario's expectations, so a replay can judge the run by them.
    #[serde(default)]
    pub expect: Expect,
}

/// A run file that cannot be resolved, read or written.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RunFileError(pub String);

impl RunFile {
    /// Resolves one run of `scenario` with `seed`: draws the swarm options and their schedule
    /// (or takes the scenario's schedule), and inlines the script.
    ///
    /// # Errors
    /// [`RunFileError`] when a drawn schedule does not fit the world (a profile whose ranges
    /// the world refuses), naming the scenario and the seed.
    pub fn resolve(scenario: &Scenario, seed: u64) -> Result<RunFile, RunFileError> {
        let workload = match &scenario.workload {
            ScenarioWorkload::Script { script, .. } => RunWorkload::Script(script.clone()),
            ScenarioWorkload::Generated(mix) => RunWorkload::Generated(mix.clone()),
        };
        let mut run = RunFile {
            v: RUN_FILE_SCHEMA_VERSION,
            scenario: scenario.name(),
            scenario_path: Some(scenario.path.display().to_string()),
            seed,
            world: scenario.world.clone(),
            drawn: None,
            schedule: FaultSchedule::new(),
            workload,
            mutant: scenario.mutant.clone(),
            expect: scenario.expect.clone(),
        };
        let config = run.world_config_unchecked();
        match &scenario.faults {
            ScenarioFaults::None => {}
            ScenarioFaults::Schedule { schedule, .. } => run.schedule = schedule.clone(),
            ScenarioFaults::Swarm(profile) => {
                let drawn = swarm::draw(profile, &config);
                run.schedule = drawn.schedule(&config);
                run.drawn = Some(drawn);
            }
        }
        run.schedule.validate(&config.hosts()).map_err(|e| {
            RunFileError(format!(
                "scenario {} with seed {seed} drew a schedule the world refuses: {e}",
                scenario.name()
            ))
        })?;
        Ok(run)
    }

    /// Reads a run file.
    ///
    /// # Errors
    /// [`RunFileError`] naming the file: unreadable, malformed JSON (with line and column),
    /// an unknown field, or a wrong schema version.
    pub fn load(path: &Path) -> Result<RunFile, RunFileError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| RunFileError(format!("cannot read {}: {e}", path.display())))?;
        let run: RunFile = serde_json::from_str(&text)
            .map_err(|e| RunFileError(format!("{}: {e}", path.display())))?;
        if run.v != RUN_FILE_SCHEMA_VERSION {
            return Err(RunFileError(format!(
                "{}: run file schema version {} is not supported; this leasesim reads version \
                 {RUN_FILE_SCHEMA_VERSION}",
                path.display(),
                run.v
            )));
        }
        if let Err((field, message)) = run.world.check() {
            return Err(RunFileError(format!(
                "{}: world.{field}: {message}",
                path.display()
            )));
        }
        Ok(run)
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
        std::fs::write(path, self.to_json() + "\n")
            .map_err(|e| RunFileError(format!("cannot write {}: {e}", path.display())))
    }

    /// What `leasesim run --scenario` and `leasesim replay` print before running: the
    /// scenario, the resolved options, and the swarm options drawn (if any), one per line.
    pub fn describe(&self, out: &Path, timeout: Duration) -> String {
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
            RunWorkload::Script(script) => format!("script ({} calls)", script.calls.len()),
        };
        let mut text = format!(
            "scenario: {}{}\noptions: replicas={} sessions={} ttl_ms={} skew_margin_percent={} \
             duration_s={} call_timeout_ms={} latency_ms={}..{} backend=grpc workload={workload} \
             faults={} mutant={} out={} timeout={}\n",
            self.scenario,
            self.scenario_path
                .as_ref()
                .map_or(String::new(), |p| format!(" ({p})")),
            w.replicas,
            w.sessions.join(","),
            w.ttl_ms,
            w.skew_margin_percent,
            w.duration_s,
            w.call_timeout_ms,
            w.latency_ms.0,
            w.latency_ms.1,
            self.schedule.faults.len(),
            self.mutant.as_deref().unwrap_or("none"),
            out.display(),
            humantime::format_duration(timeout),
        );
        if let Some(drawn) = &self.drawn {
            text += &format!("drawn: {}\n", drawn.summary());
        }
        text
    }

    /// The command that replays this run once saved at `path`.
    pub fn replay_command(&self, path: &Path) -> String {
        format!("leasesim replay {}", path.display())
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

    fn world_config_unchecked(&self) -> WorldConfig {
        let mix = match &self.workload {
            RunWorkload::Generated(mix) => mix.clone(),
            RunWorkload::Script(_) => WorkloadMix::default(),
        };
        self.world.config(self.seed, mix)
    }

    /// The world's configuration: the world, the seed, the mix and the mutant.
    ///
    /// # Errors
    /// [`RunnerError::BadInput`] for an unknown mutant or out-of-range world values.
    pub fn world_config(&self) -> Result<WorldConfig, RunnerError> {
        self.world.check().map_err(|(field, message)| {
            RunnerError::BadInput(format!("world.{field}: {message}"))
        })?;
        let mut config = self.world_config_unchecked();
        config.mutant = self.mutant()?;
        // A generated workload keeps writing after the heal, so LIVE can be judged: run on
        // until its bound has run out (issue 6, "Liveness phase"). A script ends when it ends.
        config.liveness_phase = matches!(self.workload, RunWorkload::Generated(_));
        Ok(config)
    }

    /// The world's workload.
    pub fn world_workload(&self) -> Workload {
        match &self.workload {
            RunWorkload::Generated(_) => Workload::Generated,
            RunWorkload::Script(script) => Workload::Scripted(script.clone()),
        }
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

/// Runs `run` and writes into `out`: `run.json`, `history.jsonl`, `trace.jsonl`,
/// `schedule.json` and `result.json` (whose `replay` is `leasesim replay <out>/run.json`).
///
/// # Errors
/// As [`execute`], and [`RunnerError::Harness`] when a file cannot be written.
pub fn execute_to(run: &RunFile, out: &Path, timeout: Duration) -> Result<RunResult, RunnerError> {
    runner::create_out(out)?;
    let run_path = out.join("run.json");
    run.save(&run_path)
        .map_err(|e| RunnerError::Harness(e.to_string()))?;
    let (history, trace) = execute(run, timeout)?;
    runner::write_outputs(out, &history, &trace, &run.schedule.to_json())?;
    let result = RunResult {
        v: 1,
        seed: run.seed,
        replicas: run.world.replicas,
        duration_ms: run.world.duration_s * 1_000,
        schedule: None,
        faults: run.schedule.faults.len(),
        script: None,
        history_lines: history.lines().len(),
        operations: history.ops().count(),
        replay: run.replay_command(&run_path),
        scenario: Some(run.scenario.clone()),
    };
    runner::write_result(out, &result)?;
    Ok(result)
}
