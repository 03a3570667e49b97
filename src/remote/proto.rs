//! Generated protobuf and gRPC types of `proto/leasesim.proto`.
#![allow(missing_docs, clippy::all)]
#![allow(clippy::too_many_lines, reason = "generated")]

tonic::include_proto!("leasesim.v1");
