//! The framed append-only log: the on-disk format of both services, over any [`Storage`].
//!
//! # Format (version 2)
//! ```text
//! file    = magic: "LSLG" | version: u32 LE (= FORMAT_VERSION) | frame*
//! frame   = len: u32 LE | seq: u64 LE | prev_crc: u32 LE | crc: u32 LE | payload: len bytes
//! len     = payload length in bytes, 1..=MAX_FRAME_BYTES
//! seq     = the frame's position: 0 for the first frame, then 1, 2, … with no gap
//! prev_crc= the `crc` of the frame before (0 for frame 0): the frames form a chain
//! crc     = CRC-32 (IEEE, crc32fast) of len | seq | prev_crc | payload, as stored
//! ```
//!
//! The first frame (seq 0) is a header the caller supplies, in which it encodes its schema
//! version; every later frame is one record, so a ledger's record at seq `n` is frame `n`. A
//! frame is never empty, so a run of zero bytes (what some file systems leave after a crash
//! that extended the file but not its data) never parses as frames. The magic and version are
//! written with the header frame, in one append.
//!
//! Because each frame names its position and the checksum of the frame before, a frame that
//! is missing, duplicated or out of order is *intact* (its own checksum holds) but *misplaced*
//! (its `seq` or `prev_crc` is not the one expected there): that is always
//! [`StorageError::Corrupt`] with the frame's offset, never renumbered.
//!
//! # Older files
//! Version 1 (leasesim before the chained format: no magic, `len | crc | payload` frames) is
//! not read: [`recover`] refuses it with [`StorageError::Version`], naming the file and the
//! version. Keep running the older leasesim on that directory, or start the service on a new
//! directory (a new, empty service).
//!
//! # Durability and recovery
//! [`append_frames`] syncs before it returns, so a caller acknowledges only durable records.
//! [`recover`] reads every frame back and cuts a *torn tail* — the last append interrupted by
//! a crash — durably. It cuts only damage that such a crash explains; any other damage is
//! [`StorageError::Corrupt`], because cutting it could drop acknowledged records. A log
//! cannot see that whole frames were cut from its end: [`super::checkpoint`] keeps, in a
//! second file, how far each log was acknowledged, and refuses a log that ends before that.
//! The one ambiguity a checksum cannot resolve: a synced last frame that later rots on disk
//! looks exactly like a torn write, and is cut (the checkpoint then catches it, unless the
//! frame's acknowledgement was never sent).

use super::{Storage, StorageError};

/// Version of the log format this code writes and reads (see the module docs).
pub const FORMAT_VERSION: u32 = 2;

/// The first four bytes of every log file of version 2 or later.
pub const MAGIC: [u8; 4] = *b"LSLG";

/// Size of the file header (magic and version), in bytes.
pub const FILE_HEADER_BYTES: usize = 8;

/// Largest payload of one frame, in bytes (16 MiB; the frame header is extra).
///
/// Appends of larger payloads fail with [`StorageError::InvalidFrame`]; at recovery a length
/// field above it cannot have been written by us and is [`StorageError::Corrupt`]. It also
/// bounds what a damaged length field can make recovery read as one frame.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Size of a frame header (`len`, `seq`, `prev_crc` and `crc`), in bytes.
pub const FRAME_HEADER_BYTES: usize = 20;

/// Where a log ends after some frames: the next append goes there.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Position {
    /// Frames before this position (the next frame's `seq`).
    pub frames: u64,
    /// Bytes before this position (the file's length when it ends here).
    pub bytes: u64,
    /// `crc` of the last frame (0 when there is none).
    pub crc: u32,
}

impl Position {
    /// An empty file.
    pub const EMPTY: Position = Position {
        frames: 0,
        bytes: 0,
        crc: 0,
    };

    /// `seq` of the last frame before this position, for messages ("no frame" when none).
    pub fn describe(&self) -> String {
        match self.frames {
            0 => format!("no frame ({} bytes)", self.bytes),
            n => format!("frame seq {} ending at byte {}", n - 1, self.bytes),
        }
    }
}

/// What [`recover`] found in a log file.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Recovered {
    /// Every intact frame's payload, in order; the first is the header. Empty when the file
    /// is missing, empty, or held only a torn first frame.
    pub frames: Vec<Vec<u8>>,
    /// The position after each frame of `frames`, in order.
    pub positions: Vec<Position>,
    /// Bytes of torn tail cut from the end of the file (0 when it was intact); from
    /// [`read_log`], bytes of torn tail still to cut.
    pub truncated_bytes: u64,
}

