//! A compare-and-set register: the object of the Jepsen etcd histories.
//!
//! Semantics as in `../shared/cases/jepsen/README.md` (porcupine's reading): the register starts
//! empty; a read returns the current value (or empty); a successful cas swapped; a failed cas
//! completed without swapping, so the value then differed from `old`; an operation with an
//! unknown outcome may or may not have taken effect.

use super::Model;

/// A register value; `None` is empty (Jepsen's `nil`).
pub type Value = Option<i64>;

/// A call on the register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

    fn key(&self, _input: &RegisterInput) {}

    fn describe_state(&self, state: &Value) -> String {
        match state {
            Some(v) => format!("value {v}"),
            None => "empty (nil)".to_string(),
        }
    }

    fn describe_op(&self, input: &RegisterInput, output: Option<&RegisterOutput>) -> String {
        let call = match input {
            RegisterInput::Read => "read".to_string(),
            RegisterInput::Write(v) => format!("write {v}"),
            RegisterInput::Cas { old, new } => format!("cas {old} -> {new}"),
        };
        let result = match output {
            None => "outcome unknown".to_string(),
            Some(RegisterOutput::Read(Some(v))) => format!("returned {v}"),
            Some(RegisterOutput::Read(None)) => "returned nil".to_string(),
            Some(RegisterOutput::Written) => "ok".to_string(),
            Some(RegisterOutput::Cas(true)) => "swapped".to_string(),
            Some(RegisterOutput::Cas(false)) => "failed (did not swap)".to_string(),
        };
        format!("{call}, {result}")
    }
}
