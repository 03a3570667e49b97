//! A fresh kernel for each new boot: turmoil-net 0.1 has no kernel reset, so the engine
//! reserves spare turmoil-net hosts and moves a rebooted or crashed host onto one, translating
//! addresses so that peers still see the host at its own address (docs/engine.md#fresh-kernels).
//!
//! A host's **own address** is the one its name resolves to; its first kernel has it. A
//! spare kernel has an address of its own (10.0.x.y). After a move:
//! - the host's older kernels are **dead**: what they send is dropped (after the next fabric
//!   tick: what a killed process's close queued still leaves), and nothing reaches them;
//! - a packet to any of the host's addresses reaches its current kernel, its destination
//!   rewritten; the current kernel's replies on that connection leave from the address the
//!   peer sent to (a **reply translation**, kept per connection), so a peer's old connection
//!   is answered with an RST from the address it knows, and a new connection to the host's
//!   own address is served by the new boot;
//! - connections the new boot opens leave from its kernel's address, which the peers see (a
//!   machine that came back with a new address; [`crate::net::host_name`] knows it): no port of a
//!   dead kernel's connection can be reused under the same address.
//!
//! Links and suspensions are judged by the host, whatever the kernel ([`Kernels::host_addr`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use turmoil_net::{HostId, Net, Packet, Transport};

/// The first spare kernel's address; the next ones count up from it.
const FIRST_SPARE: u32 = u32::from_be_bytes([10, 0, 0, 1]);

/// The engine hosts' kernels: their own and the spares reserved for their next boots.
#[derive(Default)]
pub(crate) struct Kernels {
    /// How many spare kernels each host (by index) asked for before the network started.
    reserved: Vec<usize>,
    /// Each host's spare kernels, in the order they will be taken.
    spare: Vec<VecDeque<(HostId, IpAddr)>>,
    /// Each host's current kernel's address, for hosts that moved (by index).
    current: BTreeMap<usize, IpAddr>,
    /// Every kernel address of a host that moved (its own included) → the host's index.
    moved: BTreeMap<IpAddr, usize>,
    /// Dead kernels whose queued packets may still leave at the next fabric tick.
    draining: BTreeSet<IpAddr>,
    /// Reply translations: (the current kernel's socket, the peer's) → the address the peer
    /// sent to.
    replies: BTreeMap<(SocketAddr, SocketAddr), IpAddr>,
}

impl Kernels {
    /// Host `index` gets `n` spare kernels (replacing an earlier reservation).
    pub(crate) fn reserve(&mut self, index: usize, n: usize) {
        if self.reserved.len() <= index {
            self.reserved.resize(index + 1, 0);
        }
        self.reserved[index] = n;
    }

    /// Adds the reserved spare kernels to `net`, host by host, at addresses no host has.
    pub(crate) fn add_spares(&mut self, net: &mut Net, taken: &[IpAddr]) {
        let mut next = FIRST_SPARE;
        self.spare = vec![VecDeque::new(); taken.len()];
        for (index, &n) in self.reserved.iter().enumerate().take(taken.len()) {
            for _ in 0..n {
                let addr = loop {
                    let addr = IpAddr::V4(Ipv4Addr::from(next));
                    next = next.wrapping_add(1);
                    if !taken.contains(&addr) {
                        break addr;
                    }
                };
                self.spare[index].push_back((net.add_host(addr), addr));
            }
        }
    }

    /// Moves host `index` (whose own address is `own`) onto its next spare kernel; its
    /// `(id, address)`, or `None` when it has none left (it keeps its kernel). What the old
    /// kernel has queued still leaves at the next fabric tick (a killed process's FINs, unless
    /// the host is down: then nothing it sends leaves anyway).
    pub(crate) fn take(&mut self, index: usize, own: IpAddr) -> Option<(HostId, IpAddr)> {
        let (id, addr) = self.spare.get_mut(index)?.pop_front()?;
        let old = self.current.insert(index, addr).unwrap_or(own);
        self.draining.insert(old);
        self.moved.insert(own, index);
        self.moved.insert(addr, index);
        Some((id, addr))
    }

    /// The host (by index) a kernel address belongs to, if that host ever moved.
    pub(crate) fn owner(&self, addr: IpAddr) -> Option<usize> {
        self.moved.get(&addr).copied()
    }

    /// The own address of the host that has kernel address `addr` (`addrs`: the hosts' own
    /// addresses, by index); `addr` itself for a host that never moved or an unknown address.
    pub(crate) fn host_addr(&self, addr: IpAddr, addrs: &[IpAddr]) -> IpAddr {
        self.owner(addr)
            .and_then(|index| addrs.get(index).copied())
            .unwrap_or(addr)
    }

    /// The current kernel address of the host whose own address is `own` (`index`).
    pub(crate) fn current(&self, index: usize, own: IpAddr) -> IpAddr {
        self.current.get(&index).copied().unwrap_or(own)
    }

    /// An outbound packet as it leaves: `false` if it comes from a dead kernel (dropped);
    /// a reply of a current kernel leaves from the address its peer sent to.
    pub(crate) fn outbound(&self, packet: &mut Packet) -> bool {
        let Some(index) = self.owner(packet.src) else {
            return true;
        };
        if self.current.get(&index) != Some(&packet.src) {
            return self.draining.contains(&packet.src);
        }
        let (src_port, dst_port) = ports(packet);
        let key = (
            SocketAddr::new(packet.src, src_port),
            SocketAddr::new(packet.dst, dst_port),
        );
        if let Some(&addr) = self.replies.get(&key) {
            packet.src = addr;
        }
        true
    }

