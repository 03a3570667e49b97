//! Recording what happens in the world as history lines: client operations (through
//! wrappers around the lease and ledger clients, and by the workload for journal calls),
//! authority decisions (a wrapper around the authority), validity checks and reported events
//! (the hooks' observation sink; the nemesis for what it does to a host).
//!
//! All hosts run on one thread in turmoil, so one shared recorder sees events in the order
//! they happen; lines are emitted in a fixed order at the end (see [`Recorder::finish`]).
//!
//! The recorder is harness-neutral: the same wrappers record a live process
//! ([`Recorder::live`]), which stamps lines with its [`LineSink`]'s true time instead of
//! turmoil's elapsed time and appends each one to the sink the moment it is recorded (an `op`
//! line at the invocation, and again, same id, at its completion). Live mode implements the
//! sink with its per-process file and the run's true clock (docs/live.md#what-runs).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use super::to_history::{ToHistory, granted};
use super::true_time::{true_now, true_sleep};
use leasesim_core::clock::{Clock, Instant};
use leasesim_core::hooks::{Hooks, Observation, PausePoint};
use leasesim_core::journal::{
    Entry, Ledger, LedgerError, LedgerResult, Record, Seq, Store, StoreConfig,
};
use leasesim_core::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};
use leasesim_history::{
    ClockLine, DecisionLine, EventLine, HistEvent, LedgerLine, Line, NemesisLine, Op, OpLine,
    OpResult, Outcome, Process, ValidityLine, WorkLine, WorkState, WriteLine, micros,
};

/// The shared recorder of one run (the default: a simulation's, on turmoil's time) or of one
/// live process ([`Recorder::live`]). Cloning gives another handle.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    state: Arc<Mutex<State>>,
    live: Option<Arc<dyn LineSink>>,
}

/// Where a live process's recorder writes: its true time and an append-only file of lines,
/// each handed over the moment it is recorded. Implemented by live mode (so the simulation
/// never imports it).
pub trait LineSink: std::fmt::Debug + Send + Sync {
    /// True time now (comparable across the processes of one run).
    fn now(&self) -> std::time::Duration;

    /// Appends `line`.
    ///
    /// # Errors
    /// The write failed, or the sink was closed.
    fn append(&self, line: &Line) -> std::io::Result<()>;

    /// Syncs and closes the sink; later appends fail.
    ///
    /// # Errors
    /// The sync failed.
    fn close(&self) -> std::io::Result<()>;

    /// What an error names: the file's path.
    fn describe(&self) -> String;
}

#[derive(Debug, Default)]
struct State {
    next_op: u64,
    ops: BTreeMap<u64, OpLine>,
    /// Decisions, validity checks and events, in the order they happened.
    events: Vec<Line>,
    /// True time of the nemesis action being applied, µs: when the harness (outside every
    /// host) makes the system under test report something, that is when it happened.
    harness_now_us: u64,
    /// The first failed append to a live file: reported by [`Recorder::close`], never lost.
    write_error: Option<String>,
}

/// Where and when an operation was invoked; completes it with [`Recorder::complete`].
#[derive(Debug)]
pub struct Invocation {
    id: u64,
    clock: Arc<dyn Clock>,
}

impl Recorder {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A live process's recorder: lines are stamped with `sink`'s true time and appended to
    /// it as they are recorded (op ids count from 1 in the file).
    pub fn live(sink: Arc<dyn LineSink>) -> Self {
        Recorder {
            state: Arc::default(),
            live: Some(sink),
        }
    }

    /// True time now: turmoil's elapsed time in a simulation (inside a host or client), the
    /// [`LineSink`]'s in a live process.
    ///
    /// # Panics
    /// In a simulation, outside a turmoil host or client (see [`true_now`]).
    pub fn now(&self) -> std::time::Duration {
        match &self.live {
            Some(live) => live.now(),
            None => true_now(),
        }
    }

    /// Waits until true time `at` (at once if it has passed).
    pub async fn sleep_until(&self, at: std::time::Duration) {
        let now = self.now();
        if at <= now {
            return;
        }
        true_sleep(at - now).await;
        // Live, tokio's timer runs on the process's own clock (libfaketime may drift it), and
        // on an engine host on the host's (its drift may change meanwhile): wait out what
        // true time still lacks.
        if self.live.is_some() || super::true_time::on_engine_host() {
            loop {
                let now = self.now();
                if at <= now {
                    return;
                }
                true_sleep(at - now).await;
            }
        }
    }

