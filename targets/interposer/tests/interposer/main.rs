//! The interposer's hooks, in a test binary that links them: what unmodified code reads on a
//! thread the source answers, on one it does not, and what the self-test reports
//! (docs/targets.md#the-interposer).
//!
//! No test makes a std timed wait while the source answers its thread: the simulated
//! monotonic clock is far ahead of the real one (docs/targets.md#timed-waits).

mod clocks;
mod forward;
mod guard;
mod random;
mod self_test;
mod source;
