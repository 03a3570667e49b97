//! KubeLease against a fake API server on 127.0.0.1 (see [`fake`]), with a manual clock.

mod fake;
mod stale;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease as LeaseObject, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use fake::{FakeApi, Injected};
use leasesim_core::clock::{ManualClock, WallTime};
use leasesim_net::tcp_dialer;

const NS: &str = "leasesim";
const TTL: Duration = Duration::from_secs(10);

/// Every call and its reply, in order.
#[derive(Debug, Default)]
struct Recorded(Mutex<Vec<(String, KubeCall, Option<KubeReply>)>>);

impl KubeCalls for Recorded {
    fn invoke(&self, owner: &Owner, _: &SessionId, call: &KubeCall) -> u64 {
        let mut calls = self.0.lock().unwrap();
        calls.push((owner.to_string(), call.clone(), None));
        calls.len() as u64 - 1
    }

    fn complete(&self, call_id: u64, reply: &KubeReply) {
        self.0.lock().unwrap()[call_id as usize].2 = Some(reply.clone());
    }
}

impl Recorded {
    fn take(&self) -> Vec<(KubeCall, KubeReply)> {
        std::mem::take(&mut *self.0.lock().unwrap())
            .into_iter()
            .map(|(_, call, reply)| (call, reply.expect("every call completed")))
            .collect()
    }
}

fn config(clock: &ManualClock, ttl: Duration) -> KubeLeaseConfig {
    KubeLeaseConfig {
        namespace: NS.to_owned(),
        ttl,
        clock: Arc::new(clock.clone()),
        mutant: None,
        calls: None,
        hooks: HookSlot::default(),
    }
}

struct Candidate {
    lease: KubeLease,
    clock: ManualClock,
    calls: Arc<Recorded>,
}

fn candidate_on(api: &FakeApi, clock: ManualClock, mutant: Option<Mutant>) -> Candidate {
    let calls = Arc::new(Recorded::default());
    let client = client_over(
        tcp_dialer(),
        &api.addr.to_string(),
        NS,
        Duration::from_secs(5),
    );
    let config = KubeLeaseConfig {
        mutant,
        calls: Some(calls.clone()),
        ..config(&clock, TTL)
    };
    let lease = KubeLease::new(client, config).expect("a valid config");
    Candidate {
        lease,
        clock,
        calls,
    }
}

fn candidate(api: &FakeApi) -> Candidate {
    candidate_on(api, ManualClock::new(), None)
}

/// The refusal of a lease held by the owner of `token`.
fn held_by(token: u64) -> LeaseError {
    LeaseError::Held {
        holder_token: Some(token),
    }
}

fn s1() -> SessionId {
    SessionId::new("s1").unwrap()
}

fn owner(n: u64) -> Owner {
    Owner::new(format!("replica-{n}"), 0)
}

fn stored(api: &FakeApi) -> LeaseSpec {
    api.object(NS, &object_name("s1"))
        .expect("the object exists")
        .spec
        .expect("it has a spec")
}

fn object(holder: &str, transitions: i32) -> LeaseObject {
    let annotations = [(SESSION_ANNOTATION.to_owned(), "s1".to_owned())].into();
    LeaseObject {
        metadata: ObjectMeta {
            name: Some(object_name("s1")),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.to_owned()),
            lease_duration_seconds: Some(10),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }),
    }
}

fn client(api: &FakeApi) -> kube::Client {
    client_over(
        tcp_dialer(),
        &api.addr.to_string(),
        NS,
        Duration::from_secs(5),
    )
}

#[tokio::test]
async fn ttls_that_lease_duration_seconds_cannot_hold_are_refused() {
    let api = FakeApi::start().await;
    let clock = ManualClock::new();
    let refused = |ttl| KubeLease::new(client(&api), config(&clock, ttl)).unwrap_err();
    assert_eq!(
        refused(Duration::from_millis(1500)),
        KubeConfigError::TtlNotWholeSeconds {
            ttl: Duration::from_millis(1500)
        }
    );
    assert_eq!(refused(Duration::ZERO), KubeConfigError::TtlZero);
    let long = Duration::from_secs(i32::MAX as u64 + 1);
    assert_eq!(refused(long), KubeConfigError::TtlTooLong { ttl: long });
    let message = refused(Duration::from_millis(1500)).to_string();
    assert!(message.contains("whole number of seconds"), "{message}");
    let max = Duration::from_secs(i32::MAX as u64);
    assert_eq!(
        KubeLease::new(client(&api), config(&clock, max))
            .unwrap()
            .ttl(),
        max
    );
}

