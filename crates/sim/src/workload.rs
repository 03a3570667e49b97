//! What the replicas do: a script, or runs — drawn from the seed or planned
//! ([`super::plan`]).
//!
//! Journal calls (open, append) are recorded here as operations; lease and ledger calls are
//! recorded by the clients' wrappers ([`super::record`]).

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use super::backend::ForkSlot;
use super::config::WorldConfig;
use super::plan::{Drawer, Plan, PlannedRun, StartedRuns, drawn_runs};
use super::record::Recorder;
use super::script::{Call, ScriptedCall};
use super::to_history::ToHistory;
use futures_util::FutureExt;
use leasesim_core::clock::Clock;
use leasesim_core::hooks::LeaseUse;
use leasesim_core::journal::{Journal, JournalError, JournalLease, Store};
use leasesim_core::lease::{LeaseError, SessionId};
use leasesim_core::service::{Backoff, RunError, Service};
use leasesim_history::{Op, OpResult, Outcome, Process, WorkState};

/// One replica incarnation's view of the world.
pub struct Replica {
    /// The replica's host name (`replica-1`…): its owner name in the lease and the history.
    pub name: String,
    /// This incarnation of the replica's process (its number and the stop it obeys).
    pub process: Process,
    /// The process's journal store (its writer state per session).
    pub store: Arc<Store>,
    /// Where the replica's operations are recorded.
    pub recorder: Recorder,
    /// The process's one monotonic clock (a simulated host's, or live the process's own).
    pub clock: Arc<dyn Clock>,
    /// The world the replica runs in (workload, TTL, timeouts).
    pub config: WorldConfig,
    /// Where its process's `fork` is registered (empty live and on a backend that cannot
    /// fork).
    pub forks: ForkSlot,
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
                    writer_id: journal.writer_id().to_history(),
                    fence_seq: journal.tip().await,
                },
            ),
            Err(error) => (journal_outcome(error), error.to_history()),
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
            writer_id: journal.writer_id().to_history(),
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
            Err(error) => (journal_outcome(error), error.to_history()),
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
        JournalError::Ledger(leasesim_core::journal::LedgerError::Unknown { .. }) => Outcome::Info,
        _ => Outcome::Fail,
    }
}

