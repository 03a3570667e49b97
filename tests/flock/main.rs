//! `FlockLease` in real time: the conformance suite, and real processes (`leasesim flock`)
//! racing, crashing, forking and stopping over real files (issue 15, field case F8).

/// `correct!(NAME)`: the test `correct::NAME`, process test `NAME` (a `support::ProcessTest`)
/// on the correct implementation (no mutant), under the name the mutant catalogue pins.
macro_rules! correct {
    ($test:ident) => {
        /// The correct implementation, under the name the mutant catalogue pins.
        mod correct {
            #[test]
            fn $test() {
                super::$test(None).unwrap();
            }
        }
    };
}

mod conformance;
mod crash;
mod differential;
mod fork;
mod kill;
mod kills;
mod names;
mod program;
mod race;
mod records;
mod support;
mod suspend;
mod unlink;
