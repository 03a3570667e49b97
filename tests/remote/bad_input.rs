//! Bad input to the lease and ledger services (issue 3, "Bad input"): malformed and oversized
//! requests, empty fields and unknown sessions get the documented status code, and never crash
//! a service or change its state.
//!
//! The services are the ones `leasesim serve` runs — `DurableLease` and `DurableLedger` behind
//! `LeaseServer` and `LedgerServer` — here on `MemStorage` and loopback TCP, called with the raw
//! generated clients so that any request can be sent, however wrong. Every test ends with
//! [`Services::assert_unharmed`]: the state set up at the start is exactly as it was, on the
//! service and on its disk, and valid calls still get the answers they would have got.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use leasesim::clock::ManualClock;
use leasesim::journal::{DurableLedger, Ledger};
use leasesim::lease::{DurableLease, DurableLeaseConfig, SessionId};
use leasesim::remote::MESSAGE_MAX_BYTES;
use leasesim::remote::proto::lease_service_client::LeaseServiceClient;
use leasesim::remote::proto::ledger_service_client::LedgerServiceClient;
use leasesim::remote::proto::{
    self, AcquireRequest, AppendRequest, Entry, LeaseRequest, ReadReply, ReadRequest, TipRequest,
    record,
};
use leasesim::remote::status::{ACTUAL_TIP, HOLDER_TOKEN};
use leasesim::remote::wire::{self, PAYLOAD_MAX_BYTES, REPLICA_ID_MAX_BYTES};
use leasesim::storage::MemStorage;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::transport::Channel;
use tonic::{Code, Response, Status};

use crate::support::{Served, lease_over_grpc, ledger_over_grpc};

const TTL: Duration = Duration::from_secs(10);

/// The session the set-up state lives in.
const S1: &str = "s1";
/// A session nobody has used.
const GHOST: &str = "ghost";

// --- Requests -----------------------------------------------------------------------------

fn owner(replica: &str) -> Option<proto::Owner> {
    Some(proto::Owner {
        replica: replica.into(),
        incarnation: 0,
    })
}

fn acquire(session: &str, owner: Option<proto::Owner>) -> AcquireRequest {
    AcquireRequest {
        session: session.into(),
        owner,
    }
}

fn with_lease(lease: proto::Lease) -> LeaseRequest {
    LeaseRequest { lease: Some(lease) }
}

fn writer(replica: &str) -> Option<proto::WriterId> {
    Some(proto::WriterId {
        owner: owner(replica),
        journal: 1,
    })
}

fn fence(epoch: u64, replica: &str) -> proto::Record {
    proto::Record {
        kind: Some(record::Kind::Fence(proto::Fence {
            epoch,
            owner: owner(replica),
            writer_id: writer(replica),
        })),
    }
}

fn event(replica: &str, seq_in_writer: u64, payload: Vec<u8>) -> proto::Record {
    proto::Record {
        kind: Some(record::Kind::Event(proto::Event {
            writer_id: writer(replica),
            seq_in_writer,
            payload,
        })),
    }
}

fn append(session: &str, expected: u64, record: Option<proto::Record>) -> AppendRequest {
    AppendRequest {
        session: session.into(),
        expected,
        record,
    }
}

fn tip(session: &str) -> TipRequest {
    TipRequest {
        session: session.into(),
    }
}

fn read(session: &str, from: u64) -> ReadRequest {
    ReadRequest {
        session: session.into(),
        from,
    }
}

/// The request `make(n)` for the `n` that makes it encode to exactly `len` bytes.
fn encoded_to<M: Message>(len: usize, make: impl Fn(usize) -> M) -> M {
    (len.saturating_sub(64)..=len)
        .rev()
        .map(&make)
        .find(|message| message.encoded_len() == len)
        .unwrap_or_else(|| panic!("no request of exactly {len} bytes"))
}

// --- Answers ------------------------------------------------------------------------------

