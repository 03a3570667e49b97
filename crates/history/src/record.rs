//! Processes and ledger records as the history writes them: the system under test's lease
//! owners, journal writer ids and ledger records, in the history's own types (the recorder
//! converts, docs/history.md).

use serde::{Deserialize, Serialize};

/// One incarnation of one process, the shape of both an operation's `process` and a lease
/// `owner`: `{"replica":"replica-1","incarnation":0}`.
///
/// The same pair as a lease owner; the incarnation is bumped at every restart, so a restarted
/// replica is a new process.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Process {
    /// Stable name of the replica, which is also its host's name, e.g. `replica-1`.
    pub replica: String,
    /// Restart counter of the replica, from 0.
    pub incarnation: u64,
}

impl Process {
    /// Incarnation `incarnation` of `replica`.
    pub fn new(replica: impl Into<String>, incarnation: u64) -> Self {
        Process {
            replica: replica.into(),
            incarnation,
        }
    }
}

impl std::fmt::Display for Process {
    /// The replica's name, as the world, scripts and reports spell it (`replica-1`), with
    /// `#N` only when the incarnation is not the first (`replica-1#2`: after two restarts).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.replica)?;
        if self.incarnation > 0 {
            write!(f, "#{}", self.incarnation)?;
        }
        Ok(())
    }
}

/// One opened journal, as the journal's writer id: `{"owner":{…process…},"journal":1}`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistWriterId {
    /// The process incarnation that opened the journal.
    pub owner: Process,
    /// Which of that owner's journals, from 1.
    pub journal: u64,
}

/// A ledger record as the history writes it: the same information as the journal's record,
/// losslessly.
///
/// JSON: `{"type":"fence","epoch":3,"owner":{…},"writer_id":{…}}` or
/// `{"type":"event","writer_id":{…},"seq_in_writer":2,"payload_hex":"00ff"}`. The payload is
/// written as lowercase hex, two digits per byte (`""` for no bytes); reading refuses
/// uppercase digits and odd lengths, so every record has exactly one spelling.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum HistRecord {
    /// Written when a journal opens: from here on only writers with `epoch` or later may
    /// append.
    Fence {
        /// The opener's lease token.
        epoch: u64,
        /// The opener.
        owner: Process,
        /// The journal the fence opens.
        writer_id: HistWriterId,
    },
    /// An application event.
    Event {
        /// The journal that wrote it.
        writer_id: HistWriterId,
        /// 1, 2, 3… within that journal.
        seq_in_writer: u64,
        /// The application bytes; JSON field `payload_hex`, lowercase hex.
        #[serde(rename = "payload_hex", with = "hex")]
        payload: Vec<u8>,
    },
}

impl HistRecord {
    /// The journal that wrote the record.
    pub fn writer_id(&self) -> &HistWriterId {
        match self {
            HistRecord::Fence { writer_id, .. } | HistRecord::Event { writer_id, .. } => writer_id,
        }
    }

    /// The fence epoch, for a fence.
    pub fn fence_epoch(&self) -> Option<u64> {
        match self {
            HistRecord::Fence { epoch, .. } => Some(*epoch),
            HistRecord::Event { .. } => None,
        }
    }
}

/// Bytes as a lowercase hex string (serde `with` module).
pub(crate) mod hex {
    use serde::{Deserialize, Deserializer, Serializer, de};

    const DIGITS: &[u8; 16] = b"0123456789abcdef";

    /// `bytes` as lowercase hex, two digits per byte.
    pub(crate) fn encode(bytes: &[u8]) -> String {
        let mut out = String::with_capacity(bytes.len() * 2);
        for &b in bytes {
            out.push(char::from(DIGITS[usize::from(b >> 4)]));
            out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
        }
        out
    }

    /// The bytes `text` spells, or why it is not lowercase hex of even length.
    pub(crate) fn decode(text: &str) -> Result<Vec<u8>, String> {
        if !text.len().is_multiple_of(2) {
            return Err(format!(
                "payload_hex has {} digits; two per byte expected",
                text.len()
            ));
        }
        let digit = |at: usize, c: u8| match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            _ => Err(format!(
                "payload_hex has {:?} at offset {at}; only lowercase hex digits 0-9 a-f are allowed",
                char::from(c)
            )),
        };
        text.as_bytes()
            .chunks_exact(2)
            .enumerate()
            .map(|(i, pair)| Ok((digit(2 * i, pair[0])? << 4) | digit(2 * i + 1, pair[1])?))
            .collect()
    }

    pub(crate) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(bytes))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        decode(&text).map_err(de::Error::custom)
    }
}
