//! `leasesim serve lease|ledger`: the remote services run for real, on TCP, with their state
//! in a directory.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::RealClock;
use crate::journal::{DurableLedger, LedgerServer};
use crate::lease::{DurableLease, DurableLeaseConfig, LeaseServer};
use crate::net::tcp_incoming;
use crate::storage::{FileStorage, Storage};

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
    config.check().map_err(ServeError::BadInput)?;
    let storage = open_storage(&options)?;
    let clock = Arc::new(RealClock::new());
    let authority = DurableLease::open(storage, clock, config.clone())
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
    let served = LeaseServer::new(authority).serve(incoming, shutdown).await;
    persist.abort();
    served.map_err(|e| ServeError::Failed(format!("lease service failed: {e}")))
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
    let storage = open_storage(&options)?;
    let ledger = DurableLedger::open(storage).await.map_err(|e| {
        let data = options.data.display();
        ServeError::BadInput(format!("cannot recover the ledger in {data}: {e}"))
    })?;
    let (addr, incoming) = bind(&options.listen).await?;
    println!(
        "ledger service listening on {addr} (data {})",
        options.data.display()
    );
    LedgerServer::new(Arc::new(ledger))
        .serve(incoming, shutdown)
        .await
        .map_err(|e| ServeError::Failed(format!("ledger service failed: {e}")))
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

/// Parses a duration such as `10s`, `500ms` or `1m30s`.
///
/// # Errors
/// A message naming the bad value and the expected form.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let duration = humantime::parse_duration(text).map_err(|e| {
        format!("`{text}` is not a duration ({e}); write it like 10s, 500ms or 1m30s")
    })?;
    if duration.is_zero() {
        return Err(format!("`{text}`: the duration must be positive"));
    }
    Ok(duration)
}