impl Recovered {
    /// Where the intact frames end: the next append goes there.
    pub fn end(&self) -> Position {
        self.positions.last().copied().unwrap_or(Position::EMPTY)
    }

    /// Byte offset where frame `seq` (an index into `frames`) starts, for messages.
    pub fn frame_start(&self, seq: usize) -> u64 {
        match seq.checked_sub(1) {
            None => FILE_HEADER_BYTES as u64,
            Some(before) => self.positions.get(before).map_or(0, |p| p.bytes),
        }
    }
}

/// Appends one frame per payload to `file`, which must end at `at` (the [`Recovered::end`]
/// of its recovery, or what the previous append returned), and syncs before returning, so
/// the records are durable when it returns `Ok` (acknowledge only then). Frames get the
/// sequence numbers from `at.frames` on, chained from `at.crc`; at [`Position::EMPTY`] the
/// file header (magic, version) goes first. All bytes go in one [`Storage::append`]. An
/// empty `payloads` does nothing. Returns where the log ends now.
///
/// # Errors
/// [`StorageError::InvalidFrame`] for an empty payload or one longer than
/// [`MAX_FRAME_BYTES`] (then nothing is written); the errors of [`Storage::append`] and
/// [`Storage::sync`] (then the frames may or may not be durable: the outcome is unknown).
pub async fn append_frames(
    storage: &dyn Storage,
    file: &str,
    at: Position,
    payloads: &[&[u8]],
) -> Result<Position, StorageError> {
    if payloads.is_empty() {
        return Ok(at);
    }
    let (bytes, end) = encode_frames(file, at, payloads)?;
    debug_assert!(
        end.frames == at.frames + payloads.len() as u64
            && end.bytes == at.bytes + bytes.len() as u64,
        "frame bounds: appending {} frames of {} bytes at {at:?} ends at {end:?}",
        payloads.len(),
        bytes.len()
    );
    storage.append(file, &bytes).await?;
    storage.sync(file).await?;
    Ok(end)
}

/// Reads every frame of `file` without changing it; [`Recovered::truncated_bytes`] says how
/// much torn tail [`cut_torn_tail`] would cut.
///
/// A torn tail is a damaged last frame that a crash during an append explains: the frame runs
/// past the end of the file, or it ends exactly at the end of the file with a bad checksum, or
/// everything from it to the end of the file is zero bytes — and in each case no intact frame
/// starts anywhere after its first byte (an intact frame there would mean a damaged length
/// field is hiding acknowledged records; the search checksums at most 64 MiB of candidate
/// payloads, then cuts the tail with a warning). A frame that is intact but misplaced (wrong
/// `seq` or `prev_crc`) is never torn. A file holding only a prefix of the file header, or
/// only a torn first frame, recovers to no frames.
///
/// Reads the whole file into memory. Run it once per file at start-up, before any append.
///
/// # Errors
/// [`StorageError::Version`] for a file of another format version;
/// [`StorageError::Corrupt`] with the offset of the first damaged frame when the damage is
/// not a torn tail, or a length field exceeds [`MAX_FRAME_BYTES`]. The errors of
/// [`Storage::read`].
pub async fn read_log(storage: &dyn Storage, file: &str) -> Result<Recovered, StorageError> {
    let bytes = storage.read(file).await?;
    scan(file, &bytes)
}

/// Cuts the torn tail [`read_log`] found, durably.
///
/// # Errors
/// The errors of [`Storage::truncate`].
pub async fn cut_torn_tail(
    storage: &dyn Storage,
    file: &str,
    recovered: &Recovered,
) -> Result<(), StorageError> {
    if recovered.truncated_bytes > 0 {
        storage.truncate(file, recovered.end().bytes).await?;
    }
    Ok(())
}

/// [`read_log`], then [`cut_torn_tail`].
///
/// # Errors
/// Those of [`read_log`] (then the file is left as it is) and [`cut_torn_tail`].
pub async fn recover(storage: &dyn Storage, file: &str) -> Result<Recovered, StorageError> {
    let recovered = read_log(storage, file).await?;
    cut_torn_tail(storage, file, &recovered).await?;
    Ok(recovered)
}

