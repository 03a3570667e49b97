//! Unit tests of KubeLease.
