//! `DurableLedger`: the ledger service's store — one framed log file per session on a
//! [`Storage`], each record durable before its append is acknowledged.
//!
//! # On disk
//! - `<safe session name>.ledger`: a [`log`] file (format version [`log::FORMAT_VERSION`])
//!   whose frame 0 is a `FileHeader` (kind `ledger`, version [`LEDGER_SCHEMA_VERSION`], the
//!   session id) and whose frame `n` is the record at seq `n`: each frame carries its seq and
//!   the checksum of the frame before, so a missing, duplicated or swapped record is
//!   [`StorageError::Corrupt`] at its offset, never renumbered.
//! - [`LEDGER_CHECKPOINT`]: a [checkpoint](leasesim_core::storage::checkpoint) of every ledger file's last acknowledged seq, byte
//!   length and checksum, synced after the record and before the acknowledgement, so a ledger
//!   file cut at a frame boundary, cut to its header or to 0 bytes, or deleted is refused
//!   ([`StorageError::BehindCheckpoint`]) instead of losing acknowledged records.
//!
//! Files of format version 1 (before the chained frames) are refused with
//! [`StorageError::Version`], not upgraded: see [`log`].

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use prost::Message;
use tokio::sync::Mutex;

use crate::{proto, wire};
use leasesim_core::journal::{Entry, Ledger, LedgerError, LedgerResult, Record, Seq};
use leasesim_core::lease::SessionId;
use leasesim_core::mutant::Mutant;
use leasesim_core::storage::checkpoint::Checkpoint;
use leasesim_core::storage::log::Position;
use leasesim_core::storage::{Storage, StorageError, log, safe_name};

/// Schema version of ledger files' `FileHeader` (2: the chained log format).
pub const LEDGER_SCHEMA_VERSION: u32 = 2;

/// The ledger's [checkpoint](leasesim_core::storage::checkpoint) file (it does not end in [`LEDGER_SUFFIX`]).
pub const LEDGER_CHECKPOINT: &str = "ledger-checkpoint.log";

/// Suffix of ledger file names (`<safe session name>.ledger`).
pub const LEDGER_SUFFIX: &str = ".ledger";

const LEDGER_KIND: &str = "ledger";

/// A [`Ledger`] whose records survive crashes: appends are CAS on the tip as in
/// [`leasesim_core::journal::MemLedger`], and each record is synced to its session's file before the append
/// returns. Appends are serialised across sessions (one writer, one sync at a time).
#[derive(Debug)]
pub struct DurableLedger {
    storage: Arc<dyn Storage>,
    /// Bytes of torn tail recovery cut, over all ledger files, at open.
    recovered_cut_bytes: u64,
    /// A planted bug ([`Mutant::AppendIgnoresExpectedTip`], [`Mutant::FenceWrittenBlind`]),
    /// or `None` for the correct code.
    mutant: Option<Mutant>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    logs: BTreeMap<SessionId, SessionLog>,
    checkpoint: Checkpoint,
}

#[derive(Debug)]
struct SessionLog {
    file: String,
    records: Vec<Record>,
    /// Where the file ends: the next record's frame goes there.
    end: Position,
    /// Set when a write failed: the file may end in a partial frame, so nothing more is
    /// appended to it until a restart has recovered it.
    broken: Option<String>,
}

impl DurableLedger {
    /// Recovers every ledger file on `storage` (cutting torn tails), checks each against the
    /// checkpoint [`LEDGER_CHECKPOINT`], then rewrites the checkpoint with what was found.
    ///
    /// A damaged last frame is cut as a torn tail (the log cannot tell a torn write from a
    /// frame that rotted on disk): each cut is logged as a warning naming the file, and the
    /// total is reported by [`DurableLedger::recovered_cut_bytes`]. A cut below what was
    /// acknowledged is refused by the checkpoint.
    ///
    /// # Errors
    /// Storage errors; [`StorageError::Version`] for a file of another format version;
    /// [`StorageError::Corrupt`] for a damaged or misplaced frame, a file this version cannot
    /// read, or whose name does not match the session it holds;
    /// [`StorageError::BehindCheckpoint`] for a ledger file that ends before its
    /// acknowledged seq (truncated or deleted). Nothing is changed on a refusal.
    pub async fn open(storage: Arc<dyn Storage>) -> Result<Self, StorageError> {
        Self::open_with(storage, false).await
    }

