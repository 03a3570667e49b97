//! The world: turmoil hosts `lease`, `ledger` and `replica-1..N` running the remote services
//! and the service layer, each on its own [`HostClock`] and [`HostFreeze`], driven by a
//! [`FaultSchedule`] and a workload, recorded as a [`History`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::clock::HostClock;
use super::freeze::HostFreeze;
use super::net::{turmoil_dialer, turmoil_incoming};
use super::record::{
    Recorder, RecordingAuthority, RecordingLease, RecordingLedger, event_sink, validity_sink,
};
use super::schedule::{FaultSchedule, ScheduleError};
use super::script::{Call, Script};
use super::seed::{Subsystem, sub_seed};
use super::workload;
use crate::clock::{Clock, WallTime};
use crate::history::hosts::{LEASE as LEASE_HOST, LEDGER as LEDGER_HOST};
use crate::history::{
    ClockLine, ConfigLine, HistRecord, History, LedgerLine, Line, Phase, PhaseLine, Process, micros,
};
use crate::hooks::HookSlot;
use crate::journal::{
    DurableLedger, Ledger, LedgerServer, RemoteLedger, SkewMargin, Store, StoreConfig,
};
use crate::lease::{DurableLease, DurableLeaseConfig, LeaseServer, Owner, RemoteLease, SessionId};
use crate::mutant::Mutant;
use crate::remote::ClientConfig;
use crate::storage::MemStorage;

/// Port of the lease service on its host.
pub const LEASE_PORT: u16 = 7070;
/// Port of the ledger service on its host.
pub const LEDGER_PORT: u16 = 7071;

/// The wall clock every host starts at: 2026-01-01T00:00:00Z (fixed, never the real time).
pub const WALL_EPOCH: WallTime = WallTime {
    unix_ns: 1_767_225_600_000_000_000,
};

/// The shape of a world.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorldConfig {
    /// Master seed: every random choice derives from it.
    pub seed: u64,
    /// Number of replica hosts (default 3).
    pub replicas: u32,
    /// The contended sessions (default `s1`, `s2`).
    pub sessions: Vec<String>,
    /// Lease TTL (default 10 s).
    pub ttl: Duration,
    /// Skew margin, percent of the TTL (default 10).
    pub skew_margin_percent: u8,
    /// Simulated duration of the run (default 60 s).
    pub duration: Duration,
    /// Deadline of every client call (default 2 s).
    pub call_timeout: Duration,
    /// Network latency range, ms (default 1..=5).
    pub latency_ms: (u64, u64),
    /// A planted bug, if any: carried by this world only and handed to every component —
    /// the lease authority, the ledger service, and each replica's store (its holds,
    /// journals, renewer and service); each honours the mutants that concern it.
    pub mutant: Option<Mutant>,
    /// What a generated workload's replicas do (ignored by a scripted workload).
    pub mix: WorkloadMix,
    /// The liveness phase: run on after the heal until LIVE's bound has run out
    /// ([`crate::history::ConfigLine::live_bound_us`]), even past `duration`, so LIVE is
    /// always judged (default off: a plain `leasesim run` ends at `duration`).
    pub liveness_phase: bool,
}

/// The shape of a generated workload: each replica loops picking a session, running on it
/// (appending events a think time apart), releasing and thinking again. Every range is
/// inclusive and drawn per run from the replica's workload stream. The defaults are the
/// workload every seed had before mixes existed (same seed, same bytes).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadMix {
    /// Events appended per run, `[least, most]` (default `[1, 6]`).
    pub appends: (u64, u64),
    /// Think time between appends and between runs, ms, `[least, most]` (default
    /// `[50, 1500]`).
    pub think_ms: (u64, u64),
    /// Odds that a run ends in a graceful shutdown, as `[numerator, denominator]` (default
    /// `[1, 25]`; `[0, 1]` never shuts down).
    pub shutdown_chance: (u32, u32),
}

impl Default for WorkloadMix {
    fn default() -> Self {
        WorkloadMix {
            appends: (1, 6),
            think_ms: (50, 1_500),
            shutdown_chance: (1, 25),
        }
    }
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            seed: 0,
            replicas: 3,
            sessions: vec!["s1".into(), "s2".into()],
            ttl: Duration::from_secs(10),
            skew_margin_percent: 10,
            duration: Duration::from_secs(60),
            call_timeout: Duration::from_secs(2),
            latency_ms: (1, 5),
            mutant: None,
            mix: WorkloadMix::default(),
            liveness_phase: false,
        }
    }
}

