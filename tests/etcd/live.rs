//! `leasesim live --backend etcd`: the live run's own etcd (started by the orchestrator on
//! free ports, not this binary's shared one), replicas through EtcdLease and the proxy; the
//! schedule's `lease` host is that etcd.

use leasesim_testkit::leasesim;

#[test]
fn a_live_run_on_the_etcd_backend_with_pauses_and_kills_of_etcd_and_replicas_is_judged_clean() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = dir.path().join("schedule.json");
    std::fs::write(
        &schedule,
        r#"{"v":1,"faults":[
          {"at_ms":1000,"fault":"pause","host":"replica-1","duration_ms":3000},
          {"at_ms":1500,"fault":"partition","a":"replica-2","b":"lease"},
          {"at_ms":2000,"fault":"pause","host":"lease","duration_ms":1000},
          {"at_ms":2500,"fault":"crash","host":"replica-3"},
          {"at_ms":3500,"fault":"restart","host":"replica-3"},
          {"at_ms":4000,"fault":"crash","host":"lease"},
          {"at_ms":5000,"fault":"restart","host":"lease"}
        ],"heal_at_ms":6000}"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = leasesim!()
        .command()
        .args([
            "live",
            "--backend",
            "etcd",
            "--seed",
            "4",
            "--duration",
            "6s",
        ])
        .arg("--schedule")
        .arg(&schedule)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("leasesim live runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        [
            "partition replica-2 ↔ etcd",
            "sigstop etcd",
            "sigcont etcd",
            "sigkill etcd",
            "start etcd (boot 1",
        ]
        .iter()
        .all(|action| stdout.contains(&format!("nemesis: {action}"))),
        "{stdout}"
    );
    let last = stdout.lines().last().unwrap_or("");
    assert!(last.starts_with("verdict: clean"), "{last}");
    // Granted leases came from etcd: the replicas' acquire operations succeeded and EXCL
    // judged their validity windows.
    let history = std::fs::read_to_string(out.join("history.jsonl")).unwrap();
    let granted = history
        .lines()
        .filter(|l| l.contains(r#""type":"lease_acquire""#) && l.contains(r#""type":"granted""#))
        .count();
    assert!(granted >= 1, "no acquire was granted:\n{history}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    let excl = result["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "EXCL")
        .unwrap()["verdict"]
        .clone();
    assert_eq!(excl, "pass", "{result}");
    assert!(
        !out.join("processes/etcd-0.jsonl").exists(),
        "etcd writes no history file"
    );
}
