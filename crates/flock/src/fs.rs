//! The lease directory's file system: refusing network file systems, writing a record
//! durably (temp file + rename + fsync of file and directory), reading it back.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The network or cluster file system a `statfs(2)` `f_type` magic names, if any: where
/// `flock(2)` is emulated (NFS maps it to byte-range locks, often without the server), local
/// to one client (FUSE file systems such as sshfs), or cluster-wide with its own semantics.
/// Magic numbers from `linux/magic.h` and the file systems' sources.
pub fn network_fs(f_type: u64) -> Option<&'static str> {
    // `f_type` is a C long: compare its low 32 bits, where every magic lives.
    let magic = (f_type & 0xffff_ffff) as u32;
    Some(match magic {
        0x6969 => "nfs",
        0x517b => "smb",
        0xff53_4d42 => "cifs",
        0xfe53_4d42 => "smb2",
        0x00c3_6400 => "ceph",
        0x0102_1997 => "9p",
        0x5346_414f => "afs",
        0x7375_7245 => "coda",
        0x564c => "ncp",
        0x6573_5546 => "fuse (sshfs and other FUSE file systems: flock is local to one client)",
        0x0116_1970 => "gfs2 (a cluster file system)",
        0x7461_636f => "ocfs2 (a cluster file system)",
        _ => return None,
    })
}

/// The `f_type` of the file system holding `dir`.
///
/// # Errors
/// The `statfs(2)` error.
pub fn fs_type(dir: &Path) -> io::Result<u64> {
    let stat = rustix::fs::statfs(dir)?;
    // A C long holding a 32-bit magic: its bits, unchanged.
    #[allow(clippy::cast_sign_loss)]
    Ok(stat.f_type as u64)
}

/// Longest record file read, in bytes: a record is under 1 KiB; anything larger is damage.
pub const RECORD_MAX_BYTES: u64 = 64 * 1024;

/// Opens `path` as `options` say, never through a symbolic link (`O_NOFOLLOW`: a link
/// planted in the lease directory must not send a write elsewhere) and never blocking on a
/// FIFO or device (`O_NONBLOCK`, which changes nothing for a regular file), and checks that it
/// is a regular file.
///
/// # Errors
/// The open error (`ELOOP` for a link), or `InvalidInput` naming what the path is instead.
pub fn open_regular(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    let file = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({kind:?}): remove it; only leasesim writes here"),
        ));
    }
    Ok(file)
}

/// Writes `bytes` to `path` durably: `{path}.tmp` is written (`half_written` is called after
/// the first half of the bytes), fsynced, renamed over `path`, and the directory fsynced, so
/// a crash leaves either the old file or the new one whole.
///
/// # Errors
/// The first I/O error, with the path it happened on.
pub fn write_replacing(
    path: &Path,
    bytes: &[u8],
    half_written: impl FnOnce(),
) -> Result<(), (PathBuf, io::Error)> {
    let tmp = temp_path(path);
    // A leftover temp file (a crash mid-write) or anything planted there goes first: the
    // temp file is always a new one of ours.
    match std::fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err((tmp, e)),
    }
    let mut file =
        open_regular(OpenOptions::new().write(true).create_new(true), &tmp).map_err(at(&tmp))?;
    write_in_halves(&mut file, bytes, half_written).map_err(at(&tmp))?;
    file.sync_all().map_err(at(&tmp))?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(at(path))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    sync_dir(dir).map_err(at(dir))
}

/// Rewrites `path` in place (truncate, write, fsync): the `record-written-in-place` mutant,
/// which a crash mid-write leaves torn.
///
/// # Errors
/// The first I/O error, with the path.
pub fn write_in_place(
    path: &Path,
    bytes: &[u8],
    half_written: impl FnOnce(),
) -> Result<(), (PathBuf, io::Error)> {
    let mut file = open_regular(
        OpenOptions::new().write(true).create(true).truncate(true),
        path,
    )
    .map_err(at(path))?;
    write_in_halves(&mut file, bytes, half_written).map_err(at(path))?;
    file.sync_all().map_err(at(path))
}