    /// Appends `line` to the live file (a simulation keeps lines in memory instead).
    fn append(&self, state: &mut State, line: &Line) {
        if let Some(live) = &self.live
            && let Err(error) = live.append(line)
            && state.write_error.is_none()
        {
            let file = live.describe();
            tracing::error!(target: "leasesim::sim::record", %file, %error, "history line lost");
            state.write_error = Some(format!("{file}: {error}"));
        }
    }

    /// Records an event-like line: in the simulation's list, or straight to the live file.
    fn push(&self, line: Line) {
        let mut state = self.lock();
        if self.live.is_some() {
            self.append(&mut state, &line);
        } else {
            state.events.push(line);
        }
    }

    /// Records the invocation of `op` by `process` on `session`, now, timed locally on
    /// `clock` (the process's monotonic clock).
    pub fn invoke(
        &self,
        process: Process,
        session: &SessionId,
        op: Op,
        clock: &Arc<dyn Clock>,
    ) -> Invocation {
        let invoke_us = micros(self.now());
        let mut state = self.lock();
        state.next_op += 1;
        let id = state.next_op;
        let line = OpLine {
            id,
            process,
            session: session.as_str().to_owned(),
            op,
            invoke_us,
            complete_us: None,
            invoke_local_us: micros(clock.now().since_origin()),
            complete_local_us: None,
            outcome: Outcome::Info,
            result: None,
        };
        if self.live.is_some() {
            self.append(&mut state, &Line::Op(line.clone()));
        }
        state.ops.insert(id, line);
        Invocation {
            id,
            clock: clock.clone(),
        }
    }

    /// Records the completion of `invocation`, now.
    pub fn complete(&self, invocation: Invocation, outcome: Outcome, result: OpResult) {
        let complete_us = micros(self.now());
        let mut state = self.lock();
        if let Some(op) = state.ops.get_mut(&invocation.id) {
            op.complete_us = Some(complete_us);
            op.complete_local_us = Some(micros(invocation.clock.now().since_origin()));
            op.outcome = outcome;
            op.result = Some(result);
        }
        if self.live.is_some()
            && let Some(op) = state.ops.remove(&invocation.id)
        {
            // The file has it; a live process keeps only its pending operations.
            self.append(&mut state, &Line::Op(op));
        }
    }

    /// Records an authority decision.
    pub fn decision(&self, line: DecisionLine) {
        self.push(Line::Decision(line));
    }

    /// Records a write the API server accepted (in acceptance order).
    pub fn write(&self, line: WriteLine) {
        self.push(Line::Write(line));
    }

    /// Records a replica's validity check.
    pub fn validity(&self, line: ValidityLine) {
        self.push(Line::Validity(line));
    }

    /// Records that `event` happened on `host`, now (true time inside a host; the nemesis
    /// action's time outside every host, see [`Recorder::set_harness_now`]; a live
    /// process's true time).
    pub fn event(&self, host: &str, event: HistEvent) {
        let at_us = match &self.live {
            Some(live) => micros(live.now()),
            None => super::true_time::try_true_now().map_or(self.lock().harness_now_us, micros),
        };
        self.push(Line::Event(EventLine {
            at_us,
            host: host.to_owned(),
            event,
        }));
    }

    /// Records that `process` took a unit of work for `session`, or ended one (`state`), now
    /// (docs/history.md#work).
    pub fn work(&self, process: &Process, session: &SessionId, state: WorkState) {
        self.push(Line::Work(WorkLine {
            process: process.clone(),
            session: session.as_str().to_owned(),
            state,
            at_us: micros(self.now()),
        }));
    }

    /// Records what the nemesis did (a `nemesis` line; its `at_us` is set by the caller).
    pub fn nemesis(&self, line: NemesisLine) {
        self.push(Line::Nemesis(line));
    }

    /// Records that `host`'s boot `boot` starts its clock now: a `clock` line whose
    /// `from_us` is true time now and `local_from_us` the reading `local` of the process's
    /// one monotonic clock, running at `drift_ppm` (live mode: the first line of a file).
    pub fn clock_started(&self, host: &str, boot: u64, local: Instant, drift_ppm: i64) {
        self.push(Line::Clock(ClockLine {
            host: host.to_owned(),
            boot,
            from_us: micros(self.now()),
            local_from_us: micros(local.since_origin()),
            drift_ppm,
            suspended: false,
        }));
    }

