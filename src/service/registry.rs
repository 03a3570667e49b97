//! The registry of leases held by this process's runs, for graceful shutdown.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::journal::JournalLease;
use crate::lease::SessionId;
use crate::sync::{Mutex, lock};

/// Leases held by the runs in progress, one per session (the gate guarantees it).
#[derive(Debug, Default)]
pub(crate) struct Registry {
    held: Arc<Mutex<BTreeMap<SessionId, JournalLease>>>,
}

/// Keeps a lease in the registry; dropping it removes the entry.
#[derive(Debug)]
pub(crate) struct Registration {
    held: Arc<Mutex<BTreeMap<SessionId, JournalLease>>>,
    session: SessionId,
}

impl Registry {
    /// Records `lease` as held until the returned registration is dropped.
    pub(crate) fn register(&self, lease: &JournalLease) -> Registration {
        let session = lease.session();
        lock(&self.held).insert(session.clone(), lease.clone());
        Registration {
            held: self.held.clone(),
            session,
        }
    }

    /// The leases held now, in session order.
    pub(crate) fn held(&self) -> Vec<JournalLease> {
        lock(&self.held).values().cloned().collect()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        lock(&self.held).remove(&self.session);
    }
}
