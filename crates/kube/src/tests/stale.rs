//! [`PausePoint::AfterAuthorityRead`]: reached between every decision and its write, on each
//! path (acquire, renew, release); an object changed there makes the decision stale, which
//! the correct implementation throws away on the 409 and `conflict-retry-keeps-decision`
//! sends again (docs/field-cases.md#k3-a-decision-from-a-stale-lease-read).

use async_trait::async_trait;
use leasesim_core::hooks::{Hooks, Observation};

use super::*;

/// Hooks that note each pause point reached with the last request the API server had served
/// then, and at the first one store `stage` (another candidate's write landing between this
/// candidate's read and its write).
#[derive(Debug)]
struct Staging {
    api: FakeApi,
    reached: Mutex<Vec<(PausePoint, String)>>,
    stage: Mutex<Option<LeaseObject>>,
}

impl Staging {
    fn new(api: &FakeApi, stage: Option<LeaseObject>) -> Arc<Staging> {
        Arc::new(Staging {
            api: api.clone(),
            reached: Mutex::new(Vec::new()),
            stage: Mutex::new(stage),
        })
    }

    fn take(&self) -> Vec<(PausePoint, String)> {
        std::mem::take(&mut *self.reached.lock().unwrap())
    }
}

#[async_trait]
impl Hooks for Staging {
    async fn pause_point(&self, point: PausePoint) {
        let last = self
            .api
            .state()
            .requests
            .last()
            .cloned()
            .unwrap_or_default();
        self.reached.lock().unwrap().push((point, last));
        let stage = self.stage.lock().unwrap().take();
        if let Some(object) = stage {
            self.api.put(NS, object);
        }
    }

    fn observe(&self, _: Observation) {}
}

fn staged_candidate(api: &FakeApi, mutant: Option<Mutant>, hooks: &Arc<Staging>) -> Candidate {
    let calls = Arc::new(Recorded::default());
    let clock = ManualClock::new();
    let config = KubeLeaseConfig {
        mutant,
        calls: Some(calls.clone()),
        hooks: HookSlot::new(hooks.clone()),
        ..config(&clock, TTL)
    };
    let lease = KubeLease::new(client(api), config).expect("a valid config");
    Candidate {
        lease,
        clock,
        calls,
    }
}

/// The point is reached once per write, after the GET it was decided from and before the
/// write (the last request served is that GET); a refusal writes nothing and reaches none.
#[tokio::test]
async fn each_path_reaches_the_point_between_its_read_and_its_write() {
    let api = FakeApi::start().await;
    let hooks = Staging::new(&api, None);
    let a = staged_candidate(&api, None, &hooks);
    let get = format!(
        "GET /apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{}",
        object_name("s1")
    );
    let after_read = vec![(PausePoint::AfterAuthorityRead, get)];
    let held = a.lease.acquire(&s1(), &owner(1)).await.unwrap();
    assert_eq!(hooks.take(), after_read, "acquire (create)");
    let renewed = a.lease.renew(&held).await.unwrap();
    assert_eq!(hooks.take(), after_read, "renew");
    let other = staged_candidate(&api, None, &hooks);
    assert_eq!(other.lease.acquire(&s1(), &owner(2)).await, Err(held_by(1)));
    assert_eq!(hooks.take(), [], "a refused acquire decides no write");
    a.lease.release(&renewed).await.unwrap();
    assert_eq!(hooks.take(), after_read, "release");
    other.lease.acquire(&s1(), &owner(2)).await.unwrap();
    assert_eq!(
        hooks.take(),
        after_read,
        "acquire (takeover of a released lease)"
    );
    assert_eq!(
        api.state().requests.len(),
        9,
        "five reads, four writes: one read per decision"
    );
}

/// The three decisions one stale read can carry, each staged the same way: B's takeover
/// (transitions 2) lands at the point of A's call, decided from the read before it.
#[derive(Clone, Copy, Debug)]
enum Path {
    /// A, a candidate for the expired s1 (held by replica-9, transitions 1), takes it over.
    Takeover,
    /// A, the holder (transitions 1), renews.
    Renew,
    /// A, the holder (transitions 1), releases.
    Release,
}

