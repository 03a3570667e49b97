//! Which lease backend a live replica uses, as `leasesim replica --lease` spells it.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// A live replica's lease backend.
///
/// - `grpc://127.0.0.1:7070`: the gRPC lease service (`leasesim serve lease`), an authority
///   that decides expiry on its own clock (its `decision` lines are in the history).
/// - `flock:/path/to/dir`: [`crate::lease::flock::FlockLease`] over a directory every replica
///   shares; no authority clock (EXCL is judged on the holders).
/// - `etcd://127.0.0.1:2379`: `EtcdLease` (the `etcd` cargo feature) against an etcd server
///   we did not write; no decision lines (EXCL is judged on the holders).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum LeaseTarget {
    /// The gRPC lease service at `host:port`.
    Grpc(String),
    /// FlockLease over this directory.
    Flock(PathBuf),
    /// etcd at `host:port`.
    Etcd(String),
}

impl LeaseTarget {
    /// The backend's name in banners, reports and `--backend` (`grpc`, `flock`, `etcd`).
    pub fn backend(&self) -> &'static str {
        match self {
            LeaseTarget::Grpc(_) => "grpc",
            LeaseTarget::Flock(_) => "flock",
            LeaseTarget::Etcd(_) => "etcd",
        }
    }

    /// Whether an authority decides expiry on its own clock and records its decisions (the
    /// history's `config.authority` is then `lease`); otherwise EXCL is judged on the holders.
    pub fn has_authority_clock(&self) -> bool {
        matches!(self, LeaseTarget::Grpc(_))
    }
}

impl fmt::Display for LeaseTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseTarget::Grpc(addr) => write!(f, "grpc://{addr}"),
            LeaseTarget::Flock(dir) => write!(f, "flock:{}", dir.display()),
            LeaseTarget::Etcd(addr) => write!(f, "etcd://{addr}"),
        }
    }
}

impl FromStr for LeaseTarget {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let nonempty = |rest: &str| {
            if rest.is_empty() {
                Err(format!("`{text}`: nothing after the scheme"))
            } else {
                Ok(rest.to_owned())
            }
        };
        if let Some(rest) = text.strip_prefix("grpc://") {
            Ok(LeaseTarget::Grpc(nonempty(rest)?))
        } else if let Some(rest) = text.strip_prefix("etcd://") {
            Ok(LeaseTarget::Etcd(nonempty(rest)?))
        } else if let Some(rest) = text.strip_prefix("flock:") {
            Ok(LeaseTarget::Flock(PathBuf::from(nonempty(rest)?)))
        } else {
            Err(format!(
                "`{text}`: expected grpc://HOST:PORT (leasesim serve lease), flock:DIR \
                 (FlockLease) or etcd://HOST:PORT (EtcdLease, the `etcd` feature)"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_backend_reads_back_as_it_prints() {
        for text in [
            "grpc://127.0.0.1:7070",
            "flock:/tmp/leases",
            "etcd://127.0.0.1:2379",
        ] {
            let target: LeaseTarget = text.parse().unwrap();
            assert_eq!(target.to_string(), text);
        }
        assert!("http://x".parse::<LeaseTarget>().is_err());
        assert!("grpc://".parse::<LeaseTarget>().is_err());
    }
}