impl WorldConfig {
    /// The host names: `lease`, `ledger`, `replica-1` … `replica-N`.
    pub fn hosts(&self) -> Vec<String> {
        let mut hosts = vec![LEASE_HOST.to_owned(), LEDGER_HOST.to_owned()];
        hosts.extend((1..=self.replicas).map(replica_name));
        hosts
    }

    fn client_config(&self) -> ClientConfig {
        ClientConfig {
            call_timeout: self.call_timeout,
            ..ClientConfig::default()
        }
    }
}

/// The name of replica `n` (from 1).
pub fn replica_name(n: u32) -> String {
    crate::history::hosts::replica(n)
}

/// What the replicas do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Drawn from the seed: replicas contend for the sessions through the service layer.
    Generated,
    /// Exactly these calls.
    Scripted(Script),
}

/// Why a world could not run.
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
    /// The script names unknown replicas or sessions.
    #[error("bad script: {0}")]
    Script(String),
    /// turmoil reported a failure of a host (an error returned or a panic).
    #[error("simulation failed: {0}")]
    Simulation(String),
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutput {
    /// The history.
    pub history: History,
}

/// The per-host state that outlives crashes: clocks, freezes, disks, boot counters.
struct Hosts {
    clocks: BTreeMap<String, HostClock>,
    freezes: BTreeMap<String, HostFreeze>,
    boots: BTreeMap<String, Arc<AtomicU64>>,
    lease_disk: MemStorage,
    ledger_disk: MemStorage,
    /// The running authority, for faults that reach into it (record deletion).
    authority: Arc<Mutex<Option<Arc<DurableLease>>>>,
}

impl Hosts {
    fn new(config: &WorldConfig) -> Self {
        let mut clocks = BTreeMap::new();
        let mut freezes = BTreeMap::new();
        let mut boots = BTreeMap::new();
        for host in config.hosts() {
            let clock = HostClock::new(WALL_EPOCH);
            freezes.insert(host.clone(), HostFreeze::new(&clock));
            clocks.insert(host.clone(), clock);
            boots.insert(host, Arc::new(AtomicU64::new(0)));
        }
        Hosts {
            clocks,
            freezes,
            boots,
            lease_disk: MemStorage::new(),
            ledger_disk: MemStorage::new(),
            authority: Arc::new(Mutex::new(None)),
        }
    }

    fn clock(&self, host: &str) -> HostClock {
        self.clocks[host].clone()
    }

    fn freeze(&self, host: &str) -> HostFreeze {
        self.freezes[host].clone()
    }
}

/// Runs one world to its end and returns its history.
///
/// # Errors
/// [`WorldError`]: a build without `tokio_unstable`, a bad schedule or script, or a host
/// failure reported by turmoil.
pub fn run(
    config: &WorldConfig,
    schedule: &FaultSchedule,
    workload: &Workload,
) -> Result<RunOutput, WorldError> {
    if !cfg!(tokio_unstable) {
        return Err(WorldError::NotDeterministic);
    }
    schedule.validate(&config.hosts())?;
    if let Workload::Scripted(script) = workload {
        check_script(config, script)?;
    }
    let hosts = Hosts::new(config);
    let recorder = Recorder::default();
    let mut sim = build_sim(config);
    host_lease_service(&mut sim, config, &hosts, &recorder);
    host_ledger_service(&mut sim, config, &hosts);
    for n in 1..=config.replicas {
        host_replica(
            &mut sim,
            config,
            &hosts,
            &recorder,
            &replica_name(n),
            workload,
        );
    }
    let restart_stopped = matches!(workload, Workload::Generated);
    let healed_at = super::nemesis::drive(
        &mut sim,
        config,
        schedule,
        &hosts_view(&hosts, &recorder),
        restart_stopped,
    )
    .map_err(|e| WorldError::Simulation(e.to_string()))?;
    let end = sim.elapsed();
    Ok(RunOutput {
        history: collect(config, &hosts, &recorder, healed_at, end),
    })
}

