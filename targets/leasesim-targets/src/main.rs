//! `leasesim-targets`: leasesim's command line ([`leasesim::cli`]) with the interposer linked,
//! its source answering from the world ([`leasesim::sim::hosted`]): code a world hosts
//! unmodified reads its host's clocks and the run's seeded entropy through libc
//! (docs/targets.md#the-targets-binary). Its targets: kube-lease-manager 0.13
//! (`target:kube-lease-manager`, docs/targets.md#kube-lease-manager), kubert 0.25
//! (`target:kubert`, docs/targets.md#kubert) and kube-leader-election 0.44
//! (`target:kube-leader-election`, docs/targets.md#kube-leader-election), beside leasesim's
//! own backends.

use std::process::ExitCode;

use leasesim::exit::Exit;
use leasesim::sim::hosted::{self, ClockKind};
use leasesim_interposer::Source;

/// The world's answers, as the interposer asks for them.
const SOURCE: Source = Source {
    now: |kind| {
        hosted::clock_now(match kind {
            leasesim_interposer::ClockKind::Wall => ClockKind::Wall,
            leasesim_interposer::ClockKind::Monotonic => ClockKind::Monotonic,
        })
    },
    fill_random: hosted::fill_random,
};

fn main() -> ExitCode {
    if let Err(error) = leasesim_interposer::install(SOURCE) {
        eprintln!("error: {error}");
        return ExitCode::from(Exit::HarnessError);
    }
    // Before any world: a build whose reads miss the hooks (static, musl, a hook the linker
    // dropped) would run a world on real time and real entropy.
    match hosted::in_a_host(leasesim_interposer::self_test) {
        Ok(Ok(())) => {}
        Ok(Err(error)) => {
            eprintln!(
                "error: the interposer's self-test failed inside a simulated host, so no world \
                 can run here: {error} (docs/targets.md#the-self-test)"
            );
            return ExitCode::from(Exit::BadInput);
        }
        Err(error) => {
            eprintln!("error: the interposer's self-test could not run: {error}");
            return ExitCode::from(Exit::HarnessError);
        }
    }
    let targets = vec![
        leasesim_target_kube_lease_manager::KubeLeaseManager::backend(),
        leasesim_target_kubert::Kubert::backend(),
        leasesim_target_kube_leader_election::KubeLeaderElection::backend(),
    ];
    leasesim::cli::main_with_targets("leasesim-targets", targets)
}
