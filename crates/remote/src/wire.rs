//! Conversions between the domain types and their protobuf form, with the validation every
//! field coming off the network gets.

use std::time::Duration;

use super::proto;
use leasesim_core::clock::Instant;
use leasesim_core::journal::{Entry, Record, WriterId};
use leasesim_core::lease::{Lease, Owner, SessionId};

/// Longest replica id accepted, in bytes.
pub const REPLICA_ID_MAX_BYTES: usize = 256;

/// Largest event payload accepted, in bytes (1 MiB).
pub const PAYLOAD_MAX_BYTES: usize = 1 << 20;

/// A field that is missing or out of range.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{0}")]
pub struct WireError(pub String);

fn missing(field: &str) -> WireError {
    WireError(format!("field `{field}` is missing"))
}

/// Checks a session id from the wire.
///
/// # Errors
/// When it is not a valid [`SessionId`].
pub fn session(id: String) -> Result<SessionId, WireError> {
    SessionId::new(id).map_err(|e| WireError(e.to_string()))
}

/// `Owner` from the wire: the replica id must be non-empty and at most
/// [`REPLICA_ID_MAX_BYTES`].
///
/// # Errors
/// A missing or bad owner.
pub fn owner(owner: Option<proto::Owner>) -> Result<Owner, WireError> {
    let owner = owner.ok_or_else(|| missing("owner"))?;
    if owner.replica.is_empty() || owner.replica.len() > REPLICA_ID_MAX_BYTES {
        return Err(WireError(format!(
            "owner.replica must be 1..={REPLICA_ID_MAX_BYTES} bytes, got {}",
            owner.replica.len()
        )));
    }
    Ok(Owner::new(owner.replica, owner.incarnation))
}

/// `Owner` to the wire.
pub fn owner_to_wire(owner: &Owner) -> proto::Owner {
    proto::Owner {
        replica: owner.replica.clone(),
        incarnation: owner.incarnation,
    }
}

/// `Lease` from the wire.
///
/// # Errors
/// A missing lease or a bad session, owner or TTL.
pub fn lease(lease: Option<proto::Lease>) -> Result<Lease, WireError> {
    let lease = lease.ok_or_else(|| missing("lease"))?;
    if lease.ttl_ns == 0 {
        return Err(WireError("lease.ttl_ns must be positive".into()));
    }
    Ok(Lease::new(
        session(lease.session)?,
        owner(lease.owner)?,
        lease.token,
        Instant::from_origin(Duration::from_nanos(lease.expiry_ns)),
        Duration::from_nanos(lease.ttl_ns),
    ))
}

/// `Lease` to the wire. Times beyond `u64` nanoseconds (584 years) saturate.
pub fn lease_to_wire(lease: &Lease) -> proto::Lease {
    proto::Lease {
        session: lease.session().as_str().to_owned(),
        owner: Some(owner_to_wire(lease.owner())),
        token: lease.token(),
        expiry_ns: nanos(lease.expiry().since_origin()),
        ttl_ns: nanos(lease.ttl()),
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn writer_id(id: Option<proto::WriterId>) -> Result<WriterId, WireError> {
    let id = id.ok_or_else(|| missing("writer_id"))?;
    Ok(WriterId {
        owner: owner(id.owner)?,
        journal: id.journal,
    })
}

fn writer_id_to_wire(id: &WriterId) -> proto::WriterId {
    proto::WriterId {
        owner: Some(owner_to_wire(&id.owner)),
        journal: id.journal,
    }
}

/// `Record` from the wire; payloads above [`PAYLOAD_MAX_BYTES`] are refused.
///
/// # Errors
/// A missing or bad field.
pub fn record(record: Option<proto::Record>) -> Result<Record, WireError> {
    match record
        .and_then(|r| r.kind)
        .ok_or_else(|| missing("record"))?
    {
        proto::record::Kind::Fence(fence) => Ok(Record::Fence {
            epoch: fence.epoch,
            owner: owner(fence.owner)?,
            writer_id: writer_id(fence.writer_id)?,
        }),
        proto::record::Kind::Event(event) => {
            if event.payload.len() > PAYLOAD_MAX_BYTES {
                return Err(WireError(format!(
                    "event payload is {} bytes; the limit is {PAYLOAD_MAX_BYTES}",
                    event.payload.len()
                )));
            }
            Ok(Record::Event {
                writer_id: writer_id(event.writer_id)?,
                seq_in_writer: event.seq_in_writer,
                payload: event.payload,
            })
        }
    }
}

/// `Record` to the wire.
pub fn record_to_wire(record: &Record) -> proto::Record {
    let kind = match record {
        Record::Fence {
            epoch,
            owner,
            writer_id,
        } => proto::record::Kind::Fence(proto::Fence {
            epoch: *epoch,
            owner: Some(owner_to_wire(owner)),
            writer_id: Some(writer_id_to_wire(writer_id)),
        }),
        Record::Event {
            writer_id,
            seq_in_writer,
            payload,
        } => proto::record::Kind::Event(proto::Event {
            writer_id: Some(writer_id_to_wire(writer_id)),
            seq_in_writer: *seq_in_writer,
            payload: payload.clone(),
        }),
    };
    proto::Record { kind: Some(kind) }
}

/// `Entry` from the wire.
///
/// # Errors
/// A bad record or a zero sequence number.
pub fn entry(entry: proto::Entry) -> Result<Entry, WireError> {
    if entry.seq == 0 {
        return Err(WireError("entry.seq must be at least 1".into()));
    }
    Ok(Entry {
        seq: entry.seq,
        record: record(entry.record)?,
    })
}

/// `Entry` to the wire.
pub fn entry_to_wire(entry: &Entry) -> proto::Entry {
    proto::Entry {
        seq: entry.seq,
        record: Some(record_to_wire(&entry.record)),
    }
}
