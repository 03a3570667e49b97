//! `leasesim replica`: one replica incarnation of a live run — the service layer running the
//! run file's workload against a real lease backend and the real ledger service, recorded
//! into the incarnation's own line file ([`super`], "What a process writes to its file").
//!
//! It builds one [`RealClock`] (every local reading of the process), the lease client of its
//! [`LeaseTarget`], the [`RemoteLedger`], the recording wrappers and a [`Store`] with the run
//! file's skew margin and mutant, exactly as the simulated world builds a replica host, then
//! runs the workload until SIGTERM/SIGINT, when it shuts down gracefully through the service
//! layer (the run's clean-up append, then release) and exits 0.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::process::LiveStart;
use super::target::LeaseTarget;
use crate::clock::{Clock, RealClock};
use crate::exit::Exit;
use crate::history::Process;
use crate::history::hosts::REPLICA_PREFIX;
use crate::hooks::HookSlot;
use crate::journal::{Ledger, RemoteLedger, SkewMargin, Store, StoreConfig};
use crate::lease::{FlockLease, FlockLeaseConfig, RemoteLease, SessionLease};
use crate::mutant::Mutant;
use crate::net::tcp_dialer;
use crate::remote::RemoteChannel;
use crate::sim::backend::ForkSlot;
use crate::sim::config::{Workload, WorldConfig};
use crate::sim::plan::{Drawer, PlannedRun, StartedRuns, drawn_runs};
use crate::sim::record::{Recorder, SinkHooks, recorded_store, validity_sink};
use crate::sim::runfile::RunFile;
use crate::sim::workload::{self, Replica};

/// Longest wait, after SIGTERM, for the graceful shutdown (the runs' clean-up appends and the
/// releases) beyond two TTLs; past it the process exits anyway (3), its file closed.
pub(crate) const SHUTDOWN_SLACK: Duration = Duration::from_secs(5);

/// `leasesim replica`'s arguments. Also reads [`super::truth::EPOCH_ENV`] (required) and
/// [`super::process::DRIFT_ENV`] (optional, default 0).
#[derive(Args, Debug, Clone)]
pub struct ReplicaArgs {
    /// The run file (`OUT/run.json`, written by `leasesim live`): sessions, TTL, skew margin,
    /// call deadline, mutant and workload.
    #[arg(long, value_name = "RUN.json")]
    pub run: PathBuf,
    /// This replica's name, `replica-K` with K from 1 to the run's replicas.
    #[arg(long, value_name = "replica-K")]
    pub name: String,
    /// This incarnation, from 0, bumped at every restart (the lease owner's incarnation).
    #[arg(long, value_name = "I")]
    pub incarnation: u64,
    /// The lease backend: grpc://HOST:PORT, flock:DIR or etcd://HOST:PORT.
    #[arg(long, value_name = "TARGET")]
    pub lease: LeaseTarget,
    /// The ledger service (`leasesim serve ledger`), HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub ledger: String,
    /// This incarnation's history file; it must not exist.
    #[arg(long, value_name = "FILE")]
    pub history: PathBuf,
    /// A bug to plant in the lease backend of `--lease` (a flock or etcd mutant: `leasesim
    /// mutants`), which the run file's simulated world cannot name; the run file must name
    /// no mutant then. `leasesim live --backend flock|etcd --mutant NAME` passes it.
    #[arg(long, value_name = "NAME", value_parser = Mutant::parse)]
    pub mutant: Option<Mutant>,
}

/// Why a replica stopped other than cleanly.
#[derive(Debug, thiserror::Error)]
enum ReplicaError {
    /// Fix the arguments, the run file or the environment.
    #[error("{0}")]
    BadInput(String),
    /// The replica failed while running.
    #[error("{0}")]
    Failed(String),
}

impl ReplicaError {
    fn exit(&self) -> Exit {
        match self {
            ReplicaError::BadInput(_) => Exit::BadInput,
            ReplicaError::Failed(_) => Exit::HarnessError,
        }
    }
}

/// Runs `leasesim replica` to its end: [`Exit::Clean`] after a graceful shutdown (SIGTERM,
/// SIGINT, or a generated workload's own), [`Exit::BadInput`] for bad arguments, an
/// unreadable run file or a bad environment (the message says what to fix),
/// [`Exit::HarnessError`] when the history file cannot be written or the shutdown hangs.
pub fn main(args: ReplicaArgs) -> Exit {
    let outcome = prepare(&args).and_then(|(run, config, start)| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| ReplicaError::Failed(format!("cannot start the async runtime: {e}")))?;
        runtime.block_on(replica(args, run, config, start))
    });
    match outcome {
        Ok(()) => Exit::Clean,
        Err(error) => {
            eprintln!("error: {error}");
            error.exit()
        }
    }
}

