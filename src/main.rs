//! The `leasesim` command line. It only parses arguments and calls into the library.

use std::process::ExitCode;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use leasesim::lease::DurableLeaseConfig;
use leasesim::serve::{ServeError, ServeOptions, parse_duration};

/// Deterministic simulation and model checking for session leases with fencing tokens and
/// fenced single-writer journals.
///
/// Exit codes (every command): 0 clean · 1 safety violation · 2 bad input or usage ·
/// 3 harness error · 4 inconclusive · 5 liveness violation.
#[derive(Parser, Debug)]
#[command(name = "leasesim", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run field case F3 in miniature: a replica with a slow clock keeps writing after its
    /// lease expired, and the ledger's fence rejects it. Exits 0 when the system under test
    /// behaves as the contract says, 1 when it does not.
    Demo,
    /// Run a remote service for real on TCP, with its durable state in a directory. Stops on
    /// SIGINT or SIGTERM.
    Serve {
        #[command(subcommand)]
        service: Service,
    },
}

#[derive(Subcommand, Debug)]
enum Service {
    /// The lease service: grants, renews and releases session leases with fencing tokens.
    /// After a restart it refuses grants (UNAVAILABLE) until every lease it may have granted
    /// before has expired.
    Lease {
        #[command(flatten)]
        common: ServeArgs,
        /// TTL of every lease granted.
        #[arg(long, default_value = "10s", value_parser = parse_duration)]
        ttl: Duration,
        /// How often the restart grace countdown is written to disk.
        #[arg(long, default_value = "1s", value_parser = parse_duration)]
        grace_persist_interval: Duration,
    },
    /// The ledger service: append-only logs where every append is a CAS on the tip, synced
    /// to disk before it is acknowledged.
    Ledger {
        #[command(flatten)]
        common: ServeArgs,
    },
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// Address to listen on (`host:port`; port 0 picks a free port, printed at start).
    #[arg(long, value_name = "HOST:PORT")]
    listen: String,
    /// Directory for the service's durable state (created if missing).
    #[arg(long, value_name = "DIR")]
    data: PathBuf,
}

/// Exit code: everything as expected.
const CLEAN: u8 = 0;
/// Exit code: a safety property was violated.
const SAFETY_VIOLATION: u8 = 1;
/// Exit code: bad input or usage.
const BAD_INPUT: u8 = 2;
/// Exit code: the harness itself failed.
const HARNESS_ERROR: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(HARNESS_ERROR);
        }
    };
    match cli.command {
        Command::Demo => runtime.block_on(demo()),
        Command::Serve { service } => runtime.block_on(serve(service)),
    }
}

async fn serve(service: Service) -> ExitCode {
    let options = |common: ServeArgs| ServeOptions {
        listen: common.listen,
        data: common.data,
    };
    let served = match service {
        Service::Lease {
            common,
            ttl,
            grace_persist_interval,
        } => {
            let mut config = DurableLeaseConfig::with_ttl(ttl);
            config.grace_persist_interval = grace_persist_interval;
            leasesim::serve::lease(options(common), config, stop_signal()).await
        }
        Service::Ledger { common } => leasesim::serve::ledger(options(common), stop_signal()).await,
    };
    match served {
        Ok(()) => ExitCode::from(CLEAN),
        Err(error @ ServeError::BadInput(_)) => {
            eprintln!("error: {error}");
            ExitCode::from(BAD_INPUT)
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(HARNESS_ERROR)
        }
    }
}

/// Completes on SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

async fn demo() -> ExitCode {
    match leasesim::demo::run().await {
        Ok(outcome) => {
            print!("{}", outcome.narrative);
            println!("ledger of s1:");
            for line in &outcome.ledger {
                println!("  {line}");
            }
            if outcome.as_expected {
                println!("ok: the stale writer was fenced; the ledger is one CAS chain");
                ExitCode::from(CLEAN)
            } else {
                println!("VIOLATION: the stale writer was not stopped as the contract requires");
                ExitCode::from(SAFETY_VIOLATION)
            }
        }
        Err(error) => {
            eprintln!("error: the demo could not run: {error}");
            ExitCode::from(HARNESS_ERROR)
        }
    }
}
