//! `leasesim serve lease|ledger`: the remote services run for real, on TCP, with their state
//! in a directory.
//!
//! In live mode ([`LiveOptions`]: `--run`, `--history`, `--boot`) a service is one host of a
//! live run ([`crate::live`]): it takes the settings and the mutant the simulated world would
//! give it from the run file, and records into its own line file — the lease service its
//! `clock` line then every decision (host `lease`), the ledger service its `clock` line and,
//! when it stops on SIGTERM/SIGINT, the final ledger of every session of the run (host
//! `ledger`).

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, RealClock};
use crate::history::LedgerLine;
use crate::history::hosts::{LEASE, LEDGER};
use crate::hooks::HookSlot;
use crate::journal::{DurableLedger, Ledger, LedgerServer};
use crate::lease::{DurableLease, DurableLeaseConfig, LeaseServer, SessionId, SessionLease};
use crate::live::process::{LiveStart, stop_signal};
use crate::net::tcp_incoming;
use crate::sim::backend::RecordingAuthority;
use crate::sim::config::WorldConfig;
use crate::sim::record::{Recorder, SinkHooks, event_sink};
use crate::sim::runfile::RunFile;
use crate::sim::to_history::ToHistory;
use crate::storage::{FileStorage, Storage};
use crate::time::parse_duration;

/// Why a service could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The listen address or the data directory is not usable: fix the argument.
    #[error("{0}")]
    BadInput(String),
    /// The service failed while running.
    #[error("{0}")]
    Failed(String),
}

/// Where and how to serve.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// `host:port` to listen on; port 0 picks a free one (printed at start).
    pub listen: String,
    /// Directory holding the service's durable state (created if missing).
    pub data: PathBuf,
    /// Live mode: the run file and the history file; `None` serves as before.
    pub live: Option<LiveOptions>,
    /// `--rebuild-checkpoint`: start even when the checkpoint is missing, rebuilding it from
    /// the logs as they are (the operator accepts them); off, such a start is refused
    /// ([`crate::storage::StorageError::CheckpointMissing`]).
    pub rebuild_checkpoint: bool,
}

impl ServeOptions {
    /// The service's real clock and, in live mode, the service as `host` of the live run
    /// ([`LiveOptions::start`]).
    fn start(&self, host: &str) -> Result<(Arc<dyn Clock>, Option<LiveService>), ServeError> {
        let clock: Arc<dyn Clock> = Arc::new(RealClock::new());
        let live = self.live.as_ref().map(|live| live.start(host, &clock));
        Ok((clock, live.transpose()?))
    }
}

/// A service as one host of a live run (`--run`, `--history`, `--boot`, all three).
#[derive(Clone, Debug)]
pub struct LiveOptions {
    /// The run file: the TTL, grace settings and mutant the world would give the service,
    /// and the sessions whose final ledger the ledger service records.
    pub run: PathBuf,
    /// This boot's history file; it must not exist.
    pub history: PathBuf,
    /// This boot of the service's host, from 0 (the `clock` line's `boot`).
    pub boot: u64,
}

/// A live service's run settings and recorder (its file already holds the `clock` line).
struct LiveService {
    config: WorldConfig,
    recorder: Recorder,
}

impl LiveOptions {
    /// Reads the run file and the environment and creates the history file, whose first
    /// line is the `clock` line of `host` on `clock`.
    fn start(&self, host: &str, clock: &Arc<dyn Clock>) -> Result<LiveService, ServeError> {
        let bad = |e: String| ServeError::BadInput(e);
        let run = RunFile::load(&self.run).map_err(|e| bad(format!("--run: {e}")))?;
        let config = run.world_config().map_err(|e| bad(format!("--run: {e}")))?;
        let start = LiveStart::from_env().map_err(bad)?;
        let recorder = start
            .recorder(&self.history, host, self.boot, clock)
            .map_err(bad)?;
        Ok(LiveService { config, recorder })
    }
}

/// The authority's settings the simulated world gives it (the gRPC backend): the run's TTL
/// and mutant, the default grace settings.
fn live_lease_config(config: &WorldConfig) -> DurableLeaseConfig {
    DurableLeaseConfig {
        mutant: config.mutant,
        ..DurableLeaseConfig::with_ttl(config.ttl)
    }
}

