//! Malformed scenario files: the loader names the file, the line and column, the field, and
//! how to fix it — never a panic. The texts are stable (asserted whole).

use leasesim::campaign::scenario::Scenario;

/// Loads `text` as `<tmp>/bad.toml` (with the field cases' files beside it under
/// `field-cases/`) and returns the error with the folder replaced by `DIR`.
fn error(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("field-cases");
    std::fs::create_dir(&cases).unwrap();
    let sims = concat!(env!("CARGO_MANIFEST_DIR"), "/sims/field-cases");
    for file in [
        "f1-pause-longer-than-ttl.script.json",
        "f1-pause-longer-than-ttl.schedule.json",
    ] {
        std::fs::copy(format!("{sims}/{file}"), cases.join(file)).unwrap();
    }
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, text).unwrap();
    let error = Scenario::load(&path).expect_err("the scenario should be refused");
    error
        .to_string()
        .replace(dir.path().to_str().unwrap(), "DIR")
}

const HEAD: &str = "v = 1\nabout = \"test\"\n";

#[test]
fn an_unknown_field_lists_the_accepted_ones() {
    let text = format!("{HEAD}[world]\nreplicas = 2\nttl = 5000\n");
    assert_eq!(
        error(&text),
        "DIR/bad.toml:5:1: `world.ttl`: unknown field `ttl`, expected one of `replicas`, \
         `sessions`, `ttl_ms`, `skew_margin_percent`, `duration_s`, `call_timeout_ms`, \
         `latency_ms`, `backend`, `replica_ttl_ms`"
    );
}

/// A scenario does not choose the engine (`run --engine`, `campaign --engine` and the run
/// file do: docs/world.md#the-world-on-the-engine): its `[world]` refuses `engine` as it
/// refuses any field it does not know, at the key.
#[test]
fn a_scenario_cannot_name_the_engine() {
    let text = format!("{HEAD}[world]\nengine = \"engine\"\n");
    assert_eq!(
        error(&text),
        "DIR/bad.toml:4:1: `world.engine`: unknown field `engine`, expected one of `replicas`, \
         `sessions`, `ttl_ms`, `skew_margin_percent`, `duration_s`, `call_timeout_ms`, \
         `latency_ms`, `backend`, `replica_ttl_ms`"
    );
}

#[test]
fn a_script_and_a_mix_together_are_refused() {
    let text = format!(
        "{HEAD}[workload]\nscript = \"field-cases/f1-pause-longer-than-ttl.script.json\"\n\
         appends = [1, 3]\n"
    );
    assert_eq!(
        error(&text),
        "DIR/bad.toml:5:11: `workload.appends`: a workload is either a script or a generated \
         mix, not both: remove `script` or the mix fields (appends, think_ms, shutdown_chance)"
    );
}

#[test]
fn a_missing_schedule_file_is_named_with_its_resolved_path() {
    let text = format!("{HEAD}[faults]\nschedule = \"nowhere.schedule.json\"\n");
    assert_eq!(
        error(&text),
        "DIR/bad.toml:4:12: `faults.schedule`: cannot read DIR/nowhere.schedule.json (No such \
         file or directory (os error 2)); the path is relative to the scenario file's folder"
    );
}

#[test]
fn a_schedule_and_a_swarm_together_are_refused() {
    let text = format!(
        "{HEAD}[faults]\nschedule = \"field-cases/f1-pause-longer-than-ttl.schedule.json\"\n\
         [faults.swarm]\nkinds = [\"pause\"]\nfaults = [1, 2]\n"
    );
    let message = error(&text);
    assert!(
        message.starts_with("DIR/bad.toml:")
            && message.contains(
                "`faults.swarm`: faults come either from a schedule file or \
                                 from a swarm profile, not both"
            ),
        "{message}"
    );
}

#[test]
fn an_unknown_check_lists_the_checks() {
    let text = format!("{HEAD}[expect]\nhold = [\"TOKEN\", \"TOKENS\"]\n");
    assert_eq!(
        error(&text),
        "DIR/bad.toml:4:18: `expect.hold`: unknown check `TOKENS`; the checks are \
         TOKEN, EXCL, EXPIRY, FENCE, LEDGER, STOP, LIVE, SIGNAL, DEFINITE, LIN-LEASE, LIN-LEDGER"
    );
}

#[test]
fn an_unknown_fault_kind_lists_the_kinds() {
    let text = format!("{HEAD}[faults.swarm]\nkinds = [\"pause\", \"meteor\"]\nfaults = [1, 2]\n");
    let message = error(&text);
    assert!(
        message.starts_with(
            "DIR/bad.toml:4:19: `faults.swarm.kinds`: unknown variant `meteor`, \
                             expected one of `partition`"
        ),
        "{message}"
    );
}