    /// Records one record of the final ledger (the ledger service, as it stops).
    pub fn ledger(&self, line: LedgerLine) {
        self.push(Line::Ledger(line));
    }

    /// Closes a live recorder's file (synced); later lines fail and are reported here.
    /// A simulation's recorder has nothing to close.
    ///
    /// # Errors
    /// The first line that could not be appended, or the final sync failing.
    pub fn close(&self) -> Result<(), String> {
        let Some(live) = &self.live else {
            return Ok(());
        };
        if let Some(error) = self.lock().write_error.clone() {
            return Err(format!("history line lost: {error}"));
        }
        live.close()
            .map_err(|e| format!("{}: {e}", live.describe()))
    }

    /// `read` applied to the decisions, writes, validity checks and events recorded so far,
    /// in the order they happened (none for a live recorder, which keeps no lines).
    pub(crate) fn with_lines<R>(&self, read: impl FnOnce(&[Line]) -> R) -> R {
        read(&self.lock().events)
    }

    /// The true time of the nemesis action about to be applied, for what it makes the
    /// system under test report from outside every host.
    pub fn set_harness_now(&self, now: std::time::Duration) {
        self.lock().harness_now_us = micros(now);
    }

    /// The recorded lines: operations (by id; those still pending completed as `info`,
    /// cut off at `end_us`), then decisions, validity checks and events in the order they
    /// happened.
    pub fn finish(&self, end_us: u64) -> Vec<Line> {
        let state = self.lock();
        let ops = state.ops.values().cloned().map(|mut op| {
            if op.is_pending() {
                op.complete_us = Some(end_us.max(op.invoke_us));
                op.outcome = Outcome::Info;
                op.result = Some(OpResult::CutOff {
                    reason: "no reply before the run ended: the caller abandoned the call (a \
                             deadline passed), or its process crashed"
                        .into(),
                });
            }
            Line::Op(op)
        });
        ops.chain(state.events.iter().cloned()).collect()
    }
}

/// A lease outcome as Jepsen judges it, by the table of docs/checks.md#definite: `ok`;
/// `fail` for the answers that promise no effect (`Held`, `Unsupported`, `InvalidSession`);
/// `info` for those that may have had one (`Unavailable`: a timeout or broken connection;
/// `Unexpected`: a status the contract does not name, whose outcome is unknown).
fn lease_outcome<T>(result: &Result<T, LeaseError>) -> Outcome {
    match result {
        Ok(_) => Outcome::Ok,
        Err(LeaseError::Unavailable { .. } | LeaseError::Unexpected { .. }) => Outcome::Info,
        Err(
            LeaseError::Held { .. } | LeaseError::Unsupported | LeaseError::InvalidSession { .. },
        ) => Outcome::Fail,
    }
}

/// As [`lease_outcome`], for the ledger: `info` only for `Unknown` (every other error is a
/// promise that nothing was written, docs/checks.md#definite).
fn ledger_outcome<T>(result: &LedgerResult<T>) -> Outcome {
    match result {
        Ok(_) => Outcome::Ok,
        Err(LedgerError::Unknown { .. }) => Outcome::Info,
        Err(
            LedgerError::Conflict { .. }
            | LedgerError::Unavailable { .. }
            | LedgerError::Invalid { .. },
        ) => Outcome::Fail,
    }
}

/// A replica's client (`T`: its lease or its ledger) that records each call `process` makes
/// through it as an operation, timed on `clock`: [`RecordingLease`], [`RecordingLedger`].
#[derive(Debug)]
pub struct Recording<T: ?Sized> {
    inner: Arc<T>,
    recorder: Recorder,
    process: Process,
    clock: Arc<dyn Clock>,
}

/// A replica's lease client that records each call as an operation.
pub type RecordingLease = Recording<dyn SessionLease>;

/// A replica's ledger client that records each call as an operation.
pub type RecordingLedger = Recording<dyn Ledger>;