/// The status of a call that must fail with `code`.
#[track_caller]
fn refused<T: Debug>(answer: Result<Response<T>, Status>, code: Code) -> Status {
    refused_for("the call", answer, code)
}

/// [`refused`], naming `what` was sent when it is not.
#[track_caller]
fn refused_for<T: Debug>(what: &str, answer: Result<Response<T>, Status>, code: Code) -> Status {
    match answer {
        Ok(reply) => panic!("{what}: expected {code:?}, got OK: {:?}", reply.get_ref()),
        Err(status) => {
            assert_eq!(status.code(), code, "{what}: {status:?}");
            status
        }
    }
}

/// The reply of a call that must succeed.
#[track_caller]
fn ok<T>(answer: Result<Response<T>, Status>) -> T {
    match answer {
        Ok(reply) => reply.into_inner(),
        Err(status) => panic!("expected OK, got {status:?}"),
    }
}

/// The value of the numeric metadata `key` on `status`, if any.
fn metadata<'a>(status: &'a Status, key: &str) -> Option<&'a str> {
    status.metadata().get(key).map(|v| v.to_str().unwrap())
}

// --- The services -------------------------------------------------------------------------

/// A lease service and a ledger service as `leasesim serve` runs them, on loopback, with raw
/// clients and known state: replica-1 holds `s1` with token 1, and the ledger of `s1` holds
/// replica-1's fence and one event.
struct Services {
    leases: LeaseServiceClient<Channel>,
    ledger: LedgerServiceClient<Channel>,
    /// replica-1's lease on `s1`, as granted.
    held: proto::Lease,
    /// The ledger behind the service, to compare with what the service answers.
    durable_ledger: Arc<DurableLedger>,
    ledger_disk: MemStorage,
    lease_addr: String,
    ledger_addr: String,
    _served: (Served, Served),
}

/// The records of `s1` after set-up.
fn s1_entries() -> Vec<Entry> {
    vec![
        Entry {
            seq: 1,
            record: Some(fence(1, "replica-1")),
        },
        Entry {
            seq: 2,
            record: Some(event("replica-1", 1, b"e1".to_vec())),
        },
    ]
}

impl Services {
    async fn start() -> Self {
        let clock = ManualClock::new();
        let lease_disk = MemStorage::new();
        let authority = DurableLease::open(
            Arc::new(lease_disk),
            Arc::new(clock.clone()),
            DurableLeaseConfig::with_ttl(TTL),
        )
        .await
        .unwrap();
        let (_, lease_served) = lease_over_grpc(Arc::new(authority), Arc::new(clock.clone())).await;
        let ledger_disk = MemStorage::new();
        let durable_ledger = Arc::new(
            DurableLedger::open(Arc::new(ledger_disk.clone()))
                .await
                .unwrap(),
        );
        let (_, ledger_served) = ledger_over_grpc(durable_ledger.clone(), Arc::new(clock)).await;

        let lease_addr = lease_served.addr.clone();
        let ledger_addr = ledger_served.addr.clone();
        let mut leases = LeaseServiceClient::connect(format!("http://{lease_addr}"))
            .await
            .unwrap();
        let mut ledger = LedgerServiceClient::connect(format!("http://{ledger_addr}"))
            .await
            .unwrap();

        let held = ok(leases.acquire(acquire(S1, owner("replica-1"))).await)
            .lease
            .unwrap();
        assert_eq!(held.token, 1);
        let [first, second] = s1_entries().try_into().unwrap();
        assert_eq!(ok(ledger.append(append(S1, 0, first.record)).await).tip, 1);
        assert_eq!(ok(ledger.append(append(S1, 1, second.record)).await).tip, 2);

        Services {
            leases,
            ledger,
            held,
            durable_ledger,
            ledger_disk,
            lease_addr,
            ledger_addr,
            _served: (lease_served, ledger_served),
        }
    }

