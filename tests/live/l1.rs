//! L1 (`docs/field-cases.md`) on real processes: a replica SIGSTOPped longer than its
//! TTL cannot write after its successor's fence.

use super::support;

#[test]
#[ignore = "slow: a 9 s live run on real processes in real time; runs in .ci/run's slow step: cargo test --release -- --ignored"]
fn a_stopped_holder_is_refused_after_its_successor_fences_and_appends() {
    let _serial = support::serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("l1");
    let scenario = support::live_scenario("l1-real-pause-longer-than-ttl");
    let (code, stdout, stderr) =
        support::live_into(&out, &["--scenario", &scenario, "--seed", "1"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let result = support::result(&out);
    for check in ["FENCE", "LEDGER", "TOKEN", "EXCL", "STOP"] {
        assert_eq!(support::check_verdict(&result, check), "pass", "{check}");
    }
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out.join("history.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ops: Vec<&serde_json::Value> = lines.iter().filter(|l| l["kind"] == "op").collect();
    let of = |replica: &str, kind: &str| -> Vec<&serde_json::Value> {
        ops.iter()
            .copied()
            .filter(|o| o["process"]["replica"] == replica && o["op"]["type"] == kind)
            .collect()
    };
    // B took over with token 2.
    let grants = of("replica-2", "lease_acquire");
    assert_eq!(grants[0]["result"]["token"], 2, "{grants:?}");
    // A's append after the pause was refused, not acknowledged.
    let a_appends = of("replica-1", "journal_append");
    let last = a_appends.last().unwrap();
    assert_ne!(last["outcome"], "ok", "A's append after SIGCONT: {last}");
    // The ledger: nothing of A's after fence 2; every acknowledged append exactly once.
    let ledger: Vec<&serde_json::Value> = lines.iter().filter(|l| l["kind"] == "ledger").collect();
    let fence2 = ledger
        .iter()
        .position(|l| l["record"]["type"] == "fence" && l["record"]["epoch"] == 2)
        .expect("fence 2 in the ledger");
    assert!(
        ledger[fence2..]
            .iter()
            .all(|l| l["record"]["writer_id"]["owner"]["replica"] != "replica-1"),
        "{ledger:?}"
    );
    for acked in ops
        .iter()
        .filter(|o| o["op"]["type"] == "journal_append" && o["outcome"] == "ok")
    {
        let found = ledger
            .iter()
            .filter(|l| {
                l["record"]["writer_id"] == acked["op"]["writer_id"]
                    && l["record"]["seq_in_writer"] == acked["op"]["seq_in_writer"]
            })
            .count();
        assert_eq!(found, 1, "{acked}");
    }
    let nemesis: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["kind"] == "nemesis").collect();
    assert!(
        nemesis
            .iter()
            .any(|l| l["action"] == "sigstop" && l["host"] == "replica-1")
    );
    assert!(
        nemesis
            .iter()
            .any(|l| l["action"] == "sigcont" && l["host"] == "replica-1")
    );
}
