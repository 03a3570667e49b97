//! The world: turmoil hosts — the backend's authority host (`lease` by default), `ledger` and
//! `replica-1..N` — running the services and the service layer, each on its own
//! [`super::clock::HostClock`] and [`super::freeze::HostFreeze`], driven by a [`FaultSchedule`]
//! and a [`Workload`], recorded as a [`History`].
//!
//! Build one with [`World::builder`], turmoil-style; every setting has a documented default:
//!
//! ```no_run
//! use std::time::Duration;
//! use leasesim_sim::world::World;
//! use leasesim_sim::config::Workload;
//! use leasesim_sim::schedule::FaultSchedule;
//!
//! let world = World::builder()
//!     .seed(7)
//!     .replicas(3)
//!     .ttl(Duration::from_secs(10))
//!     .schedule(FaultSchedule::new())
//!     .workload(Workload::Generated)
//!     .build()
//!     .expect("a valid world");
//! let history = world.run().expect("the world runs").history;
//! # let _ = history;
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use super::backend::{AuthorityHost, Backend, ForkSlot, ReplicaEnv};
use super::clock::HostClock;
use super::config::{
    LEDGER_PORT, WALL_EPOCH, Workload, WorldConfig, WorldEngine, config_line, replica_name,
};
use super::freeze::HostFreeze;
use super::hosts::{Hosts, next_boot};
use super::plan::{Plan, StartedRuns};
use super::record::{Recorder, event_sink, recorded_store, validity_sink};
use super::schedule::{Fault, FaultSchedule, ScheduleError, limits};
use super::script::{Call, Script};
use super::seed::{Subsystem, sub_seed};
use super::stage::{Software, Stage, TurmoilStage};
use super::to_history::ToHistory;
use super::workload;
use leasesim_core::clock::Clock;
use leasesim_core::hooks::HookSlot;
use leasesim_core::journal::{Ledger, SkewMargin, Store, StoreConfig};
use leasesim_core::lease::SessionId;
use leasesim_core::mutant::Mutant;
use leasesim_core::storage::MemStorage;
use leasesim_history::hosts::LEDGER;
use leasesim_history::{ClockLine, History, LedgerLine, Line, Phase, PhaseLine, Process, micros};
use leasesim_net::Dialer;
use leasesim_remote::RemoteChannel;
use leasesim_remote::journal::{DurableLedger, LedgerServer, RemoteLedger};

