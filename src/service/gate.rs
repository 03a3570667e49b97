//! The run-entry gate: one run per session at a time within a process.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use crate::lease::SessionId;
use crate::sync::{Mutex, lock};

/// Per-session in-process mutexes, created on first use and dropped when nobody holds or
/// waits for them. A second run of a session waits for the first to end.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    sessions: Arc<Mutex<BTreeMap<SessionId, Arc<AsyncMutex<()>>>>>,
}

/// Holds a session's gate; dropping it lets the next run of the session in.
#[derive(Debug)]
pub(crate) struct GateGuard {
    sessions: Arc<Mutex<BTreeMap<SessionId, Arc<AsyncMutex<()>>>>>,
    session: SessionId,
    mutex: Arc<AsyncMutex<()>>,
    held: Option<OwnedMutexGuard<()>>,
}

impl Gate {
    /// Waits until no other run of `session` is inside, then enters.
    pub(crate) async fn enter(&self, session: &SessionId) -> GateGuard {
        let mutex = lock(&self.sessions)
            .entry(session.clone())
            .or_default()
            .clone();
        let mut guard = GateGuard {
            sessions: self.sessions.clone(),
            session: session.clone(),
            mutex: mutex.clone(),
            held: None,
        };
        // Set after the await so that a cancelled wait still cleans up through `Drop`.
        guard.held = Some(mutex.lock_owned().await);
        guard
    }

    /// How many sessions have a gate (held or awaited).
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.sessions).len()
    }
}

impl Drop for GateGuard {
    fn drop(&mut self) {
        let mut sessions = lock(&self.sessions);
        self.held = None;
        // The map's reference and ours: nobody else holds or waits.
        if Arc::strong_count(&self.mutex) == 2 {
            sessions.remove(&self.session);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_second_entry_waits_for_the_first_and_the_map_empties_after() {
        let gate = Arc::new(Gate::default());
        let s1 = SessionId::new("s1").unwrap();
        let first = gate.enter(&s1).await;
        let second = tokio::spawn({
            let (gate, s1) = (gate.clone(), s1.clone());
            async move { drop(gate.enter(&s1).await) }
        });
        tokio::task::yield_now().await;
        assert!(
            !second.is_finished(),
            "entered while the first run was inside"
        );
        drop(first);
        second.await.unwrap();
        assert_eq!(gate.len(), 0);
    }

    #[tokio::test]
    async fn sessions_do_not_wait_for_each_other() {
        let gate = Gate::default();
        let _s1 = gate.enter(&SessionId::new("s1").unwrap()).await;
        let _s2 = gate.enter(&SessionId::new("s2").unwrap()).await;
        assert_eq!(gate.len(), 2);
    }
}
