//! What `leasesim run` was asked for — a scenario and a seed, or a seed and flags — and how it
//! resolves to a run file ([`RunRequest::resolve`]). Every run is a run file: the banner, the
//! replay line and `--check-determinism` come from the file, never from the flags. The other
//! way round, [`RunRequest::equivalent`] finds the flags that resolve to a given run file, if
//! any, so the replay line can also show them — checked by resolving them again, so they are
//! always exactly that run.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::scenario::Scenario;
use crate::mutant::Mutant;
use crate::sim::config::default_sessions;
use crate::sim::runfile::{
    BackendSpec, COMMAND_LINE, DURATION_S_MAX, Expect, REPLICAS_MAX, RUN_FILE_SCHEMA_VERSION,
    RunFile, RunFileError, RunWorkload, WorldSpec, duration_token, shell_word,
};
use crate::sim::schedule::FaultSchedule;
use crate::sim::script::Script;

/// The command that reruns `run`, resolved from the scenario at `path` with its seed: `BINARY
/// run --scenario PATH --seed SEED`, with `--backend` when the campaign gave one
/// (`backend_flag`), `--engine` when the run's world is not on turmoil
/// (docs/world.md#the-world-on-the-engine) and `--mutant` when the run carries one; `BINARY`
/// is the one that knows the run's backend ([`BackendSpec::binary`]).
pub fn scenario_command(run: &RunFile, path: &Path, backend_flag: Option<&BackendSpec>) -> String {
    let mut command = format!(
        "{} run --scenario {} --seed {}",
        run.world.backend.binary(),
        shell_word(&path.display().to_string()),
        run.seed
    );
    if let Some(backend) = backend_flag {
        command += &format!(" --backend {}", backend.name());
    }
    if run.world.engine != crate::sim::config::WorldEngine::Turmoil {
        command += &format!(" --engine {}", run.world.engine.name());
    }
    if let Some(mutant) = &run.mutant {
        command += &format!(" --mutant {mutant}");
    }
    command
}

/// What `leasesim run` was asked for: the run's flags, defined once (clap parses them here,
/// [`RunRequest::args`] writes them back).
#[derive(Clone, PartialEq, Eq, Debug, clap::Args)]
pub struct RunRequest {
    /// Master seed: every random choice of the run derives from it.
    #[arg(long)]
    pub seed: u64,
    /// Scenario file (TOML; see sims/README.md): world, workload, faults or swarm profile,
    /// and the invariants expected; prints the swarm options the seed drew.
    #[arg(long, value_name = "FILE.toml", conflicts_with_all = ["schedule", "no_faults", "script", "replicas", "duration"])]
    pub scenario: Option<PathBuf>,
    /// Number of replica hosts, 1..=1000; the world's sessions are `s1` … `sK`,
    /// K = max(2, replicas / 10) (docs/world.md#worlds-of-any-size).
    #[arg(long, default_value_t = RunRequest::DEFAULT_REPLICAS, value_parser = clap::value_parser!(u32).range(1..=i64::from(REPLICAS_MAX)))]
    pub replicas: u32,
    /// Simulated duration of the run, whole seconds (e.g. 90s).
    #[arg(long, default_value = "60s", value_parser = crate::time::parse_duration)]
    pub duration: Duration,
    /// Fault schedule (JSON; see `leasesim::sim::schedule`). Default: faults drawn from the
    /// seed (written to DIR/schedule.json).
    #[arg(long, value_name = "FILE.json", conflicts_with = "no_faults")]
    pub schedule: Option<PathBuf>,
    /// Without --schedule: apply no faults instead of drawing them from the seed.
    #[arg(long)]
    pub no_faults: bool,
    /// Scripted workload (JSON; see `leasesim::sim::script`). Default: drawn from the seed.
    #[arg(long, value_name = "FILE.json")]
    pub script: Option<PathBuf>,
    /// Plant a bug in this world's system under test (`leasesim mutants` lists them), e.g.
    /// `release-by-session-only`; with --scenario it replaces the scenario's mutant.
    #[arg(long, value_name = "NAME", value_parser = Mutant::parse)]
    pub mutant: Option<Mutant>,
}

