//! The fenced journal over the ledger service as `leasesim serve ledger` runs it: journals
//! write through a `RemoteLedger`, over loopback TCP, to a `LedgerServer` in front of a
//! `DurableLedger` on a crashable `MemStorage`.
//!
//! What the core suite cannot show: a power loss of the ledger host — the service killed, the
//! disk keeping only what was synced, or tearing the write in progress — never loses an
//! acknowledged record; the append it cut off is reported as ambiguous, never as a success or a
//! failure; a fence committed before the crash still stops a stale writer after the service
//! restarts; and an event too large for the wire is refused without poisoning the journal.
//!
//! The lease authority is an in-process `MemLease` on a manual clock (the ledger is what is
//! under test); the clients' connection backoff runs on real time, as their TCP does.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use leasesim::BoxFuture;
use leasesim::clock::{ManualClock, RealClock};
use leasesim::journal::{
    DurableLedger, Journal, JournalError, JournalLease, LEDGER_SUFFIX, Ledger, LedgerError,
    LedgerServer, Record, RemoteLedger, Store,
};
use leasesim::lease::{MemLease, Owner};
use leasesim::net::{Conn, Dialer, tcp_incoming};
use leasesim::remote::wire::{self, PAYLOAD_MAX_BYTES};
use leasesim::remote::{ClientConfig, MESSAGE_MAX_BYTES, RemoteChannel};
use leasesim::storage::log::FRAME_HEADER_BYTES;
use leasesim::storage::{MemStorage, Storage, StorageError, safe_name};
use prost::Message;
use tokio::net::TcpStream;
use tokio::sync::{oneshot, watch};

use crate::records::{assert_stale_writer_fenced, event, fence, replica_1, replica_2, s1};

const TTL: Duration = Duration::from_secs(10);

fn bytes(payload: &str) -> Vec<u8> {
    payload.as_bytes().to_vec()
}

/// Bytes `record` takes in its ledger file: one frame.
fn frame_len(record: &Record) -> usize {
    FRAME_HEADER_BYTES + wire::record_to_wire(record).encoded_len()
}

// --- The ledger host ----------------------------------------------------------------------

/// A `MemStorage` whose next sync, once armed, never returns: the append's bytes have reached
/// the disk's unsynced tail and the service is stuck before acknowledging — the moment a power
/// loss hits.
#[derive(Debug)]
struct HoldableDisk {
    disk: MemStorage,
    hold: Mutex<Option<oneshot::Sender<()>>>,
}

#[async_trait]
impl Storage for HoldableDisk {
    async fn list(&self) -> Result<Vec<String>, StorageError> {
        self.disk.list().await
    }

    async fn read(&self, file: &str) -> Result<Vec<u8>, StorageError> {
        self.disk.read(file).await
    }

    async fn append(&self, file: &str, bytes: &[u8]) -> Result<(), StorageError> {
        self.disk.append(file, bytes).await
    }

    async fn sync(&self, file: &str) -> Result<(), StorageError> {
        let held = self.hold.lock().unwrap().take();
        if let Some(reached) = held {
            let _ = reached.send(());
            std::future::pending::<()>().await;
        }
        self.disk.sync(file).await
    }

    async fn truncate(&self, file: &str, len: u64) -> Result<(), StorageError> {
        self.disk.truncate(file, len).await
    }

    async fn replace(&self, file: &str, bytes: &[u8]) -> Result<(), StorageError> {
        self.disk.replace(file, bytes).await
    }
}

/// One incarnation of the ledger service, on a runtime of its own: shutting that runtime down
/// ends every task and closes every socket of the service at once, as `kill -9` would.
struct Incarnation {
    runtime: Option<tokio::runtime::Runtime>,
    disk: Arc<HoldableDisk>,
}

impl Drop for Incarnation {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// What a power loss leaves of each file's unsynced tail.
#[derive(Clone, Copy, Debug)]
enum PowerLoss {
    /// [`MemStorage::crash`]: nothing.
    Clean,
    /// [`MemStorage::crash_tearing`]: its first `keep` bytes.
    Tearing { keep: usize },
}

/// The ledger service's host: a disk that outlives the service, the service, and a stable
/// name clients dial (whatever port the current incarnation listens on, as a DNS name would
/// follow it).
struct LedgerHost {
    disk: MemStorage,
    addr: Arc<Mutex<SocketAddr>>,
    /// Client connections to the host still open on the client side.
    open: Arc<watch::Sender<usize>>,
    service: Option<Incarnation>,
}

impl LedgerHost {
    /// A host with an empty disk and its service running.
    async fn start() -> Self {
        let mut host = LedgerHost {
            disk: MemStorage::new(),
            addr: Arc::new(Mutex::new(SocketAddr::from(([127, 0, 0, 1], 0)))),
            open: Arc::new(watch::channel(0).0),
            service: None,
        };
        host.boot().await;
        host
    }

