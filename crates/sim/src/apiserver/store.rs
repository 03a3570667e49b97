//! The API server's durable objects: every Lease object by namespace and name, and the global
//! `resourceVersion` counter, kept in one [`log`] on the host's storage.
//!
//! # On disk
//! - [`STATE_FILE`]: a [`log`] file whose frame 0 is the JSON header
//!   `{"kind":"apiserver-state","v":1}` and whose every later frame is one accepted write, as
//!   JSON: `{"op":"put","namespace":"default","name":"s1-…","resource_version":7,"object":{…}}`
//!   (the whole Lease as served, its `metadata.resourceVersion` included) or
//!   `{"op":"delete","namespace":…,"name":…,"resource_version":8}` (the value the delete
//!   consumed). `resource_version` strictly increases from frame to frame.
//! - [`STATE_CHECKPOINT`]: a [checkpoint](leasesim_core::storage::checkpoint) of how far
//!   [`STATE_FILE`] was acknowledged, so a state file cut at a frame boundary is refused
//!   instead of handing out `resourceVersion`s twice.
//!
//! Each write is synced (log, then checkpoint) before the request is answered, so a crash
//! loses only writes that were never acknowledged. After a failed write the outcome is
//! unknown: the store refuses every later write until it is reopened (a restart).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

use leasesim_core::storage::checkpoint::Checkpoint;
use leasesim_core::storage::log::{self, Position};
use leasesim_core::storage::{Storage, StorageError};

/// The file holding the API server's objects.
pub const STATE_FILE: &str = "apiserver-state.log";

/// The checkpoint of [`STATE_FILE`].
pub const STATE_CHECKPOINT: &str = "apiserver-state-checkpoint.log";

/// Schema version of [`STATE_FILE`]'s header frame.
pub const STATE_SCHEMA_VERSION: u32 = 1;

const STATE_KIND: &str = "apiserver-state";

/// Where an object lives: its namespace and `metadata.name`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct ObjectKey {
    /// The namespace.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

#[derive(Serialize, Deserialize)]
struct Header {
    kind: String,
    v: u32,
}

/// One frame of [`STATE_FILE`] after the header.
#[derive(Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum Frame {
    Put {
        namespace: String,
        name: String,
        resource_version: u64,
        object: Box<Lease>,
    },
    Delete {
        namespace: String,
        name: String,
        resource_version: u64,
    },
}

/// The objects and the `resourceVersion` counter, durable.
#[derive(Debug)]
pub(crate) struct Store {
    storage: Arc<dyn Storage>,
    state: Mutex<State>,
}

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) objects: BTreeMap<ObjectKey, Lease>,
    /// The last `resourceVersion` handed out (0: none yet).
    pub(crate) last_rv: u64,
    end: Position,
    checkpoint: Checkpoint,
    broken: Option<String>,
}

/// A change to apply durably.
pub(crate) enum Change {
    /// Store `object` (its `resourceVersion` already set to `resource_version`).
    Put(Box<Lease>),
    /// Remove the object.
    Delete,
}

impl Store {
    /// Recovers the objects from `storage`, creating the files when new.
    ///
    /// # Errors
    /// Storage errors; [`StorageError::Corrupt`] for a state file this code did not write
    /// (bad header, a frame that is not a write, `resourceVersion`s that do not increase).
    pub(crate) async fn open(storage: Arc<dyn Storage>) -> Result<Self, StorageError> {
        let header = serde_json::to_vec(&Header {
            kind: STATE_KIND.into(),
            v: STATE_SCHEMA_VERSION,
        })
        .map_err(|e| corrupt_at(0, 0, format!("cannot encode the header: {e}")))?;
        let mut checkpoint = Checkpoint::open(&*storage, STATE_CHECKPOINT).await?;
        let mut recovered = checkpoint.recover(&*storage, STATE_FILE).await?;
        if recovered.truncated_bytes > 0 {
            tracing::warn!(target: "leasesim::sim::apiserver::store",
                "recovery cut {} bytes of torn tail from `{STATE_FILE}` (a write never \
                 acknowledged)",
                recovered.truncated_bytes
            );
        }
        log::create_if_empty(&*storage, STATE_FILE, &mut recovered, &header).await?;
        let end = recovered.end();
        checkpoint
            .rewrite(&*storage, BTreeMap::from([(STATE_FILE.to_string(), end)]))
            .await?;
        let (objects, last_rv) = replay(&recovered)?;
        Ok(Store {
            storage,
            state: Mutex::new(State {
                objects,
                last_rv,
                end,
                checkpoint,
                broken: None,
            }),
        })
    }

