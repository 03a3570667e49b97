//! Appends per second of the ledger service's store (`DurableLedger`): on `MemStorage` (the
//! simulated disk: CPU cost of framing, checksums and the checkpoint) and on `FileStorage` in
//! a temporary directory (real fsyncs: each append syncs the ledger file and then the
//! checkpoint). One session, appends one after another, as one writer does.
//!
//! `cargo bench --bench ledger` (release build). Figures, not assertions.

use std::sync::Arc;

use leasesim::journal::{DurableLedger, Ledger, Record, WriterId};
use leasesim::lease::{Owner, SessionId};
use leasesim::storage::{FileStorage, MemStorage, Storage};

// A benchmark measures real time by definition.
#[allow(clippy::disallowed_types)]
fn appends_per_s(storage: Arc<dyn Storage>, appends: u64) -> f64 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let ledger = DurableLedger::open(storage).await.expect("an empty ledger");
        let session = SessionId::new("bench").expect("a valid id");
        let started = std::time::Instant::now();
        for n in 1..=appends {
            let record = Record::Event {
                writer_id: WriterId {
                    owner: Owner::new("replica-1", 0),
                    journal: 1,
                },
                seq_in_writer: n,
                payload: vec![0xab; 100],
            };
            let seq = ledger.append(&session, n - 1, record).await;
            assert_eq!(seq, Ok(n));
        }
        appends as f64 / started.elapsed().as_secs_f64()
    })
}

fn main() {
    let mem = appends_per_s(Arc::new(MemStorage::new()), 100_000);
    println!("MemStorage:  {mem:>10.0} appends/s (100000 appends of 100-byte events)");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = FileStorage::open(dir.path()).expect("a data directory");
    let real = appends_per_s(Arc::new(file), 2_000);
    println!(
        "FileStorage: {real:>10.0} appends/s (2000 appends, fsync per append, in {})",
        dir.path().display()
    );
}