/// Refuses a script that names an unknown replica or session, or uses a lease or journal its
/// replica has not acquired or opened earlier in the script.
pub(crate) fn check_script(config: &WorldConfig, script: &Script) -> Result<(), WorldError> {
    let replicas: Vec<String> = (1..=config.replicas).map(replica_name).collect();
    let mut leases: BTreeSet<(String, String)> = BTreeSet::new();
    let mut journals: BTreeSet<(String, String)> = BTreeSet::new();
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
        .max_message_latency(Duration::from_millis(config.latency_ms.1));
    builder.build()
}

/// What the nemesis needs of the hosts.
pub(crate) struct HostsView {
    pub(crate) clocks: BTreeMap<String, HostClock>,
    pub(crate) freezes: BTreeMap<String, HostFreeze>,
    pub(crate) lease_disk: MemStorage,
    pub(crate) ledger_disk: MemStorage,
    pub(crate) authority: Arc<Mutex<Option<Arc<DurableLease>>>>,
    /// The run's recorder, for what the nemesis does to a host (`event` lines).
    pub(crate) recorder: Recorder,
    /// Hosts the nemesis crashed and has not restarted yet.
    crashed: Mutex<BTreeSet<String>>,
}

impl HostsView {
    pub(crate) fn is_crashed(&self, host: &str) -> bool {
        self.crashed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(host)
    }

    pub(crate) fn set_crashed(&self, host: &str, crashed: bool) {
        let mut set = self.crashed.lock().unwrap_or_else(|p| p.into_inner());
        if crashed {
            set.insert(host.to_owned());
        } else {
            set.remove(host);
        }
    }
}

fn hosts_view(hosts: &Hosts, recorder: &Recorder) -> HostsView {
    HostsView {
        clocks: hosts.clocks.clone(),
        freezes: hosts.freezes.clone(),
        lease_disk: hosts.lease_disk.clone(),
        ledger_disk: hosts.ledger_disk.clone(),
        authority: hosts.authority.clone(),
        recorder: recorder.clone(),
        crashed: Mutex::new(BTreeSet::new()),
    }
}

fn host_lease_service(
    sim: &mut turmoil::Sim<'static>,
    config: &WorldConfig,
    hosts: &Hosts,
    recorder: &Recorder,
) {
    let (disk, clock, freeze) = (
        hosts.lease_disk.clone(),
        hosts.clock(LEASE_HOST),
        hosts.freeze(LEASE_HOST),
    );
    let (authority_slot, recorder) = (hosts.authority.clone(), recorder.clone());
    let (ttl, mutant) = (config.ttl, config.mutant);
    freeze.set_sink(Arc::new(event_sink(recorder.clone(), LEASE_HOST)));
    sim.host(LEASE_HOST, move || {
        let (disk, clock, freeze) = (disk.clone(), clock.clone(), freeze.clone());
        let (authority_slot, recorder) = (authority_slot.clone(), recorder.clone());
        async move {
            let config = DurableLeaseConfig {
                mutant,
                hooks: HookSlot::new(Arc::new(freeze.clone())),
                ..DurableLeaseConfig::with_ttl(ttl)
            };
            let authority =
                DurableLease::open(Arc::new(disk), Arc::new(clock.clone()), config).await?;
            let authority = Arc::new(authority);
            *authority_slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(authority.clone());
            tokio::spawn({
                let authority = authority.clone();
                async move { authority.persist_grace().await }
            });
            let recording = RecordingAuthority::new(authority, recorder, clock);
            let incoming = turmoil_incoming(&format!("0.0.0.0:{LEASE_PORT}")).await?;
            LeaseServer::new(Arc::new(recording))
                .with_hooks(HookSlot::new(Arc::new(freeze)))
                .serve(incoming, std::future::pending())
                .await?;
            Ok(())
        }
    });
}

fn host_ledger_service(sim: &mut turmoil::Sim<'static>, config: &WorldConfig, hosts: &Hosts) {
    let (disk, freeze) = (hosts.ledger_disk.clone(), hosts.freeze(LEDGER_HOST));
    let mutant = config.mutant;
    sim.host(LEDGER_HOST, move || {
        let (disk, freeze) = (disk.clone(), freeze.clone());
        async move {
            let ledger = DurableLedger::open(Arc::new(disk))
                .await?
                .with_mutant(mutant);
            let incoming = turmoil_incoming(&format!("0.0.0.0:{LEDGER_PORT}")).await?;
            LedgerServer::new(Arc::new(ledger))
                .with_hooks(HookSlot::new(Arc::new(freeze)))
                .serve(incoming, std::future::pending())
                .await?;
            Ok(())
        }
    });
}

