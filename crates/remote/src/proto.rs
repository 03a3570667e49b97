//! Generated protobuf and gRPC types of `proto/leasesim.proto`, committed
//! (docs/architecture.md#generated-code): regenerate with `cargo run -p leasesim-protogen`.
#![allow(missing_docs, clippy::all, clippy::pedantic)]
#![allow(clippy::too_many_lines, reason = "generated")]

include!("generated/leasesim.v1.rs");
