//! The engine on small hand-built histories.

use leasesim::check::linearizability::register::{CasRegister, RegisterInput, RegisterOutput};
use leasesim::check::linearizability::{Budget, Operation, Verdict, check};

type Op = Operation<RegisterInput, RegisterOutput>;

fn op(
    process: u64,
    call: u64,
    ret: Option<u64>,
    input: RegisterInput,
    output: Option<RegisterOutput>,
) -> Op {
    Operation {
        process,
        input,
        output,
        call,
        ret,
    }
}

fn write(p: u64, call: u64, ret: u64, v: i64) -> Op {
    op(
        p,
        call,
        Some(ret),
        RegisterInput::Write(v),
        Some(RegisterOutput::Written),
    )
}

fn read(p: u64, call: u64, ret: u64, v: Option<i64>) -> Op {
    op(
        p,
        call,
        Some(ret),
        RegisterInput::Read,
        Some(RegisterOutput::Read(v)),
    )
}

fn verdict(ops: &[Op]) -> Verdict {
    check(&CasRegister, ops, Budget::default())
}

#[test]
fn concurrent_write_and_read_is_linearizable_either_way() {
    assert_eq!(
        verdict(&[write(0, 0, 10, 1), read(1, 1, 5, Some(1))]),
        Verdict::Linearizable
    );
    assert_eq!(
        verdict(&[write(0, 0, 10, 1), read(1, 1, 5, None)]),
        Verdict::Linearizable
    );
}

#[test]
fn a_stale_read_after_a_completed_write_is_caught_and_explained() {
    let ops = [write(0, 0, 1, 1), read(1, 2, 3, None)];
    let Verdict::NotLinearizable(e) = verdict(&ops) else {
        panic!("stale read accepted")
    };
    assert_eq!(e.stuck_index, 1);
    assert_eq!(
        e.states_before,
        vec!["value 1: the model rejects the operation here".to_string()]
    );
    assert_eq!(
        e.longest_prefix,
        vec!["process 0 [0, 1]: write 1, ok".to_string()]
    );
}

#[test]
fn an_unknown_write_may_or_may_not_take_effect() {
    let unknown = op(0, 0, None, RegisterInput::Write(7), None);
    assert_eq!(
        verdict(&[unknown.clone(), read(1, 1, 2, Some(7))]),
        Verdict::Linearizable
    );
    assert_eq!(
        verdict(&[unknown.clone(), read(1, 1, 2, None)]),
        Verdict::Linearizable
    );
    assert!(matches!(
        verdict(&[unknown, read(1, 1, 2, Some(7)), read(1, 3, 4, None)]),
        Verdict::NotLinearizable(_)
    ));
}

#[test]
fn a_failed_cas_means_the_value_differed() {
    let cas = |call, ret, ok| {
        op(
            2,
            call,
            Some(ret),
            RegisterInput::Cas { old: 1, new: 2 },
            Some(RegisterOutput::Cas(ok)),
        )
    };
    assert!(matches!(
        verdict(&[write(0, 0, 1, 1), cas(2, 3, false)]),
        Verdict::NotLinearizable(_)
    ));
    assert_eq!(
        verdict(&[write(0, 0, 1, 1), cas(2, 3, true), read(1, 4, 5, Some(2))]),
        Verdict::Linearizable
    );
}

#[test]
fn an_exhausted_budget_is_unknown_never_linearizable() {
    let ops: Vec<Op> = (0..20).map(|i| write(i, 0, 100, i as i64)).collect();
    let mut with_read = ops.clone();
    with_read.push(read(99, 101, 102, Some(5)));
    assert_eq!(
        check(&CasRegister, &with_read, Budget::steps(3)),
        Verdict::Unknown
    );
    assert_eq!(verdict(&with_read), Verdict::Linearizable);
}
