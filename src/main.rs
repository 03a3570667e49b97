//! The `leasesim` command line ([`leasesim::cli`]), with no target backends.

use std::process::ExitCode;

fn main() -> ExitCode {
    leasesim::cli::main()
}
