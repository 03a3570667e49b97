//! Backends only a targets binary knows, spelled `target:<name>` in a run file or a
//! scenario's `[world] backend` (docs/targets.md#the-targets-binary). Such a backend hosts
//! code nobody here wrote, which reads time and entropy through libc: only a binary that
//! links the interposer answers those reads from the world ([`crate::hosted`]), so only
//! it registers target backends, once, before its command line runs (the command line's
//! `main_with_targets`); `leasesim` refuses them.

use std::sync::OnceLock;

use super::Backend;

/// How a target backend's name starts in files and on the command line.
pub const TARGET_PREFIX: &str = "target:";

/// The binary that runs target backends.
pub const TARGETS_BINARY: &str = "leasesim-targets";

/// The target backends of this process: set once by a targets binary.
static TARGETS: OnceLock<Vec<Backend>> = OnceLock::new();

/// Makes `targets` the target backends of this process (a targets binary calls it once,
/// before its command line runs).
///
/// # Errors
/// A backend whose name does not start with [`TARGET_PREFIX`] or is given twice, or a second
/// registration in one process.
pub fn register_targets(targets: Vec<Backend>) -> Result<(), String> {
    for (index, target) in targets.iter().enumerate() {
        let name = target.name();
        if !name.starts_with(TARGET_PREFIX) || name.len() == TARGET_PREFIX.len() {
            return Err(format!(
                "target backend `{name}`: a target's name is `{TARGET_PREFIX}<name>`"
            ));
        }
        if targets[..index].iter().any(|other| other.name() == name) {
            return Err(format!("target backend `{name}` is registered twice"));
        }
    }
    TARGETS
        .set(targets)
        .map_err(|_| "the target backends of this process are registered already".to_owned())
}

/// The target backend spelled `spelling` (`target:<name>`).
///
/// # Errors
/// In a process with no targets registered (`leasesim`): a message naming the targets
/// binary and docs/targets.md. In a targets binary: one listing the targets it knows.
pub fn target_backend(spelling: &str) -> Result<Backend, String> {
    let Some(targets) = TARGETS.get() else {
        return Err(format!(
            "backend `{spelling}`: target backends run unmodified code, whose clocks and \
             entropy only the targets binary `{TARGETS_BINARY}` answers from the world; run \
             this with `{TARGETS_BINARY}` (docs/targets.md#the-targets-binary); leasesim's \
             own backends are grpc and kube"
        ));
    };
    if let Some(target) = targets.iter().find(|target| target.name() == spelling) {
        return Ok(target.clone());
    }
    let known: Vec<&str> = targets.iter().map(Backend::name).collect();
    Err(format!(
        "unknown target backend `{spelling}`; this binary knows {}",
        if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        }
    ))
}