#[tokio::test]
async fn namespaces_that_are_not_dns_labels_are_refused() {
    let api = FakeApi::start().await;
    let clock = ManualClock::new();
    for bad in ["", "Upper", "a/b", "-x", "x-", "a.b", &"n".repeat(64)] {
        let config = KubeLeaseConfig {
            namespace: bad.to_owned(),
            ..config(&clock, TTL)
        };
        let error = KubeLease::new(client(&api), config).unwrap_err();
        assert!(
            matches!(&error, KubeConfigError::BadNamespace { namespace, .. } if namespace == bad),
            "{bad:?}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_fresh_acquire_creates_the_object_with_transitions_1() {
    let api = FakeApi::start().await;
    let a = candidate(&api);
    a.clock.advance(Duration::from_secs(3));
    let lease = a.lease.acquire(&s1(), &owner(1)).await.unwrap();
    assert_eq!(lease.token(), 1);
    assert_eq!(
        lease.expiry(),
        Instant::from_origin(Duration::from_secs(13))
    );
    assert_eq!(lease.ttl(), TTL);
    let spec = stored(&api);
    assert_eq!(spec.holder_identity.as_deref(), Some("replica-1#0"));
    assert_eq!(spec.lease_transitions, Some(1));
    assert_eq!(spec.lease_duration_seconds, Some(10));
    let renewed = spec.renew_time.unwrap().0.as_microsecond();
    assert_eq!(renewed, 3_000_000, "renewTime is the wall reading, in µs");
    let annotations = api
        .object(NS, &object_name("s1"))
        .unwrap()
        .metadata
        .annotations;
    assert_eq!(annotations.unwrap()[SESSION_ANNOTATION], "s1");
    assert_eq!(
        a.calls.take(),
        [
            (KubeCall::Get, KubeReply::NotFound),
            (
                KubeCall::Create {
                    holder_identity: "replica-1#0".into(),
                    transitions: 1
                },
                KubeReply::Object {
                    resource_version: 1,
                    holder_identity: "replica-1#0".into(),
                    transitions: 1
                }
            ),
        ]
    );
}

/// A candidate that never saw the record waits a full duration from its first read, on its
/// own clock, however old the holder's renewTime is; then it takes over with transitions + 1,
/// carrying the resourceVersion it read.
#[tokio::test]
async fn a_fresh_candidate_waits_a_full_duration_from_its_first_read() {
    let api = FakeApi::start().await;
    let a = candidate(&api);
    a.lease.acquire(&s1(), &owner(1)).await.unwrap();
    let b = candidate_on(&api, ManualClock::new(), None);
    b.clock.advance(Duration::from_secs(1000));
    let first = b.lease.acquire(&s1(), &owner(2)).await;
    assert_eq!(first, Err(held_by(1)));
    b.clock.advance(TTL - Duration::from_nanos(1));
    let early = b.lease.acquire(&s1(), &owner(2)).await;
    assert_eq!(early, Err(held_by(1)));
    b.clock.advance(Duration::from_nanos(1));
    let taken = b.lease.acquire(&s1(), &owner(2)).await.unwrap();
    assert_eq!(taken.token(), 2);
    assert_eq!(stored(&api).holder_identity.as_deref(), Some("replica-2#0"));
    let update = b.calls.take().into_iter().last().unwrap();
    assert_eq!(
        update.0,
        KubeCall::Update {
            expected_rv: Some(1),
            holder_identity: "replica-2#0".into(),
            transitions: 2
        }
    );
}

/// Every new resourceVersion the candidate sees (the holder's renew) restarts its count.
#[tokio::test]
async fn a_renew_seen_by_the_candidate_restarts_its_count() {
    let api = FakeApi::start().await;
    let a = candidate(&api);
    let b = candidate(&api);
    let held = a.lease.acquire(&s1(), &owner(1)).await.unwrap();
    assert!(b.lease.acquire(&s1(), &owner(2)).await.is_err());
    b.clock.advance(Duration::from_secs(6));
    a.lease.renew(&held).await.unwrap();
    let seen = b.lease.acquire(&s1(), &owner(2)).await;
    assert_eq!(seen, Err(held_by(1)));
    b.clock.advance(Duration::from_secs(6));
    let not_yet = b.lease.acquire(&s1(), &owner(2)).await;
    assert_eq!(
        not_yet,
        Err(held_by(1)),
        "12 s since the first read, 6 s since the renew"
    );
    b.clock.advance(Duration::from_secs(4));
    assert_eq!(b.lease.acquire(&s1(), &owner(2)).await.unwrap().token(), 2);
}

#[tokio::test]
async fn renew_keeps_transitions_and_moves_the_expiry_to_its_send_time() {
    let api = FakeApi::start().await;
    let a = candidate(&api);
    let held = a.lease.acquire(&s1(), &owner(1)).await.unwrap();
    a.clock.advance(Duration::from_secs(4));
    let renewed = a.lease.renew(&held).await.unwrap();
    assert_eq!(renewed.token(), 1);
    assert_eq!(
        renewed.expiry(),
        Instant::from_origin(Duration::from_secs(14))
    );
    assert_eq!(stored(&api).lease_transitions, Some(1));
    assert_eq!(
        stored(&api).acquire_time.unwrap().0.as_microsecond(),
        0,
        "acquireTime stays at the takeover"
    );
    assert_eq!(
        stored(&api).renew_time.unwrap().0.as_microsecond(),
        4_000_000
    );
}

#[tokio::test]
async fn renew_never_creates_and_a_wrong_token_is_held() {
    let api = FakeApi::start().await;
    let a = candidate(&api);
    let held = a.lease.acquire(&s1(), &owner(1)).await.unwrap();
    let forged = Lease::new(s1(), owner(1), 7, held.expiry(), TTL);
    let wrong = a.lease.renew(&forged).await;
    assert_eq!(wrong, Err(held_by(1)));
    api.state().objects.clear();
    let gone = a.lease.renew(&held).await;
    assert_eq!(gone, Err(LeaseError::Held { holder_token: None }));
    assert!(
        api.object(NS, &object_name("s1")).is_none(),
        "renew created an object"
    );
}

#[tokio::test]
async fn release_writes_an_empty_holder_and_keeps_the_object_and_its_transitions() {
    let api = FakeApi::start().await;
    let a = candidate(&api);
    api.put(NS, object("", 3));
    let held = a.lease.acquire(&s1(), &owner(1)).await.unwrap();
    assert_eq!(held.token(), 4);
    a.lease.release(&held).await.unwrap();
    let spec = stored(&api);
    assert_eq!(spec.holder_identity.as_deref(), Some(""));
    assert_eq!(spec.lease_transitions, Some(4));
    let b = candidate(&api);
    assert_eq!(b.lease.acquire(&s1(), &owner(2)).await.unwrap().token(), 5);
    assert!(
        !api.state().requests.iter().any(|r| r.starts_with("DELETE")),
        "the object was deleted"
    );
}

/// `delete-on-release`: the object goes, and the next create starts again at 1 (K2).
#[tokio::test]
async fn delete_on_release_resets_the_token() {
    let api = FakeApi::start().await;
    let a = candidate_on(&api, ManualClock::new(), Some(Mutant::DeleteOnRelease));
    api.put(NS, object("", 3));
    let held = a.lease.acquire(&s1(), &owner(1)).await.unwrap();
    a.lease.release(&held).await.unwrap();
    assert!(api.object(NS, &object_name("s1")).is_none());
    let again = a.lease.acquire(&s1(), &owner(2)).await.unwrap();
    assert_eq!(again.token(), 1, "below the 4 it had");
}

/// K1's loser: the write decided from a read that is no longer current gets 409, the
/// candidate reads again, sees a new resourceVersion (so the count restarts) and is Held.
#[tokio::test]
async fn a_conflicting_takeover_reads_again_and_is_held() {
    let api = FakeApi::start().await;
    let a = candidate(&api);
    a.lease.acquire(&s1(), &owner(1)).await.unwrap();
    let b = candidate(&api);
    assert!(b.lease.acquire(&s1(), &owner(2)).await.is_err());
    b.clock.advance(TTL);
    b.calls.take();
    api.state().bump_before_next_put = true;
    let lost = b.lease.acquire(&s1(), &owner(2)).await;
    assert_eq!(lost, Err(held_by(1)));
    let calls: Vec<KubeCall> = b.calls.take().into_iter().map(|(c, _)| c).collect();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(matches!(
        calls[1],
        KubeCall::Update {
            expected_rv: Some(1),
            ..
        }
    ));
    assert_eq!(stored(&api).holder_identity.as_deref(), Some("replica-1#0"));
}

/// `update-without-resource-version`: the same stale decision overwrites the object.
#[tokio::test]
async fn an_update_without_resource_version_overwrites_a_newer_write() {
    let api = FakeApi::start().await;
    let a = candidate(&api);
    a.lease.acquire(&s1(), &owner(1)).await.unwrap();
    let b = candidate_on(
        &api,
        ManualClock::new(),
        Some(Mutant::UpdateWithoutResourceVersion),
    );
    assert!(b.lease.acquire(&s1(), &owner(2)).await.is_err());
    b.clock.advance(TTL);
    b.calls.take();
    api.state().bump_before_next_put = true;
    let won = b.lease.acquire(&s1(), &owner(2)).await.unwrap();
    assert_eq!(won.token(), 2);
    let calls: Vec<KubeCall> = b.calls.take().into_iter().map(|(c, _)| c).collect();
    assert!(
        matches!(
            calls[1],
            KubeCall::Update {
                expected_rv: None,
                ..
            }
        ),
        "{calls:?}"
    );
}

#[tokio::test]
async fn conflicts_without_end_give_up_as_unavailable() {
    let api = FakeApi::start().await;
    let a = candidate(&api);
    api.put(NS, object("", 1));
    api.state().conflict_puts = MAX_ATTEMPTS;
    let outcome = a.lease.acquire(&s1(), &owner(1)).await;
    assert!(
        matches!(&outcome, Err(LeaseError::Unavailable { reason }) if reason.contains("409")),
        "{outcome:?}"
    );
    api.state().conflict_puts = MAX_ATTEMPTS - 1;
    assert_eq!(
        a.lease.acquire(&s1(), &owner(1)).await.unwrap().token(),
        2,
        "the last attempt wins"
    );
}

#[tokio::test]
async fn a_takeover_past_i32_max_is_refused_and_writes_nothing() {
    let api = FakeApi::start().await;
    let a = candidate(&api);
    api.put(NS, object("", i32::MAX));
    let outcome = a.lease.acquire(&s1(), &owner(1)).await;
    match outcome {
        Err(LeaseError::Unavailable { reason }) => assert!(reason.contains("i32::MAX"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(stored(&api).lease_transitions, Some(i32::MAX));
    assert_eq!(stored(&api).holder_identity.as_deref(), Some(""));
}

#[tokio::test]
async fn http_errors_are_transient_with_the_status_and_a_missing_api_is_unsupported() {
    let api = FakeApi::start().await;
    let a = candidate(&api);
    for (code, reason) in [
        (503, "ServiceUnavailable"),
        (500, "InternalError"),
        (429, "TooManyRequests"),
        (403, "Forbidden"),
        (401, "Unauthorized"),
    ] {
        api.state().inject.push_back(Injected {
            code,
            reason: Some(reason),
        });
        // 429 asks to come back later; 5xx, 401 and 403 are statuses the contract does not
        // name. Neither is the loss signal.
        match (code, a.lease.acquire(&s1(), &owner(1)).await) {
            (429, Err(LeaseError::Unavailable { reason: text }))
            | (_, Err(LeaseError::Unexpected { status: text })) => {
                assert!(text.contains(reason), "{code}: {text}")
            }
            (_, other) => panic!("{code} {reason}: {other:?}"),
        }
    }
    api.state().inject.push_back(Injected {
        code: 404,
        reason: None,
    });
    assert_eq!(
        a.lease.acquire(&s1(), &owner(1)).await,
        Err(LeaseError::Unsupported)
    );
    assert_eq!(a.lease.acquire(&s1(), &owner(1)).await.unwrap().token(), 1);
}

#[tokio::test]
async fn transport_failures_and_timeouts_are_unavailable() {
    let api = FakeApi::start().await;
    api.state().hang = true;
    let clock = ManualClock::new();
    let slow = client_over(
        tcp_dialer(),
        &api.addr.to_string(),
        NS,
        Duration::from_millis(200),
    );
    let lease = KubeLease::new(slow, config(&clock, TTL)).unwrap();
    let hung = lease.acquire(&s1(), &owner(1)).await;
    assert!(
        matches!(&hung, Err(LeaseError::Unavailable { reason }) if reason.contains("timed out")),
        "{hung:?}"
    );
    let nobody = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = nobody.local_addr().unwrap();
    drop(nobody);
    let refused = client_over(tcp_dialer(), &addr.to_string(), NS, Duration::from_secs(2));
    let lease = KubeLease::new(refused, config(&clock, TTL)).unwrap();
    let outcome = lease.acquire(&s1(), &owner(1)).await;
    assert!(
        matches!(outcome, Err(LeaseError::Unavailable { .. })),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_bad_api_server_address_fails_every_call_naming_it() {
    let clock = ManualClock::new();
    let client = client_over(tcp_dialer(), "not a host:port", NS, Duration::from_secs(1));
    let lease = KubeLease::new(client, config(&clock, TTL)).unwrap();
    match lease.acquire(&s1(), &owner(1)).await {
        Err(LeaseError::Unavailable { reason }) => {
            assert!(reason.contains("not a host:port"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_object_of_another_session_is_not_taken_for_ours() {
    let api = FakeApi::start().await;
    let a = candidate(&api);
    let mut foreign = object("", 1);
    foreign.metadata.annotations = Some([(SESSION_ANNOTATION.to_owned(), "S1".to_owned())].into());
    api.put(NS, foreign);
    match a.lease.acquire(&s1(), &owner(1)).await {
        Err(LeaseError::Unavailable { reason }) => assert!(reason.contains("\"S1\""), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn transitions_bumped_on_renew_returns_a_new_token() {
    let api = FakeApi::start().await;
    let a = candidate_on(
        &api,
        ManualClock::new(),
        Some(Mutant::TransitionsBumpedOnRenew),
    );
    let held = a.lease.acquire(&s1(), &owner(1)).await.unwrap();
    let renewed = a.lease.renew(&held).await.unwrap();
    assert_eq!((held.token(), renewed.token()), (1, 2));
    assert_eq!(stored(&api).lease_transitions, Some(2));
}

/// `expiry-from-renew-time`: a candidate whose wall clock runs 11 s ahead of the holder's
/// takes a lease over that was renewed a moment ago; the correct candidate does not.
#[tokio::test]
async fn expiry_from_renew_time_takes_a_live_lease_when_the_wall_clock_runs_ahead() {
    let api = FakeApi::start().await;
    let a = candidate(&api);
    a.lease.acquire(&s1(), &owner(1)).await.unwrap();
    let ahead = || {
        ManualClock::with_wall_start(WallTime {
            unix_ns: 11_000_000_000,
        })
    };
    let correct = candidate_on(&api, ahead(), None);
    let held = correct.lease.acquire(&s1(), &owner(2)).await;
    assert_eq!(held, Err(held_by(1)));
    let wrong = candidate_on(&api, ahead(), Some(Mutant::ExpiryFromRenewTime));
    assert_eq!(
        wrong.lease.acquire(&s1(), &owner(3)).await.unwrap().token(),
        2
    );
}

/// The conformance suite over the fake server, as a quick check of the whole contract (the
/// world's API server runs it in tests/core).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_conformance_rule_passes_over_the_fake_api_server() {
    for rule in leasesim_conformance::RULES {
        let api = FakeApi::start().await;
        let c = candidate(&api);
        let subject =
            leasesim_conformance::Subject::with_manual_clock(Arc::new(c.lease), c.clock, TTL);
        if let Err(violation) = (rule.run)(subject).await {
            panic!("{violation}");
        }
    }
}