/// Why a world could not be built or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorldError {
    /// The build lacks `--cfg tokio_unstable`, so tokio's RNG is not seeded.
    #[error(
        "this build of leasesim lacks `--cfg tokio_unstable`, so runs would not be \
         reproducible; build with RUSTFLAGS=\"--cfg tokio_unstable\" (the crate's \
         .cargo/config.toml does this)"
    )]
    NotDeterministic,
    /// The schedule names unknown hosts or has bad durations.
    #[error("bad fault schedule: {0}")]
    Schedule(#[from] ScheduleError),
    /// The schedule has a fault the backend does not support (record deletion, a restart).
    #[error("bad fault schedule: {0}")]
    Unsupported(String),
    /// The script names unknown replicas or sessions.
    #[error("bad script: {0}")]
    Script(String),
    /// The workload plan names unknown replicas or sessions, or has values out of range.
    #[error("bad workload plan: {0}")]
    Plan(String),
    /// A setting is out of range.
    #[error("bad world: {0}")]
    Config(String),
    /// turmoil reported a failure of a host (an error returned or a panic).
    #[error("simulation failed: {0}")]
    Simulation(String),
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutput {
    /// The history.
    pub history: History,
    /// The runs the replicas started, in the order they started, each stamped with the true
    /// time it started (ms, rounded down): for a generated workload, the plan that runs this
    /// same world again ([`super::plan`]); none for a script.
    pub started: Plan,
}

/// A world, checked and ready to run: its configuration, fault schedule and workload.
#[derive(Clone, Debug)]
pub struct World {
    config: WorldConfig,
    schedule: FaultSchedule,
    workload: Workload,
}

/// Builds a [`World`]. Defaults: seed 0, 3 replicas, sessions `s1` and `s2` (for other
/// replica counts, [`super::config::default_sessions`]), TTL 10 s, skew
/// margin 10 % of the TTL, 60 s of simulated time, 2 s call deadline, 1–5 ms latency, the
/// gRPC backend ([`super::backend::Grpc`]), no faults, a generated workload with the default
/// mix, no mutant, no liveness phase.
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct WorldBuilder {
    config: WorldConfig,
    schedule: FaultSchedule,
    random_faults: bool,
    workload: Workload,
    /// Whether the sessions were given (else they follow the replicas).
    sessions_named: bool,
}

impl World {
    /// A builder with every default (see [`WorldBuilder`]).
    pub fn builder() -> WorldBuilder {
        WorldBuilder::default()
    }

    /// The world's configuration.
    pub fn config(&self) -> &WorldConfig {
        &self.config
    }

    /// Runs the world to its end and returns its history.
    ///
    /// A world whose backend asks for it ([`super::backend::BackendView::own_thread`]) runs
    /// on a thread of its own, which this call waits for (a panic there is raised here).
    ///
    /// # Errors
    /// [`WorldError::NotDeterministic`] in a build without `tokio_unstable`;
    /// [`WorldError::Simulation`] for a host failure reported by turmoil.
    pub fn run(&self) -> Result<RunOutput, WorldError> {
        if !cfg!(tokio_unstable) {
            return Err(WorldError::NotDeterministic);
        }
        if self.config.backend.view().own_thread {
            return self.run_on_own_thread();
        }
        self.run_here()
    }

    /// [`World::run`] on a fresh thread, which keeps the caller's trace subscriber: hosted
    /// code keeps per-thread state seeded through the hooks (docs/targets.md#the-worlds-side).
    // One thread per world and no more: the simulation itself stays on it.
    #[allow(clippy::disallowed_methods)]
    fn run_on_own_thread(&self) -> Result<RunOutput, WorldError> {
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        std::thread::scope(|scope| {
            let thread = std::thread::Builder::new()
                .name(format!("leasesim-world-{}", self.config.seed))
                .spawn_scoped(scope, || {
                    tracing::dispatcher::with_default(&dispatch, || self.run_here())
                })
                .map_err(|e| WorldError::Simulation(format!("cannot start its thread: {e}")))?;
            thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// The run itself, on this thread.
    fn run_here(&self) -> Result<RunOutput, WorldError> {
        let _world_thread = super::hosted::WorldThread::enter(self.config.seed);
        let config = &self.config;
        let recorder = Recorder::default();
        let hosts = Arc::new(Hosts::new(config, &recorder, &self.schedule));
        let started = StartedRuns::default();
        let mut stage: Box<dyn Stage> = match config.engine {
            WorldEngine::Turmoil => Box::new(TurmoilStage::new(build_sim(config))),
            WorldEngine::Engine => Box::new(
                super::on_engine::EngineStage::new(config, &self.schedule)
                    .map_err(WorldError::Simulation)?,
            ),
        };
        host_authority(&mut *stage, config, &hosts, &recorder);
        host_ledger_service(&mut *stage, config, &hosts);
        for n in 1..=config.replicas {
            let replica = ReplicaHost {
                name: replica_name(n),
                workload: self.workload.clone(),
                started: started.clone(),
            };
            host_replica(&mut *stage, config, &hosts, &recorder, replica);
        }
        // A replica that stopped by itself (a graceful shutdown) is started again.
        let restart_stopped = !matches!(self.workload, Workload::Scripted(_));
        let healed_at =
            super::nemesis::drive(&mut *stage, config, &self.schedule, &hosts, restart_stopped)
                .map_err(WorldError::Simulation)?;
        let end = stage.elapsed();
        Ok(RunOutput {
            history: collect(config, &hosts, &recorder, healed_at, end),
            started: started.plan(),
        })
    }
}

impl WorldBuilder {
    /// Starts from `config` (every setting but the schedule and the workload).
    pub fn config(mut self, config: WorldConfig) -> Self {
        self.config = config;
        self.sessions_named = true;
        self
    }

    /// The master seed: every random choice of the run derives from it.
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = seed;
        self
    }

    /// What runs the world: turmoil (the default) or leasesim's engine
    /// (docs/world.md#the-world-on-the-engine).
    pub fn engine(mut self, engine: WorldEngine) -> Self {
        self.config.engine = engine;
        self
    }

    /// Replica hosts, 1..=1000 ([`limits::REPLICAS_MAX`]). Unless the sessions were named
    /// ([`WorldBuilder::sessions`], [`WorldBuilder::config`]), they become
    /// [`super::config::default_sessions`] of `replicas`.
    pub fn replicas(mut self, replicas: u32) -> Self {
        self.config.replicas = replicas;
        if !self.sessions_named {
            self.config.sessions = super::config::default_sessions(replicas);
        }
        self
    }

    /// The contended sessions.
    pub fn sessions<S: Into<String>>(mut self, sessions: impl IntoIterator<Item = S>) -> Self {
        self.config.sessions = sessions.into_iter().map(Into::into).collect();
        self.sessions_named = true;
        self
    }

    /// The lease TTL; renewals come every third of it.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.config.ttl = ttl;
        self
    }

    /// The TTL the replicas' own configuration names (the authority still grants
    /// [`WorldBuilder::ttl`]): the correct client ignores it.
    pub fn replica_ttl(mut self, ttl: Duration) -> Self {
        self.config.replica_ttl = Some(ttl);
        self
    }

    /// The skew margin, percent of the TTL (0..=99).
    pub fn skew_margin_percent(mut self, percent: u8) -> Self {
        self.config.skew_margin_percent = percent;
        self
    }

    /// Simulated duration of the run.
    pub fn duration(mut self, duration: Duration) -> Self {
        self.config.duration = duration;
        self
    }

    /// The deadline of every client call.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.config.call_timeout = timeout;
        self
    }

    /// The network latency range, ms, inclusive.
    pub fn latency_ms(mut self, least: u64, most: u64) -> Self {
        self.config.latency_ms = (least, most);
        self
    }

    /// The lease backend (default: [`super::backend::Grpc`]).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.config.backend = backend;
        self
    }

    /// The fault schedule (default: none).
    pub fn schedule(mut self, schedule: FaultSchedule) -> Self {
        self.schedule = schedule;
        self
    }

    /// Faults drawn from the seed when the world is built, as `leasesim run` without
    /// `--schedule` draws them ([`super::generate::random_schedule`]); replaces
    /// [`WorldBuilder::schedule`].
    pub fn random_faults(mut self) -> Self {
        self.random_faults = true;
        self
    }

    /// What the replicas do (default: [`Workload::Generated`]).
    pub fn workload(mut self, workload: Workload) -> Self {
        self.workload = workload;
        self
    }

    /// The mix of a generated workload.
    pub fn mix(mut self, mix: super::config::WorkloadMix) -> Self {
        self.config.mix = mix;
        self
    }

    /// A planted bug (default: none, the correct implementation).
    pub fn mutant(mut self, mutant: Option<Mutant>) -> Self {
        self.config.mutant = mutant;
        self
    }

    /// Runs on after the heal until LIVE's bound has run out (default off).
    pub fn liveness_phase(mut self, on: bool) -> Self {
        self.config.liveness_phase = on;
        self
    }

    /// Checks the world and returns it.
    ///
    /// # Errors
    /// [`WorldError::Config`] for out-of-range settings, [`WorldError::Schedule`] for faults
    /// naming unknown hosts or with bad values, [`WorldError::Unsupported`] for faults the
    /// backend does not support, [`WorldError::Script`] for a script naming unknown replicas
    /// or sessions or using leases and journals it never acquired or opened,
    /// [`WorldError::Plan`] for a workload plan naming unknown replicas or sessions.
    pub fn build(mut self) -> Result<World, WorldError> {
        check_config(&self.config)?;
        if self.random_faults {
            self.schedule = super::generate::random_schedule(&self.config);
        }
        self.schedule.validate_in(&self.config.schedule_bounds())?;
        check_backend_faults(&self.config.backend, &self.schedule)?;
        match &self.workload {
            Workload::Scripted(script) => check_script(&self.config, script)?,
            Workload::Planned(plan) => plan
                .check(self.config.replicas, &self.config.sessions)
                .map_err(WorldError::Plan)?,
            Workload::Generated => {}
        }
        Ok(World {
            config: self.config,
            schedule: self.schedule,
            workload: self.workload,
        })
    }
}