    /// The lease with one field changed.
    fn held_with(&self, change: impl FnOnce(&mut proto::Lease)) -> proto::Lease {
        let mut lease = self.held.clone();
        change(&mut lease);
        lease
    }

    /// Everything every test ends with: the set-up state is intact — on the service, behind
    /// it and on its disk — the session `ghost` has neither a record nor a token, and valid
    /// calls get exactly the answers they would have got without the bad requests.
    async fn assert_unharmed(mut self) {
        // The ledger of `s1`, as the service answers, as the ledger holds it, and as a
        // restarted service would recover it from the disk.
        let expected = ReadReply {
            entries: s1_entries(),
            more: false,
        };
        assert_eq!(ok(self.ledger.read(read(S1, 1)).await), expected);
        assert_eq!(ok(self.ledger.tip(tip(S1)).await).tip, 2);
        let s1 = SessionId::new(S1).unwrap();
        let behind = self.durable_ledger.read(&s1, 1).await.unwrap();
        let recovered = DurableLedger::open(Arc::new(self.ledger_disk.clone()))
            .await
            .unwrap()
            .read(&s1, 1)
            .await
            .unwrap();
        for entries in [behind, recovered] {
            let entries: Vec<_> = entries.iter().map(wire::entry_to_wire).collect();
            assert_eq!(entries, expected.entries);
        }
        assert_eq!(ok(self.ledger.tip(tip(GHOST)).await).tip, 0);

        // replica-1 still holds `s1` with token 1, and may renew it.
        let held = refused(
            self.leases.acquire(acquire(S1, owner("replica-2"))).await,
            Code::FailedPrecondition,
        );
        assert_eq!(metadata(&held, HOLDER_TOKEN), Some("1"));
        let renewed = ok(self.leases.renew(with_lease(self.held.clone())).await);
        assert_eq!(renewed.lease.unwrap().token, 1);

        // Valid calls still succeed: the next append lands at 3, and a session never granted
        // gets token 1 (no rejected call used a token up).
        let next = append(S1, 2, Some(event("replica-1", 2, b"e2".to_vec())));
        assert_eq!(ok(self.ledger.append(next).await).tip, 3);
        let ghost = ok(self
            .leases
            .acquire(acquire(GHOST, owner("replica-2")))
            .await);
        assert_eq!(ghost.lease.unwrap().token, 1);
    }
}

// --- Malformed fields: INVALID_ARGUMENT ---------------------------------------------------

/// Renews, then releases, `lease`: both must be refused with INVALID_ARGUMENT (`at` names
/// each call in a failure). The renew's status.
async fn renew_and_release_refused(
    leases: &mut LeaseServiceClient<Channel>,
    lease: proto::Lease,
    at: impl Fn(&str) -> String,
) -> Status {
    let renewed = leases.renew(with_lease(lease.clone())).await;
    let status = refused_for(&at("renew"), renewed, Code::InvalidArgument);
    let released = leases.release(with_lease(lease)).await;
    refused_for(&at("release"), released, Code::InvalidArgument);
    status
}

/// Sends `session` to every call that carries a session id, and asserts INVALID_ARGUMENT
/// for each.
async fn assert_invalid_session_everywhere(services: &mut Services, session: &str) {
    let bad_lease = services.held_with(|lease| lease.session = session.into());
    let (leases, ledger) = (&mut services.leases, &mut services.ledger);
    let code = Code::InvalidArgument;
    let at = |call: &str| format!("{call} of session {session:?}");
    let record = Some(event("replica-1", 2, b"e2".to_vec()));
    let acquired = leases.acquire(acquire(session, owner("replica-2"))).await;
    refused_for(&at("acquire"), acquired, code);
    renew_and_release_refused(leases, bad_lease, &at).await;
    refused_for(&at("tip"), ledger.tip(tip(session)).await, code);
    let appended = ledger.append(append(session, 0, record)).await;
    refused_for(&at("append"), appended, code);
    refused_for(&at("read"), ledger.read(read(session, 1)).await, code);
}