#[test]
fn a_retired_fault_kind_is_refused_naming_the_schedules_word() {
    let text =
        format!("{HEAD}[faults.swarm]\nkinds = [\"pause\", \"lease_restarts\"]\nfaults = [1, 2]\n");
    assert_eq!(
        error(&text),
        "DIR/bad.toml:4:19: `faults.swarm.kinds`: unknown fault kind `lease_restarts`: it is \
         now `lease_service_restarts`, the schedule's name for the fault it draws"
    );
    let text = format!("{HEAD}[faults.swarm]\nkinds = [\"delete_record\"]\nfaults = [1, 2]\n");
    assert_eq!(
        error(&text),
        "DIR/bad.toml:4:10: `faults.swarm.kinds`: unknown fault kind `delete_record`: it is now \
         `delete_lease_record`, the schedule's name for the fault it draws"
    );
}

#[test]
fn a_wrong_schema_version_says_which_is_read() {
    assert_eq!(
        error("v = 2\nabout = \"test\"\n"),
        "DIR/bad.toml:1:5: `v`: scenario schema version 2 is not supported; this leasesim \
         reads version 1 (write `v = 1`)"
    );
}

#[test]
fn malformed_toml_names_the_line() {
    let message = error(&format!("{HEAD}[world\nreplicas = 2\n"));
    assert!(message.starts_with("DIR/bad.toml:3:"), "{message}");
}

#[test]
fn a_value_out_of_range_names_the_field_and_the_range() {
    let text = format!("{HEAD}[world]\nreplicas = 0\n");
    assert_eq!(
        error(&text),
        "DIR/bad.toml:3:1: `world.replicas`: must be 1..=1000, got 0"
    );
}

#[test]
fn a_replica_side_ttl_out_of_range_names_the_field() {
    let text = format!("{HEAD}[world]\nreplica_ttl_ms = 0\n");
    assert_eq!(
        error(&text),
        "DIR/bad.toml:3:1: `world.replica_ttl_ms`: must be 1..=86400000 ms, got 0"
    );
}

#[test]
fn a_script_naming_an_unknown_replica_is_refused_at_load() {
    let text = format!(
        "{HEAD}[world]\nreplicas = 1\n[workload]\nscript = \
         \"field-cases/f1-pause-longer-than-ttl.script.json\"\n"
    );
    let message = error(&text);
    assert!(
        message.starts_with("DIR/bad.toml:6:10: `workload.script`: DIR/field-cases/")
            && message.contains("unknown replica; the world has replica-1"),
        "{message}"
    );
}

#[test]
fn garbage_never_panics() {
    for text in [
        "",
        "\u{0}",
        "v = \"one\"",
        "[[world]]\n",
        "v = 1\nabout = 3\n",
        "about = \"x\"",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, text).unwrap();
        assert!(Scenario::load(&path).is_err(), "{text:?}");
    }
}

#[test]
fn a_fault_kind_the_backend_cannot_take_is_refused_not_dropped() {
    let kube = format!(
        "{HEAD}[world]\nbackend = \"kube\"\n[faults.swarm]\nkinds = [\"pause\", \"delete_lease_record\"]\nfaults = [1, 2]\n"
    );
    let message = error(&kube);
    assert!(
        message.contains("`delete_lease_record` cannot happen on the kube backend"),
        "{message}"
    );
    // Error windows are answered by both built-in backends; the kind's old spelling reads.
    for kind in ["authority_errors", "apiserver_errors"] {
        let grpc = format!("{HEAD}[faults.swarm]\nkinds = [\"{kind}\"]\nfaults = [1, 2]\n");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("errors.toml");
        std::fs::write(&path, grpc).unwrap();
        let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{kind}: {e}"));
        scenario
            .resolve(1)
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
    }
}

#[test]
fn a_swarm_pause_point_that_is_not_a_replicas_is_refused_listing_the_seven() {
    let swarm = |points: &str| {
        format!("{HEAD}[faults.swarm]\nkinds = [\"pause\"]\nfaults = [1, 2]\npoints = {points}\n")
    };
    let seven = "before_append_send, before_renew_send, after_grant_received, \
               before_append_check, before_open_check, before_cleanup_append, \
               after_authority_read";
    assert_eq!(
        error(&swarm("[\"before_append_send\", \"before_lunch\"]")),
        format!(
            "DIR/bad.toml:6:10: `faults.swarm.points`: `before_lunch` is not a pause point; a \
             swarm pauses and stalls replicas at {seven}"
        )
    );
    assert_eq!(
        error(&swarm("[\"service_handler_start\"]")),
        format!(
            "DIR/bad.toml:6:10: `faults.swarm.points`: `service_handler_start` is a service \
             host's pause point, not a replica's; a swarm pauses and stalls replicas at {seven}"
        )
    );
}