fn check_config(config: &WorldConfig) -> Result<(), WorldError> {
    let refuse = |message: String| Err(WorldError::Config(message));
    if !(1..=limits::REPLICAS_MAX).contains(&config.replicas) {
        return refuse(format!(
            "replicas must be 1..={}, got {}",
            limits::REPLICAS_MAX,
            config.replicas
        ));
    }
    if config.sessions.is_empty() {
        return refuse("the world needs at least one session".into());
    }
    for (index, session) in config.sessions.iter().enumerate() {
        if config.sessions[..index].contains(session) {
            return refuse(format!(
                "world.sessions: `{session}` is named twice; name each session once"
            ));
        }
    }
    if config.duration.is_zero() || config.duration > Duration::from_millis(limits::RUN_MS_MAX) {
        return refuse(format!(
            "the duration must be more than 0 and at most {} ms (one simulated day), got {} ms",
            limits::RUN_MS_MAX,
            config.duration.as_millis()
        ));
    }
    if config.ttl.is_zero() || config.replica_ttl.is_some_and(|t| t.is_zero()) {
        return refuse("the TTL must be more than 0".into());
    }
    if let Err(message) = config.backend.inner().check_ttl(config.ttl) {
        return refuse(message);
    }
    if config.skew_margin_percent > 99 {
        return refuse(format!(
            "the skew margin must be 0..=99 % of the TTL, got {}",
            config.skew_margin_percent
        ));
    }
    if config.latency_ms.0 > config.latency_ms.1 {
        return refuse(format!(
            "the latency range [{}, {}] ms is empty",
            config.latency_ms.0, config.latency_ms.1
        ));
    }
    Ok(())
}

