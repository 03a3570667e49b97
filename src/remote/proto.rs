//! Generated protobuf and gRPC types of `proto/leasesim.proto`.
#![allow(missing_docs, clippy::all)]

tonic::include_proto!("leasesim.v1");
