//! What a `nemesis` line says was done: [`NemesisAction`], the one vocabulary the simulated
//! world and live mode write and the timeline and the checks read (the format: the crate
//! docs, "`nemesis` — one action of the nemesis").

use serde::{Deserialize, Serialize};

/// Declares [`NemesisAction`] with each variant's JSON name written once: serde's name,
/// [`NemesisAction::as_str`] and [`NemesisAction::ALL`] all come from this list.
macro_rules! actions {
    ($($(#[$meta:meta])* $variant:ident = $name:literal,)*) => {
        /// One action of the nemesis, as a `nemesis` line's `action` names it (`"sigstop"`,
        /// `"partition_one_way"`…). The reader refuses any other name, listing these (the
        /// format's rule for a value out of range).
        #[derive(
            Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize,
        )]
        pub enum NemesisAction {
            $($(#[$meta])* #[serde(rename = $name)] $variant,)*
        }

        impl NemesisAction {
            /// Every action, in declaration order.
            pub const ALL: &'static [NemesisAction] = &[$(NemesisAction::$variant,)*];

            /// The action's name in a history (`"sigstop"`…).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(NemesisAction::$variant => $name,)*
                }
            }
        }
    };
}

actions! {
    // The simulated world's: the fault schedule's names (crates/sim/src/fault_lines.rs).
    /// A timed freeze of a host's tasks (ends at its `resume`).
    Pause = "pause",
    /// A freeze of the whole host, its clock included (ends at its `resume`).
    Suspend = "suspend",
    /// A task stalled at a pause point (ends at its `resume`).
    Stall = "stall",
    /// A worker task panicked at a pause point.
    WorkerPanic = "worker_panic",
    /// The end of a freeze.
    Resume = "resume",
    /// A host crashed (down until its `restart`).
    Crash = "crash",
    /// A host booted again (after a crash, or a bounce of the lease service).
    Restart = "restart",
    /// A host cut from every other.
    Isolate = "isolate",
    /// A link's replies delayed (until the pair's `deliver`).
    DelayReplies = "delay_replies",
    /// The delayed replies of a link delivered.
    Deliver = "deliver",
    /// A link's replies held one way (until the pair's `release_replies`).
    HoldReplies = "hold_replies",
    /// The held replies of a link released.
    ReleaseReplies = "release_replies",
    /// A host's clock set to drift (`detail`: the rate).
    ClockDrift = "clock_drift",
    /// A host's wall clock stepped (`detail`: by how much).
    WallJump = "wall_jump",
    /// A host's wall clock offset (`detail`: by how much).
    WallOffset = "wall_offset",
    /// The authority deleted a session's lease record.
    DeleteLeaseRecord = "delete_lease_record",
    /// The authority answers with errors for a while (until `serve`). Histories written
    /// before the fault had one name for both backends spell it `apiserver_errors`.
    #[serde(alias = "apiserver_errors")]
    AuthorityErrors = "authority_errors",
    /// The authority answers again.
    Serve = "serve",
    /// A fault aimed at a session's holder resolved whom it strikes, just before its own
    /// line: `host`, the replica struck; `detail`, `holder of s1`, or `nobody holds s1: the
    /// schedule's replica` (docs/world.md#faults-aimed-at-the-holder).
    AimAtHolder = "aim_at_holder",
    /// A replica's process forked (`detail`: how the child ends, `exit` or `linger`; a
    /// flock world's replicas are processes of one host).
    Fork = "fork",
    // Both worlds'.
    /// A link cut both ways.
    Partition = "partition",
    /// A link cut one way (`host` → `peer` dropped).
    PartitionOneWay = "partition_one_way",
    /// A link's traffic held (until the pair's `release`).
    Hold = "hold",
    /// A held link's traffic released.
    Release = "release",
    /// Latency (and jitter) added to a link.
    Latency = "latency",
    /// A link's connections fail at random.
    LinkFlaps = "link_flaps",
    /// Every fault ended (`host` is `all`).
    Heal = "heal",
    // Live mode's: real processes and proxied links (src/live/orchestrate/).
    /// SIGSTOP sent to a host's process (frozen until `sigcont`).
    Sigstop = "sigstop",
    /// SIGCONT sent to a host's process.
    Sigcont = "sigcont",
    /// SIGKILL sent to a host's process (down until `start`).
    Sigkill = "sigkill",
    /// A host's process started.
    Start = "start",
    /// A link's connections reset once.
    Reset = "reset",
    /// A host's wall clock offset through faketime.
    Clock = "clock",
    /// A drawn fault with no real counterpart, not applied (`detail` says which).
    Dropped = "dropped",
}

impl std::fmt::Display for NemesisAction {
    /// The action's name in a history.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