/// Everything checked before anything starts.
fn prepare(args: &ReplicaArgs) -> Result<(RunFile, WorldConfig, LiveStart), ReplicaError> {
    let bad = ReplicaError::BadInput;
    let run = RunFile::load(&args.run).map_err(|e| bad(format!("--run: {e}")))?;
    let mut config = run.world_config().map_err(|e| bad(format!("--run: {e}")))?;
    if let Some(mutant) = args.mutant {
        config.mutant = Some(lease_mutant(mutant, &run, &args.lease).map_err(bad)?);
    }
    let index = args
        .name
        .strip_prefix(REPLICA_PREFIX)
        .and_then(|k| k.parse::<u32>().ok())
        .filter(|k| (1..=config.replicas).contains(k));
    if index.is_none() {
        return Err(bad(format!(
            "--name `{}`: expected replica-K with K from 1 to {} (the run file's replicas)",
            args.name, config.replicas
        )));
    }
    if !cfg!(feature = "etcd") && matches!(args.lease, LeaseTarget::Etcd(_)) {
        return Err(bad(format!(
            "--lease {}: this leasesim was built without the `etcd` feature; rebuild with \
             `cargo build --release --features etcd`, or use grpc:// or flock:",
            args.lease
        )));
    }
    let start = LiveStart::from_env().map_err(bad)?;
    Ok((run, config, start))
}

/// `--mutant`'s `mutant`, once it is planted in `target`'s backend and the run file names
/// no mutant of its own.
///
/// # Errors
/// A message naming the mutant and what refused it.
fn lease_mutant(mutant: Mutant, run: &RunFile, target: &LeaseTarget) -> Result<Mutant, String> {
    if let Some(own) = &run.mutant {
        return Err(format!(
            "--mutant {}: the run file plants `{own}` already; give one or the other",
            mutant.name()
        ));
    }
    crate::mutants::check_planted_in(mutant, target.backend())
        .map_err(|refusal| format!("--mutant {}: {refusal}", mutant.name()))?;
    Ok(mutant)
}

/// The lease client of `target`, on `clock`.
///
/// # Errors
/// `BadInput` for a target that cannot work (a bad address, an unusable flock directory);
/// `Failed` when etcd cannot be reached now (the caller tries again).
async fn lease_client(
    target: &LeaseTarget,
    config: &WorldConfig,
    clock: &Arc<dyn Clock>,
) -> Result<Arc<dyn SessionLease>, ReplicaError> {
    let bad = ReplicaError::BadInput;
    match target {
        LeaseTarget::Grpc(addr) => {
            let client =
                RemoteChannel::new(addr, tcp_dialer(), clock.clone(), &config.client_config())
                    .map(RemoteLease::new)
                    .map_err(|e| bad(format!("--lease {target}: {e}")))?;
            Ok(Arc::new(client))
        }
        LeaseTarget::Flock(dir) => {
            let flock = FlockLease::open(FlockLeaseConfig {
                mutant: config.mutant,
                ..FlockLeaseConfig::new(dir, config.ttl)
            })
            .map_err(|e| bad(format!("--lease {target}: {e}")))?;
            Ok(Arc::new(flock))
        }
        #[cfg(feature = "etcd")]
        LeaseTarget::Etcd(endpoint) => {
            let etcd = crate::lease::etcd::EtcdLease::connect(
                crate::lease::etcd::EtcdLeaseConfig {
                    endpoint: endpoint.clone(),
                    ttl: config.ttl,
                    call_timeout: config.call_timeout,
                    mutant: config.mutant,
                },
                clock.clone(),
            )
            .await
            .map_err(|e| ReplicaError::Failed(format!("--lease {target}: {e}")))?;
            Ok(Arc::new(etcd))
        }
        #[cfg(not(feature = "etcd"))]
        LeaseTarget::Etcd(_) => Err(bad(format!(
            "--lease {target}: this leasesim was built without the `etcd` feature"
        ))),
    }
}

/// The replica's store: the recorded lease and ledger clients, the run's skew margin and
/// mutant, hooks whose observations go to the validity sink.
fn store(
    args: &ReplicaArgs,
    config: &WorldConfig,
    recorder: &Recorder,
    process: &Process,
    lease: Arc<dyn SessionLease>,
    clock: &Arc<dyn Clock>,
) -> Result<Store, ReplicaError> {
    let ledger = RemoteChannel::new(
        &args.ledger,
        tcp_dialer(),
        clock.clone(),
        &config.client_config(),
    )
    .map(RemoteLedger::new)
    .map_err(|e| ReplicaError::BadInput(format!("--ledger {}: {e}", args.ledger)))?;
    let hooks = SinkHooks::new(validity_sink(recorder.clone(), process.clone()));
    let store_config = StoreConfig {
        skew_margin: SkewMargin::Percent(config.skew_margin_percent),
        hooks: HookSlot::new(Arc::new(hooks)),
        mutant: config.mutant,
        ..StoreConfig::default()
    };
    let clients = (lease, Arc::new(ledger) as Arc<dyn Ledger>);
    let recording = (recorder, process);
    Ok(recorded_store(
        clients,
        recording,
        clock.clone(),
        store_config,
    ))
}