#[tokio::test]
async fn an_empty_session_id_is_invalid_argument_on_every_call() {
    let mut services = Services::start().await;
    assert_invalid_session_everywhere(&mut services, "").await;
    services.assert_unharmed().await;
}

#[tokio::test]
async fn a_session_id_over_256_bytes_is_invalid_argument_on_every_call() {
    let mut services = Services::start().await;
    assert_invalid_session_everywhere(&mut services, &"s".repeat(257)).await;
    // 129 two-byte characters: the limit counts bytes, not characters.
    assert_invalid_session_everywhere(&mut services, &"é".repeat(129)).await;
    services.assert_unharmed().await;
}

#[tokio::test]
async fn a_session_id_of_exactly_256_bytes_is_accepted_by_every_call() {
    let mut services = Services::start().await;
    let session = "s".repeat(256);
    let granted = ok(services
        .leases
        .acquire(acquire(&session, owner("replica-2")))
        .await);
    assert_eq!(granted.lease.as_ref().unwrap().token, 1);
    ok(services
        .leases
        .release(with_lease(granted.lease.unwrap()))
        .await);
    assert_eq!(ok(services.ledger.tip(tip(&session)).await).tip, 0);
    let first = append(&session, 0, Some(event("replica-2", 1, b"x".to_vec())));
    assert_eq!(ok(services.ledger.append(first).await).tip, 1);
    assert_eq!(
        ok(services.ledger.read(read(&session, 1)).await)
            .entries
            .len(),
        1
    );
    services.assert_unharmed().await;
}

#[tokio::test]
async fn a_session_id_with_a_control_character_is_invalid_argument_on_every_call() {
    let mut services = Services::start().await;
    for control in ['\0', '\t', '\n', '\r', '\u{1b}', '\u{7f}', '\u{85}'] {
        assert_invalid_session_everywhere(&mut services, &format!("s{control}1")).await;
    }
    services.assert_unharmed().await;
}

#[tokio::test]
async fn an_acquire_or_a_lease_without_an_owner_is_invalid_argument() {
    let mut services = Services::start().await;
    let status = refused(
        services.leases.acquire(acquire(GHOST, None)).await,
        Code::InvalidArgument,
    );
    assert!(status.message().contains("owner"), "{status:?}");
    let ownerless = services.held_with(|lease| lease.owner = None);
    let at = |call: &str| format!("{call} of a lease without an owner");
    renew_and_release_refused(&mut services.leases, ownerless, at).await;
    services.assert_unharmed().await;
}

#[tokio::test]
async fn an_empty_or_oversized_replica_id_is_invalid_argument_wherever_an_owner_appears() {
    let mut services = Services::start().await;
    let too_long = "r".repeat(REPLICA_ID_MAX_BYTES + 1);
    for replica in ["", too_long.as_str()] {
        let code = Code::InvalidArgument;
        let at = |call: &str| format!("{call} with replica id of {} bytes", replica.len());
        let lease = services.held_with(|lease| lease.owner = owner(replica));
        let leases = &mut services.leases;
        let acquired = leases.acquire(acquire(GHOST, owner(replica))).await;
        refused_for(&at("acquire"), acquired, code);
        renew_and_release_refused(leases, lease, &at).await;
        // In a record: a fence's owner, and the owner inside a writer id.
        let mut bad_fence = fence(2, "replica-1");
        if let Some(record::Kind::Fence(fence)) = &mut bad_fence.kind {
            fence.owner = owner(replica);
        }
        let appended = services.ledger.append(append(S1, 2, Some(bad_fence))).await;
        refused_for(&at("append of a fence"), appended, code);
        let bad_event = event(replica, 2, b"e2".to_vec());
        let appended = services.ledger.append(append(S1, 2, Some(bad_event))).await;
        refused_for(&at("append of an event"), appended, code);
    }
    services.assert_unharmed().await;
}