    /// As [`DurableLedger::open`]; with `rebuild_checkpoint` (`serve ledger
    /// --rebuild-checkpoint`), a missing checkpoint is rebuilt from the ledger files as they
    /// are instead of refused ([`Checkpoint::require`]).
    ///
    /// # Errors
    /// As [`DurableLedger::open`]; [`StorageError::CheckpointMissing`] when the checkpoint is
    /// missing while ledger files exist and `rebuild_checkpoint` is off.
    pub async fn open_with(
        storage: Arc<dyn Storage>,
        rebuild_checkpoint: bool,
    ) -> Result<Self, StorageError> {
        let mut checkpoint = Checkpoint::open(&*storage, LEDGER_CHECKPOINT).await?;
        let mut files: Vec<String> = storage.list().await?;
        files.retain(|f| f.ends_with(LEDGER_SUFFIX));
        // A file the checkpoint knows but the directory lacks was deleted: recover it too,
        // so the checkpoint refuses it.
        files.extend(checkpoint.files().map(str::to_string));
        files.sort();
        files.dedup();
        // Before anything is cut. The checkpoint is rewritten below before any ledger file is
        // made, so a ledger file without one is damage, not a crash.
        let present: Vec<&str> = files.iter().map(String::as_str).collect();
        checkpoint.require(&present, rebuild_checkpoint)?;
        let mut recovered_files = Vec::new();
        for file in files {
            let recovered = checkpoint.recover(&*storage, &file).await?;
            recovered_files.push((file, recovered));
        }
        let mut logs = BTreeMap::new();
        let mut positions = BTreeMap::new();
        let mut recovered_cut_bytes = 0;
        for (file, recovered) in recovered_files {
            warn_if_cut(&file, recovered.truncated_bytes);
            recovered_cut_bytes += recovered.truncated_bytes;
            if recovered.frames.is_empty() {
                continue; // a file whose header never became durable: nothing was acked
            }
            let (session, records) = decode_file(&file, &recovered)?;
            debug_assert_eq!(
                recovered.end().frames,
                records.len() as u64 + 1,
                "frame bounds: frame 0 of {file} is its header and frame n its record at seq n \
                 (docs/services.md#what-is-on-disk)"
            );
            positions.insert(file.clone(), recovered.end());
            let log = SessionLog {
                file,
                records,
                end: recovered.end(),
                broken: None,
            };
            logs.insert(session, log);
        }
        checkpoint.rewrite(&*storage, positions).await?;
        Ok(DurableLedger {
            storage,
            recovered_cut_bytes,
            mutant: None,
            state: Mutex::new(State { logs, checkpoint }),
        })
    }

    /// The same ledger running `mutant` (a planted bug), or the correct code for `None`.
    /// It honours [`Mutant::AppendIgnoresExpectedTip`] and [`Mutant::FenceWrittenBlind`];
    /// any other mutant leaves it correct.
    pub fn with_mutant(mut self, mutant: Option<Mutant>) -> Self {
        self.mutant = mutant;
        self
    }

    /// Bytes of torn tail cut from the ends of the ledger files when this ledger opened, in
    /// total (0 when every file was intact). Non-zero after a crash during an append, or a
    /// last frame damaged on disk that was never acknowledged (a damaged acknowledged frame is
    /// refused by the checkpoint instead).
    pub fn recovered_cut_bytes(&self) -> u64 {
        self.recovered_cut_bytes
    }