/// Refuses faults the backend cannot take: record deletion, crashes or restarts of its host
/// when it does not restart, and freezes and drift when its code cannot take them (code the
/// world hosts unmodified: docs/targets.md#what-a-target-world-refuses). A world refuses them
/// when built, a scenario when loaded.
///
/// # Errors
/// [`WorldError::Unsupported`] naming the backend, the fault and its time.
pub fn check_backend_faults(backend: &Backend, schedule: &FaultSchedule) -> Result<(), WorldError> {
    let view = backend.view();
    for fault in &schedule.faults {
        let refused = match &fault.fault {
            Fault::Fork { .. } if !view.forks => {
                "fork: its replicas are not processes of one host (only flock's are)"
            }
            Fault::DeleteLeaseRecord { .. } if !view.record_deletion => "delete_lease_record",
            Fault::LeaseServiceRestarts { .. } if !view.restarts => "lease_service_restarts",
            Fault::AuthorityErrors { .. } if !view.error_windows => {
                "authority_errors (its server does not answer error windows)"
            }
            Fault::Crash { host } | Fault::Restart { host }
                if !view.restarts && *host == view.host =>
            {
                "a crash or restart of its host"
            }
            Fault::Pause { .. } | Fault::Suspend { .. } | Fault::Stall { .. } if !view.freezes => {
                "pause, suspend or stall: it lacks the capability `freezes` (a pause cannot \
                 stop a task that passes none of the world's gates, and its code passes none)"
            }
            Fault::ClockDrift { .. } if !view.drift => {
                "clock_drift: it lacks the capability `drift` (its code sleeps on tokio's \
                 timers, which do not follow a host's drift)"
            }
            _ => continue,
        };
        return Err(WorldError::Unsupported(format!(
            "the {} backend does not support {refused} (fault at {} ms)",
            backend.name(),
            fault.at_ms
        )));
    }
    Ok(())
}

/// Refuses a `fork` call on a backend whose replicas cannot fork.
fn fork_allowed(config: &WorldConfig) -> Result<(), String> {
    if config.backend.forks() {
        return Ok(());
    }
    Err(format!(
        "forks, but the {} backend's replicas cannot fork (only flock's can)",
        config.backend.name()
    ))
}

