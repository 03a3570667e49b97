//! What the replicas do: a script, or a workload drawn from the seed.
//!
//! Journal calls (open, append) are recorded here as operations; lease and ledger calls are
//! recorded by the clients' wrappers ([`super::record`]).

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use super::config::WorldConfig;
use super::record::Recorder;
use super::script::{Call, ScriptedCall};
use super::seed::{Subsystem, between, chance, rng};
use crate::clock::Clock;
use crate::history::{HistWriterId, Op, OpResult, Outcome, Process};
use crate::hooks::LeaseUse;
use crate::journal::{Journal, JournalError, JournalLease, Store};
use crate::lease::{LeaseError, SessionId};
use crate::service::{Backoff, RunError, Service};
use futures_util::FutureExt;

/// One replica incarnation's view of the world.
pub(crate) struct Replica {
    pub(crate) name: String,
    pub(crate) process: Process,
    pub(crate) store: Arc<Store>,
    pub(crate) recorder: Recorder,
    /// The process's one monotonic clock (a simulated host's, or live the process's own).
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) config: WorldConfig,
}

impl Replica {
    fn session(&self, name: &str) -> Option<SessionId> {
        SessionId::new(name).ok()
    }

    /// Opens the journal of `lease`'s session, recorded as a `journal_open` operation.
    async fn open(&self, lease: &JournalLease) -> Result<Arc<Journal>, JournalError> {
        let op = Op::JournalOpen {
            epoch: lease.epoch(),
        };
        let invocation =
            self.recorder
                .invoke(self.process.clone(), &lease.session(), op, &self.clock);
        let opened = self.store.open_journal(lease).await;
        let (outcome, result) = match &opened {
            Ok(journal) => (
                Outcome::Ok,
                OpResult::Opened {
                    writer_id: HistWriterId::from(journal.writer_id()),
                    fence_seq: journal.tip().await,
                },
            ),
            Err(error) => (journal_outcome(error), error.into()),
        };
        self.recorder.complete(invocation, outcome, result);
        opened.map(Arc::new)
    }

    /// Appends `payload`, recorded as a `journal_append` operation.
    async fn append(&self, journal: &Journal, payload: Vec<u8>) -> Result<u64, JournalError> {
        self.append_for(journal, payload, LeaseUse::Append).await
    }

    /// A graceful shutdown's final clean-up append ([`Journal::append_cleanup`]), recorded as
    /// a `journal_append` operation.
    async fn cleanup_append(&self, journal: &Journal) -> Result<u64, JournalError> {
        let payload = CLEANUP_PAYLOAD.to_vec();
        self.append_for(journal, payload, LeaseUse::CleanupAppend)
            .await
    }

    async fn append_for(
        &self,
        journal: &Journal,
        payload: Vec<u8>,
        purpose: LeaseUse,
    ) -> Result<u64, JournalError> {
        let op = Op::JournalAppend {
            writer_id: HistWriterId::from(journal.writer_id()),
            seq_in_writer: journal.next_seq_in_writer().await,
        };
        let invocation =
            self.recorder
                .invoke(self.process.clone(), journal.session(), op, &self.clock);
        let appended = match purpose {
            LeaseUse::CleanupAppend => journal.append_cleanup(payload).await,
            _ => journal.append(payload).await,
        };
        let (outcome, result) = match &appended {
            Ok(seq) => (Outcome::Ok, OpResult::Appended { seq: *seq }),
            Err(error) => (journal_outcome(error), error.into()),
        };
        self.recorder.complete(invocation, outcome, result);
        appended
    }
}

/// The payload of a graceful shutdown's final clean-up append.
const CLEANUP_PAYLOAD: &[u8] = b"clean-up";

/// `info` for outcomes that may have taken effect, `fail` for those that certainly did not.
fn journal_outcome(error: &JournalError) -> Outcome {
    match error {
        JournalError::Ambiguous { .. } => Outcome::Info,
        JournalError::Ledger(crate::journal::LedgerError::Unknown { .. }) => Outcome::Info,
        _ => Outcome::Fail,
    }
}

/// Runs `calls` in order, each no earlier than its time (true time: the simulation's, or
/// live the run's since its epoch), until the script ends or a `shutdown` stops the replica.
/// A call that panics (a `worker_panic` fault) is abandoned and the script goes on.
pub(crate) async fn run_script(replica: Replica, calls: Vec<ScriptedCall>) {
    let mut leases: BTreeMap<String, JournalLease> = BTreeMap::new();
    let mut journals: BTreeMap<String, Arc<Journal>> = BTreeMap::new();
    for scripted in calls {
        replica
            .recorder
            .sleep_until(Duration::from_millis(scripted.at_ms))
            .await;
        tracing::info!(replica = %replica.name, call = ?scripted.call, "scripted call");
        let call = AssertUnwindSafe(run_call(
            &replica,
            &mut leases,
            &mut journals,
            scripted.call,
        ));
        match call.catch_unwind().await {
            Ok(Step::Next) => {}
            Ok(Step::Stop) => return,
            Err(_) => tracing::info!(replica = %replica.name, "scripted call panicked"),
        }
    }
}

/// Whether a scripted replica goes on after a call.
enum Step {
    Next,
    Stop,
}

