//! The framed append-only log: the on-disk format of both services, over any [`Storage`].
//!
//! # Format
//! A log file is a sequence of frames, with no file header of its own:
//!
//! ```text
//! frame   = len: u32 LE | crc: u32 LE | payload: len bytes
//! len     = payload length in bytes, 1..=MAX_FRAME_BYTES
//! crc     = CRC-32 (IEEE, as computed by crc32fast) of the payload
//! ```
//!
//! The first frame of every file is a header the caller supplies, in which it encodes its
//! schema version; every later frame is one record. A frame is never empty, so a run of zero
//! bytes (what some file systems leave after a crash that extended the file but not its
//! data) never parses as frames.
//!
//! # Durability and recovery
//! [`append_frames`] syncs before it returns, so a caller acknowledges only durable records.
//! [`recover`] reads every frame back and cuts a *torn tail* — the last append interrupted by
//! a crash — durably. It cuts only damage that such a crash explains; any other damage is
//! [`StorageError::Corrupt`], because cutting it could drop acknowledged records. The one
//! ambiguity a checksum cannot resolve: a synced last frame that later rots on disk looks
//! exactly like a torn write, and is cut.

use super::{Storage, StorageError};

/// Largest payload of one frame, in bytes (16 MiB; the 8-byte frame header is extra).
///
/// Appends of larger payloads fail with [`StorageError::InvalidFrame`]; at recovery a length
/// field above it cannot have been written by us and is [`StorageError::Corrupt`]. It also
/// bounds what a damaged length field can make recovery read as one frame.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Size of a frame header (`len` and `crc`), in bytes.
pub const FRAME_HEADER_BYTES: usize = 8;

/// What [`recover`] found in a log file.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Recovered {
    /// Every intact frame's payload, in order; the first is the header. Empty when the file
    /// is missing, empty, or held only a torn first frame.
    pub frames: Vec<Vec<u8>>,
    /// Bytes of torn tail cut from the end of the file (0 when it was intact).
    pub truncated_bytes: u64,
}

/// Appends one frame per payload to `file`, in order, and syncs before returning, so the
/// records are durable when it returns `Ok` (acknowledge only then). All frames go in one
/// [`Storage::append`]. An empty `payloads` does nothing.
///
/// # Errors
/// [`StorageError::InvalidFrame`] for an empty payload or one longer than
/// [`MAX_FRAME_BYTES`] (then nothing is written); the errors of [`Storage::append`] and
/// [`Storage::sync`] (then the frames may or may not be durable: the outcome is unknown).
pub async fn append_frames(
    storage: &dyn Storage,
    file: &str,
    payloads: &[&[u8]],
) -> Result<(), StorageError> {
    if payloads.is_empty() {
        return Ok(());
    }
    let bytes = encode_frames(file, payloads)?;
    storage.append(file, &bytes).await?;
    storage.sync(file).await
}

/// Reads every frame of `file` and cuts a torn tail durably.
///
/// A torn tail is a damaged last frame that a crash during an append explains: the frame runs
/// past the end of the file, or it ends exactly at the end of the file with a bad checksum, or
/// everything from it to the end of the file is zero bytes — and in each case no intact frame
/// starts anywhere after its first byte (an intact frame there would mean a damaged length
/// field is hiding acknowledged records; the search checksums at most 64 MiB of candidate
/// payloads, then cuts the tail with a warning). A new or fully torn file recovers to no
/// frames: the caller then writes its header (see [`recover_or_create`]).
///
/// Reads the whole file into memory. Run it once per file at start-up, before any append.
///
/// # Errors
/// [`StorageError::Corrupt`] with the offset of the first damaged frame when the damage is
/// not a torn tail, or a length field exceeds [`MAX_FRAME_BYTES`]; the file is left as it
/// is. The errors of [`Storage::read`] and [`Storage::truncate`].
pub async fn recover(storage: &dyn Storage, file: &str) -> Result<Recovered, StorageError> {
    let bytes = storage.read(file).await?;
    let (frames, end) = scan(file, &bytes)?;
    let truncated_bytes = (bytes.len() - end) as u64;
    if truncated_bytes > 0 {
        storage.truncate(file, end as u64).await?;
    }
    Ok(Recovered {
        frames,
        truncated_bytes,
    })
}