#[tokio::test]
async fn renew_and_release_without_a_lease_are_invalid_argument() {
    let mut services = Services::start().await;
    let empty = LeaseRequest { lease: None };
    let status = refused(
        services.leases.renew(empty.clone()).await,
        Code::InvalidArgument,
    );
    assert!(status.message().contains("lease"), "{status:?}");
    refused(services.leases.release(empty).await, Code::InvalidArgument);
    services.assert_unharmed().await;
}

/// Zero TTL in the lease a client sends back: refused before the authority sees it, so the
/// release in particular releases nothing.
#[tokio::test]
async fn a_lease_with_a_zero_ttl_is_invalid_argument_and_releases_nothing() {
    let mut services = Services::start().await;
    let zero_ttl = services.held_with(|lease| lease.ttl_ns = 0);
    let at = |call: &str| format!("{call} of a lease with a zero TTL");
    let status = renew_and_release_refused(&mut services.leases, zero_ttl, at).await;
    assert!(status.message().contains("ttl"), "{status:?}");
    services.assert_unharmed().await;
}

#[tokio::test]
async fn an_append_without_a_record_or_with_an_incomplete_one_is_invalid_argument() {
    let mut services = Services::start().await;
    let no_kind = proto::Record { kind: None };
    let event_without_writer = proto::Record {
        kind: Some(record::Kind::Event(proto::Event {
            writer_id: None,
            seq_in_writer: 2,
            payload: b"e2".to_vec(),
        })),
    };
    let fence_without_owner = proto::Record {
        kind: Some(record::Kind::Fence(proto::Fence {
            epoch: 2,
            owner: None,
            writer_id: writer("replica-1"),
        })),
    };
    let fence_without_writer = proto::Record {
        kind: Some(record::Kind::Fence(proto::Fence {
            epoch: 2,
            owner: owner("replica-1"),
            writer_id: None,
        })),
    };
    let cases = [
        ("no record", None, "record"),
        ("a record with no kind", Some(no_kind), "record"),
        (
            "an event without a writer id",
            Some(event_without_writer),
            "writer_id",
        ),
        (
            "a fence without an owner",
            Some(fence_without_owner),
            "owner",
        ),
        (
            "a fence without a writer id",
            Some(fence_without_writer),
            "writer_id",
        ),
    ];
    for (case, record, field) in cases {
        // At the right tip, and at a fresh session's: neither writes anything.
        for (session, expected) in [(S1, 2), (GHOST, 0)] {
            let answer = services
                .ledger
                .append(append(session, expected, record.clone()))
                .await;
            let status = refused_for(case, answer, Code::InvalidArgument);
            assert!(status.message().contains(field), "{case}: {status:?}");
        }
    }
    services.assert_unharmed().await;
}

#[tokio::test]
async fn an_event_payload_over_1_mib_is_invalid_argument() {
    let mut services = Services::start().await;
    let payload = vec![7; PAYLOAD_MAX_BYTES + 1];
    let request = append(S1, 2, Some(event("replica-1", 2, payload)));
    assert!(
        request.encoded_len() < MESSAGE_MAX_BYTES,
        "under the message limit"
    );
    let status = refused(services.ledger.append(request).await, Code::InvalidArgument);
    assert!(status.message().contains("payload"), "{status:?}");
    services.assert_unharmed().await;
}

#[tokio::test]
async fn an_event_payload_of_exactly_1_mib_is_appended_and_read_back() {
    let mut services = Services::start().await;
    let big = event("replica-2", 1, vec![7; PAYLOAD_MAX_BYTES]);
    let request = append("big", 0, Some(big.clone()));
    assert_eq!(ok(services.ledger.append(request).await).tip, 1);
    let reply = ok(services.ledger.read(read("big", 1)).await);
    let whole = Entry {
        seq: 1,
        record: Some(big),
    };
    assert_eq!(
        reply,
        ReadReply {
            entries: vec![whole],
            more: false
        }
    );
    services.assert_unharmed().await;
}