fn host_replica(
    sim: &mut turmoil::Sim<'static>,
    config: &WorldConfig,
    hosts: &Hosts,
    recorder: &Recorder,
    name: &str,
    workload: &Workload,
) {
    let (clock, freeze, boots) = (
        hosts.clock(name),
        hosts.freeze(name),
        hosts.boots[name].clone(),
    );
    let (config, recorder, workload, name) = (
        config.clone(),
        recorder.clone(),
        workload.clone(),
        name.to_owned(),
    );
    sim.host(name.clone(), move || {
        let (clock, freeze, boots) = (clock.clone(), freeze.clone(), boots.clone());
        let (config, recorder, workload, name) = (
            config.clone(),
            recorder.clone(),
            workload.clone(),
            name.clone(),
        );
        async move {
            let incarnation = boots.fetch_add(1, Ordering::SeqCst);
            let process = Process::new(name.clone(), incarnation);
            let store = replica_store(&config, &recorder, &process, &clock, &freeze)?;
            let replica = workload::Replica {
                name: name.clone(),
                process,
                store: Arc::new(store),
                recorder,
                clock,
                config: config.clone(),
            };
            match workload {
                Workload::Scripted(script) => {
                    workload::run_script(replica, script.calls_of(&name)).await
                }
                Workload::Generated => workload::run_generated(replica).await,
            }
            Ok(())
        }
    });
}

fn replica_store(
    config: &WorldConfig,
    recorder: &Recorder,
    process: &Process,
    clock: &HostClock,
    freeze: &HostFreeze,
) -> Result<Store, Box<dyn std::error::Error>> {
    let client = config.client_config();
    let clock_arc: Arc<dyn Clock> = Arc::new(clock.clone());
    let lease = RemoteLease::new(
        &format!("{LEASE_HOST}:{LEASE_PORT}"),
        turmoil_dialer(),
        clock_arc.clone(),
        &client,
    )?;
    let ledger = RemoteLedger::new(
        &format!("{LEDGER_HOST}:{LEDGER_PORT}"),
        turmoil_dialer(),
        clock_arc.clone(),
        &client,
    )?;
    let lease = RecordingLease::new(
        Arc::new(lease),
        recorder.clone(),
        process.clone(),
        clock.clone(),
    );
    let ledger = RecordingLedger::new(
        Arc::new(ledger),
        recorder.clone(),
        process.clone(),
        clock.clone(),
    );
    freeze.set_sink(Arc::new(validity_sink(recorder.clone(), process.clone())));
    let store_config = StoreConfig {
        skew_margin: SkewMargin::Percent(config.skew_margin_percent),
        hooks: HookSlot::new(Arc::new(freeze.clone())),
        mutant: config.mutant,
        ..StoreConfig::default()
    };
    let owner = Owner::new(process.replica.clone(), process.incarnation);
    Ok(Store::new(owner, Arc::new(lease), Arc::new(ledger), clock_arc).with_config(store_config))
}

/// The history: config, operations, decisions and validity checks, phase markers, clock
/// segments, then the final ledger.
fn collect(
    config: &WorldConfig,
    hosts: &Hosts,
    recorder: &Recorder,
    healed_at: Duration,
    end: Duration,
) -> History {
    let mut lines = vec![Line::Config(config_line(config))];
    lines.extend(recorder.finish(micros(end)));
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

pub(crate) fn config_line(config: &WorldConfig) -> ConfigLine {
    let client = config.client_config();
    ConfigLine {
        ttl_us: micros(config.ttl),
        skew_margin_us: micros(SkewMargin::Percent(config.skew_margin_percent).of(config.ttl)),
        renew_interval_us: micros(config.ttl / 3),
        longest_reconnect_backoff_us: micros(client.reconnect_backoff_max),
        grace_period_us: micros(config.ttl),
        mutant: config.mutant.map(|m| m.name().to_owned()),
        seed: config.seed,
        replicas: config.replicas,
        sessions: config.sessions.clone(),
    }
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
                    record: HistRecord::from(&entry.record),
                }));
            }
        }
        lines
    })
}