/// [`recover`], then, if the file holds no frame (new, or only a torn header), writes
/// `header` as its first frame, durably. The returned frames always start with the file's
/// header — possibly an older one: checking its schema version is the caller's job.
///
/// # Errors
/// Those of [`recover`] and [`append_frames`].
pub async fn recover_or_create(
    storage: &dyn Storage,
    file: &str,
    header: &[u8],
) -> Result<Recovered, StorageError> {
    let mut recovered = recover(storage, file).await?;
    if recovered.frames.is_empty() {
        append_frames(storage, file, &[header]).await?;
        recovered.frames.push(header.to_vec());
    }
    Ok(recovered)
}

fn encode_frames(file: &str, payloads: &[&[u8]]) -> Result<Vec<u8>, StorageError> {
    let total: usize = payloads.iter().map(|p| FRAME_HEADER_BYTES + p.len()).sum();
    let mut bytes = Vec::with_capacity(total);
    for payload in payloads {
        check_payload(file, payload)?;
        let len = u32::try_from(payload.len()).expect("checked against MAX_FRAME_BYTES");
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        bytes.extend_from_slice(payload);
    }
    Ok(bytes)
}

fn check_payload(file: &str, payload: &[u8]) -> Result<(), StorageError> {
    let reason = if payload.is_empty() {
        "a frame payload is empty; frames are never empty (a zeroed tail must not parse)"
            .to_string()
    } else if payload.len() > MAX_FRAME_BYTES {
        format!(
            "a frame payload is {} bytes; the limit is MAX_FRAME_BYTES = {MAX_FRAME_BYTES}",
            payload.len()
        )
    } else {
        return Ok(());
    };
    Err(StorageError::InvalidFrame {
        file: file.to_string(),
        reason,
    })
}

/// How the bytes at one offset parse.
#[derive(Debug, PartialEq, Eq)]
enum Parse {
    /// An intact frame: its payload range and where the next frame starts.
    Intact {
        payload: (usize, usize),
        next: usize,
    },
    /// The frame runs past the end of the file.
    Incomplete,
    /// A complete frame that fails its check, ending at `end`.
    Damaged { end: usize, reason: String },
    /// A length field above [`MAX_FRAME_BYTES`].
    TooLong { len: usize },
}

/// Parses the frames of `bytes`; returns the payloads and where the intact part ends.
fn scan(file: &str, bytes: &[u8]) -> Result<(Vec<Vec<u8>>, usize), StorageError> {
    let mut frames = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match parse_at(bytes, at) {
            Parse::Intact { payload, next } => {
                frames.push(bytes[payload.0..payload.1].to_vec());
                at = next;
            }
            damaged => {
                check_torn(file, bytes, at, damaged)?;
                break;
            }
        }
    }
    Ok((frames, at))
}

fn parse_at(bytes: &[u8], at: usize) -> Parse {
    let Some(len) = read_u32(bytes, at).map(|v| v as usize) else {
        return Parse::Incomplete;
    };
    if len > MAX_FRAME_BYTES {
        return Parse::TooLong { len };
    }
    let Some(crc) = read_u32(bytes, at + 4) else {
        return Parse::Incomplete;
    };
    let start = at + FRAME_HEADER_BYTES;
    let end = start + len;
    if end > bytes.len() {
        return Parse::Incomplete;
    }
    match frame_problem(&bytes[start..end], crc) {
        None => Parse::Intact {
            payload: (start, end),
            next: end,
        },
        Some(reason) => Parse::Damaged { end, reason },
    }
}

fn frame_problem(payload: &[u8], crc: u32) -> Option<String> {
    if payload.is_empty() {
        return Some("the frame length is 0; frames are never empty".to_string());
    }
    let actual = crc32fast::hash(payload);
    (actual != crc)
        .then(|| format!("checksum mismatch (stored {crc:#010x}, computed {actual:#010x})"))
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let field = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(field.try_into().expect("4 bytes")))
}