    async fn create(&self, name: &SessionId) -> Result<SessionLog, LedgerError> {
        let file = safe_name(name.as_str(), LEDGER_SUFFIX);
        let header = proto::FileHeader {
            v: LEDGER_SCHEMA_VERSION,
            kind: LEDGER_KIND.into(),
            session: name.as_str().to_owned(),
        }
        .encode_to_vec();
        let recovered = log::recover_or_create(&*self.storage, &file, &header)
            .await
            .map_err(|e| LedgerError::Unavailable {
                reason: format!("cannot create the ledger file of {name}: {e}"),
            })?;
        debug_assert!(
            !recovered.frames.is_empty(),
            "recover_or_create leaves at least the header frame in {file}"
        );
        if recovered.frames.len() != 1 {
            // Only a file with no durable header was skipped at open (see `open`).
            return Err(LedgerError::Unavailable {
                reason: format!(
                    "the ledger file {file} of {name} appeared with {} frames while the \
                     service ran; restart the service",
                    recovered.frames.len()
                ),
            });
        }
        Ok(SessionLog {
            file,
            records: Vec::new(),
            end: recovered.end(),
            broken: None,
        })
    }

    /// [`Mutant::FenceWrittenBlind`]: writes `record` at `seq` whatever is there — the record
    /// already committed at `seq` is overwritten (the file is cut before its frame and the
    /// rest rewritten) — and acknowledges `seq`.
    async fn put_at(
        &self,
        log: &mut SessionLog,
        checkpoint: &mut Checkpoint,
        seq: Seq,
        record: Record,
    ) -> LedgerResult<Seq> {
        assert!(
            seq >= 1 && seq as usize <= log.records.len(),
            "a blind put lands on a committed record: seq {seq} of 1..={}",
            log.records.len()
        );
        let index = (seq - 1) as usize;
        let mut records = log.records.clone();
        records[index] = record;
        let frames: Vec<Vec<u8>> = records[index..]
            .iter()
            .map(|r| wire::record_to_wire(r).encode_to_vec())
            .collect();
        let written = async {
            let recovered = log::read_log(&*self.storage, &log.file).await?;
            // Frame 0 is the header, frame n the record at n: cut before frame `seq`.
            let at = recovered.positions[index];
            self.storage.truncate(&log.file, at.bytes).await?;
            let payloads: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
            let end = log::append_frames(&*self.storage, &log.file, at, &payloads).await?;
            checkpoint.record(&*self.storage, &log.file, end).await?;
            Ok::<_, StorageError>(end)
        };
        match written.await {
            Ok(end) => log.end = end,
            Err(error) => {
                let reason = format!("ledger write failed: {error}; restart the service");
                log.broken = Some(reason.clone());
                return Err(LedgerError::Unknown { reason });
            }
        }
        log.records = records;
        Ok(seq)
    }

    /// Appends `record` to `log` durably and checkpoints it; on failure the log is broken.
    async fn write(
        &self,
        log: &mut SessionLog,
        checkpoint: &mut Checkpoint,
        record: Record,
    ) -> Result<(), LedgerError> {
        let frame = wire::record_to_wire(&record).encode_to_vec();
        let written = async {
            let end = log::append_frames(&*self.storage, &log.file, log.end, &[&frame]).await?;
            checkpoint.record(&*self.storage, &log.file, end).await?;
            Ok::<_, StorageError>(end)
        };
        let before = log.end;
        match written.await {
            Ok(end) => {
                assert!(
                    end.frames == before.frames + 1 && end.bytes > before.bytes,
                    "frame bounds: one append adds one frame to {} ({before:?} then {end:?})",
                    log.file
                );
                log.end = end;
                log.records.push(record);
                assert_eq!(
                    log.end.frames,
                    log.records.len() as u64 + 1,
                    "seq continuity (docs/contracts.md#journal): frame n of {} holds the record at \
                     seq n",
                    log.file
                );
                Ok(())
            }
            Err(error) => {
                let reason = format!("ledger write failed: {error}; restart the service");
                log.broken = Some(reason.clone());
                Err(LedgerError::Unknown { reason })
            }
        }
    }
}

#[async_trait]
impl Ledger for DurableLedger {
    async fn tip(&self, name: &SessionId) -> LedgerResult<Seq> {
        let state = self.state.lock().await;
        Ok(state
            .logs
            .get(name)
            .map_or(0, |log| log.records.len() as Seq))
    }

