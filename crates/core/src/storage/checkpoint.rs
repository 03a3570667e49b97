//! The checkpoint: how far each log of a service was acknowledged, kept in a second small
//! file, so a log that lost whole frames from its end is refused at recovery.
//!
//! A log's own checksums cannot see that its last frames are gone — truncated at a frame
//! boundary, cut to its header or to 0 bytes, deleted, or replaced by an older copy. So after
//! each durable append, and before acknowledging it, a service appends the log's new
//! [`Position`] (frame count, byte length, last `crc`) to its checkpoint file and syncs it.
//! At recovery, [`Checkpoint::recover`] checks that the log still holds a frame at that
//! position with the same length and `crc`, and refuses it
//! ([`StorageError::BehindCheckpoint`], [`StorageError::Corrupt`]) otherwise, leaving the
//! file as it is.
//!
//! # Format
//! A [`log`] file (format version [`log::FORMAT_VERSION`]) whose header frame is
//! [`HEADER`] and whose every later frame is one entry; the last entry for a file wins:
//!
//! ```text
//! entry = name_len: u8 | name: name_len bytes | frames: u64 LE | bytes: u64 LE | crc: u32 LE
//! ```
//!
//! It grows by one small frame per acknowledged write and is rewritten atomically
//! ([`Storage::replace`]) with one entry per file at recovery and every
//! [`COMPACT_AFTER_FRAMES`] entries.
//!
//! # What it does not catch
//! A checkpoint that is missing or empty while logs hold records is refused
//! ([`Checkpoint::require`], [`StorageError::CheckpointMissing`]): the logs could have lost
//! acknowledged frames with it. The operator restores it, or accepts the logs as they are
//! (`--rebuild-checkpoint`): then it is rebuilt from them. A log that lost frames past
//! what was acknowledged (a torn write, never acknowledged) is not an error. Losing the whole
//! directory is a new, empty service.

use std::collections::BTreeMap;

use super::log::{self, Position, Recovered};
use super::{Storage, StorageError};

/// Payload of a checkpoint file's header frame.
pub const HEADER: &[u8] = b"leasesim checkpoint";

/// Entries a checkpoint file may hold beyond one per log before it is rewritten.
pub const COMPACT_AFTER_FRAMES: u64 = 4096;

/// Bytes of an entry besides its name.
const ENTRY_FIXED_BYTES: usize = 1 + 8 + 8 + 4;

/// The acknowledged positions of a service's logs, and the file that keeps them.
#[derive(Debug)]
pub struct Checkpoint {
    file: String,
    /// Where the checkpoint file ends.
    end: Position,
    acked: BTreeMap<String, Position>,
    was_missing: bool,
}

impl Checkpoint {
    /// Reads the checkpoint `file` (cutting a torn last entry: its write was never followed
    /// by an acknowledgement). A missing or empty file is an empty checkpoint
    /// ([`Checkpoint::was_missing`]); nothing is written until [`Checkpoint::rewrite`].
    ///
    /// # Errors
    /// Those of [`log::recover`]; [`StorageError::Corrupt`] for a header or entry this code
    /// did not write.
    pub async fn open(storage: &dyn Storage, file: &str) -> Result<Self, StorageError> {
        let recovered = log::recover(storage, file).await?;
        if recovered.truncated_bytes > 0 {
            tracing::warn!(
                "recovery cut {} bytes from the end of checkpoint `{file}`: a checkpoint write \
                 torn by a crash (never acknowledged)",
                recovered.truncated_bytes
            );
        }
        let acked = decode(file, &recovered)?;
        Ok(Checkpoint {
            file: file.to_string(),
            end: recovered.end(),
            acked,
            was_missing: recovered.frames.is_empty(),
        })
    }

    /// Whether the checkpoint file was missing or empty at open (new, or lost).
    pub fn was_missing(&self) -> bool {
        self.was_missing
    }