/// The replica's banner, naming the mutant it planted, if any (its log says so).
fn announce(args: &ReplicaArgs, config: &WorldConfig) {
    let planted = config.mutant.map(|m| format!(", mutant {m} planted"));
    println!(
        "replica {}#{} running (history {}){}",
        args.name,
        args.incarnation,
        args.history.display(),
        planted.unwrap_or_default()
    );
}

async fn replica(
    args: ReplicaArgs,
    run: RunFile,
    config: WorldConfig,
    start: LiveStart,
) -> Result<(), ReplicaError> {
    // Registered before anything is announced, so a SIGTERM right after the banner is a
    // graceful shutdown, never the default kill.
    let stop = super::process::stop_signal()
        .map_err(|e| ReplicaError::Failed(format!("cannot handle SIGTERM: {e}")))?;
    let clock: Arc<dyn Clock> = Arc::new(RealClock::new());
    let process = Process::new(args.name.clone(), args.incarnation);
    tokio::pin!(stop);
    let lease = loop {
        match lease_client(&args.lease, &config, &clock).await {
            Ok(lease) => break lease,
            // etcd crashed or cut off by the run's nemesis: wait for it as a replica waits
            // for its lease service, until the orchestrator's SIGTERM.
            Err(ReplicaError::Failed(error)) => {
                tracing::warn!("{error}; trying again in 250 ms");
                tokio::select! {
                    () = &mut stop => return Ok(()),
                    () = clock.sleep(Duration::from_millis(250)) => {}
                }
            }
            Err(error) => return Err(error),
        }
    };
    let recorder = start
        .recorder(&args.history, &args.name, args.incarnation, &clock)
        .map_err(ReplicaError::BadInput)?;
    let store = Arc::new(store(&args, &config, &recorder, &process, lease, &clock)?);
    announce(&args, &config);
    let replica = Replica {
        name: args.name.clone(),
        process,
        store: store.clone(),
        recorder: recorder.clone(),
        clock,
        config: config.clone(),
        forks: ForkSlot::default(),
    };
    let ran = match run.world_workload() {
        Workload::Generated => {
            let runs = drawn_runs(Drawer {
                seed: config.seed,
                sessions: &config.sessions,
                mix: &config.mix,
                replica: &args.name,
                incarnation: args.incarnation,
            });
            through_service(replica, store, &config, runs, &mut stop).await
        }
        Workload::Planned(plan) => {
            let runs = plan.runs_of(&args.name, args.incarnation).into_iter();
            through_service(replica, store, &config, runs, &mut stop).await
        }
        Workload::Scripted(script) => {
            let calls = script.calls_of(&args.name);
            let mut task = tokio::spawn(workload::run_script(replica, calls));
            // A script's calls end at their last time; its renewers go on until the
            // orchestrator stops the process.
            let script_ended = tokio::select! {
                _ = &mut task => true,
                () = &mut stop => false,
            };
            if script_ended {
                stop.await;
            } else {
                task.abort();
            }
            Ok(())
        }
    };
    let closed = recorder.close().map_err(ReplicaError::Failed);
    ran.and(closed)
}

/// Drawn or planned runs through one service, shut down gracefully on `stop` (a plan's
/// replica whose runs are done waits for it).
async fn through_service(
    replica: Replica,
    store: Arc<Store>,
    config: &WorldConfig,
    runs: impl Iterator<Item = PlannedRun> + Send + 'static,
    mut stop: impl std::future::Future<Output = ()> + Unpin,
) -> Result<(), ReplicaError> {
    let service = Arc::new(crate::service::Service::new(store));
    let started = StartedRuns::default();
    let mut task = tokio::spawn(workload::run_runs_on(
        replica,
        service.clone(),
        runs,
        started,
    ));
    let joined = tokio::select! {
        joined = &mut task => Some(joined),
        () = &mut stop => None,
    };
    if let Some(joined) = joined {
        let ended =
            joined.map_err(|e| ReplicaError::Failed(format!("the workload failed: {e}")))?;
        if ended == workload::Ended::PlanDone {
            stop.await;
        }
        return Ok(());
    }
    tracing::info!("stop signal: shutting down gracefully");
    let bound = config.ttl * 2 + SHUTDOWN_SLACK;
    let graceful = async {
        service.shutdown().await;
        let _ = (&mut task).await;
    };
    // The real timer: a bound on the process's own life, not on anything judged.
    #[allow(clippy::disallowed_methods)]
    let timed = tokio::time::timeout(bound, graceful).await;
    if timed.is_err() {
        task.abort();
        return Err(ReplicaError::Failed(format!(
            "the graceful shutdown did not finish within {bound:?}"
        )));
    }
    Ok(())
}
