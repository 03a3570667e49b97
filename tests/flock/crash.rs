//! The record across a crash mid-write and across damage: the token high-water mark is never
//! lost silently and no token is ever issued twice.

use std::path::{Path, PathBuf};
use std::time::Duration;

use leasesim::lease::flock::driver::{CRASH_EXIT_CODE, Event, Failure, Reply, Verb};
use leasesim::mutant::Mutant;

use crate::support::{Bound, Holder, granted};

/// A acquires s1 (token 1) and releases; A's next incarnation, A2, started with
/// `--crash-at record-half-written`, acquires and dies (exit 86) with half of the new
/// record's bytes written. B's acquire must then be `ok` with a token above every token ever
/// issued, and after B releases C's token is above B's (so the token A2 was about to write
/// is never handed to two holders). Under `record-written-in-place` the half-written bytes
/// are the record itself: the high-water mark is gone and B gets an error (or, if it were
/// read as missing, a low token).
pub fn crash_mid_record_write_keeps_the_high_water_mark(
    mutant: Option<Mutant>,
) -> Result<(), String> {
    let bound = Bound::new(Duration::from_secs(20));
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ttl = ["--ttl", "30s"];
    let mut a = Holder::start(dir.path(), "A", mutant, &ttl, &bound)?;
    let first = a.acquire_ok("s1", &bound)?;
    let released = a.call("release s1", Verb::Release, &bound)?;
    if !released.ok {
        return Err(a.describe(&format!("release: {released:?}")));
    }
    let crash = [
        "--ttl",
        "30s",
        "--incarnation",
        "2",
        "--crash-at",
        "record-half-written",
    ];
    let mut a2 = Holder::start(dir.path(), "A", mutant, &crash, &bound)?;
    a2.send("acquire s1")?;
    match a2.event(&bound)? {
        Event::Crashing { point, .. } if point == "record-half-written" => {}
        other => return Err(a2.describe(&format!("expected the crash: {other:?}"))),
    }
    let status = a2.exited(&bound)?;
    if status.code() != Some(CRASH_EXIT_CODE) {
        return Err(a2.describe(&format!("A2 ended with {status}, not the crash code")));
    }
    let mut b = Holder::start(dir.path(), "B", mutant, &ttl, &bound)?;
    let reply = b.call("acquire s1", Verb::Acquire, &bound)?;
    let token = granted(&b, &reply).map_err(|e| format!("after A2's crash: {e}"))?;
    if token <= first {
        return Err(format!(
            "B got token {token} after A's {first}: the high-water mark was lost"
        ));
    }
    if !b.call("release s1", Verb::Release, &bound)?.ok {
        return Err(b.describe("release failed"));
    }
    let mut c = Holder::start(dir.path(), "C", mutant, &ttl, &bound)?;
    let next = c.acquire_ok("s1", &bound)?;
    if next <= token {
        return Err(format!(
            "C got token {next} after B's {token}: a token was reissued"
        ));
    }
    Ok(())
}

correct!(crash_mid_record_write_keeps_the_high_water_mark);

/// The one `*.record` file in `dir`.
fn record_file(dir: &Path) -> PathBuf {
    let records: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "record"))
        .collect();
    assert_eq!(records.len(), 1, "record files: {records:?}");
    records.into_iter().next().unwrap()
}

/// `reply` is `unavailable` and its reason names `record`'s file name.
fn unavailable_naming(reply: &Reply, record: &Path) {
    let name = record.file_name().unwrap().to_string_lossy().into_owned();
    assert!(!reply.ok, "{reply:?}");
    assert_eq!(reply.error, Some(Failure::Unavailable), "{reply:?}");
    let reason = reply.reason.as_deref().unwrap_or_default();
    assert!(reason.contains(&name), "the reason names {name}: {reply:?}");
}

/// A acquires s1 (token 1) and releases; the test then overwrites the record with garbage,
/// and later with the first half of its own valid bytes. Each time B's acquire is a clear
/// `unavailable` naming the record file, the file is left as it was (nothing guessed or
/// rewritten), and B keeps running (its `quit` exits 0). With the valid record back, C's
/// token is 2: nothing was issued in between.
#[test]
fn damaged_record_is_unavailable_and_reissues_nothing() {
    let bound = Bound::new(Duration::from_secs(20));
    let dir = tempfile::tempdir().unwrap();
    let ttl = ["--ttl", "30s"];
    let mut a = Holder::start(dir.path(), "A", None, &ttl, &bound).unwrap();
    let first = a.acquire_ok("s1", &bound).unwrap();
    assert!(a.call("release s1", Verb::Release, &bound).unwrap().ok);
    let record = record_file(dir.path());
    let valid = std::fs::read(&record).unwrap();
    let mut b = Holder::start(dir.path(), "B", None, &ttl, &bound).unwrap();
    for damaged in [b"garbage\n".to_vec(), valid[..valid.len() / 2].to_vec()] {
        std::fs::write(&record, &damaged).unwrap();
        let reply = b.call("acquire s1", Verb::Acquire, &bound).unwrap();
        unavailable_naming(&reply, &record);
        assert_eq!(
            std::fs::read(&record).unwrap(),
            damaged,
            "the record was changed"
        );
    }
    assert!(b.call("quit", Verb::Quit, &bound).unwrap().ok);
    assert_eq!(b.exited(&bound).unwrap().code(), Some(0));
    std::fs::write(&record, &valid).unwrap();
    let mut c = Holder::start(dir.path(), "C", None, &ttl, &bound).unwrap();
    let reply = c.call("acquire s1", Verb::Acquire, &bound).unwrap();
    assert_eq!(granted(&c, &reply).unwrap(), first + 1, "{reply:?}");
}
