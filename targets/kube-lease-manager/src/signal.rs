//! One session's running `LeaseManager`: started with `watch()`, its "I lead" signal recorded
//! on every change the adapter sees (a `target_signal` line), let go by dropping the signal's
//! receivers, and its task joined before the session's next manager starts
//! ([`leasesim::sim::backend::SignalLease`], docs/targets.md#kube-lease-manager).

use std::sync::Arc;

use kube_lease_manager::{LeaseCreateMode, LeaseManager, LeaseParams};
use leasesim::lease::{LeaseError, Owner, SessionId};
use leasesim::sim::backend::{NAMESPACE, RecordedKubeCalls, Seen};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::Params;

/// A session's running manager: the crate's task and the adapter's watcher of its signal.
#[derive(Debug)]
pub struct Running {
    /// The signal as recorded ([`Seen`]); the watcher task holds the crate's receiver.
    pub seen: watch::Receiver<Seen>,
    /// The crate's task (`LeaseManager::watch`); it releases and ends when every receiver of
    /// its signal is dropped.
    task: JoinHandle<kube_lease_manager::Result<LeaseManager>>,
    /// The watcher: holds the crate's only receiver, records each change.
    watcher: JoinHandle<()>,
}

impl Running {
    /// Builds the crate's manager for `owner` on Lease `name` (created by the crate if absent:
    /// `AutoCreate`, its default) and starts it with `watch()`.
    ///
    /// # Errors
    /// `LeaseManager::new` failed (its read or create of the Lease): unavailable.
    pub async fn start(
        client: kube::Client,
        name: &str,
        owner: &Owner,
        session: &SessionId,
        params: Params,
        calls: Arc<RecordedKubeCalls>,
    ) -> Result<Running, LeaseError> {
        let identity = owner.to_string();
        let lease_params = LeaseParams::new(identity, params.duration_s, params.grace_s);
        let manager = LeaseManager::new(
            client,
            name,
            NAMESPACE,
            lease_params,
            LeaseCreateMode::AutoCreate,
        )
        .await
        .map_err(|error| LeaseError::Unavailable {
            reason: format!("kube-lease-manager could not start: {error}"),
        })?;
        let (signal, task) = manager.watch().await;
        let (tell, seen) = watch::channel(Seen::default());
        let watcher = tokio::spawn(record_changes(
            signal,
            tell,
            calls,
            owner.clone(),
            session.clone(),
        ));
        Ok(Running {
            seen,
            task,
            watcher,
        })
    }

    /// The signal as last recorded, or `None` once the crate's task has ended (it no longer
    /// says anything).
    pub fn now(&self) -> Option<Seen> {
        (!self.task.is_finished()).then(|| *self.seen.borrow())
    }

    /// Lets the manager go: drops the signal's receiver (the watcher's), on which the crate
    /// releases its lock and its task ends, on its own time: the task to join.
    pub fn let_go(self) -> JoinHandle<kube_lease_manager::Result<LeaseManager>> {
        self.watcher.abort();
        self.task
    }
}

/// Records every change of the crate's `signal` (a `target_signal` line) and passes it on to
/// `tell`, until the crate's task ends or the watcher is aborted. tokio's watch channel keeps
/// the latest value only: a change the crate undid before this task ran is not seen.
async fn record_changes(
    mut signal: watch::Receiver<bool>,
    tell: watch::Sender<Seen>,
    calls: Arc<RecordedKubeCalls>,
    owner: Owner,
    session: SessionId,
) {
    while signal.changed().await.is_ok() {
        let leads = *signal.borrow_and_update();
        if leads == tell.borrow().leads {
            continue;
        }
        calls.signal(&owner, &session, leads);
        tell.send_modify(|seen| {
            seen.leads = leads;
            seen.changes += 1;
        });
    }
}
