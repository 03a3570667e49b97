//! `leasesim flock` itself: one thread, clear errors for bad arguments and bad commands,
//! and a clean exit at `quit` and at EOF.

use std::process::Stdio;
use std::time::Duration;

use leasesim::lease::flock::driver::{Failure, Line, Verb};
use leasesim_testkit::leasesim;

use crate::support::{Bound, Holder};

/// The number of threads of `pid`, from `/proc/PID/task`.
fn threads(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .count()
}

/// The process forks, so it must stay single-threaded: one thread at the start and after
/// lease calls.
#[test]
fn the_process_has_one_thread() {
    let bound = Bound::new(Duration::from_secs(20));
    let dir = tempfile::tempdir().unwrap();
    let mut a = Holder::start(dir.path(), "A", None, &["--ttl", "30s"], &bound).unwrap();
    assert_eq!(threads(a.pid()), 1);
    assert!(a.call("acquire s1", Verb::Acquire, &bound).unwrap().ok);
    assert!(a.call("renew s1", Verb::Renew, &bound).unwrap().ok);
    assert_eq!(threads(a.pid()), 1);
}

/// Lines that are not commands get an error line each and the process carries on; `renew`
/// of a session never acquired is `no-lease`; `quit` replies and exits 0.
#[test]
fn bad_commands_are_answered_and_the_process_goes_on() {
    let bound = Bound::new(Duration::from_secs(20));
    let dir = tempfile::tempdir().unwrap();
    let mut a = Holder::start(dir.path(), "A", None, &["--ttl", "30s"], &bound).unwrap();
    for (command, error) in [
        ("hold s1", "bad-command"),
        ("fork", "bad-command"),
        ("go", "not-paused"),
    ] {
        a.send(command).unwrap();
        match a.next(&bound).unwrap() {
            Line::Error(line) => assert_eq!(line.error, error, "{command}: {line:?}"),
            other => panic!("{command}: {other:?}"),
        }
    }
    let reply = a.call("renew s1", Verb::Renew, &bound).unwrap();
    assert_eq!(reply.error, Some(Failure::NoLease), "{reply:?}");
    assert!(a.call("quit", Verb::Quit, &bound).unwrap().ok);
    assert_eq!(a.exited(&bound).unwrap().code(), Some(0));
}

/// EOF on stdin ends the process with exit 0.
#[test]
fn eof_on_stdin_exits_clean() {
    let dir = tempfile::tempdir().unwrap();
    let output = leasesim!()
        .command()
        .args(["flock", "--owner", "A", "--ttl", "1s", "--dir"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with(r#"{"event":"ready","pid":"#), "{text}");
}

/// Bad arguments exit 2 with a message saying what is wrong, and start nothing: a missing
/// TTL, an unknown point, a mutant of another backend, a lease directory that does not exist.
#[test]
fn bad_arguments_exit_2_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let missing = missing.to_str().unwrap();
    let here = dir.path().to_str().unwrap();
    // The arguments of a holder that would start, then `extra`.
    let valid_and = |extra: &[&'static str]| {
        [&["--dir", here, "--owner", "A", "--ttl", "1s"][..], extra].concat()
    };
    let cases: [(Vec<&str>, &str); 4] = [
        (vec!["--dir", here, "--owner", "A"], "--ttl"),
        (valid_and(&["--pause-at", "nowhere"]), "record-read"),
        (
            valid_and(&["--mutant", "acquire-check-then-act"]),
            "unlink-on-release",
        ),
        (
            vec!["--dir", missing, "--owner", "A", "--ttl", "1s"],
            "missing",
        ),
    ];
    for (args, says) in cases {
        let output = leasesim!()
            .command()
            .arg("flock")
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?} names {says}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
