//! The session record: the token high-water mark and the holder, as one line of JSON and a
//! CRC-32 line, so a torn or foreign file is told from a good one.
//!
//! ```text
//! {"version":1,"session":"s1","token":3,"holder":{"replica":"a","incarnation":0,"pid":4242,"expiry_us":91234567}}
//! crc32 1a2b3c4d
//! ```
//!
//! The checksum covers the JSON line's bytes (without its newline). `holder` is `null` after a
//! release; `token` is kept (it is the high-water mark). `expiry_us` is on `CLOCK_BOOTTIME`.

use std::fmt;

use serde::{Deserialize, Serialize};

use leasesim_core::lease::Owner;

/// The record format this code writes and reads.
pub const RECORD_VERSION: u32 = 1;

/// The contents of `{stem}.record`.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// [`RECORD_VERSION`].
    pub version: u32,
    /// The full session id (the file name holds only a sanitised prefix and a hash of it).
    pub session: String,
    /// The last token granted for the session: its high-water mark.
    pub token: u64,
    /// Who holds `token`, or `None` after a release.
    pub holder: Option<Holder>,
}

/// The holder of a record's token.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Holder {
    /// The owner's replica id.
    pub replica: String,
    /// The owner's incarnation.
    pub incarnation: u64,
    /// The process that acquired (`std::process::id`): only it renews and releases.
    pub pid: u32,
    /// When the hold expires, in µs on `CLOCK_BOOTTIME`; expired when `now >= expiry_us`.
    pub expiry_us: u64,
}

impl Holder {
    /// Whether this holder is `owner` in process `pid`.
    pub fn is(&self, owner: &Owner, pid: u32) -> bool {
        self.is_owner(owner) && self.pid == pid
    }

    /// Whether this holder is `owner` (any process).
    pub fn is_owner(&self, owner: &Owner) -> bool {
        self.replica == owner.replica && self.incarnation == owner.incarnation
    }

    /// Whether the hold is live at `now_us` (µs on `CLOCK_BOOTTIME`): `now_us < expiry_us`.
    pub fn is_live(&self, now_us: u64) -> bool {
        now_us < self.expiry_us
    }

    /// The owner this holder names.
    pub fn owner(&self) -> Owner {
        Owner::new(self.replica.clone(), self.incarnation)
    }
}

/// Why a record file cannot be trusted.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Damage {
    /// The file is empty (a crash between create and write).
    Empty,
    /// The file does not end with a checksum line (a crash mid-write, or not a record).
    NoChecksum,
    /// The checksum line does not match the JSON line (a torn or edited file).
    BadChecksum {
        /// The value in the file.
        stored: String,
        /// The CRC-32 of the JSON line, in hex.
        computed: String,
    },
    /// The JSON line does not parse as a record.
    NotARecord(String),
    /// A format version this code does not read.
    Version(u32),
    /// The record names another session (a hash collision, or a file copied by hand).
    WrongSession(String),
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Damage::Empty => f.write_str("the file is empty"),
            Damage::NoChecksum => f.write_str("no checksum line (torn or not a lease record)"),
            Damage::BadChecksum { stored, computed } => write!(
                f,
                "checksum mismatch (file says {stored}, contents give {computed}): torn or edited"
            ),
            Damage::NotARecord(e) => write!(f, "not a lease record: {e}"),
            Damage::Version(v) => write!(
                f,
                "record format version {v}; this build reads version {RECORD_VERSION}"
            ),
            Damage::WrongSession(s) => write!(f, "the record belongs to session {s:?}"),
        }
    }
}

/// The bytes of `record`'s file.
pub fn encode(record: &Record) -> Vec<u8> {
    // A struct of strings and integers always serialises.
    let body = serde_json::to_string(record).unwrap_or_default();
    format!("{body}\ncrc32 {:08x}\n", crc32fast::hash(body.as_bytes())).into_bytes()
}

