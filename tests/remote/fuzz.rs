//! Fuzzing the services' data files (issue 40, item 5): a ledger directory or a lease state
//! directory whose log or checkpoint is cut, flipped or deleted — either file alone, or the
//! log damaged *and* the checkpoint lost — is refused at open or recovers every acknowledged
//! record and never reissues a token. (A checkpoint cut at an entry boundary together with a
//! log cut to match is beyond what the two files can show: `docs/`, the services' limits.)
//! Deterministic: a fixed seed, ChaCha, no persistence files; in-memory disks.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use leasesim::clock::ManualClock;
use leasesim::journal::{DurableLedger, LEDGER_CHECKPOINT};
use leasesim::lease::{DurableLease, DurableLeaseConfig, Owner, STATE_FILE, SessionLease};
use leasesim::storage::{MemStorage, Storage};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestCaseError, TestRunner};

use crate::records::{read_all, s1};
use crate::support::{acknowledged, event};

const RECORDS: u64 = 12;
const STATE_CHECKPOINT: &str = "lease-state-checkpoint.log";
const TTL: Duration = Duration::from_millis(100);

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(40),
        ..Config::default()
    })
}

/// What is done to one file.
#[derive(Clone, Debug)]
enum Damage {
    Keep,
    Cut(usize),
    Flip(usize, u8),
    Delete,
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        Just(Damage::Keep),
        any::<usize>().prop_map(Damage::Cut),
        (any::<usize>(), 1..=255u8).prop_map(|(at, bits)| Damage::Flip(at, bits)),
        Just(Damage::Delete),
    ]
}

/// (log damage, checkpoint damage): one file damaged, or the log damaged and the checkpoint
/// lost.
fn damages() -> impl Strategy<Value = (Damage, Damage)> {
    prop_oneof![
        damage().prop_map(|d| (d, Damage::Keep)),
        damage().prop_map(|d| (Damage::Keep, d)),
        damage().prop_map(|d| (d, Damage::Delete)),
    ]
}

/// Runs `check` on a fresh single-threaded runtime for each generated pair of [`damages`].
fn for_each_damage<F, Fut>(check: F)
where
    F: Fn(Damage, Damage) -> Fut,
    Fut: Future<Output = Result<(), TestCaseError>>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runner()
        .run(&damages(), |(file, checkpoint)| {
            rt.block_on(check(file, checkpoint))
        })
        .unwrap();
}

async fn apply(disk: &MemStorage, file: &str, damage: &Damage) {
    let bytes = disk.read(file).await.unwrap();
    let damaged = match damage {
        Damage::Keep => return,
        Damage::Cut(at) => bytes[..at % (bytes.len() + 1)].to_vec(),
        Damage::Flip(at, bits) => {
            let mut flipped = bytes.clone();
            if !flipped.is_empty() {
                let at = at % flipped.len();
                flipped[at] ^= bits;
            }
            flipped
        }
        // MemStorage cannot remove a file: replaced by nothing, it reads as missing.
        Damage::Delete => Vec::new(),
    };
    disk.replace(file, &damaged).await.unwrap();
}

/// A ledger of `RECORDS` acknowledged records with its file and checkpoint damaged opens to an
/// error, or to every one of those records.
#[test]
fn a_damaged_ledger_directory_is_refused_or_keeps_every_acknowledged_record() {
    for_each_damage(|log_damage, checkpoint_damage| async move {
        let disk = MemStorage::new();
        let file = acknowledged(&disk, RECORDS).await;
        apply(&disk, &file, &log_damage).await;
        apply(&disk, LEDGER_CHECKPOINT, &checkpoint_damage).await;
        if let Ok(ledger) = DurableLedger::open(Arc::new(disk.clone())).await {
            prop_assert_eq!(
                read_all(&ledger, &s1()).await,
                (1..=RECORDS).map(event).collect::<Vec<_>>(),
                "{:?} {:?}: opened without every acknowledged record",
                log_damage,
                checkpoint_damage
            );
        }
        Ok(())
    });
}

/// An authority that granted tokens 1..=`RECORDS`, with its state file and checkpoint
/// damaged, opens to an error, or grants a token above every one it gave.
#[test]
fn a_damaged_lease_directory_is_refused_or_never_reissues_a_token() {
    for_each_damage(|state_damage, checkpoint_damage| async move {
        let disk = MemStorage::new();
        let clock = ManualClock::new();
        let open = || {
            let config = DurableLeaseConfig::with_ttl(TTL);
            DurableLease::open(Arc::new(disk.clone()), Arc::new(clock.clone()), config)
        };
        let authority = open().await.unwrap();
        for n in 1..=RECORDS {
            let owner = Owner::new(format!("o{n}"), 0);
            assert_eq!(authority.acquire(&s1(), &owner).await.unwrap().token(), n);
            clock.advance(TTL);
        }
        drop(authority);
        apply(&disk, STATE_FILE, &state_damage).await;
        apply(&disk, STATE_CHECKPOINT, &checkpoint_damage).await;
        if let Ok(authority) = open().await {
            // Past any grace period a restart imposes.
            clock.advance(TTL * 4);
            let token = authority.acquire(&s1(), &Owner::new("next", 0)).await;
            if let Ok(lease) = token {
                prop_assert!(
                    lease.token() > RECORDS,
                    "{:?} {:?}: token {} reissued",
                    state_damage,
                    checkpoint_damage,
                    lease.token()
                );
            }
        }
        Ok(())
    });
}
