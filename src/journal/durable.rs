//! `DurableLedger`: the ledger service's store — one framed log file per session on a
//! [`Storage`], each record durable before its append is acknowledged.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use prost::Message;
use tokio::sync::Mutex;

use super::{Entry, Ledger, LedgerError, Record, Seq};
use crate::lease::SessionId;
use crate::mutant::Mutant;
use crate::remote::{proto, wire};
use crate::storage::{Storage, StorageError, log, safe_name};

/// Schema version of ledger files.
pub const LEDGER_SCHEMA_VERSION: u32 = 1;

/// Suffix of ledger file names (`<safe session name>.ledger`).
pub const LEDGER_SUFFIX: &str = ".ledger";

const LEDGER_KIND: &str = "ledger";

/// A [`Ledger`] whose records survive crashes: appends are CAS on the tip as in
/// [`super::MemLedger`], and each record is synced to its session's file before the append
/// returns. Appends are serialised across sessions (one writer, one sync at a time).
#[derive(Debug)]
pub struct DurableLedger {
    storage: Arc<dyn Storage>,
    /// Bytes of torn tail recovery cut, over all ledger files, at open.
    recovered_cut_bytes: u64,
    /// A planted bug ([`Mutant::AppendIgnoresExpectedTip`], [`Mutant::FenceWrittenBlind`]),
    /// or `None` for the correct code.
    mutant: Option<Mutant>,
    logs: Mutex<BTreeMap<SessionId, SessionLog>>,
}

#[derive(Debug)]
struct SessionLog {
    file: String,
    records: Vec<Record>,
    /// Set when a write failed: the file may end in a partial frame, so nothing more is
    /// appended to it until a restart has recovered it.
    broken: Option<String>,
}

impl DurableLedger {
    /// Recovers every ledger file on `storage` (cutting torn tails).
    ///
    /// A damaged last frame is cut as a torn tail (the log cannot tell a torn write from a
    /// frame that rotted on disk): each cut is logged as a warning naming the file, and the
    /// total is reported by [`DurableLedger::recovered_cut_bytes`].
    ///
    /// # Errors
    /// Storage errors; [`StorageError::Corrupt`] for a file this version cannot read, or
    /// whose name does not match the session it holds.
    pub async fn open(storage: Arc<dyn Storage>) -> Result<Self, StorageError> {
        let mut logs = BTreeMap::new();
        let mut recovered_cut_bytes = 0;
        for file in storage.list().await? {
            if !file.ends_with(LEDGER_SUFFIX) {
                continue;
            }
            let recovered = log::recover(&*storage, &file).await?;
            warn_if_cut(&file, recovered.truncated_bytes);
            recovered_cut_bytes += recovered.truncated_bytes;
            if recovered.frames.is_empty() {
                continue; // a file whose header never became durable: nothing was acked
            }
            let (session, records) = decode_file(&file, &recovered.frames)?;
            let log = SessionLog {
                file,
                records,
                broken: None,
            };
            logs.insert(session, log);
        }
        Ok(DurableLedger {
            storage,
            recovered_cut_bytes,
            mutant: None,
            logs: Mutex::new(logs),
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
    /// total (0 when every file was intact). Non-zero after a crash during an append — or
    /// when a last frame was damaged on disk, which the log format cannot tell apart.
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
        log::recover_or_create(&*self.storage, &file, &header)
            .await
            .map_err(|e| LedgerError::Unavailable {
                reason: format!("cannot create the ledger file of {name}: {e}"),
            })?;
        Ok(SessionLog {
            file,
            records: Vec::new(),
            broken: None,
        })
    }

    /// [`Mutant::FenceWrittenBlind`]: writes `record` at `seq` whatever is there — the record
    /// already committed at `seq` is overwritten (the file is cut before its frame and the
    /// rest rewritten) — and acknowledges `seq`.
    async fn put_at(
        &self,
        log: &mut SessionLog,
        seq: Seq,
        record: Record,
    ) -> Result<Seq, LedgerError> {
        let index = (seq - 1) as usize;
        let mut records = log.records.clone();
        records[index] = record;
        let frames: Vec<Vec<u8>> = records[index..]
            .iter()
            .map(|r| wire::record_to_wire(r).encode_to_vec())
            .collect();
        let written = async {
            let bytes = self.storage.read(&log.file).await?;
            // Frame 0 is the header, frame n the record at n: cut before frame `seq`.
            let mut offset = 0usize;
            for _ in 0..seq {
                let len = bytes
                    .get(offset..offset + 4)
                    .map_or(0, |l| u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize);
                offset += log::FRAME_HEADER_BYTES + len;
            }
            self.storage.truncate(&log.file, offset as u64).await?;
            let payloads: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
            log::append_frames(&*self.storage, &log.file, &payloads).await
        };
        if let Err(error) = written.await {
            let reason = format!("ledger write failed: {error}; restart the service");
            log.broken = Some(reason.clone());
            return Err(LedgerError::Unknown { reason });
        }
        log.records = records;
        Ok(seq)
    }
}

#[async_trait]
impl Ledger for DurableLedger {
    async fn tip(&self, name: &SessionId) -> Result<Seq, LedgerError> {
        let logs = self.logs.lock().await;
        Ok(logs.get(name).map_or(0, |log| log.records.len() as Seq))
    }

    async fn append(
        &self,
        name: &SessionId,
        expected: Seq,
        record: Record,
    ) -> Result<Seq, LedgerError> {
        let mut logs = self.logs.lock().await;
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
            return self.put_at(log, expected + 1, record).await;
        }
        if actual != expected && !blind {
            return Err(LedgerError::Conflict { actual });
        }
        let frame = wire::record_to_wire(&record).encode_to_vec();
        if let Err(error) = log::append_frames(&*self.storage, &log.file, &[&frame]).await {
            let reason = format!("ledger write failed: {error}; restart the service");
            log.broken = Some(reason.clone());
            return Err(LedgerError::Unknown { reason });
        }
        log.records.push(record);
        Ok(actual + 1)
    }

    async fn read(&self, name: &SessionId, from: Seq) -> Result<Vec<Entry>, LedgerError> {
        let logs = self.logs.lock().await;
        let Some(log) = logs.get(name) else {
            return Ok(Vec::new());
        };
        let first = from.max(1);
        let entries = (first..)
            .zip(log.records.iter().skip((first - 1) as usize))
            .map(|(seq, record)| Entry {
                seq,
                record: record.clone(),
            })
            .collect();
        Ok(entries)
    }
}

/// Tells the operator that recovery cut `bytes` from the end of `file`: usually an append
/// torn by a crash (never acknowledged), but a frame damaged on disk looks the same, and then
/// an acknowledged record is gone.
fn warn_if_cut(file: &str, bytes: u64) {
    if bytes > 0 {
        tracing::warn!(
            "recovery cut {bytes} bytes from the end of ledger file `{file}`: an append torn \
             by a crash, or a last record damaged on disk (the log format cannot tell them \
             apart, and a damaged record may have been acknowledged); if the service did not \
             crash, check the disk"
        );
    }
}

/// The session and records of a recovered ledger file.
fn decode_file(file: &str, frames: &[Vec<u8>]) -> Result<(SessionId, Vec<Record>), StorageError> {
    let corrupt = |reason: String| StorageError::Corrupt {
        file: file.to_owned(),
        offset: 0,
        reason,
    };
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
                .map_err(|e| corrupt(format!("record {}: {e}", index + 1)))
        })
        .collect::<Result<_, _>>()?;
    Ok((session, records))
}