    /// Recovers the ledger from the disk and serves it on a new port.
    async fn boot(&mut self) {
        let disk = Arc::new(HoldableDisk {
            disk: self.disk.clone(),
            hold: Mutex::new(None),
        });
        let ledger = DurableLedger::open(disk.clone()).await.unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (bound, listening) = oneshot::channel();
        runtime.spawn(async move {
            let (addr, incoming) = tcp_incoming("127.0.0.1:0").await.unwrap();
            bound.send(addr).unwrap();
            let server = LedgerServer::new(Arc::new(ledger));
            server
                .serve(incoming, std::future::pending())
                .await
                .unwrap();
        });
        *self.addr.lock().unwrap() = listening.await.unwrap();
        self.service = Some(Incarnation {
            runtime: Some(runtime),
            disk,
        });
    }

    /// Arms the service's next sync to hang; completes once an append's bytes have reached the
    /// disk and their sync is hanging.
    fn hold_next_sync(&self) -> oneshot::Receiver<()> {
        let (reached, held) = oneshot::channel();
        let service = self.service.as_ref().expect("the service is running");
        *service.disk.hold.lock().unwrap() = Some(reached);
        held
    }

    /// Bytes in the ledger file of `s1`, synced or not.
    async fn file_len(&self) -> usize {
        let file = safe_name(s1().as_str(), LEDGER_SUFFIX);
        self.disk.read(&file).await.unwrap().len()
    }

    /// The host loses power: the service dies with every connection it had, and the disk keeps
    /// what `loss` leaves. Returns once every client has seen its connection close, so the
    /// next call of each client starts on a fresh connection.
    async fn power_loss(&mut self, loss: PowerLoss) {
        drop(self.service.take());
        match loss {
            PowerLoss::Clean => self.disk.crash(),
            PowerLoss::Tearing { keep } => self.disk.crash_tearing(keep),
        }
        let mut open = self.open.subscribe();
        open.wait_for(|&open| open == 0).await.unwrap();
    }

    /// Power is back: a new incarnation recovers the disk and serves.
    async fn restart(&mut self) {
        assert!(self.service.is_none(), "restart after a power loss");
        self.boot().await;
    }

    /// A new client (another process) of the ledger service, dialing the host's name.
    fn client(&self) -> RemoteLedger {
        let addr = self.addr.clone();
        let open = self.open.clone();
        let dialer: Dialer = Arc::new(move |_name: String| -> BoxFuture<io::Result<Conn>> {
            let addr = *addr.lock().unwrap();
            let open = open.clone();
            Box::pin(async move {
                let stream = TcpStream::connect(addr).await?;
                stream.set_nodelay(true)?;
                Ok(Conn::new(stream).holding(OpenCount::new(open)))
            })
        });
        let clock = Arc::new(RealClock::new());
        RemoteChannel::new("ledger.test:7000", dialer, clock, &ClientConfig::default())
            .map(RemoteLedger::new)
            .unwrap()
    }

    /// Every record of `s1`, as a fresh client reads it from the service.
    async fn records(&self) -> Vec<Record> {
        let entries = self.client().read(&s1(), 1).await.unwrap();
        entries.into_iter().map(|entry| entry.record).collect()
    }
}

impl Drop for LedgerHost {
    fn drop(&mut self) {
        drop(self.service.take());
    }
}

/// One of the host's open connections, counted until the client drops the connection that
/// holds it.
struct OpenCount(Arc<watch::Sender<usize>>);

impl OpenCount {
    fn new(open: Arc<watch::Sender<usize>>) -> Self {
        open.send_modify(|open| *open += 1);
        OpenCount(open)
    }
}

impl Drop for OpenCount {
    fn drop(&mut self) {
        self.0.send_modify(|open| *open -= 1);
    }
}

// --- The world ----------------------------------------------------------------------------

/// One lease authority on a manual clock and one ledger host.
struct World {
    clock: ManualClock,
    authority: Arc<MemLease>,
    host: LedgerHost,
}

impl World {
    async fn start() -> Self {
        let clock = ManualClock::new();
        let authority = Arc::new(MemLease::new(Arc::new(clock.clone()), TTL));
        World {
            clock,
            authority,
            host: LedgerHost::start().await,
        }
    }

