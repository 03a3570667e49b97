//! The run-entry gate: one run per session at a time within a process.
//!
//! Built on the `sync` shim (one mutex over a map and plain wakers) rather than an async
//! mutex, so that with the `loom` feature the models in `models/gate.rs` check the gate's
//! own mutual exclusion and wake-ups, not a library's.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::lease::SessionId;
use crate::mutant::Mutant;
use crate::sync::{Mutex, MutexGuard, lock};

/// Per-session gates. A session is in the map exactly while a run of it is inside, with the
/// wakers of the runs waiting to enter. A second run of a session waits for the first to
/// leave.
///
/// Leaving wakes every waiter and they race to enter again. There is no hand-off to one
/// waiter, so a waiter cancelled after it was woken cannot strand the others; in exchange
/// waiters enter in no particular order.
#[derive(Debug, Default)]
pub struct Gate {
    state: Arc<Mutex<State>>,
    mutant: Option<Mutant>,
}

#[derive(Debug, Default)]
struct State {
    /// Sessions with a run inside, each with the wakers of the runs waiting, by waiter id.
    inside: BTreeMap<SessionId, BTreeMap<u64, Waker>>,
    /// The last waiter id handed out. Ids are never reused, so a cancelled waiter cannot
    /// remove another's waker.
    last_waiter: u64,
}

/// The future returned by [`Gate::enter`]: completes once the run is inside.
///
/// Dropping it while it waits (a cancelled run) withdraws its waker.
#[derive(Debug)]
#[must_use = "a run enters the gate only when this future is awaited"]
pub struct Enter {
    state: Arc<Mutex<State>>,
    session: SessionId,
    mutant: Option<Mutant>,
    /// Set while this run's waker is (or may be) registered in the session's entry.
    waiter: Option<u64>,
}

/// A run inside a session's gate; dropping it lets the next run of the session in.
#[derive(Debug)]
pub struct GateGuard {
    state: Arc<Mutex<State>>,
    session: SessionId,
}

impl Gate {
    /// The same gate running `mutant` (a planted bug), or the correct code for `None`. Only
    /// the loom models set it.
    #[cfg(feature = "loom")]
    pub fn with_mutant(mut self, mutant: Option<Mutant>) -> Self {
        self.mutant = mutant;
        self
    }

    /// Waits until no other run of `session` is inside, then enters.
    pub fn enter(&self, session: &SessionId) -> Enter {
        Enter {
            state: self.state.clone(),
            session: session.clone(),
            mutant: self.mutant,
            waiter: None,
        }
    }

    /// How many sessions have a run inside (for the unit tests and the loom models).
    #[cfg(any(test, feature = "loom"))]
    pub fn sessions_inside(&self) -> usize {
        lock(&self.state).inside.len()
    }
}

impl Future for Enter {
    type Output = GateGuard;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<GateGuard> {
        let this = &mut *self;
        let mut state = lock(&this.state);
        if this.mutant == Some(Mutant::GateCheckThenEnter) {
            if let Some(entered) = this.check_then_enter(state) {
                return Poll::Ready(entered);
            }
            state = lock(&this.state);
        }
        let state = &mut *state;
        match state.inside.entry(this.session.clone()) {
            Entry::Vacant(free) => {
                debug_assert!(
                    this.waiter.is_none_or(|id| id <= state.last_waiter),
                    "gate waiters are numbered from 1 in arrival order"
                );
                free.insert(BTreeMap::new());
                // Our waker, if any, went with the entry of the run that woke us.
                this.waiter = None;
                Poll::Ready(this.guard())
            }
            Entry::Occupied(mut taken) => {
                let waiter = *this.waiter.get_or_insert_with(|| {
                    state.last_waiter += 1;
                    state.last_waiter
                });
                taken.get_mut().insert(waiter, cx.waker().clone());
                debug_assert!(
                    waiter >= 1 && waiter <= state.last_waiter,
                    "gate waiters are numbered from 1 in arrival order: waiter {waiter} of {}",
                    state.last_waiter
                );
                Poll::Pending
            }
        }
    }
}

impl Enter {
    fn guard(&self) -> GateGuard {
        GateGuard {
            state: self.state.clone(),
            session: self.session.clone(),
        }
    }

    /// The planted race of [`Mutant::GateCheckThenEnter`]: a run that finds the session free
    /// lets go of the lock before it takes the session, so another run can find it free too
    /// and both enter. (The entry and its waiters are kept, so no wake-up is lost.) `None`
    /// when the session was taken: the caller then waits as usual.
    fn check_then_enter(&self, state: MutexGuard<'_, State>) -> Option<GateGuard> {
        if state.inside.contains_key(&self.session) {
            return None;
        }
        drop(state);
        lock(&self.state)
            .inside
            .entry(self.session.clone())
            .or_default();
        Some(self.guard())
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        let Some(waiter) = self.waiter else { return };
        if let Some(waiters) = lock(&self.state).inside.get_mut(&self.session) {
            waiters.remove(&waiter);
        }
    }
}

impl Drop for GateGuard {
    fn drop(&mut self) {
        let waiters = lock(&self.state).inside.remove(&self.session);
        // Wake outside the lock: a waker may run code of its own.
        waiters
            .into_iter()
            .flatten()
            .for_each(|(_, waker)| waker.wake());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gate with a first run inside session `s1`: the gate, `s1` and the first run's guard.
    async fn s1_entered() -> (Arc<Gate>, SessionId, GateGuard) {
        let gate = Arc::new(Gate::default());
        let s1 = SessionId::new("s1").unwrap();
        let first = gate.enter(&s1).await;
        (gate, s1, first)
    }

    /// A task that enters `gate` for `session` and leaves at once.
    fn enter_and_leave(gate: &Arc<Gate>, session: &SessionId) -> tokio::task::JoinHandle<()> {
        let (gate, session) = (gate.clone(), session.clone());
        tokio::spawn(async move { drop(gate.enter(&session).await) })
    }

    #[tokio::test]
    async fn a_second_entry_waits_for_the_first_and_the_map_empties_after() {
        let (gate, s1, first) = s1_entered().await;
        let second = enter_and_leave(&gate, &s1);
        tokio::task::yield_now().await;
        assert!(
            !second.is_finished(),
            "entered while the first run was inside"
        );
        drop(first);
        second.await.unwrap();
        assert_eq!(gate.sessions_inside(), 0);
    }

    #[tokio::test]
    async fn sessions_do_not_wait_for_each_other() {
        let gate = Gate::default();
        let _s1 = gate.enter(&SessionId::new("s1").unwrap()).await;
        let _s2 = gate.enter(&SessionId::new("s2").unwrap()).await;
        assert_eq!(gate.sessions_inside(), 2);
    }

    #[tokio::test]
    async fn a_cancelled_waiter_does_not_keep_the_next_run_out() {
        let (gate, s1, first) = s1_entered().await;
        let cancelled = enter_and_leave(&gate, &s1);
        let third = enter_and_leave(&gate, &s1);
        tokio::task::yield_now().await;
        cancelled.abort();
        drop(first);
        third.await.unwrap();
        assert!(cancelled.await.unwrap_err().is_cancelled());
        assert_eq!(gate.sessions_inside(), 0);
    }
}
