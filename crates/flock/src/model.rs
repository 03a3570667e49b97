//! A model of one host as [`FlockLease`](super::FlockLease) sees it: its processes, their open
//! file descriptions, `flock(2)` locks, the lease directory's files, and `CLOCK_BOOTTIME` (the
//! host's clock), for the simulated world (docs/world.md#flock-in-the-world).
//!
//! The rules modelled, from `flock(2)`, `fork(2)` and `close(2)`:
//! - a lock belongs to an open file description: two opens of one file conflict, even in one
//!   process; locking again through the holding description succeeds;
//! - `fork` gives the child a reference to each of the parent's descriptions
//!   ([`FlockLease::forked`](super::FlockLease::forked) makes them): an unlock through any
//!   sharer releases the lock;
//! - the last close of a description releases its lock; a process that exits or is killed
//!   closes every reference it has ([`Host::kill`]);
//! - a name is a directory entry pointing at an inode: unlink removes the entry (open
//!   descriptions keep the inode, without a name), rename replaces the entry at once.
//!
//! Not modelled: other lock kinds (`fcntl`, shared locks), file modes and permissions, a
//! crash of the host losing unsynced writes (the page cache survives a process's death, which
//! is what is modelled), descriptor numbers, `exec`. Deterministic: ordered maps only, no real
//! time; every call completes without waiting (a busy lock is never waited for:
//! [`FlockOs::wait_busy`] fails).

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use leasesim_core::clock::{Clock, Instant};

use super::os::{FlockOs, OpenFile};

/// One modelled host: its file system, its open file descriptions and locks, its processes
/// and its clock. Cloning gives another handle to the same host.
#[derive(Clone, Debug)]
pub struct Host {
    state: Arc<Mutex<State>>,
    clock: Arc<dyn Clock>,
}

#[derive(Debug, Default)]
struct State {
    /// The last pid handed out (the first process is pid 1000).
    last_pid: u32,
    last_inode: u64,
    last_ofd: u64,
    /// Processes that have not exited.
    alive: BTreeSet<u32>,
    /// Directory entries: path → inode.
    names: BTreeMap<PathBuf, u64>,
    inodes: BTreeMap<u64, Inode>,
    ofds: BTreeMap<u64, Ofd>,
}

#[derive(Debug, Default)]
struct Inode {
    bytes: Vec<u8>,
    /// The open file description holding the file's `flock` lock.
    lock: Option<u64>,
}

#[derive(Debug)]
struct Ofd {
    inode: u64,
    /// References by process: how many descriptors of each process point here.
    refs: BTreeMap<u32, usize>,
}

/// An error of the model, of `kind`.
fn error(kind: io::ErrorKind, what: impl Into<String>) -> io::Error {
    io::Error::new(kind, what.into())
}

impl State {
    fn alive(&self, pid: u32) -> io::Result<()> {
        if self.alive.contains(&pid) {
            Ok(())
        } else {
            Err(error(
                io::ErrorKind::BrokenPipe,
                format!("process {pid} has exited"),
            ))
        }
    }

    fn new_inode(&mut self, bytes: Vec<u8>) -> u64 {
        self.last_inode += 1;
        self.inodes
            .insert(self.last_inode, Inode { bytes, lock: None });
        self.last_inode
    }

    fn open(&mut self, pid: u32, inode: u64) -> u64 {
        self.last_ofd += 1;
        let refs = BTreeMap::from([(pid, 1)]);
        self.ofds.insert(self.last_ofd, Ofd { inode, refs });
        self.last_ofd
    }

    /// Drops one of `pid`'s references to `ofd` (all of them when `all`); the last
    /// reference's close releases the description's lock.
    fn close(&mut self, ofd: u64, pid: u32, all: bool) {
        let Some(description) = self.ofds.get_mut(&ofd) else {
            return;
        };
        if let Some(count) = description.refs.get_mut(&pid) {
            *count -= 1;
            if *count == 0 || all {
                description.refs.remove(&pid);
            }
        }
        if !description.refs.is_empty() {
            return;
        }
        let inode = description.inode;
        self.ofds.remove(&ofd);
        if let Some(node) = self.inodes.get_mut(&inode)
            && node.lock == Some(ofd)
        {
            node.lock = None;
        }
        self.forget_if_unused(inode);
    }

    /// Frees `inode` when no name and no description refer to it.
    fn forget_if_unused(&mut self, inode: u64) {
        let named = self.names.values().any(|&i| i == inode);
        let open = self.ofds.values().any(|d| d.inode == inode);
        if !named && !open {
            self.inodes.remove(&inode);
        }
    }

    fn unlink(&mut self, path: &Path) -> io::Result<()> {
        let inode = self.names.remove(path).ok_or_else(|| not_found(path))?;
        self.forget_if_unused(inode);
        Ok(())
    }

    /// Names `inode` `path`, replacing what `path` named.
    fn link_over(&mut self, path: &Path, inode: u64) {
        if let Some(old) = self.names.insert(path.to_path_buf(), inode) {
            self.forget_if_unused(old);
        }
    }
}