/// If `recovered` (of `file`) holds no frame (new, or only a torn header), writes `header` as
/// its first frame, durably, and adds it to `recovered`. The frames then always start with
/// the file's header — possibly an older one: checking its schema version is the caller's.
///
/// # Errors
/// Those of [`append_frames`].
pub async fn create_if_empty(
    storage: &dyn Storage,
    file: &str,
    recovered: &mut Recovered,
    header: &[u8],
) -> Result<(), StorageError> {
    if recovered.frames.is_empty() {
        let end = append_frames(storage, file, Position::EMPTY, &[header]).await?;
        recovered.frames.push(header.to_vec());
        recovered.positions.push(end);
        debug_assert_eq!(
            end.frames, 1,
            "frame bounds: a new log holds its header as frame 0 (docs/services.md#what-is-on-disk)"
        );
    }
    Ok(())
}

/// [`recover`], then [`create_if_empty`].
///
/// # Errors
/// Those of [`recover`] and [`append_frames`].
pub async fn recover_or_create(
    storage: &dyn Storage,
    file: &str,
    header: &[u8],
) -> Result<Recovered, StorageError> {
    let mut recovered = recover(storage, file).await?;
    create_if_empty(storage, file, &mut recovered, header).await?;
    Ok(recovered)
}

fn file_header() -> [u8; FILE_HEADER_BYTES] {
    let mut header = [0; FILE_HEADER_BYTES];
    header[..4].copy_from_slice(&MAGIC);
    header[4..].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    header
}

fn encode_frames(
    file: &str,
    at: Position,
    payloads: &[&[u8]],
) -> Result<(Vec<u8>, Position), StorageError> {
    let total: usize = payloads.iter().map(|p| FRAME_HEADER_BYTES + p.len()).sum();
    let mut bytes = Vec::with_capacity(total + FILE_HEADER_BYTES);
    if at.frames == 0 {
        debug_assert_eq!(at, Position::EMPTY, "frame 0 starts an empty file");
        bytes.extend_from_slice(&file_header());
    }
    let mut end = at;
    for payload in payloads {
        check_payload(file, payload)?;
        debug_assert!(
            (1..=MAX_FRAME_BYTES).contains(&payload.len()),
            "frame bounds: a payload is 1..=MAX_FRAME_BYTES bytes, not {}",
            payload.len()
        );
        let len = u32::try_from(payload.len()).expect("checked against MAX_FRAME_BYTES");
        let fields = FrameFields {
            len,
            seq: end.frames,
            prev_crc: end.crc,
        };
        let crc = fields.crc(payload);
        let frame_start = bytes.len();
        fields.write(&mut bytes, crc);
        bytes.extend_from_slice(payload);
        debug_assert_eq!(
            bytes.len() - frame_start,
            FRAME_HEADER_BYTES + payload.len(),
            "frame bounds: a frame is its {FRAME_HEADER_BYTES}-byte header and its payload"
        );
        end = Position {
            frames: end.frames + 1,
            bytes: at.bytes + bytes.len() as u64,
            crc,
        };
    }
    debug_assert_eq!(
        bytes.len(),
        total + if at.frames == 0 { FILE_HEADER_BYTES } else { 0 },
        "frame bounds: the encoded size is the frames' headers and payloads (and the file \
         header before frame 0)"
    );
    debug_assert!(
        end.frames == at.frames + payloads.len() as u64,
        "seq continuity: frames are numbered from {} with no gap \
         (docs/services.md#what-is-on-disk)",
        at.frames
    );
    Ok((bytes, end))
}

/// The fields of a frame header before its `crc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FrameFields {
    len: u32,
    seq: u64,
    prev_crc: u32,
}