/// `after_authority_read` is a kube replica's point (its `KubeLease` decided from a read):
/// a `kube` profile may draw it; on the default `grpc` backend, whose client reads nothing
/// to decide from, the profile is refused rather than drawing stalls that never fire.
#[test]
fn the_decision_point_is_drawn_on_kube_and_refused_on_grpc() {
    let swarm = |backend: &str| {
        format!(
            "{HEAD}[world]\nbackend = \"{backend}\"\n[faults.swarm]\nkinds = [\"stall\"]\n\
             faults = [1, 2]\npoints = [\"after_authority_read\"]\n"
        )
    };
    let message = error(&swarm("grpc"));
    assert!(
        message.contains(
            "`faults.swarm.points`: no replica of the grpc backend reaches `after_authority_read`"
        ),
        "{message}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kube.toml");
    std::fs::write(&path, swarm("kube")).unwrap();
    let run = Scenario::load(&path).unwrap().resolve(1).unwrap();
    assert_eq!(
        run.drawn.unwrap().points,
        [leasesim::hooks::PausePoint::AfterAuthorityRead]
    );
}

#[test]
fn an_empty_repeated_or_unused_swarm_points_list_is_refused() {
    let swarm = |kinds: &str, points: &str| {
        format!("{HEAD}[faults.swarm]\nkinds = {kinds}\nfaults = [1, 2]\npoints = {points}\n")
    };
    assert_eq!(
        error(&swarm("[\"pause\"]", "[]")),
        "DIR/bad.toml:3:1: `faults.swarm.points`: give at least one pause point, or leave \
         `points` out to draw from every one a replica reaches: before_append_send, \
         before_renew_send, after_grant_received, before_append_check, before_open_check, \
         before_cleanup_append"
    );
    assert_eq!(
        error(&swarm(
            "[\"stall\"]",
            "[\"before_append_send\", \"before_open_check\", \"before_append_send\"]"
        )),
        "DIR/bad.toml:3:1: `faults.swarm.points`: `before_append_send` is named twice; name \
         each point once"
    );
    assert_eq!(
        error(&swarm(
            "[\"suspend\", \"crash\"]",
            "[\"before_append_send\"]"
        )),
        "DIR/bad.toml:3:1: `faults.swarm.points`: only pause, stall, worker_panic draw a pause \
         point, and none of them is in `kinds`; add one or remove `points`"
    );
}

#[test]
fn victim_odds_that_are_not_odds_or_have_nothing_to_aim_at_are_refused() {
    let swarm = |kinds: &str, odds: &str| {
        format!("{HEAD}[faults.swarm]\nkinds = {kinds}\nfaults = [1, 2]\nvictim_chance = {odds}\n")
    };
    assert_eq!(
        error(&swarm("[\"pause\"]", "[1, 0]")),
        "DIR/bad.toml:3:1: `faults.swarm.victim_chance`: odds are [numerator, denominator] \
         with 0 <= numerator <= denominator and denominator >= 1 (e.g. [1, 2]), got [1, 0]"
    );
    assert_eq!(
        error(&swarm("[\"pause\"]", "[3, 2]")),
        "DIR/bad.toml:3:1: `faults.swarm.victim_chance`: odds are [numerator, denominator] \
         with 0 <= numerator <= denominator and denominator >= 1 (e.g. [1, 2]), got [3, 2]"
    );
    assert_eq!(
        error(&swarm(
            "[\"crash_service\", \"lease_service_restarts\"]",
            "[1, 2]"
        )),
        "DIR/bad.toml:3:1: `faults.swarm.victim_chance`: every kind in `kinds` strikes a \
         service, none a replica, so there is nothing to aim at a victim; add a replica's kind \
         or remove `victim_chance`"
    );
    assert!(
        error(&swarm("[\"pause\"]", "[1, 2, 3]")).contains("a pair of exactly two elements"),
        "three numbers are not odds"
    );
}

/// `expect.coverage_within_seeds` promises only events the scenario expects, each within 1 to
/// 100000 seeds; its key must be an event's name.
#[test]
fn a_coverage_promise_names_an_expected_event_and_a_number_of_seeds_in_range() {
    let expect = |within: &str| {
        format!(
            "{HEAD}[expect]\ncoverage = [\"stale-append-rejected\"]\n\
             coverage_within_seeds = {within}\n"
        )
    };
    assert_eq!(
        error(&expect("{ renew-lost = 10 }")),
        "DIR/bad.toml:5:25: `expect.coverage_within_seeds`: `renew-lost` has a number of seeds \
         but is not expected; add it to `expect.coverage`, or remove it here"
    );
    assert_eq!(
        error(&expect("{ stale-append-rejected = 0 }")),
        "DIR/bad.toml:5:25: `expect.coverage_within_seeds`: `stale-append-rejected = 0`: give \
         1 to 100000 seeds (the length of campaign that must reach it)"
    );
    assert!(
        error(&expect("{ stale-appends = 10 }")).starts_with(
            "DIR/bad.toml:5:25: `expect.coverage_within_seeds`: unknown coverage event \
             `stale-appends`; the events are takeover-after-expiry, "
        ),
        "{}",
        error(&expect("{ stale-appends = 10 }"))
    );
    let promised = expect("{ stale-append-rejected = 100 }");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("good.toml");
    std::fs::write(&path, promised).unwrap();
    let scenario = Scenario::load(&path).unwrap();
    assert_eq!(
        scenario.coverage_within_seeds,
        std::collections::BTreeMap::from([("stale-append-rejected".to_owned(), 100)])
    );
}
