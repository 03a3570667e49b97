//! The service layer: a run holds the session's lease, the renewer keeps it, losing it
//! cancels the run, and however a run ends its lease is released.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use leasesim::clock::Instant;
use leasesim::journal::{Journal, JournalError, LossCause, Record};
use leasesim::lease::{LeaseError, Owner, SessionLease};
use leasesim::service::{RunContext, RunError, Service};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::support::lease::{TTL, World, s1, settle};

const RENEW_INTERVAL: Duration = Duration::from_nanos(TTL.as_nanos() as u64 / 3);

/// Starts a run of s1 whose work hands its journal out and then waits forever (until the run
/// is cancelled).
fn spawn_blocked_run(
    service: &Arc<Service>,
) -> (
    JoinHandle<Result<(), RunError>>,
    mpsc::UnboundedReceiver<Arc<Journal>>,
) {
    let (journals, rx) = mpsc::unbounded_channel();
    let service = service.clone();
    let run = tokio::spawn(async move {
        service
            .run(&s1(), |ctx| {
                let journals = journals.clone();
                async move {
                    let _ = journals.send(ctx.journal().expect("leased run").clone());
                    std::future::pending::<Result<(), JournalError>>().await
                }
            })
            .await
    });
    (run, rx)
}

#[tokio::test]
async fn the_renewer_keeps_the_lease_for_as_long_as_the_run_lasts() {
    let world = World::new();
    let (run, mut journals) = spawn_blocked_run(&world.replica("replica-1"));
    let journal = journals.recv().await.unwrap();
    for _ in 0..15 {
        world.advance(RENEW_INTERVAL).await;
    }
    assert!(
        !run.is_finished(),
        "run ended after 5 TTLs: {:?}",
        run.await
    );
    assert_eq!(world.authority.renews.load(Ordering::SeqCst), 15);
    let other = world
        .authority
        .acquire(&s1(), &Owner::new("replica-2", 0))
        .await;
    assert_eq!(
        other,
        Err(LeaseError::Held {
            holder_token: Some(1)
        })
    );
    assert_eq!(journal.append(b"still mine".to_vec()).await, Ok(2));
}

#[tokio::test]
async fn renew_loss_cancels_the_run_and_releases_exactly_once() {
    let world = World::new();
    let (run, mut journals) = spawn_blocked_run(&world.replica("replica-1"));
    let journal = journals.recv().await.unwrap();
    // The record is garbage-collected, so the next renew answers Held.
    world.authority.inner.delete_record(&s1());
    world.advance(RENEW_INTERVAL).await;

    let cause = LossCause::Overtaken { holder_token: None };
    assert_eq!(
        run.await.unwrap(),
        Err(RunError::LeaseLost {
            cause: cause.clone()
        })
    );
    assert_eq!(world.authority.releases.load(Ordering::SeqCst), 1);
    assert_eq!(
        journal.append(b"late".to_vec()).await,
        Err(JournalError::LeaseLost { cause })
    );
    world.advance(TTL * 3).await;
    assert_eq!(
        world.authority.renews.load(Ordering::SeqCst),
        1,
        "renewer outlived its run"
    );
}

#[tokio::test]
async fn a_renew_that_hangs_past_the_local_deadline_loses_the_lease_without_waiting() {
    let world = World::new();
    world.authority.hang_renews.store(true, Ordering::SeqCst);
    let (run, mut journals) = spawn_blocked_run(&world.replica("replica-1"));
    let journal = journals.recv().await.unwrap();
    world.advance(RENEW_INTERVAL).await;
    assert_eq!(
        world.authority.renews.load(Ordering::SeqCst),
        1,
        "renew sent at ttl/3"
    );

    // valid_until = 0 (acquire sent) + 10 s − 10% = 9 s, on the holder's clock.
    let valid_until = Instant::from_origin(Duration::from_secs(9));
    world.advance(valid_until - world_now(&world)).await;
    let cause = LossCause::Deadline { valid_until };
    assert_eq!(
        run.await.unwrap(),
        Err(RunError::LeaseLost {
            cause: cause.clone()
        })
    );
    assert_eq!(
        journal.append(b"late".to_vec()).await,
        Err(JournalError::LeaseLost { cause })
    );
    assert_eq!(world.authority.releases.load(Ordering::SeqCst), 1);
}