impl<T: ?Sized> Recording<T> {
    /// Records the calls `process` makes through `inner`, timed on `clock`.
    pub fn new(inner: Arc<T>, recorder: Recorder, process: Process, clock: Arc<dyn Clock>) -> Self {
        Recording {
            inner,
            recorder,
            process,
            clock,
        }
    }

    /// Makes `call` on `session` as the operation `op`: its invocation recorded before the
    /// call starts, its completion after it ends, with the `outcome` of its result and what
    /// the history writes of it (`ok` of a value, or the error as the history writes it).
    async fn record<V, E, F>(
        &self,
        (session, op): (&SessionId, Op),
        call: impl FnOnce() -> F,
        outcome: fn(&Result<V, E>) -> Outcome,
        ok: impl FnOnce(&V) -> OpResult,
    ) -> Result<V, E>
    where
        F: Future<Output = Result<V, E>>,
        E: ToHistory<Hist = OpResult>,
    {
        let invocation = self
            .recorder
            .invoke(self.process.clone(), session, op, &self.clock);
        let result = call().await;
        let op_result = match &result {
            Ok(value) => ok(value),
            Err(error) => error.to_history(),
        };
        self.recorder
            .complete(invocation, outcome(&result), op_result);
        result
    }
}

#[async_trait]
impl SessionLease for RecordingLease {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let op = Op::LeaseAcquire {
            owner: owner.to_history(),
        };
        let call = || self.inner.acquire(session, owner);
        self.record((session, op), call, lease_outcome, granted)
            .await
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let op = Op::LeaseRenew {
            owner: lease.owner().to_history(),
            token: lease.token(),
        };
        let call = || self.inner.renew(lease);
        self.record((lease.session(), op), call, lease_outcome, granted)
            .await
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        let op = Op::LeaseRelease {
            owner: lease.owner().to_history(),
            token: lease.token(),
        };
        let released = |_: &()| OpResult::Released {};
        let call = || self.inner.release(lease);
        self.record((lease.session(), op), call, lease_outcome, released)
            .await
    }
}

/// A replica's store (set up by `config`) over `lease` and `ledger`, both recording the calls
/// `process` makes through them, timed on `clock`: the world's and a live replica's.
pub fn recorded_store(
    (lease, ledger): (Arc<dyn SessionLease>, Arc<dyn Ledger>),
    (recorder, process): (&Recorder, &Process),
    clock: Arc<dyn Clock>,
    config: StoreConfig,
) -> Store {
    let lease = RecordingLease::new(lease, recorder.clone(), process.clone(), clock.clone());
    let ledger = RecordingLedger::new(ledger, recorder.clone(), process.clone(), clock.clone());
    let owner = Owner::new(process.replica.clone(), process.incarnation);
    Store::new(owner, Arc::new(lease), Arc::new(ledger), clock).with_config(config)
}

#[async_trait]
impl Ledger for RecordingLedger {
    async fn tip(&self, name: &SessionId) -> LedgerResult<Seq> {
        let tip = |seq: &Seq| OpResult::Tip { seq: *seq };
        let call = || self.inner.tip(name);
        self.record((name, Op::LedgerTip {}), call, ledger_outcome, tip)
            .await
    }

    async fn append(&self, name: &SessionId, expected: Seq, record: Record) -> LedgerResult<Seq> {
        let op = Op::LedgerAppend {
            expected,
            record: record.to_history(),
        };
        let appended = |seq: &Seq| OpResult::Appended { seq: *seq };
        let call = || self.inner.append(name, expected, record);
        self.record((name, op), call, ledger_outcome, appended)
            .await
    }

    /// Reads are not operations of the history (they change nothing, and the final ledger
    /// is recorded whole at the end).
    async fn read(&self, name: &SessionId, from: Seq) -> LedgerResult<Vec<Entry>> {
        self.inner.read(name, from).await
    }
}

/// The `event` line an observation stands for, if any.
fn event_of(observation: &Observation) -> Option<HistEvent> {
    match observation {
        Observation::ValidityCheck { .. } => None,
        Observation::RunCancelledOnLoss { .. } => Some(HistEvent::RunCancelledOnLoss),
        Observation::StickyDisable => Some(HistEvent::StickyDisable),
        Observation::RecordDeleted { .. } => Some(HistEvent::RecordDeleted),
    }
}

