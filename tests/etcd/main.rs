//! `EtcdLease` against a real etcd (`/usr/bin/etcd`, one member on 127.0.0.1, started once
//! per test binary): the conformance suite in real time, and the token's own rules.

mod conformance;
mod live;
mod support;
mod token;
