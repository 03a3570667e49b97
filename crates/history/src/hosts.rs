//! The host names of the simulated world (docs/world.md), as the history
//! spells them in `clock` lines, `event` lines and process names: shared by the world, which
//! names its hosts, and the checkers and reports, which read them.

/// The lease authority's host (the lease service).
pub const LEASE: &str = "lease";
/// The ledger service's host.
pub const LEDGER: &str = "ledger";
/// The API server's host (Lease objects for `KubeLease`), when the world has one.
pub const APISERVER: &str = "apiserver";
/// The prefix of every replica's host name: `replica-1` … `replica-N`.
pub const REPLICA_PREFIX: &str = "replica-";

/// The host name of replica `n` (from 1): `replica-3`.
pub fn replica(n: u32) -> String {
    format!("{REPLICA_PREFIX}{n}")
}

/// Whether `host` names a replica (`replica-…`).
pub fn is_replica(host: &str) -> bool {
    host.starts_with(REPLICA_PREFIX)
}

/// Whether `host` is one of the services (`lease`, `ledger`, `apiserver`).
pub fn is_service(host: &str) -> bool {
    [LEASE, LEDGER, APISERVER].contains(&host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_designs() {
        assert_eq!((LEASE, LEDGER, APISERVER), ("lease", "ledger", "apiserver"));
        assert_eq!(replica(3), "replica-3");
        assert!(is_replica("replica-12") && !is_replica("lease"));
        assert!(is_service("ledger") && !is_service("replica-1"));
    }
}