    /// Ends the drains: called after each fabric tick's packets have left.
    pub(crate) fn drained(&mut self) {
        self.draining.clear();
    }

    /// An inbound packet as it arrives: to any address of a host that moved, it goes to the
    /// host's current kernel, and that connection's replies will leave from the address sent
    /// to.
    pub(crate) fn inbound(&mut self, packet: &mut Packet) {
        let Some(index) = self.owner(packet.dst) else {
            return;
        };
        let Some(&current) = self.current.get(&index) else {
            return;
        };
        if packet.dst == current {
            return;
        }
        let (src_port, dst_port) = ports(packet);
        let key = (
            SocketAddr::new(current, dst_port),
            SocketAddr::new(packet.src, src_port),
        );
        self.replies.insert(key, packet.dst);
        packet.dst = current;
    }
}

/// A packet's (source, destination) ports.
fn ports(packet: &Packet) -> (u16, u16) {
    match &packet.payload {
        Transport::Tcp(s) => (s.src_port, s.dst_port),
        Transport::Udp(d) => (d.src_port, d.dst_port),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turmoil_net::TcpFlags;

    fn addr(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    fn segment(src: &str, src_port: u16, dst: &str, dst_port: u16) -> Packet {
        let (src, dst) = ((addr(src), src_port), (addr(dst), dst_port));
        crate::net::segment(src, dst, TcpFlags::default())
    }

    /// Host 0 (own address 192.168.0.1) moved onto a spare at 10.0.0.1; host 1 at
    /// 192.168.0.2 never moved.
    fn moved_host() -> Kernels {
        let mut kernels = Kernels::default();
        kernels.reserve(0, 1);
        let mut net = Net::new();
        let own = [addr("192.168.0.1"), addr("192.168.0.2")];
        kernels.add_spares(&mut net, &own);
        let (_, spare) = kernels.take(0, own[0]).expect("a spare");
        assert_eq!(spare, addr("10.0.0.1"));
        kernels
    }

    #[test]
    fn a_dead_kernels_queued_packets_leave_once_then_nothing_it_sends() {
        let mut kernels = moved_host();
        let mut fin = segment("192.168.0.1", 9000, "192.168.0.2", 40000);
        assert!(kernels.outbound(&mut fin));
        assert_eq!(fin.src, addr("192.168.0.1"));
        kernels.drained();
        assert!(!kernels.outbound(&mut fin));
    }

    #[test]
    fn a_peers_segment_to_the_own_address_reaches_the_new_kernel_and_the_reply_leaves_from_it() {
        let mut kernels = moved_host();
        let mut syn = segment("192.168.0.2", 40000, "192.168.0.1", 9000);
        kernels.inbound(&mut syn);
        assert_eq!(syn.dst, addr("10.0.0.1"));
        let mut reply = segment("10.0.0.1", 9000, "192.168.0.2", 40000);
        assert!(kernels.outbound(&mut reply));
        assert_eq!(reply.src, addr("192.168.0.1"));
    }

    #[test]
    fn the_new_boots_own_connections_leave_from_its_kernels_address() {
        let mut kernels = moved_host();
        let mut syn = segment("10.0.0.1", 49152, "192.168.0.2", 7070);
        assert!(kernels.outbound(&mut syn));
        assert_eq!(syn.src, addr("10.0.0.1"));
        let mut answer = segment("192.168.0.2", 7070, "10.0.0.1", 49152);
        kernels.inbound(&mut answer);
        assert_eq!(answer.dst, addr("10.0.0.1"));
    }

    #[test]
    fn every_address_of_a_moved_host_is_that_host_and_others_are_untouched() {
        let kernels = moved_host();
        let own = [addr("192.168.0.1"), addr("192.168.0.2")];
        assert_eq!(kernels.host_addr(addr("10.0.0.1"), &own), own[0]);
        assert_eq!(kernels.host_addr(own[0], &own), own[0]);
        assert_eq!(kernels.host_addr(own[1], &own), own[1]);
        let mut to_other = segment("192.168.0.1", 40000, "192.168.0.2", 9000);
        let before = to_other.clone();
        let mut kernels = kernels;
        kernels.inbound(&mut to_other);
        assert_eq!(to_other, before);
    }

    #[test]
    fn spares_skip_addresses_a_host_has_and_run_out() {
        let mut kernels = Kernels::default();
        kernels.reserve(1, 2);
        let mut net = Net::new();
        let own = [addr("192.168.0.1"), addr("10.0.0.1")];
        kernels.add_spares(&mut net, &own);
        let first = kernels.take(1, own[1]).map(|(_, a)| a);
        let second = kernels.take(1, own[1]).map(|(_, a)| a);
        assert_eq!(first, Some(addr("10.0.0.2")));
        assert_eq!(second, Some(addr("10.0.0.3")));
        assert_eq!(kernels.take(1, own[1]), None);
        assert_eq!(kernels.take(0, own[0]), None);
    }
}
