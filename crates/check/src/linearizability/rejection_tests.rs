//! The models' rejections name the rule of the model the response breaks, never "the model
//! does not allow the operation" ([`super::Model::describe_rejection`]).

use super::Model;
use super::kube::{KubeCall, KubeInput, KubeLeaseObjects, KubeOutput, LeaseObject};
use super::lease::{
    AuthorityWindow, Holder, LeaseCall, LeaseInput, LeaseOutput, LeaseState, TimedLease,
};
use super::ledger::{CasLedger, LedgerCall, LedgerInput, LedgerOutput};
use leasesim_history::Process;

const S: u64 = 1_000_000;

fn held_by_replica_1() -> LeaseState {
    LeaseState {
        high_water: 1,
        holder: Holder::Held {
            owner: 0,
            token: 1,
            expiry_from_us: 10 * S,
            expiry_to_us: 10 * S,
        },
    }
}

fn lease_model() -> TimedLease {
    TimedLease::new(vec![
        Process::new("replica-1", 0),
        Process::new("replica-2", 0),
    ])
}

#[test]
fn a_grant_to_another_owner_during_a_live_lease_names_the_live_lease() {
    let input = LeaseInput {
        session: "s1".into(),
        owner: 1,
        call: LeaseCall::Acquire,
        window: AuthorityWindow {
            from_us: 5 * S,
            to_us: 5 * S + 1_000,
        },
    };
    let output = LeaseOutput::Granted {
        token: 2,
        expiry_us: 15 * S,
        ttl_us: 10 * S,
    };
    let model = lease_model();
    assert!(
        model
            .step(&held_by_replica_1(), &input, Some(&output))
            .is_none()
    );
    assert_eq!(
        model.describe_rejection(&held_by_replica_1(), &input, Some(&output)),
        "replica-1's token-1 lease is live until at least 10.000 s: another owner's acquire \
         must get Held, not token 2"
    );
}

#[test]
fn a_renew_of_a_released_lease_says_renew_never_recreates() {
    let input = LeaseInput {
        session: "s1".into(),
        owner: 0,
        call: LeaseCall::Renew { token: 1 },
        window: AuthorityWindow {
            from_us: 5 * S,
            to_us: 6 * S,
        },
    };
    let output = LeaseOutput::Granted {
        token: 1,
        expiry_us: 15 * S,
        ttl_us: 10 * S,
    };
    let free = LeaseState {
        high_water: 1,
        holder: Holder::Free,
    };
    assert!(lease_model().step(&free, &input, Some(&output)).is_none());
    assert!(
        lease_model()
            .describe_rejection(&free, &input, Some(&output))
            .ends_with("a renew must get Held, it never recreates a record"),
    );
}

#[test]
fn the_ledger_says_which_tip_it_holds() {
    let input = LedgerInput {
        session: "s1".into(),
        call: LedgerCall::Tip,
    };
    let output = LedgerOutput::Tip(3);
    assert!(CasLedger.step(&2, &input, Some(&output)).is_none());
    assert_eq!(
        CasLedger.describe_rejection(&2, &input, Some(&output)),
        "the tip read returned 3 but the ledger's tip is 2"
    );
}

#[test]
fn a_kube_update_at_a_stale_resource_version_names_both_versions() {
    let object = |rv| LeaseObject {
        resource_version: rv,
        holder_identity: "replica-1#0".into(),
        transitions: 1,
    };
    let model = KubeLeaseObjects;
    let read = KubeInput {
        session: "s1".into(),
        call: KubeCall::Get,
    };
    let state = model
        .step(&model.init(), &read, Some(&KubeOutput::NotFound))
        .unwrap();
    let create = KubeInput {
        session: "s1".into(),
        call: KubeCall::Create {
            holder_identity: "replica-1#0".into(),
            transitions: 1,
        },
    };
    let state = model
        .step(&state, &create, Some(&KubeOutput::Object(object(8))))
        .unwrap();
    let update = KubeInput {
        session: "s1".into(),
        call: KubeCall::Update {
            expected_rv: Some(7),
            holder_identity: "replica-2#0".into(),
            transitions: 2,
        },
    };
    let wrote = KubeOutput::Object(LeaseObject {
        resource_version: 9,
        holder_identity: "replica-2#0".into(),
        transitions: 2,
    });
    assert!(model.step(&state, &update, Some(&wrote)).is_none());
    assert_eq!(
        model.describe_rejection(&state, &update, Some(&wrote)),
        "CAS expected rv 7, object at rv 8: the update must answer 409 Conflict"
    );
}