/// The 2 MiB limit is checked on the message's length before it is parsed: a request of
/// exactly `MESSAGE_MAX_BYTES` is parsed (and then refused for its payload), one byte more
/// is OUT_OF_RANGE (tonic's code for its decoding limit), on either service.
#[tokio::test]
async fn a_request_over_the_2_mib_message_limit_is_out_of_range() {
    let mut services = Services::start().await;
    let at_limit = encoded_to(MESSAGE_MAX_BYTES, |n| {
        append(S1, 2, Some(event("replica-1", 2, vec![7; n])))
    });
    refused(
        services.ledger.append(at_limit).await,
        Code::InvalidArgument,
    );
    let over = encoded_to(MESSAGE_MAX_BYTES + 1, |n| {
        append(S1, 2, Some(event("replica-1", 2, vec![7; n])))
    });
    refused(services.ledger.append(over).await, Code::OutOfRange);
    let huge_session = encoded_to(MESSAGE_MAX_BYTES + 1, |n| {
        acquire(&"s".repeat(n), owner("replica-2"))
    });
    refused(
        services.leases.acquire(huge_session).await,
        Code::OutOfRange,
    );
    services.assert_unharmed().await;
}

// --- Unknown sessions and stale state: the contract's own answers -------------------------

/// Renew never recreates a record: an unknown session is Held, with no holder to name.
#[tokio::test]
async fn renew_of_an_unknown_session_is_failed_precondition_held_with_no_holder() {
    let mut services = Services::start().await;
    let unknown = services.held_with(|lease| lease.session = GHOST.into());
    let status = refused(
        services.leases.renew(with_lease(unknown)).await,
        Code::FailedPrecondition,
    );
    assert_eq!(metadata(&status, HOLDER_TOKEN), None);
    services.assert_unharmed().await;
}

#[tokio::test]
async fn renew_with_a_token_that_is_not_the_holders_is_held_naming_the_holders_token() {
    let mut services = Services::start().await;
    for token in [0, 2, u64::MAX] {
        let stale = services.held_with(|lease| lease.token = token);
        let status = refused(
            services.leases.renew(with_lease(stale)).await,
            Code::FailedPrecondition,
        );
        assert_eq!(metadata(&status, HOLDER_TOKEN), Some("1"), "token {token}");
    }
    services.assert_unharmed().await;
}

#[tokio::test]
async fn release_of_an_unknown_session_is_ok_and_changes_nothing() {
    let mut services = Services::start().await;
    let unknown = services.held_with(|lease| lease.session = GHOST.into());
    ok(services.leases.release(with_lease(unknown.clone())).await);
    ok(services.leases.release(with_lease(unknown)).await);
    // A release by another owner, or with another token, of the held session: also a no-op.
    let not_mine = services.held_with(|lease| lease.owner = owner("replica-2"));
    ok(services.leases.release(with_lease(not_mine)).await);
    let other_token = services.held_with(|lease| lease.token = 2);
    ok(services.leases.release(with_lease(other_token)).await);
    services.assert_unharmed().await;
}

/// Asserts that every read of `session` from each of `froms` answers an empty reply.
async fn assert_reads_empty<const N: usize>(
    services: &mut Services,
    session: &str,
    froms: [u64; N],
) {
    for from in froms {
        assert_eq!(
            ok(services.ledger.read(read(session, from)).await),
            ReadReply::default(),
            "from {from}"
        );
    }
}

#[tokio::test]
async fn tip_and_read_of_an_unknown_session_are_zero_and_empty() {
    let mut services = Services::start().await;
    assert_eq!(ok(services.ledger.tip(tip(GHOST)).await).tip, 0);
    assert_reads_empty(&mut services, GHOST, [0, 1, 2, u64::MAX]).await;
    services.assert_unharmed().await;
}