/// Refuses a script that names an unknown replica or session, or uses a lease or journal its
/// replica has not acquired or opened earlier in the script.
pub fn check_script(config: &WorldConfig, script: &Script) -> Result<(), WorldError> {
    let replicas: Vec<String> = (1..=config.replicas).map(replica_name).collect();
    let mut leases: BTreeSet<(String, String)> = BTreeSet::new();
    let mut journals: BTreeSet<(String, String)> = BTreeSet::new();
    let mut shut_down: BTreeMap<String, u64> = BTreeMap::new();
    for (index, call) in script.calls.iter().enumerate() {
        let refuse = |reason: String| {
            WorldError::Script(format!(
                "call {index} (at {} ms by {}): {reason}",
                call.at_ms, call.replica
            ))
        };
        if !replicas.contains(&call.replica) {
            return Err(refuse(format!(
                "unknown replica; the world has {}",
                replicas.join(", ")
            )));
        }
        let session_known = |session: &String| {
            if config.sessions.contains(session) {
                Ok(())
            } else {
                Err(refuse(format!(
                    "unknown session `{session}`; the world's sessions are {}",
                    config.sessions.join(", ")
                )))
            }
        };
        if let Some(at_ms) = shut_down.get(&call.replica) {
            return Err(refuse(format!(
                "comes after its shutdown at {at_ms} ms; a replica that shut down makes no more calls"
            )));
        }
        let key = |name: &str| (call.replica.clone(), name.to_owned());
        match &call.call {
            Call::Acquire { session, name } => {
                session_known(session)?;
                leases.insert(key(name.as_deref().unwrap_or(session)));
            }
            Call::OpenJournal { session, lease } => {
                session_known(session)?;
                let lease = lease.as_deref().unwrap_or(session);
                if !leases.contains(&key(lease)) {
                    return Err(refuse(format!(
                        "opens under lease `{lease}`, which it never acquired"
                    )));
                }
                journals.insert(key(session));
            }
            Call::Append { session, .. } => {
                if !journals.contains(&key(session)) {
                    return Err(refuse(format!(
                        "appends to `{session}`, whose journal it never opened"
                    )));
                }
            }
            Call::StartRenewer { lease } | Call::Renew { lease } | Call::Release { lease } => {
                if !leases.contains(&key(lease)) {
                    return Err(refuse(format!(
                        "uses lease `{lease}`, which it never acquired"
                    )));
                }
            }
            Call::Fork { .. } => fork_allowed(config).map_err(refuse)?,
            Call::Shutdown => {
                shut_down.insert(call.replica.clone(), call.at_ms);
            }
        }
    }
    Ok(())
}

fn build_sim(config: &WorldConfig) -> turmoil::Sim<'static> {
    let mut builder = turmoil::Builder::new();
    builder
        .rng_seed(sub_seed(config.seed, Subsystem::Network))
        .epoch(std::time::UNIX_EPOCH + Duration::from_nanos(WALL_EPOCH.unix_ns as u64))
        .simulation_duration(config.duration + Duration::from_secs(3_600))
        .min_message_latency(Duration::from_millis(config.latency_ms.0))
        .max_message_latency(Duration::from_millis(config.latency_ms.1))
        .tcp_capacity(tcp_capacity(config.replicas));
    builder.build()
}

/// turmoil's socket queue length (`tcp_capacity`, 64 by default): a server's queue must hold
/// every replica's SYN, all sent at the same instant when the run starts, or turmoil panics
/// ("server socket buffer full"). Up to 64 replicas turmoil's default, so no world that
/// existed before worlds grew past 64 changes; above that, four per replica (a lease and a
/// ledger connection each, and their reconnections). A bound, not an allocation.
fn tcp_capacity(replicas: u32) -> usize {
    64.max(4 * replicas as usize)
}

/// The backend's server on its host, started again at every boot with the same disk.
fn host_authority(
    stage: &mut dyn Stage,
    config: &WorldConfig,
    hosts: &Arc<Hosts>,
    recorder: &Recorder,
) {
    let name = hosts.authority_host.clone();
    let (backend, ttl, mutant) = (config.backend.clone(), config.ttl, config.mutant);
    // What the authority reports through its hooks (record deletions) becomes `event` lines.
    hosts
        .freeze(&name)
        .set_sink(Arc::new(event_sink(recorder.clone(), &name)));
    let (hosts, recorder) = (hosts.clone(), recorder.clone());
    let host_name = name.clone();
    let software: Software = Rc::new(move || {
        let conns = hosts.conns(&name);
        let host = AuthorityHost {
            name: name.clone(),
            clock: hosts.clock(&name),
            disk: hosts.authority_disk.clone(),
            hooks: HookSlot::new(Arc::new(hosts.freeze(&name))),
            ttl,
            mutant,
            recorder: recorder.clone(),
            faults: hosts.authority_faults.clone(),
            error_windows: hosts.error_windows.clone(),
            conns: conns.clone(),
        };
        let clock = host.clock.clone();
        let serve = backend.inner().serve(host);
        Box::pin(async move {
            super::hosted::register_host(&clock);
            conns.close_at_teardown();
            serve.await
        })
    });
    stage.host(&host_name, software);
}