fn not_found(path: &Path) -> io::Error {
    error(
        io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

impl Host {
    /// An empty host whose `CLOCK_BOOTTIME` is `clock` (in the world: the host's monotonic
    /// clock, which keeps counting across a suspend).
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Host {
            state: Arc::new(Mutex::new(State {
                last_pid: 999,
                ..State::default()
            })),
            clock,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every call leaves the state consistent: a panic elsewhere does not spoil it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The host's clock, its `CLOCK_BOOTTIME`.
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// Starts a new process (the next pid, from 1000), with no open file.
    pub fn spawn(&self) -> Arc<Process> {
        let mut state = self.state();
        state.last_pid += 1;
        let pid = state.last_pid;
        state.alive.insert(pid);
        Arc::new(Process {
            host: self.clone(),
            pid,
        })
    }

    /// Process `pid` exits or is killed: every reference it has to an open file description
    /// is closed (the last close of a description releases its lock). Its values may live on
    /// in the caller; their calls then fail and their drops do nothing.
    pub fn kill(&self, pid: u32) {
        let mut state = self.state();
        if !state.alive.remove(&pid) {
            return;
        }
        let held: Vec<u64> = state
            .ofds
            .iter()
            .filter(|(_, d)| d.refs.contains_key(&pid))
            .map(|(&ofd, _)| ofd)
            .collect();
        held.into_iter().for_each(|ofd| state.close(ofd, pid, true));
    }

    /// Whether process `pid` is running.
    pub fn is_alive(&self, pid: u32) -> bool {
        self.state().alive.contains(&pid)
    }

    /// The paths the directory has entries for, in order.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.state().names.keys().cloned().collect()
    }

    /// The contents of `path`, `None` when no entry names it.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.state();
        let inode = state.names.get(path)?;
        state.inodes.get(inode).map(|node| node.bytes.clone())
    }

    /// Whether the file `path` names is locked (through any description).
    pub fn is_locked(&self, path: &Path) -> bool {
        let state = self.state();
        state
            .names
            .get(path)
            .and_then(|inode| state.inodes.get(inode))
            .is_some_and(|node| node.lock.is_some())
    }

    /// Replaces the contents of `path` (creating it) outside every process: damage done by
    /// hand, or by a crash mid-write.
    pub fn write(&self, path: &Path, bytes: &[u8]) {
        let mut state = self.state();
        match state.names.get(path).copied() {
            Some(inode) => {
                if let Some(node) = state.inodes.get_mut(&inode) {
                    node.bytes = bytes.to_vec();
                }
            }
            None => {
                let inode = state.new_inode(bytes.to_vec());
                state.link_over(path, inode);
            }
        }
    }

    /// Removes the entry `path` outside every process; `false` when there was none.
    pub fn remove(&self, path: &Path) -> bool {
        self.state().unlink(path).is_ok()
    }
}

/// One process of a modelled [`Host`]: the [`FlockOs`] a [`FlockLease`](super::FlockLease)
/// runs on in the world ([`FlockLease::on`](super::FlockLease::on)).
#[derive(Debug)]
pub struct Process {
    host: Host,
    pid: u32,
}

impl Process {
    /// The process's id.
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// The host it runs on.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// `fork(2)`: a new process; it gets references to the parent's descriptions through
    /// [`FlockLease::forked`](super::FlockLease::forked) (the only files a lease keeps open
    /// between calls are its generation locks).
    pub fn fork(&self) -> Arc<Process> {
        self.host.spawn()
    }

    /// The process exits (or is killed): [`Host::kill`].
    pub fn exit(&self) {
        self.host.kill(self.pid);
    }

    fn file(&self, ofd: u64) -> Box<dyn OpenFile> {
        Box::new(ModelFile {
            host: self.host.clone(),
            ofd,
            pid: self.pid,
        })
    }

    fn write_with(
        &self,
        path: &Path,
        bytes: &[u8],
        half: &mut dyn FnMut(),
        replace: bool,
    ) -> Result<(), (PathBuf, io::Error)> {
        let target = if replace {
            super::fs::temp_path(path)
        } else {
            path.to_path_buf()
        };
        let (first, _) = bytes.split_at(bytes.len() / 2);
        let inode = {
            let mut state = self.host.state();
            state.alive(self.pid).map_err(|e| (target.clone(), e))?;
            match state.names.get(&target).copied().filter(|_| !replace) {
                Some(inode) => {
                    if let Some(node) = state.inodes.get_mut(&inode) {
                        node.bytes = first.to_vec();
                    }
                    inode
                }
                None => {
                    let inode = state.new_inode(first.to_vec());
                    state.link_over(&target, inode);
                    inode
                }
            }
        };
        half();
        let mut state = self.host.state();
        state.alive(self.pid).map_err(|e| (target.clone(), e))?;
        if let Some(node) = state.inodes.get_mut(&inode) {
            node.bytes = bytes.to_vec();
        }
        if replace {
            state.names.remove(&target);
            state.link_over(path, inode);
        }
        Ok(())
    }
}

impl FlockOs for Process {
    fn pid(&self) -> u32 {
        self.pid
    }

    fn now(&self) -> Instant {
        self.host.clock.now()
    }

    fn inherit(&self, file: &dyn OpenFile) -> io::Result<Box<dyn OpenFile>> {
        let parent = file
            .as_any()
            .downcast_ref::<ModelFile>()
            .filter(|f| Arc::ptr_eq(&f.host.state, &self.host.state))
            .ok_or_else(|| error(io::ErrorKind::InvalidInput, "not a file of this host"))?;
        let mut state = self.host.state();
        state.alive(self.pid)?;
        let description = state
            .ofds
            .get_mut(&parent.ofd)
            .ok_or_else(|| error(io::ErrorKind::InvalidInput, "a closed description"))?;
        *description.refs.entry(self.pid).or_insert(0) += 1;
        drop(state);
        Ok(self.file(parent.ofd))
    }

    fn wait_busy(&self) -> io::Result<()> {
        Err(error(
            io::ErrorKind::WouldBlock,
            "another process holds it; in the world a decision never waits (no other \
             process can run before this one yields)",
        ))
    }

    fn open_lock(&self, path: &Path) -> io::Result<Box<dyn OpenFile>> {
        let mut state = self.host.state();
        state.alive(self.pid)?;
        let inode = match state.names.get(path).copied() {
            Some(inode) => inode,
            None => {
                let inode = state.new_inode(Vec::new());
                state.link_over(path, inode);
                inode
            }
        };
        let ofd = state.open(self.pid, inode);
        drop(state);
        Ok(self.file(ofd))
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn OpenFile>> {
        let mut state = self.host.state();
        state.alive(self.pid)?;
        if state.names.contains_key(path) {
            return Err(error(
                io::ErrorKind::AlreadyExists,
                format!("{}: exists", path.display()),
            ));
        }
        let inode = state.new_inode(Vec::new());
        state.link_over(path, inode);
        let ofd = state.open(self.pid, inode);
        drop(state);
        Ok(self.file(ofd))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn OpenFile>> {
        let mut state = self.host.state();
        state.alive(self.pid)?;
        let inode = *state.names.get(path).ok_or_else(|| not_found(path))?;
        let ofd = state.open(self.pid, inode);
        drop(state);
        Ok(self.file(ofd))
    }

    fn unlink(&self, path: &Path) -> io::Result<()> {
        let mut state = self.host.state();
        state.alive(self.pid)?;
        state.unlink(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let state = self.host.state();
        state.alive(self.pid)?;
        let names = state
            .names
            .keys()
            .filter(|path| path.parent() == Some(dir))
            .filter_map(|path| path.file_name()?.to_str().map(str::to_owned))
            .collect();
        Ok(names)
    }

    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        let state = self.host.state();
        state.alive(self.pid)?;
        Ok(state
            .names
            .get(path)
            .and_then(|inode| state.inodes.get(inode))
            .map(|node| node.bytes.clone()))
    }

    fn write_replacing(
        &self,
        path: &Path,
        bytes: &[u8],
        half: &mut dyn FnMut(),
    ) -> Result<(), (PathBuf, io::Error)> {
        self.write_with(path, bytes, half, true)
    }

    fn write_in_place(
        &self,
        path: &Path,
        bytes: &[u8],
        half: &mut dyn FnMut(),
    ) -> Result<(), (PathBuf, io::Error)> {
        self.write_with(path, bytes, half, false)
    }
}

/// One process's reference to an open file description of a modelled host; dropping it
/// closes the reference.
#[derive(Debug)]
struct ModelFile {
    host: Host,
    ofd: u64,
    pid: u32,
}

impl OpenFile for ModelFile {
    fn try_lock(&self) -> io::Result<bool> {
        let mut state = self.host.state();
        state.alive(self.pid)?;
        let inode = state.ofds.get(&self.ofd).map(|d| d.inode);
        let node = inode
            .and_then(|inode| state.inodes.get_mut(&inode))
            .ok_or_else(|| error(io::ErrorKind::InvalidInput, "a closed description"))?;
        match node.lock {
            Some(holder) if holder != self.ofd => Ok(false),
            _ => {
                node.lock = Some(self.ofd);
                Ok(true)
            }
        }
    }

    fn unlock(&self) -> io::Result<()> {
        let mut state = self.host.state();
        state.alive(self.pid)?;
        let inode = state.ofds.get(&self.ofd).map(|d| d.inode);
        if let Some(node) = inode.and_then(|inode| state.inodes.get_mut(&inode))
            && node.lock == Some(self.ofd)
        {
            node.lock = None;
        }
        Ok(())
    }

    fn is_named_by(&self, path: &Path) -> io::Result<bool> {
        let state = self.host.state();
        state.alive(self.pid)?;
        let open = state.ofds.get(&self.ofd).map(|d| d.inode);
        Ok(open.is_some() && state.names.get(path).copied() == open)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for ModelFile {
    fn drop(&mut self) {
        let mut state = self.host.state();
        // A killed process's references were closed when it died.
        if state.alive.contains(&self.pid) {
            state.close(self.ofd, self.pid, false);
        }
    }
}

#[cfg(test)]
mod tests;