/// Makes one scripted call.
async fn run_call(
    replica: &Replica,
    leases: &mut BTreeMap<String, JournalLease>,
    journals: &mut BTreeMap<String, Arc<Journal>>,
    call: Call,
) -> Step {
    {
        match call {
            Call::Acquire { session, name } => {
                let Some(id) = replica.session(&session) else {
                    return Step::Next;
                };
                if let Ok(lease) = replica.store.acquire_lease(&id).await {
                    leases.insert(name.unwrap_or(session), lease);
                }
            }
            Call::OpenJournal { session, lease } => {
                let Some(held) = leases.get(lease.as_deref().unwrap_or(&session)) else {
                    return Step::Next;
                };
                if let Ok(journal) = replica.open(held).await {
                    journals.insert(session, journal);
                }
            }
            Call::Append { session, payload } => {
                if let Some(journal) = journals.get(&session) {
                    let _ = replica.append(journal, payload.into_bytes()).await;
                }
            }
            Call::StartRenewer { lease } => {
                if let Some(held) = leases.get(&lease) {
                    tokio::spawn(crate::service::renew_until_lost(
                        held.clone(),
                        Backoff::default(),
                    ));
                }
            }
            Call::Renew { lease } => {
                if let Some(held) = leases.get(&lease) {
                    let _ = replica.store.authority().renew(&held.lease()).await;
                }
            }
            Call::Release { lease } => {
                if let Some(held) = leases.get(&lease) {
                    let _ = replica.store.authority().release(&held.lease()).await;
                }
            }
            Call::Shutdown => {
                for journal in journals.values() {
                    let _ = replica.cleanup_append(journal).await;
                }
                for held in leases.values() {
                    let _ = held.release().await;
                }
                tracing::info!(replica = %replica.name, "shut down gracefully");
                return Step::Stop;
            }
        }
    }
    Step::Next
}

/// Contends for the sessions through the service layer until the run ends: pick a session,
/// run on it (append a few events, a think time apart), release, think, repeat. Now and then
/// the replica shuts down gracefully in the middle of a run: the run makes a final clean-up
/// append while its lease is still valid, the service releases every lease, and the replica
/// stops (the nemesis restarts it when it heals).
pub(crate) async fn run_generated(replica: Replica) {
    let service = Arc::new(Service::new(replica.store.clone()));
    run_generated_on(replica, service).await;
}

/// [`run_generated`] through `service`, which the caller may also shut down (a live replica
/// does on SIGTERM): the workload then returns once the run in progress has ended.
pub(crate) async fn run_generated_on(replica: Replica, service: Arc<Service>) {
    let index = replica
        .name
        .trim_start_matches(crate::history::hosts::REPLICA_PREFIX)
        .parse::<u64>()
        .unwrap_or(0);
    let seed = replica.config.seed ^ (index << 32) ^ replica.process.incarnation;
    let mut rng = rng(seed, Subsystem::Workload);
    let sessions = replica.config.sessions.clone();
    loop {
        let pick = between(&mut rng, 0, sessions.len().saturating_sub(1) as u64) as usize;
        let Some(session) = sessions.get(pick).and_then(|s| replica.session(s)) else {
            return;
        };
        let mix = &replica.config.mix;
        let appends = between(&mut rng, mix.appends.0, mix.appends.1);
        let think = Duration::from_millis(between(&mut rng, mix.think_ms.0, mix.think_ms.1));
        let shutting_down = chance(&mut rng, mix.shutdown_chance.0, mix.shutdown_chance.1);
        if shutting_down {
            let (service, clock) = (service.clone(), replica.clock.clone());
            tokio::spawn(async move {
                clock.sleep(think).await;
                service.shutdown().await;
            });
        }
        let run =
            AssertUnwindSafe(service.run(&session, |ctx| work(&replica, ctx, appends, think)));
        // A worker that panicked (a `worker_panic` fault): the service has stopped its
        // renewer and released its lease before re-raising; the replica goes on, as a
        // worker pool replaces a worker that died.
        let Ok(outcome) = run.catch_unwind().await else {
            tracing::info!(replica = %replica.name, %session, "worker panicked; its run ended");
            replica.clock.sleep(think).await;
            continue;
        };
        if let Err(error) = &outcome {
            tracing::debug!(replica = %replica.name, %session, %error, "run ended");
        }
        if shutting_down || matches!(outcome, Err(RunError::ShuttingDown)) {
            tracing::info!(replica = %replica.name, "shut down gracefully");
            return;
        }
        let backoff = match outcome {
            Err(RunError::SessionLeasedElsewhere { .. })
            | Err(RunError::Lease(LeaseError::Unavailable { .. })) => 3,
            _ => 1,
        };
        replica.clock.sleep(think * backoff).await;
    }
}

/// One run's work: `appends` events a think time apart, or a final clean-up append as soon
/// as a graceful shutdown is requested.
async fn work(
    replica: &Replica,
    ctx: crate::service::RunContext,
    appends: u64,
    think: Duration,
) -> Result<(), JournalError> {
    let Some(journal) = ctx.journal() else {
        return Ok(());
    };
    for n in 0..appends {
        if ctx.shutdown_requested().now_or_never().is_some() {
            break;
        }
        let payload = format!("{}#{}:{n}", replica.name, replica.process.incarnation);
        replica.append(journal, payload.into_bytes()).await?;
        tokio::select! {
            biased;
            () = ctx.shutdown_requested() => break,
            () = replica.clock.sleep(think) => {}
        }
    }
    if ctx.shutdown_requested().now_or_never().is_some() {
        replica.cleanup_append(journal).await?;
    }
    Ok(())
}
