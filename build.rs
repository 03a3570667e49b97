//! Compiles `proto/leasesim.proto` with protox (pure Rust), so a fresh machine needs no
//! system `protoc` (docs/pitfalls.md#building).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/leasesim.proto");
    let descriptors = protox::compile(["leasesim.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
