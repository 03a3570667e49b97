//! On a thread the source does not answer, every read gets the real function.

use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime};

use crate::source::{
    self, MONO_START, Mode, WALL_START, answering, libc_clock, near, raw_clock, seed_stream,
    since_epoch,
};

/// Real clocks read twice a moment apart agree to this, even on a loaded machine.
const TOLERANCE: Duration = Duration::from_secs(5);

/// Asserts that this thread's wall and monotonic reads are the real clocks.
fn assert_real_clocks() {
    let wall = since_epoch(SystemTime::now());
    assert!(
        near(wall, raw_clock(libc::CLOCK_REALTIME), TOLERANCE),
        "SystemTime::now() {wall:?} is not the real wall clock"
    );
    assert!(!near(wall, WALL_START, TOLERANCE));
    let monotonic = libc_clock(libc::CLOCK_MONOTONIC).expect("the real monotonic clock");
    assert!(
        near(monotonic, raw_clock(libc::CLOCK_MONOTONIC), TOLERANCE),
        "clock_gettime(CLOCK_MONOTONIC) {monotonic:?} is not the real monotonic clock"
    );
    assert!(!near(monotonic, MONO_START, TOLERANCE));
}

#[test]
fn a_thread_the_source_does_not_answer_reads_the_real_clocks() {
    answering(Mode::Off, assert_real_clocks);
}

#[test]
fn a_thread_the_source_does_not_answer_draws_real_randomness() {
    answering(Mode::Off, || {
        let mut drawn = [0u8; 32];
        getrandom::fill(&mut drawn).expect("the real getrandom");
        assert_ne!(
            drawn,
            seed_stream(),
            "the draw came from the source's stream"
        );
        assert_ne!(drawn, [0u8; 32], "the buffer was not filled");
    });
}

#[test]
fn a_thread_beside_one_the_source_answers_still_reads_the_real_clocks() {
    let both_reading = Arc::new(Barrier::new(2));
    let simulated = {
        let both_reading = Arc::clone(&both_reading);
        std::thread::spawn(move || {
            answering(Mode::Answer, || {
                both_reading.wait();
                since_epoch(SystemTime::now())
            })
        })
    };
    source::install();
    both_reading.wait();
    assert_real_clocks();
    assert_eq!(simulated.join().expect("the simulated thread"), WALL_START);
}

/// libfaketime, where Debian's `faketime` package puts it.
fn libfaketime() -> std::path::PathBuf {
    let found = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("faketime/libfaketime.so.1"))
        .find(|path| path.is_file());
    found.expect("libfaketime.so.1 is not installed: `apt-get install faketime`")
}

/// Runs the probe with `env`, at most 30 s, and returns what it printed.
fn run_probe(env: &[(&str, &std::ffi::OsStr)]) -> String {
    use std::process::{Command, Stdio};
    let mut probe = Command::new(env!("CARGO_BIN_EXE_probe"));
    probe.envs(env.iter().copied()).stdout(Stdio::piped());
    let mut child = probe.spawn().expect("the probe starts");
    let started = std::time::Instant::now();
    while child.try_wait().expect("the probe's status").is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the probe did not finish within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("the probe's output");
    assert!(output.status.success(), "the probe failed: {output:?}");
    String::from_utf8(output.stdout).expect("the probe prints text")
}

/// The wall clock the probe printed for `place`.
fn printed(output: &str, place: &str) -> Duration {
    let line = output
        .lines()
        .find_map(|line| line.strip_prefix(place))
        .unwrap_or_else(|| panic!("the probe printed no {place:?} line: {output:?}"));
    let mut numbers = line
        .split_whitespace()
        .map(|n| n.parse().expect("a number"));
    let (secs, nanos) = (
        numbers.next().expect("secs"),
        numbers.next().expect("nanos"),
    );
    Duration::new(secs, nanos as u32)
}

/// Live mode starts its processes under libfaketime (docs/live.md): the next definition the
/// interposer forwards to is the preloaded library's, while the source still answers first.
#[test]
fn an_ld_preloaded_libfaketime_answers_what_the_source_forwards() {
    let ten_years = Duration::from_secs(3650 * 86_400);
    let library = libfaketime();
    let output = run_probe(&[
        ("LD_PRELOAD", library.as_os_str()),
        ("FAKETIME", "-3650d".as_ref()),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1".as_ref()),
    ]);
    let forwarded = printed(&output, "forwarded");
    let real = raw_clock(libc::CLOCK_REALTIME);
    assert!(
        near(forwarded, real - ten_years, Duration::from_secs(30)),
        "forwarded {forwarded:?}: not libfaketime's clock, ten years before the real {real:?}"
    );
    assert_eq!(printed(&output, "answered"), WALL_START);
    assert!(
        output.lines().any(|line| line == "self-test ok"),
        "the hooks come before the preloaded library for all three reads: {output:?}"
    );
}
