//! Ledger test doubles: [`Ledger`]s that wrap a real ledger and misbehave the way a remote
//! ledger can (lost answers, failed reads, a competitor winning the race to the tip), helpers
//! that make a foreign writer's record appear, and a ledger service on loopback so the same
//! doubles can wrap a [`RemoteLedger`] as well as a
//! [`MemLedger`](leasesim::journal::MemLedger).
//!
//! Each double keeps the ledger it wraps in an `Arc<dyn Ledger>`, so a test can look at (or
//! write to) the ledger behind the double's back. Whatever a double does to the ledger it
//! wraps (a commit whose answer it then loses, a competitor's record) goes through that
//! ledger: over the wire when it wraps a [`RemoteLedger`].

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use leasesim::clock::{Clock, ManualClock};
use leasesim::journal::{
    Entry, Ledger, LedgerError, LedgerResult, LedgerServer, Record, RemoteLedger, Seq, WriterId,
};
use leasesim::lease::{Owner, SessionId};
use leasesim::net::{tcp_dialer, tcp_incoming};
use leasesim::remote::{ClientConfig, RemoteChannel};
use tokio::sync::oneshot;

/// The reason every injected [`LedgerError::Unknown`] carries, so tests can find it in
/// [`leasesim::journal::JournalError::Ambiguous`]'s reason.
pub const TIMEOUT: &str = "injected timeout";

/// The writer of every foreign record: a journal of another owner that these tests never open.
pub fn foreign_writer() -> WriterId {
    WriterId {
        owner: Owner::new("intruder", 0),
        journal: 1,
    }
}

/// A foreign event, the `n`th of [`foreign_writer`].
pub fn foreign_event(n: u64) -> Record {
    Record::Event {
        writer_id: foreign_writer(),
        seq_in_writer: n,
        payload: format!("foreign-{n}").into_bytes(),
    }
}

/// A foreign fence with `epoch`, as a writer holding that lease token would write it.
pub fn foreign_fence(epoch: u64) -> Record {
    Record::Fence {
        epoch,
        owner: foreign_writer().owner,
        writer_id: foreign_writer(),
    }
}

/// Appends `record` to `ledger` at its current tip, as another writer would, bypassing any
/// journal. Returns the record's position.
pub async fn append_foreign(ledger: &dyn Ledger, session: &SessionId, record: Record) -> Seq {
    let tip = ledger
        .tip(session)
        .await
        .expect("the foreign writer reads the tip");
    ledger
        .append(session, tip, record)
        .await
        .expect("nobody else writes between our tip and our append")
}

/// What the next append through a [`FaultyLedger`] does instead of answering plainly.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AppendFault {
    /// The record commits, then the answer is lost: [`LedgerError::Unknown`] (a timeout after
    /// the write).
    CommitThenUnknown,
    /// The record commits, then a retrying client sends it again and gets
    /// [`LedgerError::Conflict`] against its own first try.
    CommitThenConflict,
    /// The request is lost before it commits, and the answer is [`LedgerError::Unknown`]: the
    /// record is not in the ledger.
    LostUnknown,
    /// The request is lost, a competitor's [`foreign_event`] (numbered 1) commits at the
    /// expected position instead, and the answer is [`LedgerError::Unknown`].
    LostToForeign,
    /// The ledger is unreachable: [`LedgerError::Unavailable`], nothing written.
    Unavailable,
}

/// A ledger with scripted faults: each queued [`AppendFault`] replaces the plain answer
/// of one append, in order, and each queued read failure makes one read answer
/// [`LedgerError::Unknown`]. With nothing queued it is the wrapped ledger itself. It also counts
/// the appends it is asked for, so a test can tell that nothing was sent.
#[derive(Debug)]
pub struct FaultyLedger {
    inner: Arc<dyn Ledger>,
    append_faults: Mutex<VecDeque<AppendFault>>,
    read_failures: Mutex<u32>,
    appends: AtomicU64,
}

impl FaultyLedger {
    /// A faultless double over `inner`.
    pub fn new(inner: Arc<dyn Ledger>) -> Self {
        FaultyLedger {
            inner,
            append_faults: Mutex::new(VecDeque::new()),
            read_failures: Mutex::new(0),
            appends: AtomicU64::new(0),
        }
    }

    /// Queues `fault` for the next append that has none queued yet.
    pub fn fail_append(&self, fault: AppendFault) {
        lock(&self.append_faults).push_back(fault);
    }

    /// Makes the next read (one more per call) answer [`LedgerError::Unknown`].
    pub fn fail_read(&self) {
        *lock(&self.read_failures) += 1;
    }