    /// Locks the state: one request decides and writes at a time.
    pub(crate) async fn lock(&self) -> tokio::sync::MutexGuard<'_, State> {
        self.state.lock().await
    }

    /// Makes `change` of `key` durable under `resource_version` (which must exceed
    /// `state.last_rv`), then applies it to `state`.
    ///
    /// # Errors
    /// A message when the store is broken by an earlier failed write, or this write fails
    /// (then the store is broken: its outcome is unknown).
    pub(crate) async fn apply(
        &self,
        state: &mut State,
        key: &ObjectKey,
        resource_version: u64,
        change: Change,
    ) -> Result<(), String> {
        debug_assert!(
            resource_version > state.last_rv,
            "resourceVersion must grow"
        );
        if let Some(why) = &state.broken {
            return Err(why.clone());
        }
        let frame = match &change {
            Change::Put(object) => Frame::Put {
                namespace: key.namespace.clone(),
                name: key.name.clone(),
                resource_version,
                object: object.clone(),
            },
            Change::Delete => Frame::Delete {
                namespace: key.namespace.clone(),
                name: key.name.clone(),
                resource_version,
            },
        };
        let bytes = serde_json::to_vec(&frame).map_err(|e| e.to_string())?;
        if let Err(error) = self.write(state, &bytes).await {
            let why = format!("the API server's storage failed ({error}); restart it");
            state.broken = Some(why.clone());
            return Err(why);
        }
        state.last_rv = resource_version;
        match change {
            Change::Put(object) => {
                state.objects.insert(key.clone(), *object);
            }
            Change::Delete => {
                state.objects.remove(key);
            }
        }
        Ok(())
    }

    async fn write(&self, state: &mut State, bytes: &[u8]) -> Result<(), StorageError> {
        let storage = &*self.storage;
        let end = log::append_frames(storage, STATE_FILE, state.end, &[bytes]).await?;
        state.checkpoint.record(storage, STATE_FILE, end).await?;
        state.end = end;
        Ok(())
    }
}

fn corrupt_at(index: usize, offset: u64, reason: String) -> StorageError {
    StorageError::Corrupt {
        file: STATE_FILE.into(),
        offset,
        reason: format!("frame seq {index}: {reason}"),
    }
}

type Objects = (BTreeMap<ObjectKey, Lease>, u64);

fn replay(recovered: &log::Recovered) -> Result<Objects, StorageError> {
    let corrupt =
        |index: usize, reason: String| corrupt_at(index, recovered.frame_start(index), reason);
    let header: Header = serde_json::from_slice(&recovered.frames[0])
        .map_err(|e| corrupt(0, format!("bad header: {e}")))?;
    if header.kind != STATE_KIND || header.v != STATE_SCHEMA_VERSION {
        return Err(corrupt(
            0,
            format!(
                "expected {STATE_KIND} version {STATE_SCHEMA_VERSION}, found kind {:?} version {}",
                header.kind, header.v
            ),
        ));
    }
    let mut objects = BTreeMap::new();
    let mut last_rv = 0;
    for (index, bytes) in recovered.frames.iter().enumerate().skip(1) {
        let frame: Frame = serde_json::from_slice(bytes)
            .map_err(|e| corrupt(index, format!("not a write: {e}")))?;
        let (key, rv, object) = match frame {
            Frame::Put {
                namespace,
                name,
                resource_version,
                object,
            } => (
                ObjectKey { namespace, name },
                resource_version,
                Some(*object),
            ),
            Frame::Delete {
                namespace,
                name,
                resource_version,
            } => (ObjectKey { namespace, name }, resource_version, None),
        };
        if rv <= last_rv {
            return Err(corrupt(
                index,
                format!("resourceVersion {rv} does not exceed the one before it ({last_rv})"),
            ));
        }
        last_rv = rv;
        match object {
            Some(object) => objects.insert(key, object),
            None => objects.remove(&key),
        };
    }
    Ok((objects, last_rv))
}