    /// Refuses to go on without a checkpoint when `logs` (the logs present, empty or not) is
    /// not empty (`docs/services.md#what-damage-is-caught`): they may have lost acknowledged records with it, and a log cut at a frame
    /// boundary, even to nothing, looks whole. A service writes its checkpoint before it
    /// creates any log, so a crash at any moment never leaves a log without one: only damage
    /// does. With `rebuild`, the operator accepted the logs as they are: a warning, and the
    /// checkpoint is rebuilt from them. (Both files lost is a new, empty service, as losing
    /// the whole directory is.)
    ///
    /// # Errors
    /// [`StorageError::CheckpointMissing`] naming the checkpoint and the logs.
    pub fn require(&self, logs: &[&str], rebuild: bool) -> Result<(), StorageError> {
        if !self.was_missing || logs.is_empty() {
            return Ok(());
        }
        let listed: Vec<String> = logs.iter().take(3).map(|f| format!("`{f}`")).collect();
        let more = logs.len().saturating_sub(listed.len());
        let mut logs = listed.join(", ");
        if more > 0 {
            logs += &format!(" and {more} more logs");
        }
        if rebuild {
            tracing::warn!(
                "checkpoint `{}` is missing: rebuilding it from {logs} as they are \
                 (--rebuild-checkpoint)",
                self.file
            );
            return Ok(());
        }
        Err(StorageError::CheckpointMissing {
            checkpoint: self.file.clone(),
            logs,
        })
    }

    /// The checkpoint file's name.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The files the checkpoint has a position for, sorted.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.acked.keys().map(String::as_str)
    }

    /// The acknowledged position of `file`, if any.
    pub fn acked(&self, file: &str) -> Option<Position> {
        self.acked.get(file).copied()
    }

    /// [`log::recover`] of `file`, refused before anything is cut when the log ends before
    /// its acknowledged position or differs from it there.
    ///
    /// # Errors
    /// Those of [`log::recover`]; [`StorageError::BehindCheckpoint`] when fewer frames than
    /// acknowledged are intact; [`StorageError::Corrupt`] when the frame at the acknowledged
    /// position ends elsewhere or has another `crc`.
    pub async fn recover(
        &self,
        storage: &dyn Storage,
        file: &str,
    ) -> Result<Recovered, StorageError> {
        let recovered = log::read_log(storage, file).await?;
        if let Some(acked) = self.acked(file) {
            self.verify(file, &recovered, acked)?;
        }
        log::cut_torn_tail(storage, file, &recovered).await?;
        Ok(recovered)
    }

    fn verify(&self, file: &str, found: &Recovered, acked: Position) -> Result<(), StorageError> {
        let Some(index) = acked.frames.checked_sub(1) else {
            return Ok(());
        };
        let Some(at) = found.positions.get(index as usize) else {
            return Err(StorageError::BehindCheckpoint {
                file: file.to_string(),
                checkpoint: self.file.clone(),
                expected: acked.describe(),
                found: found.end().describe(),
            });
        };
        if *at == acked {
            return Ok(());
        }
        Err(StorageError::Corrupt {
            file: file.to_string(),
            offset: found.frame_start(index as usize),
            reason: format!(
                "frame seq {index} is not the one acknowledged: checkpoint `{}` records it \
                 ending at byte {} with crc {:#010x}, the file has it ending at byte {} with \
                 crc {:#010x} (the file was replaced by another copy?)",
                self.file, acked.bytes, acked.crc, at.bytes, at.crc
            ),
        })
    }

    /// Records durably that `file` was acknowledged up to `at` (call it after the log's
    /// append has synced, before acknowledging). Rewrites the checkpoint when it has grown by
    /// [`COMPACT_AFTER_FRAMES`] entries.
    ///
    /// # Errors
    /// Those of [`log::append_frames`] and [`Storage::replace`]: the outcome is then unknown,
    /// and the caller must stop acknowledging until a restart.
    pub async fn record(
        &mut self,
        storage: &dyn Storage,
        file: &str,
        at: Position,
    ) -> Result<(), StorageError> {
        if self.acked(file) == Some(at) {
            return Ok(());
        }
        if self.end.frames >= COMPACT_AFTER_FRAMES + self.acked.len() as u64 {
            let mut acked = self.acked.clone();
            acked.insert(file.to_string(), at);
            return self.rewrite(storage, acked).await;
        }
        let entry = encode_entry(file, at);
        let payloads: Vec<&[u8]> = match self.end.frames {
            0 => vec![HEADER, &entry],
            _ => vec![&entry],
        };
        let before = self.end;
        self.end = log::append_frames(storage, &self.file, self.end, &payloads).await?;
        debug_assert_eq!(
            self.end.frames,
            before.frames + payloads.len() as u64,
            "frame bounds: a checkpoint write adds one frame per entry (and the header first)"
        );
        self.acked.insert(file.to_string(), at);
        Ok(())
    }

    /// Replaces the checkpoint file, atomically, with one entry per file of `acked`: at
    /// recovery, once every log has been checked, with the positions found.
    ///
    /// # Errors
    /// Those of [`Storage::replace`].
    pub async fn rewrite(
        &mut self,
        storage: &dyn Storage,
        acked: BTreeMap<String, Position>,
    ) -> Result<(), StorageError> {
        let entries: Vec<Vec<u8>> = acked.iter().map(|(f, at)| encode_entry(f, *at)).collect();
        let payloads: Vec<&[u8]> = std::iter::once(HEADER)
            .chain(entries.iter().map(Vec::as_slice))
            .collect();
        let (bytes, end) = log::encode_log(&self.file, &payloads)?;
        debug_assert_eq!(
            end.frames,
            acked.len() as u64 + 1,
            "frame bounds: a rewritten checkpoint is its header and one entry per log"
        );
        storage.replace(&self.file, &bytes).await?;
        self.end = end;
        self.acked = acked;
        Ok(())
    }
}