/// How long a service may take to stop once SIGTERM or SIGINT arrived: past it the process
/// ends anyway (exit 3), whatever it was blocked on, so a supervisor's stop never waits for
/// its kill timeout (`docs/services.md#stopping`).
pub const STOP_BOUND: Duration = Duration::from_secs(5);

/// Runs `service` with a shutdown future that completes on SIGTERM or SIGINT, and ends it at
/// most [`STOP_BOUND`] after the signal, even while it is still starting (recovering its
/// data) or blocked: a signal never waits for a service to reach its serving loop.
///
/// # Errors
/// As `service`; [`ServeError::Failed`] when the signal handlers cannot be installed or the
/// service did not stop within the bound.
pub async fn until_stopped<F, S>(service: S) -> Result<(), ServeError>
where
    S: FnOnce(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>) -> F,
    F: Future<Output = Result<(), ServeError>>,
{
    let signal = stop_signal()
        .map_err(|e| ServeError::Failed(format!("cannot handle SIGTERM and SIGINT: {e}")))?;
    let (stopped, watch) = tokio::sync::watch::channel(false);
    let waiter = tokio::spawn(async move {
        signal.await;
        let _ = stopped.send(true);
    });
    let signalled = |mut watch: tokio::sync::watch::Receiver<bool>| async move {
        // An error is a dropped sender: the signal task is gone, so no signal will come.
        if watch.wait_for(|stopped| *stopped).await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let shutdown = Box::pin(signalled(watch.clone()));
    let clock = RealClock::new();
    let bound = async {
        signalled(watch).await;
        clock.sleep(STOP_BOUND).await;
    };
    let outcome = tokio::select! {
        served = service(shutdown) => served,
        () = bound => Err(ServeError::Failed(format!(
            "the service did not stop within {} of SIGTERM/SIGINT; stopped it anyway",
            humantime::format_duration(STOP_BOUND)
        ))),
    };
    waiter.abort();
    outcome
}

/// Runs the lease service until `shutdown` completes. Prints one line,
/// `lease service listening on ADDR`, once it accepts connections.
///
/// # Errors
/// [`ServeError::BadInput`] for a `config` that fails [`DurableLeaseConfig::check`], an
/// unusable address, a data directory that is unusable or in use by another service, or state
/// this version cannot read; [`ServeError::Failed`] when the server fails.
pub async fn lease(
    options: ServeOptions,
    config: DurableLeaseConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let (clock, live) = options.start(LEASE)?;
    let config = match &live {
        Some(live) => DurableLeaseConfig {
            // What the authority reports (a record deleted) becomes `event` lines.
            hooks: HookSlot::new(Arc::new(SinkHooks::new(event_sink(
                live.recorder.clone(),
                LEASE,
            )))),
            ..live_lease_config(&live.config)
        },
        None => config,
    };
    let config = DurableLeaseConfig {
        rebuild_checkpoint: options.rebuild_checkpoint,
        ..config
    };
    config.check().map_err(ServeError::BadInput)?;
    let storage = open_storage(&options)?;
    let authority = DurableLease::open(storage, clock.clone(), config.clone())
        .await
        .map_err(|e| {
            let data = options.data.display();
            ServeError::BadInput(format!("cannot recover the lease state in {data}: {e}"))
        })?;
    let authority = Arc::new(authority);
    let (addr, incoming) = bind(&options.listen).await?;
    println!(
        "lease service listening on {addr} (ttl {}, data {}, restart grace period {:?} left)",
        humantime::format_duration(config.ttl),
        options.data.display(),
        authority.grace_left(),
    );
    let persist = tokio::spawn({
        let authority = authority.clone();
        async move { authority.persist_grace().await }
    });
    let served: Arc<dyn SessionLease> = match &live {
        Some(live) => Arc::new(RecordingAuthority::new(
            authority,
            live.recorder.clone(),
            clock,
        )),
        None => authority,
    };
    let served = LeaseServer::new(served).serve(incoming, shutdown).await;
    persist.abort();
    let closed = close(live.as_ref());
    served.map_err(|e| ServeError::Failed(format!("lease service failed: {e}")))?;
    closed
}

/// Closes a live service's history file.
fn close(live: Option<&LiveService>) -> Result<(), ServeError> {
    match live {
        Some(live) => live.recorder.close().map_err(ServeError::Failed),
        None => Ok(()),
    }
}

/// Runs the ledger service until `shutdown` completes. Prints one line,
/// `ledger service listening on ADDR`, once it accepts connections.
///
/// # Errors
/// As [`lease`].
pub async fn ledger(
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let (_, live) = options.start(LEDGER)?;
    let storage = open_storage(&options)?;
    let opened = DurableLedger::open_with(storage, options.rebuild_checkpoint).await;
    let ledger = opened.map_err(|e| {
        let data = options.data.display();
        ServeError::BadInput(format!("cannot recover the ledger in {data}: {e}"))
    })?;
    // The planted bug the world's ledger service runs (e.g. `append-ignores-expected-tip`).
    let ledger = Arc::new(ledger.with_mutant(live.as_ref().and_then(|l| l.config.mutant)));
    let (addr, incoming) = bind(&options.listen).await?;
    println!(
        "ledger service listening on {addr} (data {})",
        options.data.display()
    );
    let served = LedgerServer::new(ledger.clone())
        .serve(incoming, shutdown)
        .await
        .map_err(|e| ServeError::Failed(format!("ledger service failed: {e}")));
    if let Some(live) = &live {
        record_final_ledger(&live.recorder, &live.config, ledger.as_ref()).await?;
    }
    let closed = close(live.as_ref());
    served?;
    closed
}

/// Records every record `ledger` holds for each session of the run as `ledger` lines, in
/// session order then `seq` order (the world's final ledger).
async fn record_final_ledger(
    recorder: &Recorder,
    config: &WorldConfig,
    ledger: &dyn Ledger,
) -> Result<(), ServeError> {
    for session in &config.sessions {
        let Ok(id) = SessionId::new(session.clone()) else {
            continue;
        };
        let entries = ledger.read(&id, 1).await.map_err(|e| {
            ServeError::Failed(format!("cannot read the final ledger of {session}: {e}"))
        })?;
        for entry in entries {
            recorder.ledger(LedgerLine {
                session: session.clone(),
                seq: entry.seq,
                record: entry.record.to_history(),
            });
        }
    }
    Ok(())
}

fn open_storage(options: &ServeOptions) -> Result<Arc<dyn Storage>, ServeError> {
    let storage = FileStorage::open(&options.data)
        .map_err(|e| ServeError::BadInput(format!("--data {}: {e}", options.data.display())))?;
    Ok(Arc::new(storage))
}

async fn bind(listen: &str) -> Result<(std::net::SocketAddr, crate::net::Incoming), ServeError> {
    tcp_incoming(listen).await.map_err(|e| {
        ServeError::BadInput(format!(
            "--listen {listen}: cannot listen there ({e}); pass a free host:port such as 127.0.0.1:7070"
        ))
    })
}

/// [`parse_duration`], at most [`DurableLeaseConfig::MAX_TTL`]: the `--ttl` of `serve lease`.
///
/// # Errors
/// As [`parse_duration`], and a message giving the limit when `text` exceeds it.
pub fn parse_ttl(text: &str) -> Result<Duration, String> {
    parse_duration_at_most(text, DurableLeaseConfig::MAX_TTL)
}

/// [`parse_duration`], at most [`DurableLeaseConfig::MAX_GRACE_PERSIST_INTERVAL`]: the
/// `--grace-persist-interval` of `serve lease`.
///
/// # Errors
/// As [`parse_ttl`].
pub fn parse_grace_persist_interval(text: &str) -> Result<Duration, String> {
    parse_duration_at_most(text, DurableLeaseConfig::MAX_GRACE_PERSIST_INTERVAL)
}

fn parse_duration_at_most(text: &str, max: Duration) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    if duration > max {
        return Err(format!(
            "`{text}` is too long: the limit is {}",
            humantime::format_duration(max)
        ));
    }
    Ok(duration)
}
