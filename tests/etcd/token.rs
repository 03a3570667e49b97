//! The token is etcd's per-session counter: it survives the holder key's expiry, grows by
//! one per takeover, and two clients racing for a free session leave one holder.

use std::time::Duration;

use leasesim::lease::etcd::{EXPIRY_SLACK, holder_key, token_key};
use leasesim::lease::{LeaseError, Owner, SessionId, SessionLease};

use crate::support::{TTL, lease, raw_client};

fn session(name: &str) -> SessionId {
    SessionId::new(format!("token/{name}")).expect("a valid session id")
}

/// The value at `key`, `None` when absent.
async fn value(key: String) -> Option<String> {
    let mut client = raw_client().await;
    let mut response = client.get(key, None).await.expect("a get");
    response
        .take_kvs()
        .into_iter()
        .next()
        .map(|kv| kv.value_str().expect("UTF-8").to_owned())
}

/// Sleeps out a TTL and etcd's lazy revocation (real time: etcd's clock is real).
#[allow(clippy::disallowed_methods)]
async fn wait_out_the_ttl() {
    tokio::time::sleep(TTL + EXPIRY_SLACK).await;
}

#[tokio::test]
async fn the_token_survives_the_holder_keys_expiry() {
    let lease = lease(TTL, None).await;
    let s = session("survives");
    let a = lease
        .acquire(&s, &Owner::new("a", 0))
        .await
        .expect("a acquires");
    assert_eq!(a.token(), 1);
    assert!(value(holder_key(&s)).await.is_some(), "a's holder key");
    wait_out_the_ttl().await;
    assert_eq!(
        value(holder_key(&s)).await,
        None,
        "the holder key expired with a's lease"
    );
    assert_eq!(
        value(token_key(&s)).await.as_deref(),
        Some("1"),
        "the counter stays"
    );
    let b = lease
        .acquire(&s, &Owner::new("b", 0))
        .await
        .expect("b acquires");
    assert_eq!(b.token(), 2, "b's token continues the counter");
}

#[tokio::test]
async fn the_token_grows_by_one_per_takeover() {
    let lease = lease(TTL, None).await;
    let s = session("grows");
    let mut tokens = Vec::new();
    for round in 0..4 {
        let owner = Owner::new(if round % 2 == 0 { "a" } else { "b" }, 0);
        let held = lease
            .acquire(&s, &owner)
            .await
            .expect("acquire after release");
        tokens.push(held.token());
        lease.release(&held).await.expect("release");
    }
    assert_eq!(tokens, [1, 2, 3, 4]);
    let again = lease
        .acquire(&s, &Owner::new("a", 0))
        .await
        .expect("acquire");
    assert_eq!(
        again.token(),
        5,
        "a release's successor, same owner, gets a new token"
    );
}

#[tokio::test]
async fn two_racing_clients_leave_one_holder() {
    let (one, two) = (lease(TTL, None).await, lease(TTL, None).await);
    for round in 0..5 {
        let s = session(&format!("race-{round}"));
        let (owner_one, owner_two) = (Owner::new("one", 0), Owner::new("two", 0));
        let (first, second) =
            tokio::join!(one.acquire(&s, &owner_one), two.acquire(&s, &owner_two));
        let (winner, loser) = match (first, second) {
            (Ok(w), Err(l)) | (Err(l), Ok(w)) => (w, l),
            other => panic!("round {round}: not exactly one holder: {other:?}"),
        };
        assert_eq!(winner.token(), 1, "round {round}");
        assert_eq!(
            loser,
            LeaseError::Held {
                holder_token: Some(1)
            },
            "round {round}: the loser is told the winner's token"
        );
        let holder = value(holder_key(&s))
            .await
            .expect("the winner's holder key");
        assert!(
            holder.contains(&format!("\"{}\"", winner.owner().replica)),
            "{holder}"
        );
    }
}

#[tokio::test]
async fn a_ttl_below_etcds_minimum_is_raised_and_reported() {
    let lease = lease(Duration::from_millis(300), None).await;
    let held = lease
        .acquire(&session("minimum"), &Owner::new("a", 0))
        .await
        .expect("acquire");
    assert_eq!(held.ttl(), Duration::from_secs(2), "etcd 3.4's minimum TTL");
    lease.release(&held).await.expect("release");
}

#[tokio::test]
async fn an_etcd_that_does_not_answer_is_unavailable() {
    let config = leasesim::lease::etcd::EtcdLeaseConfig {
        // The discard port: nothing listens there on a test machine.
        endpoint: "127.0.0.1:9".into(),
        ttl: TTL,
        call_timeout: Duration::from_millis(500),
        mutant: None,
    };
    let clock = std::sync::Arc::new(leasesim::clock::RealClock::new());
    match leasesim::lease::etcd::EtcdLease::connect(config, clock).await {
        Err(LeaseError::Unavailable { reason }) => {
            assert!(reason.contains("127.0.0.1:9"), "{reason}")
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
}