fn encode_entry(file: &str, at: Position) -> Vec<u8> {
    let name = u8::try_from(file.len()).expect("storage names are at most 128 bytes");
    let mut entry = Vec::with_capacity(ENTRY_FIXED_BYTES + file.len());
    entry.push(name);
    entry.extend_from_slice(file.as_bytes());
    entry.extend_from_slice(&at.frames.to_le_bytes());
    entry.extend_from_slice(&at.bytes.to_le_bytes());
    entry.extend_from_slice(&at.crc.to_le_bytes());
    debug_assert_eq!(
        entry.len(),
        ENTRY_FIXED_BYTES + file.len(),
        "frame bounds: a checkpoint entry is its fixed fields and the file name"
    );
    debug_assert_eq!(
        decode_entry(&entry),
        Some((file.to_string(), at)),
        "encode/decode round trip: a checkpoint entry decodes to what was encoded"
    );
    entry
}

fn decode_entry(entry: &[u8]) -> Option<(String, Position)> {
    let (&name_len, rest) = entry.split_first()?;
    let name_len = usize::from(name_len);
    if rest.len() != name_len + ENTRY_FIXED_BYTES - 1 {
        return None;
    }
    let name = std::str::from_utf8(&rest[..name_len]).ok()?;
    super::validate_name(name).ok()?;
    let field = |at: usize, n: usize| &rest[name_len + at..name_len + at + n];
    let position = Position {
        frames: u64::from_le_bytes(field(0, 8).try_into().ok()?),
        bytes: u64::from_le_bytes(field(8, 8).try_into().ok()?),
        crc: u32::from_le_bytes(field(16, 4).try_into().ok()?),
    };
    Some((name.to_string(), position))
}

fn decode(file: &str, recovered: &Recovered) -> Result<BTreeMap<String, Position>, StorageError> {
    let corrupt = |index: usize, reason: &str| StorageError::Corrupt {
        file: file.to_string(),
        offset: recovered.frame_start(index),
        reason: format!("frame seq {index}: {reason}"),
    };
    let mut acked = BTreeMap::new();
    let Some((header, entries)) = recovered.frames.split_first() else {
        return Ok(acked);
    };
    if header.as_slice() != HEADER {
        return Err(corrupt(0, "not a checkpoint header"));
    }
    for (index, entry) in entries.iter().enumerate() {
        let (name, at) = decode_entry(entry).ok_or_else(|| corrupt(index + 1, "bad entry"))?;
        debug_assert!(
            super::validate_name(&name).is_ok(),
            "a decoded checkpoint entry names a valid storage file"
        );
        acked.insert(name, at);
    }
    Ok(acked)
}
