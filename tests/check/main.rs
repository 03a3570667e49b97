//! Checkers: the linearizability engine on hand-built histories and on the Jepsen histories
//! kept beside the clone (`../shared/cases/jepsen`).

mod engine;
mod jepsen;