/// A's call on `path` with B's takeover staged at its point: the call's outcome, the API
/// calls A made, and the holder and transitions stored at the end.
async fn stale_decision(
    path: Path,
    mutant: Option<Mutant>,
) -> (Result<u64, LeaseError>, Vec<KubeCall>, (String, i32)) {
    let api = FakeApi::start().await;
    let b_took_over = object("replica-2#0", 2);
    let hooks = Staging::new(&api, None);
    let a = staged_candidate(&api, mutant, &hooks);
    let outcome = match path {
        Path::Takeover => {
            api.put(NS, object("replica-9#0", 1));
            assert!(a.lease.acquire(&s1(), &owner(1)).await.is_err());
            a.clock.advance(TTL);
            *hooks.stage.lock().unwrap() = Some(b_took_over);
            a.lease.acquire(&s1(), &owner(1)).await.map(|l| l.token())
        }
        Path::Renew | Path::Release => {
            let held = a.lease.acquire(&s1(), &owner(1)).await.unwrap();
            *hooks.stage.lock().unwrap() = Some(b_took_over);
            if let Path::Renew = path {
                a.lease.renew(&held).await.map(|l| l.token())
            } else {
                a.lease.release(&held).await.map(|()| 0)
            }
        }
    };
    let calls = a.calls.take().into_iter().map(|(call, _)| call).collect();
    let spec = stored(&api);
    let holder = spec.holder_identity.unwrap_or_default();
    (outcome, calls, (holder, spec.lease_transitions.unwrap()))
}

/// Correct: the 409 throws the decision away with its read; read again, B holds: the
/// takeover and the renew are Held by token 2, the release has nothing left to end, and B's
/// hold stands.
#[tokio::test]
async fn a_decision_made_stale_at_the_point_is_thrown_away_on_the_409() {
    let b_holds = ("replica-2#0".to_owned(), 2);
    for path in [Path::Takeover, Path::Renew] {
        let (outcome, _, stored) = stale_decision(path, None).await;
        assert_eq!(outcome, Err(held_by(2)), "{path:?}");
        assert_eq!(stored, b_holds, "{path:?}");
    }
    let (outcome, _, stored) = stale_decision(Path::Release, None).await;
    assert_eq!(outcome, Ok(0));
    assert_eq!(stored, b_holds, "release");
}

/// `conflict-retry-keeps-decision`: after the 409 the candidate reads only the new
/// resourceVersion and sends the old decision again, which overwrites B's hold: a second
/// holder of token 2 (takeover), a token that falls from 2 to 1 (renew), or B's hold
/// emptied and its token with it (release).
#[tokio::test]
async fn conflict_retry_keeps_decision_overwrites_the_hold_taken_meanwhile() {
    let mutant = Some(Mutant::ConflictRetryKeepsDecision);
    let (outcome, calls, stored) = stale_decision(Path::Takeover, mutant).await;
    assert_eq!(outcome, Ok(2), "A holds token 2 beside B");
    assert_eq!(stored, ("replica-1#0".to_owned(), 2));
    let a_takes = |expected_rv| KubeCall::Update {
        expected_rv: Some(expected_rv),
        holder_identity: "replica-1#0".into(),
        transitions: 2,
    };
    // The watch, the read it decided from, the 409, the read for the version, the resend.
    assert_eq!(calls[2..], [a_takes(1), KubeCall::Get, a_takes(2)]);
    let (outcome, _, stored) = stale_decision(Path::Renew, mutant).await;
    assert_eq!(outcome, Ok(1));
    assert_eq!(stored, ("replica-1#0".to_owned(), 1), "transitions fell");
    let (outcome, _, stored) = stale_decision(Path::Release, mutant).await;
    assert_eq!(outcome, Ok(0));
    assert_eq!(
        stored,
        (String::new(), 1),
        "B's hold emptied, its transitions lost"
    );
}