fn world_now(world: &World) -> Instant {
    use leasesim::clock::Clock;
    world.clock.now()
}

#[tokio::test]
async fn a_run_that_panics_releases_its_lease() {
    let world = World::new();
    let service = world.replica("replica-1");
    let run = tokio::spawn(async move { service.run(&s1(), |_ctx| async { explode() }).await });
    assert!(run.await.unwrap_err().is_panic());
    assert_eq!(world.authority.releases.load(Ordering::SeqCst), 1);
    let next = world
        .authority
        .acquire(&s1(), &Owner::new("replica-2", 0))
        .await
        .unwrap();
    assert_eq!(
        next.token(),
        2,
        "replica-2 let in at once, with a new token"
    );
}

fn explode() -> Result<(), JournalError> {
    panic!("work failed")
}

#[tokio::test]
async fn a_cancelled_run_releases_its_lease() {
    let world = World::new();
    let (run, mut journals) = spawn_blocked_run(&world.replica("replica-1"));
    journals.recv().await.unwrap();
    run.abort();
    assert!(run.await.unwrap_err().is_cancelled());
    settle().await;
    assert_eq!(world.authority.releases.load(Ordering::SeqCst), 1);
    assert!(
        world
            .authority
            .acquire(&s1(), &Owner::new("replica-2", 0))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_competing_replica_gets_session_leased_elsewhere() {
    let world = World::new();
    let (_run, mut journals) = spawn_blocked_run(&world.replica("replica-1"));
    journals.recv().await.unwrap();
    let outcome = world
        .replica("replica-2")
        .run(&s1(), |_ctx| async { Ok(()) })
        .await;
    assert_eq!(
        outcome,
        Err(RunError::SessionLeasedElsewhere {
            holder_token: Some(1)
        })
    );
}

#[tokio::test]
async fn a_second_run_of_a_session_in_one_process_waits_for_the_first() {
    let world = World::new();
    let service = world.replica("replica-1");
    let (first, mut journals) = spawn_blocked_run(&service);
    journals.recv().await.unwrap();
    let second = tokio::spawn({
        let service = service.clone();
        async move {
            let epoch = |ctx: RunContext| async move { Ok(ctx.lease().unwrap().epoch()) };
            service.run(&s1(), epoch).await
        }
    });
    settle().await;
    assert!(
        !second.is_finished(),
        "two runs of s1 at once in one process"
    );
    first.abort();
    assert_eq!(second.await.unwrap(), Ok(2));
}

#[tokio::test]
async fn shutdown_lets_runs_clean_up_then_releases_every_held_lease() {
    let world = World::new();
    let service = world.replica("replica-1");
    let sessions = ["s1", "s2"].map(|s| leasesim::lease::SessionId::new(s).unwrap());
    let runs: Vec<_> = sessions
        .iter()
        .map(|session| {
            let (service, session) = (service.clone(), session.clone());
            tokio::spawn(async move {
                service
                    .run(&session, |ctx| async move {
                        ctx.shutdown_requested().await;
                        ctx.journal().unwrap().append(b"clean-up".to_vec()).await
                    })
                    .await
            })
        })
        .collect();
    settle().await;
    service.shutdown().await;
    for run in runs {
        assert_eq!(run.await.unwrap(), Ok(2), "clean-up append after the fence");
    }
    assert_eq!(world.authority.releases.load(Ordering::SeqCst), 2);
    for session in &sessions {
        let survivor = world
            .authority
            .acquire(session, &Owner::new("replica-2", 0))
            .await;
        assert_eq!(
            survivor.map(|l| l.token()),
            Ok(2),
            "{session} not handed over at once"
        );
    }
    let refused = service.run(&sessions[0], |_ctx| async { Ok(()) }).await;
    assert_eq!(refused, Err(RunError::ShuttingDown));
}

#[tokio::test]
async fn unsupported_leasing_is_tried_once_then_runs_go_unleased() {
    let world = World::new();
    world.authority.unsupported.store(true, Ordering::SeqCst);
    let service = world.replica("replica-1");
    let (infos, _guard) = count_info_events();
    for _ in 0..3 {
        let leased = service
            .run(&s1(), |ctx| async move { Ok(ctx.journal().is_some()) })
            .await;
        assert_eq!(leased, Ok(false));
    }
    assert_eq!(world.authority.acquires.load(Ordering::SeqCst), 1);
    assert!(service.leasing_disabled());
    assert_eq!(
        infos.load(Ordering::SeqCst),
        1,
        "exactly one INFO log for the sticky disable"
    );
}

/// Counts INFO events on this thread while the guard lives.
fn count_info_events() -> (Arc<AtomicUsize>, tracing::subscriber::DefaultGuard) {
    use tracing_subscriber::layer::SubscriberExt;

    struct CountInfo(Arc<AtomicUsize>);
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for CountInfo {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            if *event.metadata().level() == tracing::Level::INFO {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
    let count = Arc::new(AtomicUsize::new(0));
    let subscriber = tracing_subscriber::registry().with(CountInfo(count.clone()));
    (count, tracing::subscriber::set_default(subscriber))
}

#[tokio::test]
async fn a_poisoned_journal_is_recovered_under_a_fresh_lease() {
    let world = World::new();
    let service = world.replica("replica-1");
    let intruder = world.store("intruder");
    let attempts = AtomicUsize::new(0);
    let outcome = service
        .run(&s1(), |ctx| {
            let attempt = attempts.fetch_add(1, Ordering::SeqCst) + 1;
            let (ledger, intruder) = (world.ledger.clone(), intruder.clone());
            async move {
                let journal = ctx.journal().unwrap();
                journal
                    .append(format!("attempt {attempt}").into_bytes())
                    .await?;
                if attempt == 1 {
                    // A foreign record slips in: the next append is fenced.
                    let foreign = Record::Event {
                        writer_id: leasesim::journal::WriterId {
                            owner: intruder.owner().clone(),
                            journal: 1,
                        },
                        seq_in_writer: 1,
                        payload: b"foreign".to_vec(),
                    };
                    use leasesim::journal::Ledger;
                    ledger.append(&s1(), 2, foreign).await.unwrap();
                    journal.append(b"fenced".to_vec()).await?;
                }
                Ok(ctx.lease().unwrap().epoch())
            }
        })
        .await;
    assert_eq!(outcome, Ok(2), "second attempt under token 2");
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    let records: Vec<_> = intruder.replay_full(&s1()).await.unwrap();
    let shape: Vec<String> = records
        .iter()
        .map(|e| match &e.record {
            Record::Fence { epoch, .. } => format!("{}:fence{epoch}", e.seq),
            Record::Event { payload, .. } => {
                format!("{}:{}", e.seq, String::from_utf8_lossy(payload))
            }
        })
        .collect();
    assert_eq!(
        shape,
        [
            "1:fence1",
            "2:attempt 1",
            "3:foreign",
            "4:fence2",
            "5:attempt 2"
        ]
    );
    assert_eq!(world.authority.releases.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_run_waiting_at_the_gate_when_shutdown_begins_takes_no_lease() {
    let world = World::new();
    let service = world.replica("replica-1");
    let first = tokio::spawn({
        let service = service.clone();
        async move {
            service
                .run(&s1(), |ctx| async move {
                    ctx.shutdown_requested().await;
                    Ok(())
                })
                .await
        }
    });
    settle().await;
    let waiting = tokio::spawn({
        let service = service.clone();
        async move { service.run(&s1(), |_ctx| async { Ok(()) }).await }
    });
    settle().await;
    service.shutdown().await;
    assert_eq!(first.await.unwrap(), Ok(()));
    assert_eq!(waiting.await.unwrap(), Err(RunError::ShuttingDown));
    assert_eq!(world.authority.acquires.load(Ordering::SeqCst), 1);
}