#[tokio::test]
async fn a_read_from_beyond_the_tip_is_empty() {
    let mut services = Services::start().await;
    assert_reads_empty(&mut services, S1, [3, 1_000_000, u64::MAX]).await;
    services.assert_unharmed().await;
}

/// Asserts that an append to `session` expecting each of `tips` is refused as a conflict
/// naming `actual` as the tip.
async fn assert_conflicts<const N: usize>(
    services: &mut Services,
    session: &str,
    tips: [u64; N],
    actual: &str,
) {
    let record = Some(event("replica-2", 1, b"x".to_vec()));
    for expected in tips {
        let request = append(session, expected, record.clone());
        let answer = services.ledger.append(request).await;
        let status = refused(answer, Code::FailedPrecondition);
        assert_eq!(
            metadata(&status, ACTUAL_TIP),
            Some(actual),
            "expected {expected}"
        );
    }
}

#[tokio::test]
async fn an_append_expecting_a_tip_beyond_the_actual_one_is_a_conflict_naming_the_actual_tip() {
    let mut services = Services::start().await;
    assert_conflicts(&mut services, GHOST, [1, 1_000_000, u64::MAX], "0").await;
    assert_conflicts(&mut services, S1, [0, 1, 3, u64::MAX], "2").await;
    services.assert_unharmed().await;
}

// --- Not gRPC at all ----------------------------------------------------------------------

/// Bytes that are not a gRPC conversation: the service drops that connection and goes on
/// serving, on new connections and on the ones it already had.
#[tokio::test]
async fn garbage_bytes_on_a_connection_crash_neither_service() {
    let services = Services::start().await;
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let mut noise = Vec::new();
    let mut x: u32 = 0x1234_5678;
    for _ in 0..4096 {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        noise.push((x >> 24) as u8);
    }
    let garbage: Vec<(&str, Vec<u8>)> = vec![
        ("random bytes", noise.clone()),
        ("HTTP/1.1", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
        ("a torn HTTP/2 preface", PREFACE[..10].to_vec()),
        ("the preface, then random bytes", [PREFACE, &noise].concat()),
        (
            "the preface, then a frame header claiming 16 MiB",
            [PREFACE, &[0xff, 0xff, 0xff, 0x00, 0x00, 0, 0, 0, 0]].concat(),
        ),
        (
            "the preface, an empty SETTINGS, then HEADERS of garbage HPACK",
            [
                PREFACE,
                &[0, 0, 0, 0x04, 0x00, 0, 0, 0, 0],
                &[0, 0, 8, 0x01, 0x04, 0, 0, 0, 1],
                &[0xff; 8],
            ]
            .concat(),
        ),
        ("nothing", Vec::new()),
    ];
    for addr in [&services.lease_addr, &services.ledger_addr] {
        for (case, bytes) in &garbage {
            let mut conn = tokio::net::TcpStream::connect(addr.as_str()).await.unwrap();
            conn.write_all(bytes).await.unwrap();
            conn.shutdown().await.unwrap();
            // The service answers what it likes (a GOAWAY, nothing) and closes the
            // connection: reading ends, with EOF or a reset.
            let mut answer = Vec::new();
            if let Err(error) = conn.read_to_end(&mut answer).await {
                assert_eq!(
                    error.kind(),
                    std::io::ErrorKind::ConnectionReset,
                    "{case}: {error}"
                );
            }
        }
    }
    // New connections are served (the clients below connect afresh) …
    let mut leases = LeaseServiceClient::connect(format!("http://{}", services.lease_addr))
        .await
        .unwrap();
    let fresh = ok(leases.acquire(acquire("fresh", owner("replica-2"))).await);
    assert_eq!(fresh.lease.unwrap().token, 1);
    let mut ledger = LedgerServiceClient::connect(format!("http://{}", services.ledger_addr))
        .await
        .unwrap();
    assert_eq!(ok(ledger.tip(tip(S1)).await).tip, 2);
    // … and so are the connections made before the garbage.
    services.assert_unharmed().await;
}