impl FrameFields {
    /// The checksum of a frame with these fields and `payload`.
    fn crc(&self, payload: &[u8]) -> u32 {
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&self.len.to_le_bytes());
        hasher.update(&self.seq.to_le_bytes());
        hasher.update(&self.prev_crc.to_le_bytes());
        hasher.update(payload);
        hasher.finalize()
    }

    fn write(&self, bytes: &mut Vec<u8>, crc: u32) {
        let start = bytes.len();
        bytes.extend_from_slice(&self.len.to_le_bytes());
        bytes.extend_from_slice(&self.seq.to_le_bytes());
        bytes.extend_from_slice(&self.prev_crc.to_le_bytes());
        bytes.extend_from_slice(&crc.to_le_bytes());
        debug_assert_eq!(
            bytes.len() - start,
            FRAME_HEADER_BYTES,
            "frame bounds: FRAME_HEADER_BYTES is len | seq | prev_crc | crc as written"
        );
        debug_assert_eq!(
            FrameFields::read(bytes, start),
            Some((*self, crc)),
            "frame bounds: a frame header reads back as written"
        );
    }

    /// The fields and stored crc of the frame header at `at`, if the file holds one there.
    fn read(bytes: &[u8], at: usize) -> Option<(FrameFields, u32)> {
        let fields = FrameFields {
            len: read_u32(bytes, at)?,
            seq: read_u64(bytes, at + 4)?,
            prev_crc: read_u32(bytes, at + 12)?,
        };
        Some((fields, read_u32(bytes, at + 16)?))
    }
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
    /// An intact frame in its place: its payload range and crc.
    Intact { payload: (usize, usize), crc: u32 },
    /// An intact frame (its own checksum holds) that does not belong here.
    Misplaced { seq: u64, prev_crc: u32 },
    /// The frame runs past the end of the file.
    Incomplete,
    /// A complete frame that fails its check, ending at `end`.
    Damaged { end: usize, reason: String },
    /// A length field above [`MAX_FRAME_BYTES`].
    TooLong { len: usize },
}

/// Parses the frames of `bytes`, leaving the torn tail (if any) to be cut.
fn scan(file: &str, bytes: &[u8]) -> Result<Recovered, StorageError> {
    let mut recovered = Recovered::default();
    if !check_file_header(file, bytes)? {
        recovered.truncated_bytes = bytes.len() as u64;
        return Ok(recovered);
    }
    let mut at = FILE_HEADER_BYTES;
    let mut end = Position::EMPTY;
    while at < bytes.len() {
        match parse_at(bytes, at, end) {
            Parse::Intact { payload, crc } => {
                debug_assert!(
                    payload.0 == at + FRAME_HEADER_BYTES
                        && payload.0 < payload.1
                        && payload.1 - payload.0 <= MAX_FRAME_BYTES
                        && payload.1 <= bytes.len(),
                    "frame bounds: an intact frame at byte {at} has a payload of \
                     1..=MAX_FRAME_BYTES bytes inside the file ({payload:?} of {} bytes)",
                    bytes.len()
                );
                recovered.frames.push(bytes[payload.0..payload.1].to_vec());
                at = payload.1;
                end = Position {
                    frames: end.frames + 1,
                    bytes: at as u64,
                    crc,
                };
                recovered.positions.push(end);
            }
            Parse::Misplaced { seq, prev_crc } => {
                return Err(misplaced(file, at, end, seq, prev_crc));
            }
            damaged => {
                check_torn(file, bytes, at, damaged)?;
                break;
            }
        }
    }
    debug_assert!(
        end.frames == recovered.frames.len() as u64
            && recovered.positions.len() == recovered.frames.len()
            && recovered
                .positions
                .windows(2)
                .all(|w| w[0].bytes < w[1].bytes),
        "seq continuity: {file} recovers one rising position per frame, frame n at seq n"
    );
    debug_assert!(
        end.bytes <= bytes.len() as u64,
        "frame bounds: intact frames end inside {file} ({} of {} bytes)",
        end.bytes,
        bytes.len()
    );
    recovered.truncated_bytes = (bytes.len() as u64) - end.bytes;
    Ok(recovered)
}

fn misplaced(file: &str, at: usize, end: Position, seq: u64, prev_crc: u32) -> StorageError {
    let what = if seq != end.frames {
        format!("holds seq {seq} where seq {} belongs", end.frames)
    } else {
        format!(
            "holds seq {seq} but chains to a frame with crc {prev_crc:#010x}, not to the \
             frame before it (crc {:#010x})",
            end.crc
        )
    };
    StorageError::Corrupt {
        file: file.to_string(),
        offset: at as u64,
        reason: format!(
            "an intact frame {what}: a frame is missing, duplicated or out of order before \
             this offset"
        ),
    }
}

/// Whether `bytes` start with a complete file header of this version (`false`: the file is
/// empty or holds only a torn prefix of the header, or zeros).
fn check_file_header(file: &str, bytes: &[u8]) -> Result<bool, StorageError> {
    let header = file_header();
    let n = bytes.len().min(FILE_HEADER_BYTES);
    if bytes.len() >= FILE_HEADER_BYTES && bytes[..FILE_HEADER_BYTES] == header {
        return Ok(true);
    }
    if bytes[..n] == header[..n] && bytes.len() < FILE_HEADER_BYTES {
        return Ok(false);
    }
    if bytes.iter().all(|&b| b == 0) {
        return Ok(false);
    }
    Err(wrong_header(file, bytes))
}