fn host_ledger_service(stage: &mut dyn Stage, config: &WorldConfig, hosts: &Hosts) {
    let (disk, freeze) = (hosts.ledger_disk.clone(), hosts.freeze(LEDGER));
    let (conns, clock) = (hosts.conns(LEDGER), hosts.clock(LEDGER));
    let mutant = config.mutant;
    let software: Software = Rc::new(move || {
        let (disk, freeze, conns) = (disk.clone(), freeze.clone(), conns.clone());
        let clock = clock.clone();
        Box::pin(async move {
            super::hosted::register_host(&clock);
            conns.close_at_teardown();
            let ledger = DurableLedger::open(Arc::new(disk))
                .await?
                .with_mutant(mutant);
            let incoming = conns.incoming(&format!("0.0.0.0:{LEDGER_PORT}")).await?;
            LedgerServer::new(Arc::new(ledger))
                .with_hooks(HookSlot::new(Arc::new(freeze)))
                .serve(incoming, std::future::pending())
                .await?;
            Ok(())
        })
    });
    stage.host(LEDGER, software);
}

/// What one replica host runs: its name, the world's workload, and where it notes the runs
/// it starts.
struct ReplicaHost {
    name: String,
    workload: Workload,
    started: StartedRuns,
}

fn host_replica(
    stage: &mut dyn Stage,
    config: &WorldConfig,
    hosts: &Hosts,
    recorder: &Recorder,
    host: ReplicaHost,
) {
    let name = host.name.clone();
    let (clock, freeze, boots) = (hosts.clock(&name), hosts.freeze(&name), hosts.boots(&name));
    let (dialer, conns) = (hosts.replica_dialer(&name), hosts.conns(&name));
    let (flock, forks) = (hosts.flock.clone(), hosts.forks(&name));
    let (config, recorder, host) = (config.clone(), recorder.clone(), Arc::new(host));
    let software: Software = Rc::new(move || {
        let (clock, freeze, boots) = (clock.clone(), freeze.clone(), boots.clone());
        let (dialer, conns) = (dialer.clone(), conns.clone());
        let (flock, forks) = (flock.clone(), forks.clone());
        let (config, recorder, host) = (config.clone(), recorder.clone(), host.clone());
        Box::pin(async move {
            super::hosted::register_host(&clock);
            conns.close_at_teardown();
            let name = host.name.clone();
            let process = Process::new(name.clone(), next_boot(&boots));
            let on = ReplicaOn {
                dialer,
                flock,
                forks: forks.clone(),
            };
            let store = replica_store(&config, &recorder, &process, &clock, &freeze, on)?;
            let replica = workload::Replica {
                name: name.clone(),
                process,
                store: Arc::new(store),
                recorder,
                clock: Arc::new(clock),
                config: config.clone(),
                forks,
            };
            let started = host.started.clone();
            match &host.workload {
                Workload::Scripted(script) => {
                    workload::run_script(replica, script.calls_of(&name)).await
                }
                Workload::Generated => workload::run_generated(replica, started).await,
                Workload::Planned(plan) => workload::run_planned(replica, plan, started).await,
            }
            Ok(())
        })
    });
    stage.host(&name, software);
}

/// What a replica's clients reach: the world's transport, the backend host's flock model,
/// the replica's fork slot.
struct ReplicaOn {
    dialer: Dialer,
    flock: leasesim_flock::model::Host,
    forks: ForkSlot,
}