/// The sink for a service host's observations (the authority's record deletions): `event`
/// lines of `host`.
pub fn event_sink(recorder: Recorder, host: &str) -> impl Fn(Observation) + Send + Sync + use<> {
    let host = host.to_owned();
    move |observation| {
        if let Some(event) = event_of(&observation) {
            recorder.event(&host, event);
        }
    }
}

/// The sink for a replica's observations: validity checks become `validity` lines; a run
/// cancelled on loss and a sticky disable become `event` lines of the replica's host.
pub fn validity_sink(recorder: Recorder, process: Process) -> impl Fn(Observation) + Send + Sync {
    move |observation| match observation {
        other @ (Observation::RunCancelledOnLoss { .. }
        | Observation::StickyDisable
        | Observation::RecordDeleted { .. }) => {
            if let Some(event) = event_of(&other) {
                recorder.event(&process.replica, event);
            }
        }
        Observation::ValidityCheck {
            session,
            purpose,
            epoch,
            local,
            valid_until,
        } => recorder.validity(ValidityLine {
            process: process.clone(),
            session: session.as_str().to_owned(),
            purpose: purpose.to_history(),
            epoch,
            at_local_us: micros(local.since_origin()),
            at_us: micros(recorder.now()),
            valid_until_local_us: micros(valid_until.since_origin()),
        }),
    }
}

/// Hooks whose observations go to a sink ([`validity_sink`], [`event_sink`]) and whose pause
/// points do nothing: a live process's (no harness holds its tasks; the nemesis stops whole
/// processes).
pub struct SinkHooks<F> {
    sink: F,
}

impl<F: Fn(Observation) + Send + Sync> SinkHooks<F> {
    /// Hooks reporting every observation to `sink`.
    pub fn new(sink: F) -> Self {
        SinkHooks { sink }
    }
}

impl<F> std::fmt::Debug for SinkHooks<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SinkHooks")
    }
}

#[async_trait]
impl<F: Fn(Observation) + Send + Sync> Hooks for SinkHooks<F> {
    async fn pause_point(&self, _point: PausePoint) {}

    fn observe(&self, observation: Observation) {
        (self.sink)(observation);
    }
}

#[cfg(test)]
mod tests {
    //! The recorder follows the table of docs/checks.md#definite, one row each.
    use super::{lease_outcome, ledger_outcome};
    use leasesim_core::journal::LedgerError;
    use leasesim_core::lease::LeaseError;
    use leasesim_history::Outcome;

    fn lease(error: LeaseError) -> Outcome {
        lease_outcome::<()>(&Err(error))
    }

    fn ledger(error: LedgerError) -> Outcome {
        ledger_outcome::<()>(&Err(error))
    }

    #[test]
    fn lease_answers_that_promise_no_effect_are_fail() {
        let held = LeaseError::Held {
            holder_token: Some(3),
        };
        let invalid = LeaseError::InvalidSession {
            reason: "empty".into(),
        };
        assert_eq!(lease(held), Outcome::Fail);
        assert_eq!(lease(invalid), Outcome::Fail);
        assert_eq!(lease(LeaseError::Unsupported), Outcome::Fail);
    }

    #[test]
    fn lease_answers_that_may_have_taken_effect_are_info() {
        let timeout = LeaseError::Unavailable {
            reason: "deadline exceeded".into(),
        };
        // INTERNAL, or an API server's 401, 403 or 5xx: the lease call does not say which,
        // so its outcome is unknown (the Lease API call's own line keeps the status).
        let unexpected = LeaseError::Unexpected {
            status: "Internal: injected".into(),
        };
        assert_eq!(lease(timeout), Outcome::Info);
        assert_eq!(lease(unexpected), Outcome::Info);
        assert_eq!(lease_outcome(&Ok(())), Outcome::Ok);
    }

    #[test]
    fn ledger_answers_are_fail_but_an_unknown_outcome() {
        let reason = || "x".to_string();
        assert_eq!(ledger(LedgerError::Conflict { actual: 4 }), Outcome::Fail);
        assert_eq!(
            ledger(LedgerError::Unavailable { reason: reason() }),
            Outcome::Fail
        );
        assert_eq!(
            ledger(LedgerError::Invalid { reason: reason() }),
            Outcome::Fail
        );
        assert_eq!(
            ledger(LedgerError::Unknown { reason: reason() }),
            Outcome::Info
        );
    }
}