/// Runs `calls` in order, each no earlier than its time (true time: the simulation's, or
/// live the run's since its epoch), until the script ends or a `shutdown` stops the replica.
/// A call that panics (a `worker_panic` fault) is abandoned and the script goes on.
pub async fn run_script(replica: Replica, calls: Vec<ScriptedCall>) {
    let mut leases: BTreeMap<String, JournalLease> = BTreeMap::new();
    let mut journals: BTreeMap<String, Arc<Journal>> = BTreeMap::new();
    for scripted in calls {
        replica
            .recorder
            .sleep_until(Duration::from_millis(scripted.at_ms))
            .await;
        tracing::info!(target: "leasesim::sim::workload", replica = %replica.name, call = ?scripted.call, "scripted call");
        let call = AssertUnwindSafe(run_call(
            &replica,
            &mut leases,
            &mut journals,
            scripted.call,
        ));
        match call.catch_unwind().await {
            Ok(Step::Next) => {}
            Ok(Step::Stop) => return,
            Err(_) => {
                tracing::info!(target: "leasesim::sim::workload", replica = %replica.name, "scripted call panicked")
            }
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
                    tokio::spawn(leasesim_core::service::renew_until_lost(
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
            Call::Fork { mode } => {
                if !replica.forks.fork(mode) {
                    tracing::info!(target: "leasesim::sim::workload", replica = %replica.name, "fork: the process cannot fork");
                }
            }
            Call::Shutdown => {
                for journal in journals.values() {
                    let _ = replica.cleanup_append(journal).await;
                }
                for held in leases.values() {
                    let _ = held.release().await;
                }
                tracing::info!(target: "leasesim::sim::workload", replica = %replica.name, "shut down gracefully");
                return Step::Stop;
            }
        }
    }
    Step::Next
}

/// How a replica's runs ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ended {
    /// The replica shut down gracefully: it stops (the world starts it again).
    Stopped,
    /// A plan's runs are all done: the replica stays up, idle.
    PlanDone,
}

/// Contends for the sessions through the service layer until the run ends, making the runs
/// its incarnation draws from the seed ([`super::plan::drawn_runs`]): a generated workload.
pub async fn run_generated(replica: Replica, started: StartedRuns) {
    let runs = drawn_runs(Drawer {
        seed: replica.config.seed,
        sessions: &replica.config.sessions,
        mix: &replica.config.mix,
        replica: &replica.name,
        incarnation: replica.process.incarnation,
    });
    let service = Arc::new(Service::new(replica.store.clone()));
    run_runs_on(replica, service, runs, started).await;
}

/// Makes the runs a plan gives this replica incarnation, then stays up idle.
pub async fn run_planned(replica: Replica, plan: &Plan, started: StartedRuns) {
    let runs = plan.runs_of(&replica.name, replica.process.incarnation);
    let service = Arc::new(Service::new(replica.store.clone()));
    if run_runs_on(replica, service, runs.into_iter(), started).await == Ended::PlanDone {
        std::future::pending::<()>().await;
    }
}

/// Makes `runs` through `service`, which the caller may also shut down (a live replica does
/// on SIGTERM): each run starts no earlier than its `at_ms`, is noted in `started`, and runs
/// on its session (append events a think time apart, release); then the replica thinks and
/// takes the next. A `shutdown` run asks for a graceful shutdown one think time in: the run
/// makes a final clean-up append while its lease is still valid, the service releases every
/// lease, and the replica stops. The one interpreter of drawn and planned runs.
pub async fn run_runs_on(
    replica: Replica,
    service: Arc<Service>,
    mut runs: impl Iterator<Item = PlannedRun>,
    started: StartedRuns,
) -> Ended {
    loop {
        let Some(run) = runs.next() else {
            return Ended::PlanDone;
        };
        started.push(&run, replica.recorder.now().as_millis() as u64);
        replica
            .recorder
            .sleep_until(Duration::from_millis(run.at_ms))
            .await;
        let Some(session) = replica.session(&run.session) else {
            return Ended::Stopped;
        };
        let think = Duration::from_millis(run.think_ms);
        if run.shutdown {
            let (service, clock) = (service.clone(), replica.clock.clone());
            tokio::spawn(async move {
                clock.sleep(think).await;
                service.shutdown().await;
            });
        }
        // The run is the replica's unit of work for the session: pending until it ends
        // (docs/history.md#work).
        let (recorder, process) = (&replica.recorder, &replica.process);
        recorder.work(process, &session, WorkState::Taken);
        let running =
            AssertUnwindSafe(service.run(&session, |ctx| work(&replica, ctx, run.appends, think)));
        // A worker that panicked (a `worker_panic` fault): the service has stopped its
        // renewer and released its lease before re-raising; the replica goes on, as a
        // worker pool replaces a worker that died.
        let Ok(outcome) = running.catch_unwind().await else {
            recorder.work(process, &session, WorkState::Dropped);
            tracing::info!(target: "leasesim::sim::workload", replica = %replica.name, %session, "worker panicked; its run ended");
            replica.clock.sleep(think).await;
            continue;
        };
        let ended = if outcome.is_ok() {
            WorkState::Ran
        } else {
            WorkState::Dropped
        };
        recorder.work(process, &session, ended);
        if let Err(error) = &outcome {
            tracing::debug!(target: "leasesim::sim::workload", replica = %replica.name, %session, %error, "run ended");
        }
        if run.shutdown || matches!(outcome, Err(RunError::ShuttingDown)) {
            tracing::info!(target: "leasesim::sim::workload", replica = %replica.name, "shut down gracefully");
            return Ended::Stopped;
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
    ctx: leasesim_core::service::RunContext,
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
