//! The `leasesim` command line. It only parses arguments and calls into the library.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
}

/// Exit code: everything as expected.
const CLEAN: u8 = 0;
/// Exit code: a safety property was violated.
const SAFETY_VIOLATION: u8 = 1;
/// Exit code: the harness itself failed.
const HARNESS_ERROR: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(HARNESS_ERROR);
        }
    };
    match cli.command {
        Command::Demo => runtime.block_on(demo()),
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