    /// A store for `owner`, with its own ledger client, judging validity on `clock`.
    fn store(&self, owner: Owner, clock: &ManualClock) -> Store {
        let ledger = Arc::new(self.host.client());
        Store::new(
            owner,
            self.authority.clone(),
            ledger,
            Arc::new(clock.clone()),
        )
    }
}

/// Acquires `s1` through `store` and opens its journal.
async fn open(store: &Store) -> (JournalLease, Journal) {
    let lease = store.acquire_lease(&s1()).await.unwrap();
    let journal = store.open_journal(&lease).await.unwrap();
    (lease, journal)
}

/// replica-1's journal with its fence and two acknowledged events (tip 3), and a third event,
/// `a3`, in flight when the host loses power as `loss` says: its frame has reached the disk
/// but not been synced. Returns the store, its lease and its journal, with `a3` answered.
async fn power_loss_during_an_append(
    world: &mut World,
    loss: PowerLoss,
) -> (Store, JournalLease, Arc<Journal>) {
    let a = world.store(replica_1(), &world.clock);
    let (lease, journal) = open(&a).await;
    assert_eq!(journal.append(bytes("a1")).await, Ok(2));
    assert_eq!(journal.append(bytes("a2")).await, Ok(3));
    let journal = Arc::new(journal);

    let acked_len = world.host.file_len().await;
    let sync_reached = world.host.hold_next_sync();
    let in_flight = tokio::spawn({
        let journal = journal.clone();
        async move { journal.append(bytes("a3")).await }
    });
    sync_reached.await.unwrap();
    assert_eq!(
        world.host.file_len().await - acked_len,
        frame_len(&event(replica_1(), 1, 3, "a3")),
        "a3's frame is on the disk, unsynced"
    );

    world.host.power_loss(loss).await;
    let cut_off = in_flight.await.unwrap();
    assert!(
        matches!(cut_off, Err(JournalError::Ambiguous { expected: 3, .. })),
        "an append cut off by the crash has an unknown outcome: {cut_off:?}"
    );
    assert!(journal.is_poisoned().await);
    assert_eq!(
        journal.tip().await,
        3,
        "the tracked tip only moves on success"
    );
    world.host.restart().await;
    (a, lease, journal)
}

/// replica-1's fence and its first two events, `a1` and `a2` (what
/// [`power_loss_during_an_append`] has acknowledged before the loss).
fn fence_a1_a2() -> [Record; 3] {
    [
        fence(1, replica_1(), 1),
        event(replica_1(), 1, 1, "a1"),
        event(replica_1(), 1, 2, "a2"),
    ]
}

/// A fresh world after [`power_loss_during_an_append`] with a torn write that keeps `keep`
/// bytes of the in-flight frame.
async fn torn_during_an_append(keep: usize) -> World {
    let mut world = World::start().await;
    power_loss_during_an_append(&mut world, PowerLoss::Tearing { keep }).await;
    world
}

/// replica-2 takes `s1` over once replica-1's lease expired (a TTL later) and opens its
/// journal.
async fn replica_2_takes_over(world: &World) -> (JournalLease, Journal) {
    world.clock.advance(TTL);
    let b = world.store(replica_2(), &world.clock);
    open(&b).await
}

// --- Crashes ------------------------------------------------------------------------------

/// The crash loses the unsynced append; every acknowledged one is there after the restart, and
/// the writer recovers as docs/contracts.md#journal says: drop the poisoned journal, release,
/// acquire anew, open again — its new fence lands right after the acknowledged records.
#[tokio::test]
async fn acknowledged_appends_survive_a_power_loss_that_drops_the_append_in_flight() {
    let mut world = World::start().await;
    let (a, lease, journal) = power_loss_during_an_append(&mut world, PowerLoss::Clean).await;
    let acknowledged = fence_a1_a2();
    assert_eq!(world.host.records().await, acknowledged);

    drop(journal);
    lease.release().await.unwrap();
    let (lease, journal) = open(&a).await;
    assert_eq!(lease.epoch(), 2);
    assert_eq!(journal.tip().await, 4, "the new fence follows a2");
    assert_eq!(journal.append(bytes("a3")).await, Ok(5));
    assert_eq!(
        world.host.records().await,
        [
            acknowledged.as_slice(),
            &[fence(2, replica_1(), 2), event(replica_1(), 2, 1, "a3")],
        ]
        .concat()
    );
}

/// Whatever part of the in-flight frame the torn write leaves — a piece of its length field,
/// its whole header, part of its payload — recovery cuts it, and every acknowledged record is
/// there; the next holder's fence lands right after them.
#[tokio::test]
async fn a_torn_append_is_cut_at_recovery_and_every_acknowledged_append_survives() {
    let a3_len = frame_len(&event(replica_1(), 1, 3, "a3"));
    for keep in [1, 4, FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + 1, a3_len - 1] {
        let world = torn_during_an_append(keep).await;
        let acknowledged = fence_a1_a2();
        assert_eq!(world.host.records().await, acknowledged, "keep {keep}");

        let (b_lease, b_journal) = replica_2_takes_over(&world).await;
        assert_eq!(b_lease.epoch(), 2);
        assert_eq!(b_journal.append(bytes("b1")).await, Ok(5), "keep {keep}");
        assert_eq!(
            world.host.records().await,
            [
                acknowledged.as_slice(),
                &[fence(2, replica_2(), 1), event(replica_2(), 1, 1, "b1")],
            ]
            .concat(),
            "keep {keep}"
        );
    }
}

/// A frame that reached the disk whole survives recovery although it was never acknowledged:
/// its writer saw an ambiguous outcome, which allows exactly that, and the next holder's fence
/// lands after it.
#[tokio::test]
async fn an_unacknowledged_append_that_reached_the_disk_whole_survives_as_an_ambiguous_one_may() {
    let a3_len = frame_len(&event(replica_1(), 1, 3, "a3"));
    for keep in [a3_len, usize::MAX] {
        let world = torn_during_an_append(keep).await;
        let recovered = [fence_a1_a2().as_slice(), &[event(replica_1(), 1, 3, "a3")]].concat();
        assert_eq!(world.host.records().await, recovered, "keep {keep}");

        let (_b_lease, b_journal) = replica_2_takes_over(&world).await;
        assert_eq!(b_journal.tip().await, 5, "keep {keep}");
        assert_eq!(b_journal.append(bytes("b1")).await, Ok(6), "keep {keep}");
    }
}

/// As in the core stale-writer test, A's host is suspended for a whole TTL while B takes over
/// and fences; then the ledger host loses power and restarts before A wakes. B's fence was
/// acknowledged, so it survived, and A — with its journal, its tracked tip and its client from
/// before the restart — is fenced on its next append. B carries on at the next position.
#[tokio::test]
async fn a_stale_writer_is_still_fenced_after_the_ledger_service_restarts() {
    let mut world = World::start().await;
    let a_clock = ManualClock::new();
    let a = world.store(replica_1(), &a_clock);
    let (a_lease, a_journal) = open(&a).await;
    assert_eq!(a_journal.append(bytes("a1")).await, Ok(2));

    world.clock.advance(TTL); // A is suspended: a_clock does not move.
    let b = world.store(replica_2(), &world.clock);
    let (b_lease, b_journal) = open(&b).await;
    assert_eq!(b_lease.epoch(), 2);
    assert_eq!(b_journal.append(bytes("b1")).await, Ok(4));

    world.host.power_loss(PowerLoss::Clean).await;
    world.host.restart().await;

    assert!(a_lease.is_valid(), "A's local check still passes");
    assert_stale_writer_fenced(&a_journal, world.host.records(), &b_journal).await;
}

// --- Events too large for the wire --------------------------------------------------------

/// Appends an event of `payload_len` bytes through a fresh journal and asserts it is refused
/// as invalid without poisoning the journal or writing anything; the journal's next append
/// lands where that one would have.
async fn assert_oversized_event_is_refused_as_invalid(payload_len: usize) {
    let world = World::start().await;
    let a = world.store(replica_1(), &world.clock);
    let (_lease, journal) = open(&a).await;
    assert_eq!(journal.append(bytes("a1")).await, Ok(2));

    let refused = journal.append(vec![7; payload_len]).await;
    assert!(
        matches!(
            refused,
            Err(JournalError::Ledger(LedgerError::Invalid { .. }))
        ),
        "a {payload_len}-byte event: {refused:?}"
    );
    assert!(!journal.is_poisoned().await, "nothing was written");
    assert_eq!(journal.tip().await, 2);
    assert_eq!(journal.append(bytes("a2")).await, Ok(3));
    assert_eq!(world.host.records().await, fence_a1_a2());
}

/// Over `PAYLOAD_MAX_BYTES` but within the message limit: the service refuses it with
/// INVALID_ARGUMENT, which the client reports as [`LedgerError::Invalid`].
#[tokio::test]
async fn an_event_over_the_payload_limit_is_refused_as_invalid_and_leaves_the_journal_usable() {
    assert_oversized_event_is_refused_as_invalid(PAYLOAD_MAX_BYTES + 1).await;
}

/// Over the 2 MiB message limit as well: the service refuses the request before parsing it,
/// so nothing was written and the outcome is known — `LedgerError::Invalid` ("an oversized
/// payload … was refused; nothing was written"), not an unknown outcome that would poison the
/// journal.
#[tokio::test]
async fn an_event_over_the_message_limit_is_refused_as_invalid_and_leaves_the_journal_usable() {
    assert_oversized_event_is_refused_as_invalid(MESSAGE_MAX_BYTES + 1).await;
}