impl RunRequest {
    /// Replica hosts when `--replicas` is not given.
    pub const DEFAULT_REPLICAS: u32 = 3;
    /// Simulated duration when `--duration` is not given.
    pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);

    /// A request for `seed` with every default: no scenario, 3 replicas, 60 s, faults drawn
    /// from the seed, a generated workload, no mutant.
    pub fn new(seed: u64) -> Self {
        RunRequest {
            seed,
            scenario: None,
            replicas: Self::DEFAULT_REPLICAS,
            duration: Self::DEFAULT_DURATION,
            schedule: None,
            no_faults: false,
            script: None,
            mutant: None,
        }
    }

    /// The run file this request stands for.
    ///
    /// # Errors
    /// [`RunFileError`] naming the file or value at fault: an unreadable or malformed
    /// scenario, schedule or script file, a duration that is not whole seconds or over
    /// [`DURATION_S_MAX`], or a run a run file would be refused for ([`RunFile::validate`]),
    /// a `--mutant` planted in another backend than the run's included.
    pub fn resolve(&self) -> Result<RunFile, RunFileError> {
        self.resolve_on(None)
    }

    /// [`RunRequest::resolve`] with the world on `backend` when one is given (`leasesim run
    /// --backend`), in place of the scenario's or the default one; the scenario's checks
    /// are made on that backend ([`Scenario::load_on`]).
    ///
    /// # Errors
    /// As [`RunRequest::resolve`].
    pub fn resolve_on(&self, backend: Option<&BackendSpec>) -> Result<RunFile, RunFileError> {
        let mut run = match &self.scenario {
            Some(path) => Scenario::load_on(path, backend)
                .map_err(|e| RunFileError(e.to_string()))?
                .resolve(self.seed)?,
            None => self.resolve_flags(backend)?,
        };
        if let Some(mutant) = self.mutant {
            run.mutant = Some(mutant.name().to_owned());
            // The flag is checked as the run file it plants into would be: a mutant of
            // another backend is refused here, before anything runs.
            run.validate()
                .map_err(|e| RunFileError(format!("--mutant {}: {}", mutant.name(), e.message)))?;
        }
        Ok(run)
    }

    fn resolve_flags(&self, backend: Option<&BackendSpec>) -> Result<RunFile, RunFileError> {
        if self.duration.subsec_nanos() != 0 {
            return Err(RunFileError(format!(
                "--duration {}: give whole seconds (e.g. 90s)",
                duration_token(self.duration)
            )));
        }
        if self.duration.as_secs() > DURATION_S_MAX {
            return Err(RunFileError(format!(
                "--duration {}: must be at most {DURATION_S_MAX}s (one simulated day, as a \
                 scenario's duration_s)",
                duration_token(self.duration)
            )));
        }
        let world = WorldSpec {
            replicas: self.replicas,
            sessions: default_sessions(self.replicas),
            duration_s: self.duration.as_secs(),
            backend: backend.cloned().unwrap_or_default(),
            ..WorldSpec::default()
        };
        if let Err((field, message)) = world.check() {
            let flag = match field {
                "duration_s" => "duration",
                other => other,
            };
            return Err(RunFileError(format!("--{flag}: {message}")));
        }
        let workload = match &self.script {
            Some(path) => RunWorkload::Script(
                Script::from_json(&read(path)?)
                    .map_err(|e| RunFileError(format!("{}: {e}", path.display())))?,
            ),
            None => RunWorkload::Generated(Default::default()),
        };
        let mut run = RunFile {
            v: RUN_FILE_SCHEMA_VERSION,
            scenario: COMMAND_LINE.to_owned(),
            scenario_path: None,
            seed: self.seed,
            world,
            drawn: None,
            schedule: FaultSchedule::new(),
            workload,
            mutant: None,
            liveness_phase: false,
            expect: Expect::default(),
        };
        run.schedule = match (&self.schedule, self.no_faults) {
            (Some(path), _) => FaultSchedule::from_json(&read(path)?)
                .map_err(|e| RunFileError(format!("{}: {e}", path.display())))?,
            (None, true) => FaultSchedule::new(),
            (None, false) => crate::sim::generate::random_schedule(&run.world_config_unchecked()),
        };
        run.validate().map_err(|e| {
            let file = match e.field.split('.').next() {
                Some("schedule") => self.schedule.as_ref(),
                Some("workload") => self.script.as_ref(),
                _ => None,
            };
            let file = file.map_or(String::new(), |path| format!("{}: ", path.display()));
            RunFileError(format!("{file}{}", e.message))
        })?;
        Ok(run)
    }

    /// The flags (after `leasesim run`) that resolve to exactly `run` once its folder `out`
    /// holds the files `run` writes (`schedule.json`, `script.json`), or `None` when no flags
    /// do (a shrunk run, a scenario whose file changed).
    pub fn equivalent(run: &RunFile, out: &Path) -> Option<RunRequest> {
        let mutant = match &run.mutant {
            Some(name) => Some(Mutant::from_name(name)?),
            None => None,
        };
        let mut request = RunRequest {
            mutant,
            ..RunRequest::new(run.seed)
        };
        if let Some(path) = &run.scenario_path {
            request.scenario = Some(PathBuf::from(path));
        } else {
            request.replicas = run.world.replicas;
            request.duration = Duration::from_secs(run.world.duration_s);
            let drawn = crate::sim::generate::random_schedule(&run.world_config_unchecked());
            if run.schedule.faults.is_empty() && run.schedule.heal_at_ms.is_none() {
                request.no_faults = run.schedule != drawn;
            } else if run.schedule != drawn {
                request.schedule = Some(out.join("schedule.json"));
            }
            if let RunWorkload::Script(_) = run.workload {
                request.script = Some(out.join("script.json"));
            }
        }
        (request.resolve().ok()? == *run).then_some(request)
    }

    /// The flags after `leasesim run`, defaults left out, each value one token.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec!["--seed".to_owned(), self.seed.to_string()];
        let mut flag = |name: &str, value: String| {
            args.push(format!("--{name}"));
            args.push(value);
        };
        if let Some(scenario) = &self.scenario {
            flag("scenario", scenario.display().to_string());
        }
        if self.replicas != Self::DEFAULT_REPLICAS {
            flag("replicas", self.replicas.to_string());
        }
        if self.duration != Self::DEFAULT_DURATION {
            flag("duration", duration_token(self.duration));
        }
        if let Some(path) = &self.schedule {
            flag("schedule", path.display().to_string());
        }
        if let Some(script) = &self.script {
            flag("script", script.display().to_string());
        }
        if let Some(mutant) = self.mutant {
            flag("mutant", mutant.name().to_owned());
        }
        if self.no_faults {
            args.push("--no-faults".to_owned());
        }
        args
    }

    /// `binary run` with [`RunRequest::args`], each quoted for a shell where it must be
    /// (`binary`: the one that knows the run's backend, [`BackendSpec::binary`]).
    pub fn command(&self, binary: &str) -> String {
        let words: Vec<String> = self.args().iter().map(|a| shell_word(a)).collect();
        format!("{binary} run {}", words.join(" "))
    }
}

fn read(path: &Path) -> Result<String, RunFileError> {
    crate::input::read_to_string(path, crate::input::DOCUMENT_LIMIT)
        .map_err(|e| RunFileError(e.to_string()))
}
