//! A compare-and-set register: the object of the Jepsen etcd histories.
//!
//! Semantics as in `tests/data/jepsen/README.md` (porcupine's reading): the register starts
//! empty; a read returns the current value (or empty); a successful cas swapped; a failed cas
//! completed without swapping, so the value then differed from `old`; an operation with an
//! unknown outcome may or may not have taken effect.

use super::{Model, join_with_or};

/// A register value; `None` is empty (Jepsen's `nil`).
pub type Value = Option<i64>;

/// A call on the register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RegisterInput {
    /// Read the value.
    Read,
    /// Write a value.
    Write(i64),
    /// Swap `old` for `new` if the value is `old`.
    Cas {
        /// The expected value.
        old: i64,
        /// The value to store.
        new: i64,
    },
}

/// A completed register call's response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RegisterOutput {
    /// A read's result.
    Read(Value),
    /// A write completed.
    Written,
    /// A cas completed: whether it swapped.
    Cas(bool),
}

/// The compare-and-set register model (one object, no partitions).
#[derive(Clone, Copy, Debug, Default)]
pub struct CasRegister;

impl Model for CasRegister {
    type State = Value;
    type Input = RegisterInput;
    type Output = RegisterOutput;
    type Key = ();

    fn init(&self) -> Value {
        None
    }

    fn step(
        &self,
        state: &Value,
        input: &RegisterInput,
        output: Option<&RegisterOutput>,
    ) -> Option<Value> {
        match (input, output) {
            (RegisterInput::Read, Some(RegisterOutput::Read(seen))) => {
                (seen == state).then_some(*state)
            }
            (RegisterInput::Read, None) => Some(*state),
            (RegisterInput::Write(v), Some(RegisterOutput::Written) | None) => Some(Some(*v)),
            (RegisterInput::Cas { old, new }, Some(RegisterOutput::Cas(true))) => {
                (*state == Some(*old)).then_some(Some(*new))
            }
            (RegisterInput::Cas { old, .. }, Some(RegisterOutput::Cas(false))) => {
                (*state != Some(*old)).then_some(*state)
            }
            (RegisterInput::Cas { old, new }, None) => Some(if *state == Some(*old) {
                Some(*new)
            } else {
                *state
            }),
            _ => None,
        }
    }

    /// A read, and a cas that did not swap.
    fn is_read_only(&self, input: &RegisterInput, output: &RegisterOutput) -> bool {
        matches!(
            (input, output),
            (RegisterInput::Read, RegisterOutput::Read(_))
                | (RegisterInput::Cas { .. }, RegisterOutput::Cas(false))
        )
    }

    fn key(&self, _input: &RegisterInput) {}

    fn describe_state(&self, state: &Value) -> String {
        format!("the register holds {}", show(*state))
    }

    fn describe_op(&self, input: &RegisterInput, output: Option<&RegisterOutput>) -> String {
        match (input, output) {
            (RegisterInput::Read, Some(RegisterOutput::Read(v))) => format!("read {}", show(*v)),
            (RegisterInput::Read, _) => "read (timed out, outcome unknown)".to_string(),
            (RegisterInput::Write(v), Some(RegisterOutput::Written)) => format!("wrote {v}"),
            (RegisterInput::Write(v), _) => format!("wrote {v} (outcome unknown)"),
            (RegisterInput::Cas { old, new }, Some(RegisterOutput::Cas(true))) => {
                format!("swapped {old} for {new} (cas succeeded)")
            }
            (RegisterInput::Cas { old, new }, Some(RegisterOutput::Cas(false))) => {
                format!("failed to swap {old} for {new} (cas failed)")
            }
            (RegisterInput::Cas { old, new }, _) => {
                format!("tried to swap {old} for {new} (cas, outcome unknown)")
            }
        }
    }

    fn describe_rejection(
        &self,
        state: &Value,
        input: &RegisterInput,
        output: Option<&RegisterOutput>,
    ) -> String {
        match (input, output) {
            (RegisterInput::Read, Some(RegisterOutput::Read(seen))) => {
                format!("a read then returns {}, not {}", show(*state), show(*seen))
            }
            (RegisterInput::Cas { old, .. }, Some(RegisterOutput::Cas(true))) => format!(
                "the cas expects {old}, so it cannot swap while the register holds {}",
                show(*state)
            ),
            (RegisterInput::Cas { old, .. }, Some(RegisterOutput::Cas(false))) => {
                format!("the register holds {old}, so the cas would have swapped")
            }
            _ => "the response does not fit the call".to_string(),
        }
    }

    fn describe_possible_states(&self, states: &[&Value]) -> String {
        let values: Vec<String> = states.iter().map(|s| show(**s)).collect();
        format!("the register could only hold {}", join_with_or(&values))
    }
}

/// A register value as Jepsen prints it: the number, or `nil` when empty.
fn show(value: Value) -> String {
    match value {
        Some(v) => v.to_string(),
        None => "nil".to_string(),
    }
}