/// A replica's store: the backend's lease client and the ledger client, each recorded as
/// history operations, with the replica's clock, freezes and the world's mutant.
fn replica_store(
    config: &WorldConfig,
    recorder: &Recorder,
    process: &Process,
    clock: &HostClock,
    freeze: &HostFreeze,
    on: ReplicaOn,
) -> Result<Store, Box<dyn std::error::Error>> {
    let dialer = on.dialer;
    let client = config.client_config();
    let clock_arc: Arc<dyn Clock> = Arc::new(clock.clone());
    let hooks = HookSlot::new(Arc::new(freeze.clone()));
    let env = ReplicaEnv {
        name: process.replica.clone(),
        clock: clock.clone(),
        client: client.clone(),
        authority_host: config.backend.view().host,
        mutant: config.mutant,
        ttl: config.ttl,
        recorder: recorder.clone(),
        dialer: dialer.clone(),
        hooks: hooks.clone(),
        flock: on.flock,
        forks: on.forks,
    };
    let lease = config.backend.inner().client(&env)?;
    let ledger = RemoteChannel::new(
        &format!("{LEDGER}:{LEDGER_PORT}"),
        dialer,
        clock_arc.clone(),
        &client,
    )
    .map(RemoteLedger::new)?;
    freeze.set_sink(Arc::new(validity_sink(recorder.clone(), process.clone())));
    let store_config = StoreConfig {
        skew_margin: SkewMargin::Percent(config.skew_margin_percent),
        hooks,
        configured_ttl: config.replica_ttl,
        mutant: config.mutant,
        ..StoreConfig::default()
    };
    let clients = (lease, Arc::new(ledger) as Arc<dyn Ledger>);
    let recording = (recorder, process);
    Ok(recorded_store(clients, recording, clock_arc, store_config))
}

/// The history: config, operations, decisions, validity checks, events and nemesis actions,
/// the armed freezes that fired (as `nemesis` lines), phase markers, clock segments, then the
/// final ledger.
fn collect(
    config: &WorldConfig,
    hosts: &Hosts,
    recorder: &Recorder,
    healed_at: Duration,
    end: Duration,
) -> History {
    let mut lines = vec![Line::Config(config_line(config))];
    let end_us = micros(end);
    lines.extend(recorder.finish(end_us).into_iter().map(|line| match line {
        // A freeze's `resume` is written when it starts: no later than the run's end.
        Line::Nemesis(mut nemesis) => {
            nemesis.at_us = nemesis.at_us.min(end_us);
            Line::Nemesis(nemesis)
        }
        other => other,
    }));
    for (host, freeze) in &hosts.freezes {
        for (start, armed) in freeze.fired() {
            lines.extend(
                super::fault_lines::freeze_lines(host, start, &armed)
                    .into_iter()
                    .map(|mut nemesis| {
                        nemesis.at_us = nemesis.at_us.min(end_us);
                        Line::Nemesis(nemesis)
                    }),
            );
        }
    }
    lines.push(Line::Phase(PhaseLine {
        name: Phase::FaultsHealed,
        at_us: micros(healed_at),
    }));
    lines.push(Line::Phase(PhaseLine {
        name: Phase::RunEnded,
        at_us: micros(end),
    }));
    for (host, clock) in &hosts.clocks {
        for segment in clock.segments(end) {
            lines.push(Line::Clock(ClockLine {
                host: host.clone(),
                boot: segment.boot,
                from_us: micros(segment.from_true),
                local_from_us: micros(segment.local_from.since_origin()),
                drift_ppm: segment.drift_ppm,
                suspended: segment.suspended,
            }));
        }
    }
    lines.extend(final_ledger(config, &hosts.ledger_disk));
    History::from_lines("history.jsonl", lines)
}

/// Every record the ledger service holds at the end, read from its disk.
fn final_ledger(config: &WorldConfig, disk: &MemStorage) -> Vec<Line> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime to read the final ledger");
    runtime.block_on(async {
        let Ok(ledger) = DurableLedger::open(Arc::new(disk.clone())).await else {
            return Vec::new();
        };
        let mut lines = Vec::new();
        for session in &config.sessions {
            let Ok(session) = SessionId::new(session.clone()) else {
                continue;
            };
            for entry in ledger.read(&session, 1).await.unwrap_or_default() {
                lines.push(Line::Ledger(LedgerLine {
                    session: session.as_str().to_owned(),
                    seq: entry.seq,
                    record: entry.record.to_history(),
                }));
            }
        }
        lines
    })
}