    async fn append(&self, name: &SessionId, expected: Seq, record: Record) -> LedgerResult<Seq> {
        let mut state = self.state.lock().await;
        let State { logs, checkpoint } = &mut *state;
        let blind = self.mutant == Some(Mutant::AppendIgnoresExpectedTip);
        if expected != 0 && !blind && !logs.contains_key(name) {
            return Err(LedgerError::Conflict { actual: 0 });
        }
        if !logs.contains_key(name) {
            let log = self.create(name).await?;
            logs.insert(name.clone(), log);
        }
        let log = logs.get_mut(name).expect("inserted above");
        if let Some(reason) = &log.broken {
            return Err(LedgerError::Unavailable {
                reason: reason.clone(),
            });
        }
        let actual = log.records.len() as Seq;
        if expected < actual
            && self.mutant == Some(Mutant::FenceWrittenBlind)
            && matches!(record, Record::Fence { .. })
        {
            return self.put_at(log, checkpoint, expected + 1, record).await;
        }
        if actual != expected && !blind {
            return Err(LedgerError::Conflict { actual });
        }
        self.write(log, checkpoint, record).await?;
        debug_assert_eq!(
            log.records.len() as Seq,
            actual + 1,
            "seq continuity (docs/contracts.md#journal): the tip after an append at {actual}"
        );
        Ok(actual + 1)
    }

    async fn read(&self, name: &SessionId, from: Seq) -> LedgerResult<Vec<Entry>> {
        let state = self.state.lock().await;
        let Some(log) = state.logs.get(name) else {
            return Ok(Vec::new());
        };
        Ok(Entry::read_from(&log.records, from))
    }
}

/// Tells the operator that recovery cut `bytes` from the end of `file`: an append torn by
/// a crash, never acknowledged (the checkpoint refuses a cut below what was acknowledged),
/// unless the checkpoint itself was missing.
fn warn_if_cut(file: &str, bytes: u64) {
    if bytes > 0 {
        tracing::warn!(target: "leasesim::journal::durable",
            "recovery cut {bytes} bytes from the end of ledger file `{file}`: an append torn \
             by a crash or a last frame damaged on disk, in either case past the last \
             acknowledged record (the checkpoint shows those intact); if the service did not \
             crash, check the disk"
        );
    }
}

/// The session and records of a recovered ledger file.
fn decode_file(
    file: &str,
    recovered: &log::Recovered,
) -> Result<(SessionId, Vec<Record>), StorageError> {
    let frames = &recovered.frames;
    let corrupt_at = |index: usize, reason: String| StorageError::Corrupt {
        file: file.to_owned(),
        offset: recovered.frame_start(index),
        reason,
    };
    let corrupt = |reason: String| corrupt_at(0, reason);
    let header = proto::FileHeader::decode(frames[0].as_slice())
        .map_err(|e| corrupt(format!("bad header: {e}")))?;
    if header.v != LEDGER_SCHEMA_VERSION || header.kind != LEDGER_KIND {
        return Err(corrupt(format!(
            "expected {LEDGER_KIND} version {LEDGER_SCHEMA_VERSION}, found kind {:?} version {}",
            header.kind, header.v
        )));
    }
    let session = SessionId::new(header.session).map_err(|e| corrupt(e.to_string()))?;
    if safe_name(session.as_str(), LEDGER_SUFFIX) != file {
        return Err(corrupt(format!(
            "holds session {session}, whose file name differs"
        )));
    }
    let records = frames[1..]
        .iter()
        .enumerate()
        .map(|(index, frame)| {
            let record = proto::Record::decode(frame.as_slice()).map_err(|e| e.to_string());
            record
                .and_then(|r| wire::record(Some(r)).map_err(|e| e.0))
                .map_err(|e| corrupt_at(index + 1, format!("record {}: {e}", index + 1)))
        })
        .collect::<Result<_, _>>()?;
    Ok((session, records))
}
