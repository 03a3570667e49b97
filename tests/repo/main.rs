//! The repository stands alone: what its files cite is in it.
//!
//! These tests read the clone's own files from `CARGO_MANIFEST_DIR` and need nothing built
//! but themselves.

mod docs;
mod tree;
mod workspace;