/// `{path}.tmp`: where [`write_replacing`] writes before the rename.
pub fn temp_path(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    PathBuf::from(tmp)
}

/// Tags an I/O error with the path it happened on.
fn at(path: &Path) -> impl FnOnce(io::Error) -> (PathBuf, io::Error) + '_ {
    move |e| (path.to_path_buf(), e)
}

fn write_in_halves(file: &mut File, bytes: &[u8], half_written: impl FnOnce()) -> io::Result<()> {
    let (first, rest) = bytes.split_at(bytes.len() / 2);
    file.write_all(first)?;
    file.flush()?;
    half_written();
    file.write_all(rest)
}

/// fsyncs directory `dir`, so a rename or create in it survives a crash of the host.
///
/// # Errors
/// The open or fsync error.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The contents of record file `path` ([`open_regular`]), or `None` when it does not exist.
///
/// # Errors
/// Any other open or read error; `InvalidData` for a file over [`RECORD_MAX_BYTES`].
pub fn read_if_present(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let file = match open_regular(OpenOptions::new().read(true), path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(RECORD_MAX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > RECORD_MAX_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("over {RECORD_MAX_BYTES} bytes: not a lease record"),
        ));
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_and_cluster_file_systems_are_named() {
        let cases: &[(u64, &str)] = &[
            (0x6969, "nfs"),
            (0x517B, "smb"),
            (0xFF53_4D42, "cifs"),
            (0xFE53_4D42, "smb2"),
            (0x00C3_6400, "ceph"),
            (0x0102_1997, "9p"),
            (0x5346_414F, "afs"),
            (0x7375_7245, "coda"),
            (0x564c, "ncp"),
            (0x6573_5546, "fuse"),
            (0x0116_1970, "gfs2"),
            (0x7461_636f, "ocfs2"),
        ];
        for &(magic, name) in cases {
            let found = network_fs(magic).unwrap_or_else(|| panic!("{magic:#x} not refused"));
            assert!(found.starts_with(name), "{magic:#x}: {found}");
        }
        // A sign-extended 32-bit magic (a C long on a 32-bit host, widened) is the same.
        assert_eq!(network_fs(0xFFFF_FFFF_FF53_4D42), Some("cifs"));
    }

    #[test]
    fn local_file_systems_pass() {
        // ext4/ext3/ext2, tmpfs, xfs, btrfs, overlayfs, zfs.
        for magic in [
            0xEF53,
            0x0102_1994,
            0x5846_5342,
            0x9123_683E,
            0x794C_7630,
            0x2FC1_2FC1,
        ] {
            assert_eq!(network_fs(magic), None, "{magic:#x}");
        }
    }

    #[test]
    fn the_test_directory_is_local() {
        let dir = tempfile::tempdir().unwrap();
        let magic = fs_type(dir.path()).unwrap();
        assert_eq!(network_fs(magic), None, "{magic:#x}");
    }

    #[test]
    fn a_replacing_write_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.record");
        let mut halfway = Vec::new();
        write_replacing(&path, b"old", || {}).unwrap();
        write_replacing(&path, b"0123456789", || {
            halfway.push(std::fs::read(temp_path(&path)).unwrap());
        })
        .unwrap();
        assert_eq!(halfway, [b"01234".to_vec()]);
        assert_eq!(std::fs::read(&path).unwrap(), b"0123456789");
        assert!(!temp_path(&path).exists());
        assert_eq!(read_if_present(&dir.path().join("none")).unwrap(), None);
    }

    #[test]
    fn an_in_place_write_is_torn_halfway() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.record");
        write_in_place(&path, b"old-old-old", || {}).unwrap();
        let mut halfway = Vec::new();
        write_in_place(&path, b"0123456789", || {
            halfway.push(std::fs::read(&path).unwrap())
        })
        .unwrap();
        assert_eq!(halfway, [b"01234".to_vec()]);
        assert_eq!(std::fs::read(&path).unwrap(), b"0123456789");
    }
}
