//! The folders a campaign reads back (issue 40, item 2; reliability probe N4–N6): a FIFO or
//! a device in a report folder is refused (exit 2) instead of hanging or eating memory, two
//! different records of one run are refused naming the run, a merge never overwrites one of
//! its inputs, and an output folder in use is refused to a second command.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use leasesim_testkit::{assert_exit, both, leasesim, paths_below};

use crate::support::{campaign_args, copy_sims};

const SCENARIO: &str = "f1-pause-longer-than-ttl";

/// `leasesim ARGS` in `cwd`, killed (and the test failed) if it runs past 20 s: a reader
/// that blocks on a FIFO must fail the test, not hang it.
// A child process runs in real time: the deadline and the polling are real time too.
#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
fn bounded(cwd: &Path, args: &[&str]) -> Output {
    let mut child = leasesim!()
        .command()
        .current_dir(cwd)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still running after 20 s: it hangs");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A finished campaign of one scenario × seeds 0..2 (or shard `shard` of it) in `root/out`.
fn campaign(root: &Path, out: &str, shard: Option<&str>) -> PathBuf {
    if !root.join("sims").exists() {
        copy_sims(root, "sims", &[SCENARIO]);
    }
    let mut args = campaign_args("0..2", "1", out, &[]);
    args.extend(shard.iter().flat_map(|s| ["--shard", s]));
    let output = bounded(root, &args);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    root.join(out)
}

/// N4: `results.jsonl` a FIFO, then a link to `/dev/zero`: `report render`, `report merge`
/// and `campaign --resume` each exit 2 naming the file and what it is.
#[test]
fn a_fifo_or_a_device_as_results_jsonl_exits_2_instead_of_hanging() {
    let tmp = tempfile::tempdir().unwrap();
    let out = campaign(tmp.path(), "c", None);
    let results = out.join("results.jsonl");
    let resume = campaign_args("0..2", "1", "c", &["--resume"]);
    let commands: [&[&str]; 3] = [
        &["report", "render", "c"],
        &["report", "merge", "c", "--out", "m"],
        &resume,
    ];
    std::fs::remove_file(&results).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(&results)
            .status()
            .unwrap()
            .success()
    );
    for args in commands {
        assert_exit(
            &bounded(tmp.path(), args),
            2,
            &["results.jsonl", "is a FIFO"],
        );
    }
    std::fs::remove_file(&results).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &results).unwrap();
    for args in commands {
        assert_exit(
            &bounded(tmp.path(), args),
            2,
            &["results.jsonl", "is a device"],
        );
    }
}

/// N5: a second, different record of a run — a violation of EXCL beside its clean record —
/// is refused by `report render` and `campaign --resume`, naming the run; never clean. An
/// identical copy of a record is the same record.
#[test]
fn two_different_records_of_one_run_exit_2_naming_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = campaign(tmp.path(), "c", None);
    let results = out.join("results.jsonl");
    let text = std::fs::read_to_string(&results).unwrap();
    let first = text.lines().next().unwrap();
    let render = ["report", "render", "c"];
    std::fs::write(&results, format!("{text}{first}\n")).unwrap();
    let output = bounded(tmp.path(), &render);
    assert_eq!(output.status.code(), Some(0), "a copy: {}", both(&output));

    let mut record: serde_json::Value = serde_json::from_str(first).unwrap();
    let seed = record["seed"].as_u64().unwrap();
    record["status"] = "violation".into();
    record["unexpected"] = serde_json::json!(["EXCL"]);
    for lines in [format!("{text}{record}\n"), format!("{record}\n{text}")] {
        std::fs::write(&results, &lines).unwrap();
        let run = format!("{SCENARIO} seed {seed} has two different records");
        assert_exit(&bounded(tmp.path(), &render), 2, &[&run, "results.jsonl"]);
        let resume = bounded(tmp.path(), &campaign_args("0..2", "1", "c", &["--resume"]));
        assert_exit(&resume, 2, &[&run]);
        assert_eq!(
            std::fs::read_to_string(&results).unwrap(),
            lines,
            "left as it was"
        );
    }
}

/// Every file under `dir` (relative path → bytes).
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let files = paths_below(dir)
        .into_iter()
        .filter(|path| !dir.join(path).is_dir());
    files
        .map(|path| {
            let bytes = std::fs::read(dir.join(&path)).unwrap();
            (path, bytes)
        })
        .collect()
}

/// N6: `report merge s1 s2 --out s2` (or the same folder spelt another way, or through a
/// symlink) is refused,
/// exit 2 naming it, and leaves shard s2 byte for byte as it was; the merge into a folder of
/// its own then works.
#[test]
fn a_merge_into_one_of_its_inputs_exits_2_and_leaves_it_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    campaign(tmp.path(), "s1", Some("1/2"));
    let s2 = campaign(tmp.path(), "s2", Some("2/2"));
    let before = snapshot(&s2);
    std::os::unix::fs::symlink("s2", tmp.path().join("link")).unwrap();
    for out in ["s2", "./s2/", "link"] {
        let args = ["report", "merge", "s1", "s2", "--out", out];
        assert_exit(&bounded(tmp.path(), &args), 2, &["is the input folder s2"]);
        assert_eq!(snapshot(&s2), before, "--out {out}: shard s2 untouched");
    }
    let merged = bounded(tmp.path(), &["report", "merge", "s1", "s2", "--out", "m"]);
    assert_eq!(merged.status.code(), Some(0), "{}", both(&merged));
}

/// A `campaign` or `run` on an --out whose lock another process holds (a command still
/// writing it) is refused, exit 2, before it touches the folder; once the lock is
/// released the same command runs.
#[test]
fn a_campaign_or_run_on_an_out_in_use_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let out = campaign(tmp.path(), "c", None);
    let before = snapshot(&out);
    let holder = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(out.join(".lock"))
        .unwrap();
    holder.try_lock().unwrap();
    let again = campaign_args("0..2", "1", "c", &[]);
    assert_exit(
        &bounded(tmp.path(), &again),
        2,
        &["is in use by another leasesim command"],
    );
    let run = ["run", "--seed", "1", "--duration", "5s", "--out", "c"];
    assert_exit(
        &bounded(tmp.path(), &run),
        2,
        &["is in use by another leasesim command"],
    );
    assert_eq!(snapshot(&out), before, "the folder in use is untouched");
    drop(holder);
    let output = bounded(tmp.path(), &again);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
}