    /// How many appends were asked of this ledger so far.
    pub fn appends(&self) -> u64 {
        self.appends.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Ledger for FaultyLedger {
    async fn tip(&self, name: &SessionId) -> LedgerResult<Seq> {
        self.inner.tip(name).await
    }

    async fn append(&self, name: &SessionId, expected: Seq, record: Record) -> LedgerResult<Seq> {
        self.appends.fetch_add(1, Ordering::SeqCst);
        let fault = lock(&self.append_faults).pop_front();
        let unknown = || LedgerError::Unknown {
            reason: TIMEOUT.to_string(),
        };
        match fault {
            None => self.inner.append(name, expected, record).await,
            Some(AppendFault::CommitThenUnknown) => {
                self.inner.append(name, expected, record).await?;
                Err(unknown())
            }
            Some(AppendFault::CommitThenConflict) => {
                self.inner.append(name, expected, record.clone()).await?;
                self.inner.append(name, expected, record).await
            }
            Some(AppendFault::LostUnknown) => Err(unknown()),
            Some(AppendFault::LostToForeign) => {
                self.inner.append(name, expected, foreign_event(1)).await?;
                Err(unknown())
            }
            Some(AppendFault::Unavailable) => Err(LedgerError::Unavailable {
                reason: "injected connection refused".to_string(),
            }),
        }
    }

    async fn read(&self, name: &SessionId, from: Seq) -> LedgerResult<Vec<Entry>> {
        {
            let mut failures = lock(&self.read_failures);
            if *failures > 0 {
                *failures -= 1;
                return Err(LedgerError::Unknown {
                    reason: TIMEOUT.to_string(),
                });
            }
        }
        self.inner.read(name, from).await
    }
}

/// What a [`RacingLedger`]'s competitor slips in ahead of a fence.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Sneak {
    /// [`foreign_event`]s, numbered 1, 2, 3… across races.
    Events,
    /// A [`foreign_fence`] with this epoch.
    Fence(u64),
}

/// A ledger where a competing writer wins the race to the tip: just before each of the
/// first `races` fence appends, it appends a [`Sneak`] record at the current tip, so the
/// fence's CAS conflicts. Events and later fences pass straight through.
#[derive(Debug)]
pub struct RacingLedger {
    inner: Arc<dyn Ledger>,
    sneak: Sneak,
    races: u64,
    raced: AtomicU64,
    slow: Option<(ManualClock, Duration)>,
}

impl RacingLedger {
    /// A ledger over `inner` where the first `races` fence appends lose to `sneak`.
    pub fn new(inner: Arc<dyn Ledger>, sneak: Sneak, races: u64) -> Self {
        RacingLedger {
            inner,
            sneak,
            races,
            raced: AtomicU64::new(0),
            slow: None,
        }
    }

    /// The same ledger where every lost race also takes `delay` on `clock`: a slow round trip
    /// for each fence attempt.
    pub fn with_delay(mut self, clock: ManualClock, delay: Duration) -> Self {
        self.slow = Some((clock, delay));
        self
    }

    /// How many fence appends have lost a race so far.
    pub fn raced(&self) -> u64 {
        self.raced.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Ledger for RacingLedger {
    async fn tip(&self, name: &SessionId) -> LedgerResult<Seq> {
        self.inner.tip(name).await
    }

    async fn append(&self, name: &SessionId, expected: Seq, record: Record) -> LedgerResult<Seq> {
        let is_fence = matches!(record, Record::Fence { .. });
        if is_fence && self.raced() < self.races {
            let n = self.raced.fetch_add(1, Ordering::SeqCst) + 1;
            let sneak = match self.sneak {
                Sneak::Events => foreign_event(n),
                Sneak::Fence(epoch) => foreign_fence(epoch),
            };
            append_foreign(&*self.inner, name, sneak).await;
            if let Some((clock, delay)) = &self.slow {
                clock.advance(*delay);
            }
        }
        self.inner.append(name, expected, record).await
    }

    async fn read(&self, name: &SessionId, from: Seq) -> LedgerResult<Vec<Entry>> {
        self.inner.read(name, from).await
    }
}

/// A [`LedgerServer`] in front of a ledger, on a free loopback port, serving until dropped.
#[derive(Debug)]
pub struct LoopbackLedger {
    addr: String,
    _stop: oneshot::Sender<()>,
}

impl LoopbackLedger {
    /// Starts serving `ledger` on `127.0.0.1` (a port the system picks) in a task of the
    /// current runtime.
    pub async fn serve(ledger: Arc<dyn Ledger>) -> Self {
        let (addr, incoming) = tcp_incoming("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let (stop, stopped) = oneshot::channel::<()>();
        let server = LedgerServer::new(ledger).serve(incoming, async {
            let _ = stopped.await;
        });
        tokio::spawn(async move { server.await.expect("the loopback ledger service") });
        LoopbackLedger {
            addr: addr.to_string(),
            _stop: stop,
        }
    }

    /// A new client of the service, with its own connection, backing off between connection
    /// attempts on `clock`.
    pub fn client(&self, clock: Arc<dyn Clock>) -> RemoteLedger {
        RemoteChannel::new(&self.addr, tcp_dialer(), clock, &ClientConfig::default())
            .map(RemoteLedger::new)
            .expect("a loopback address is valid")
    }
}

/// Locks `mutex`, ignoring poisoning (a panicking test fails on its own).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