fn wrong_header(file: &str, bytes: &[u8]) -> StorageError {
    let version = |found: u32| StorageError::Version {
        file: file.to_string(),
        found,
        supported: FORMAT_VERSION,
    };
    if bytes.starts_with(&MAGIC) && bytes.len() >= FILE_HEADER_BYTES {
        return version(read_u32(bytes, 4).expect("8 bytes"));
    }
    if is_version_1(bytes) {
        return version(1);
    }
    StorageError::Corrupt {
        file: file.to_string(),
        offset: 0,
        reason: format!(
            "the file does not start with the log header (magic {MAGIC:?}, version \
             {FORMAT_VERSION})"
        ),
    }
}

/// Whether `bytes` start with an intact version-1 frame (`len | crc | payload`).
fn is_version_1(bytes: &[u8]) -> bool {
    let (Some(len), Some(crc)) = (read_u32(bytes, 0), read_u32(bytes, 4)) else {
        return false;
    };
    let payload = bytes.get(8..8usize.saturating_add(len as usize));
    len > 0 && payload.is_some_and(|p| crc32fast::hash(p) == crc)
}

fn parse_at(bytes: &[u8], at: usize, expected: Position) -> Parse {
    let Some(len) = read_u32(bytes, at).map(|v| v as usize) else {
        return Parse::Incomplete;
    };
    if len > MAX_FRAME_BYTES {
        return Parse::TooLong { len };
    }
    let Some((fields, crc)) = FrameFields::read(bytes, at) else {
        return Parse::Incomplete;
    };
    let start = at + FRAME_HEADER_BYTES;
    let end = start + len;
    if end > bytes.len() {
        return Parse::Incomplete;
    }
    if let Some(reason) = frame_problem(&fields, &bytes[start..end], crc) {
        return Parse::Damaged { end, reason };
    }
    debug_assert!(
        start < end && end <= bytes.len(),
        "frame bounds: a complete frame's payload {start}..{end} lies inside the file"
    );
    if fields.seq != expected.frames || fields.prev_crc != expected.crc {
        return Parse::Misplaced {
            seq: fields.seq,
            prev_crc: fields.prev_crc,
        };
    }
    Parse::Intact {
        payload: (start, end),
        crc,
    }
}

fn frame_problem(fields: &FrameFields, payload: &[u8], crc: u32) -> Option<String> {
    if payload.is_empty() {
        return Some("the frame length is 0; frames are never empty".to_string());
    }
    let actual = fields.crc(payload);
    (actual != crc)
        .then(|| format!("checksum mismatch (stored {crc:#010x}, computed {actual:#010x})"))
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let field = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(field.try_into().expect("4 bytes")))
}

fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    let field = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(field.try_into().expect("8 bytes")))
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
        Parse::Intact { .. } | Parse::Misplaced { .. } => {
            unreachable!("scan only passes damaged frames")
        }
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
        let Some((fields, payload, crc)) = candidate(bytes, at) else {
            continue;
        };
        if payload.len() > budget {
            return Hidden::BudgetSpent(checked);
        }
        budget -= payload.len();
        checked += 1;

        if fields.crc(payload) == crc {
            return Hidden::At(at);
        }
    }
    Hidden::None
}

/// The fields, payload and stored checksum of a well-formed frame header at `at` whose
/// payload fits in the file; the checksum is not verified.
fn candidate(bytes: &[u8], at: usize) -> Option<(FrameFields, &[u8], u32)> {
    let (fields, crc) = FrameFields::read(bytes, at)?;
    let len = fields.len as usize;
    if len == 0 || len > MAX_FRAME_BYTES {
        return None;
    }
    let start = at + FRAME_HEADER_BYTES;
    Some((fields, bytes.get(start..start + len)?, crc))
}

/// The bytes of a whole new log holding `payloads` (the first one its header), and where it
/// ends: what [`append_frames`] at [`Position::EMPTY`] would write, for [`Storage::replace`].
///
/// # Errors
/// [`StorageError::InvalidFrame`] as for [`append_frames`].
pub fn encode_log(file: &str, payloads: &[&[u8]]) -> Result<(Vec<u8>, Position), StorageError> {
    encode_frames(file, Position::EMPTY, payloads)
}
