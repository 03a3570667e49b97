//! An etcd server from the OS packages (`etcd-server`, Debian) for live runs and the
//! `EtcdLease` tests: one member on 127.0.0.1, its data in a directory of the run.

use std::path::Path;
use std::process::Command;

/// The etcd binary live mode starts (Debian's `etcd-server` installs it as `/usr/bin/etcd`).
pub const ETCD_BINARY: &str = "etcd";

/// The host name of the etcd server in a live run's history and files. etcd writes no
/// history file of its own: EtcdLease records its calls on the replicas.
pub const HOST: &str = "etcd";

/// The command that starts a one-member etcd serving clients on `127.0.0.1:client_port` and
/// its peer port on `127.0.0.1:peer_port`, with its data in `data_dir`. The caller picks free
/// ports, spawns it (bounded, reaped) and waits until the client port answers.
pub fn etcd_command(data_dir: &Path, client_port: u16, peer_port: u16) -> Command {
    let client = format!("http://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    let mut command = Command::new(ETCD_BINARY);
    command
        .arg("--name")
        .arg("live")
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--listen-client-urls")
        .arg(&client)
        .arg("--advertise-client-urls")
        .arg(&client)
        .arg("--listen-peer-urls")
        .arg(&peer)
        .arg("--initial-advertise-peer-urls")
        .arg(&peer)
        .arg("--initial-cluster")
        .arg(format!("live={peer}"))
        .arg("--initial-cluster-state")
        .arg("new");
    command
}
