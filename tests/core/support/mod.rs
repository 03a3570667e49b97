//! Test doubles and helpers shared by the core tests.

pub mod lease;
pub mod ledger;
