//! The registry of leases held by this process's runs, for graceful shutdown.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::clock::{Clock, Instant};
use crate::journal::JournalLease;
use crate::lease::SessionId;
use crate::sync::{Mutex, lock};

/// Leases held by the runs in progress, one per session (the gate guarantees it).
#[derive(Debug, Default)]
pub struct Registry {
    held: Arc<Mutex<BTreeMap<SessionId, JournalLease>>>,
}

/// Keeps a lease in the registry; dropping it removes the entry.
#[derive(Debug)]
pub struct Registration {
    held: Arc<Mutex<BTreeMap<SessionId, JournalLease>>>,
    session: SessionId,
}

impl Registry {
    /// Records `lease` as held until the returned registration is dropped.
    pub fn register(&self, lease: &JournalLease) -> Registration {
        let session = lease.session();
        lock(&self.held).insert(session.clone(), lease.clone());
        Registration {
            held: self.held.clone(),
            session,
        }
    }

    /// The leases held now, in session order.
    pub fn held(&self) -> Vec<JournalLease> {
        lock(&self.held).values().cloned().collect()
    }

    /// The shutdown walk: for each lease held now, waits until its run has released it (the
    /// run's clean-up comes first) or until `deadline` on `clock`, then releases it. Each
    /// lease reaches the authority once: [`JournalLease::release`] is once-only, so a lease
    /// its run released meanwhile is not released again.
    pub async fn release_all(&self, clock: &Arc<dyn Clock>, deadline: Instant) {
        for lease in self.held() {
            tokio::select! {
                biased;
                _ = lease.lost() => {}
                () = clock.sleep_until(deadline) => {}
            }
            if let Err(error) = lease.release().await {
                tracing::warn!(session = %lease.session(), %error, "release at shutdown failed; the lease will expire");
            }
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        lock(&self.held).remove(&self.session);
    }
}
