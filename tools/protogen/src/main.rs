//! Regenerates `crates/remote/src/generated/leasesim.v1.rs` from `proto/leasesim.proto`
//! (docs/architecture.md#generated-code).
//!
//! The generated code is committed so that users build leasesim with no build script and no
//! protobuf compiler; `.ci/run` runs this and fails on any difference from the committed file.
//! protox compiles the `.proto` in pure Rust, so this needs no system `protoc` either.
//!
//! Usage, from the repository root: `cargo run -p leasesim-protogen`.

use std::path::Path;
use std::process::ExitCode;

/// Where the `.proto` lives and where its Rust goes, relative to the repository root.
const PROTO_DIR: &str = "proto";
const PROTO_FILE: &str = "leasesim.proto";
const OUT_DIR: &str = "crates/remote/src/generated";

fn main() -> ExitCode {
    match generate(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .as_path(),
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("leasesim-protogen: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Compiles `PROTO_FILE` and writes its messages, client and server into `OUT_DIR`.
fn generate(root: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let descriptors = protox::compile([PROTO_FILE], [root.join(PROTO_DIR)])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .out_dir(root.join(OUT_DIR))
        .compile_fds(descriptors)?;
    Ok(())
}