/// The record in `bytes`, which must be a whole, intact record of `session`.
///
/// # Errors
/// [`Damage`] saying what is wrong.
pub fn decode(bytes: &[u8], session: &str) -> Result<Record, Damage> {
    if bytes.is_empty() {
        return Err(Damage::Empty);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| Damage::NoChecksum)?;
    let (body, checksum) = text
        .strip_suffix('\n')
        .and_then(|t| t.rsplit_once('\n'))
        .ok_or(Damage::NoChecksum)?;
    let stored = checksum.strip_prefix("crc32 ").ok_or(Damage::NoChecksum)?;
    let computed = format!("{:08x}", crc32fast::hash(body.as_bytes()));
    if stored != computed {
        return Err(Damage::BadChecksum {
            stored: stored.to_owned(),
            computed,
        });
    }
    let record: Record =
        serde_json::from_str(body).map_err(|e| Damage::NotARecord(e.to_string()))?;
    if record.version != RECORD_VERSION {
        return Err(Damage::Version(record.version));
    }
    if record.session != session {
        return Err(Damage::WrongSession(record.session));
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held() -> Record {
        Record {
            version: RECORD_VERSION,
            session: "s1".into(),
            token: 3,
            holder: Some(Holder {
                replica: "a".into(),
                incarnation: 2,
                pid: 4242,
                expiry_us: 91_234_567,
            }),
        }
    }

    #[test]
    fn a_record_round_trips_held_and_released() {
        let record = held();
        assert_eq!(decode(&encode(&record), "s1"), Ok(record.clone()));
        let released = Record {
            holder: None,
            ..record
        };
        assert_eq!(decode(&encode(&released), "s1"), Ok(released));
    }

    #[test]
    fn the_format_is_pinned() {
        let text = String::from_utf8(encode(&held())).unwrap();
        let body = r#"{"version":1,"session":"s1","token":3,"holder":{"replica":"a","incarnation":2,"pid":4242,"expiry_us":91234567}}"#;
        assert_eq!(
            text,
            format!("{body}\ncrc32 {:08x}\n", crc32fast::hash(body.as_bytes()))
        );
    }

    #[test]
    fn every_prefix_of_a_record_is_damaged() {
        let bytes = encode(&held());
        for cut in 0..bytes.len() {
            assert!(
                decode(&bytes[..cut], "s1").is_err(),
                "a record cut at {cut} of {} bytes was accepted",
                bytes.len()
            );
        }
    }

    #[test]
    fn damage_is_named() {
        assert_eq!(decode(b"", "s1"), Err(Damage::Empty));
        assert_eq!(decode(b"garbage", "s1"), Err(Damage::NoChecksum));
        assert_eq!(decode(&[0xff, 0xfe, b'\n'], "s1"), Err(Damage::NoChecksum));
        let flipped = String::from_utf8(encode(&held()))
            .unwrap()
            .replace("\"token\":3", "\"token\":4");
        assert!(matches!(
            decode(flipped.as_bytes(), "s1"),
            Err(Damage::BadChecksum { .. })
        ));
        let not_json = format!("nope\ncrc32 {:08x}\n", crc32fast::hash(b"nope"));
        assert!(matches!(
            decode(not_json.as_bytes(), "s1"),
            Err(Damage::NotARecord(_))
        ));
        let v2 = Record {
            version: 2,
            ..held()
        };
        assert_eq!(decode(&encode(&v2), "s1"), Err(Damage::Version(2)));
        assert_eq!(
            decode(&encode(&held()), "s2"),
            Err(Damage::WrongSession("s1".into()))
        );
    }

    #[test]
    fn liveness_is_judged_with_now_at_expiry_expired() {
        let holder = held().holder.unwrap();
        assert!(holder.is_live(91_234_566));
        assert!(!holder.is_live(91_234_567));
        assert!(holder.is(&Owner::new("a", 2), 4242));
        assert!(!holder.is(&Owner::new("a", 2), 4243));
        assert!(!holder.is(&Owner::new("a", 3), 4242));
    }
}