/// Accepts the damaged frame at `at` as a torn tail, or explains why it is corruption.
fn check_torn(file: &str, bytes: &[u8], at: usize, parse: Parse) -> Result<(), StorageError> {
    let corrupt = |reason: String| StorageError::Corrupt {
        file: file.to_string(),
        offset: at as u64,
        reason,
    };
    let reason = tail_damage(bytes, at, parse).map_err(corrupt)?;
    match find_hidden_frame(bytes, at + 1) {
        Hidden::None => Ok(()),
        Hidden::At(found) => Err(corrupt(format!(
            "{reason}, yet an intact frame starts at byte {found}: a damaged length field \
             may be hiding acknowledged records"
        ))),
        Hidden::BudgetSpent(checked) => {
            tracing::warn!(
                file,
                offset = at,
                "cutting a torn tail ({reason}) after checking {checked} candidate frames \
                 behind it; the scan budget ran out, so a damaged length field hiding \
                 records cannot be ruled out"
            );
            Ok(())
        }
    }
}

/// What is wrong with the damaged frame at `at` if a torn append explains it (`Ok`), else
/// why it must be corruption (`Err`).
fn tail_damage(bytes: &[u8], at: usize, parse: Parse) -> Result<String, String> {
    // Zeros where an extending write did not land (see the module docs) are torn too.
    let all_zero = || bytes[at..].iter().all(|&b| b == 0);
    match parse {
        Parse::TooLong { len } => Err(format!(
            "the frame length {len} exceeds MAX_FRAME_BYTES = {MAX_FRAME_BYTES}"
        )),
        Parse::Damaged { end, reason } if end < bytes.len() && !all_zero() => {
            let more = bytes.len() - end;
            Err(format!("{reason}, and {more} more bytes follow it"))
        }
        Parse::Damaged { reason, .. } => Ok(reason),
        Parse::Incomplete => Ok("the frame runs past the end of the file".to_string()),
        Parse::Intact { .. } => unreachable!("scan only passes damaged frames"),
    }
}

/// Payload bytes [`find_hidden_frame`] may checksum before it gives up (64 MiB: tens of
/// milliseconds). Without a bound, a payload crafted with plausible length fields every few
/// bytes could make recovery quadratic in the size of the torn tail.
const HIDDEN_SCAN_BUDGET_BYTES: usize = 4 * MAX_FRAME_BYTES;

/// Whether an intact frame starts somewhere behind a damaged one.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Hidden {
    /// No offset from the start of the scan to the end of the file holds an intact frame.
    None,
    /// The first intact frame found starts here.
    At(usize),
    /// The budget ran out after checking this many candidates, none intact.
    BudgetSpent(usize),
}

/// Looks for an intact frame starting at any offset in `from..`.
pub(super) fn find_hidden_frame(bytes: &[u8], from: usize) -> Hidden {
    let mut budget = HIDDEN_SCAN_BUDGET_BYTES;
    let mut checked = 0;
    for at in from..bytes.len() {
        let Some((payload, crc)) = candidate(bytes, at) else {
            continue;
        };
        if payload.len() > budget {
            return Hidden::BudgetSpent(checked);
        }
        budget -= payload.len();
        checked += 1;
        if crc32fast::hash(payload) == crc {
            return Hidden::At(at);
        }
    }
    Hidden::None
}

/// The payload and stored checksum of a well-formed frame header at `at` whose payload fits
/// in the file; the checksum is not verified.
fn candidate(bytes: &[u8], at: usize) -> Option<(&[u8], u32)> {
    let len = read_u32(bytes, at)? as usize;
    let crc = read_u32(bytes, at + 4)?;
    if len == 0 || len > MAX_FRAME_BYTES {
        return None;
    }
    let start = at + FRAME_HEADER_BYTES;
    Some((bytes.get(start..start + len)?, crc))
}
