//! `MemStorage`: an in-memory disk for simulation that loses, or tears, unsynced writes when
//! it crashes.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use super::{Storage, StorageError, io_error, validate_name};

/// A deterministic in-memory [`Storage`] for simulation: no threads, no time, ordered maps.
///
/// Each file is a synced prefix followed by an unsynced tail. [`MemStorage::crash`] models a
/// power loss (every unsynced tail is lost) and [`MemStorage::crash_tearing`] a torn write
/// (only the start of each unsynced tail reaches the disk). A file whose creation was never
/// synced is a directory entry that was never made durable: a crash removes it unless a
/// torn write leaves bytes in it.
///
/// `Clone` gives another handle to the same disk, so the world can keep one across a host
/// crash and hand it to the restarted service. Never fails with I/O errors except for
/// truncating beyond the end of a file.
#[derive(Clone, Default)]
pub struct MemStorage {
    disk: Arc<Mutex<BTreeMap<String, MemFile>>>,
}

#[derive(Default)]
struct MemFile {
    /// Bytes that survive a crash.
    synced: Vec<u8>,
    /// Bytes appended since the last sync: visible, lost or torn by a crash.
    unsynced: Vec<u8>,
    /// Whether the file's existence is durable (it has been synced or truncated once).
    entry_synced: bool,
}

impl MemFile {
    fn len(&self) -> usize {
        self.synced.len() + self.unsynced.len()
    }

    fn contents(&self) -> Vec<u8> {
        [self.synced.as_slice(), self.unsynced.as_slice()].concat()
    }

    fn sync(&mut self) {
        let len = self.len();
        self.synced.append(&mut self.unsynced);
        self.entry_synced = true;
        debug_assert!(
            self.unsynced.is_empty() && self.synced.len() == len,
            "a sync makes every byte durable and loses none"
        );
    }

    /// Applies a crash that lets the first `keep` unsynced bytes reach the disk; returns
    /// whether the file still exists afterwards.
    fn crash(&mut self, keep: usize) -> bool {
        self.unsynced.truncate(keep);
        // Torn bytes that reached a never-synced file imply its directory entry did too.
        if !self.unsynced.is_empty() {
            self.entry_synced = true;
        }
        self.synced.append(&mut self.unsynced);
        self.entry_synced
    }
}

impl MemStorage {
    /// An empty disk.
    pub fn new() -> Self {
        MemStorage::default()
    }

    /// A power loss: every file keeps only its synced bytes; files never synced disappear.
    pub fn crash(&self) {
        self.crash_tearing(0);
    }

    /// A torn write during a power loss: each file keeps its synced bytes plus the first
    /// `keep` bytes of its unsynced tail (all of it if shorter); a never-synced file survives
    /// only if that leaves it non-empty.
    pub fn crash_tearing(&self, keep: usize) {
        self.disk().retain(|_, file| file.crash(keep));
    }

    fn disk(&self) -> MutexGuard<'_, BTreeMap<String, MemFile>> {
        // Every critical section below leaves the map consistent before anything can panic.
        self.disk
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl Storage for MemStorage {
    async fn list(&self) -> Result<Vec<String>, StorageError> {
        // BTreeMap keys are already in `str` order.
        Ok(self.disk().keys().cloned().collect())
    }

    async fn read(&self, file: &str) -> Result<Vec<u8>, StorageError> {
        validate_name(file)?;
        Ok(self
            .disk()
            .get(file)
            .map(MemFile::contents)
            .unwrap_or_default())
    }

    async fn append(&self, file: &str, bytes: &[u8]) -> Result<(), StorageError> {
        validate_name(file)?;
        let mut disk = self.disk();
        let entry = disk.entry(file.to_string()).or_default();
        entry.unsynced.extend_from_slice(bytes);
        Ok(())
    }

    async fn sync(&self, file: &str) -> Result<(), StorageError> {
        validate_name(file)?;
        if let Some(entry) = self.disk().get_mut(file) {
            entry.sync();
        }
        Ok(())
    }

    async fn truncate(&self, file: &str, len: u64) -> Result<(), StorageError> {
        validate_name(file)?;
        let mut disk = self.disk();
        let current = disk.get(file).map_or(0, MemFile::len);
        check_truncate(file, len, current as u64)?;
        if let Some(entry) = disk.get_mut(file) {
            // Cutting inside the synced prefix or the tail: what is kept becomes durable,
            // as FileStorage's fsync after `set_len` makes it.
            entry.sync();
            // `len` is at most the current length (checked), so it fits in a usize.
            entry.synced.truncate(len as usize);
            debug_assert_eq!(
                entry.len(),
                len as usize,
                "a truncated file is `len` bytes long"
            );
        }
        Ok(())
    }

    async fn replace(&self, file: &str, bytes: &[u8]) -> Result<(), StorageError> {
        validate_name(file)?;
        let replaced = MemFile {
            synced: bytes.to_vec(),
            unsynced: Vec::new(),
            entry_synced: true,
        };
        self.disk().insert(file.to_string(), replaced);
        Ok(())
    }
}

/// Sizes only: the contents could be megabytes of a simulation's trace.
impl fmt::Debug for MemStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let disk = self.disk();
        let sizes = disk
            .iter()
            .map(|(name, file)| (name, (file.synced.len(), file.unsynced.len())));
        f.debug_struct("MemStorage")
            .field("synced_unsynced_bytes", &sizes.collect::<BTreeMap<_, _>>())
            .finish()
    }
}

/// Refuses to extend: truncate only ever cuts a torn tail.
pub(super) fn check_truncate(file: &str, len: u64, current: u64) -> Result<(), StorageError> {
    if len <= current {
        return Ok(());
    }
    let err = io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("the file is {current} bytes long; truncate never extends a file"),
    );
    Err(io_error(file, &format!("truncate to {len} bytes"), err))
}
