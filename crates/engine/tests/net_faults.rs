//! The network faults the world's nemesis needs (docs/engine.md#latency-and-loss,
//! docs/engine.md#crash-and-start, docs/engine.md#heal): latencies drawn per packet in a range
//! with FIFO links, packet loss, a crash and a later start, and one heal of every link.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::Duration;

use leasesim_engine::{Engine, EngineError, Event, HostId, Latency, NetConfig, NetFault};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil_net::shim::tokio::net::{TcpListener, TcpStream, UdpSocket};

mod support;
use support::{fault_at, hosts_ms, two_hosts};

const MS: Duration = Duration::from_millis(1);

/// An engine seeded `seed` with hosts `tx` and `rx` over links of `latency`.
fn tx_rx(seed: u64, latency: Latency, reorder: bool) -> (Engine, HostId, HostId) {
    let config = NetConfig {
        latency,
        reorder,
        ..NetConfig::default()
    };
    two_hosts(seed, config, ["tx", "rx"])
}

/// `tx` sends datagram `i` at `i` ms of its clock, for `i` in `1..=count`; `rx` traces
/// `got i` when it arrives.
fn udp_stream(engine: &Engine, tx: HostId, rx: HostId, count: u8) {
    engine
        .spawn(rx, async {
            let socket = UdpSocket::bind("0.0.0.0:5000").await.expect("bind");
            let mut buf = [0u8; 8];
            loop {
                let (n, _) = socket.recv_from(&mut buf).await.expect("recv");
                leasesim_engine::trace(&format!("got {}", buf[..n][0]));
            }
        })
        .expect("rx exists");
    engine
        .spawn(tx, async move {
            let socket = UdpSocket::bind("0.0.0.0:0").await.expect("bind");
            for i in 1..=count {
                tokio::time::sleep(MS).await;
                socket.send_to(&[i], "rx:5000").await.expect("send");
            }
        })
        .expect("tx exists");
}

/// `(sent ms, arrived ms)` of each datagram `got` in the trace, in arrival order (datagram
/// `i` is sent, and leaves at the fabric tick, at `i` ms).
fn arrivals(lines: &[String]) -> Vec<(u64, u64)> {
    lines
        .iter()
        .filter_map(|line| {
            let (at, rest) = line.split_once(" rx got ")?;
            Some((rest.parse().ok()?, at.parse().ok()?))
        })
        .collect()
}

fn udp_trace(seed: u64, latency: Latency, reorder: bool) -> Vec<String> {
    let (mut engine, tx, rx) = tx_rx(seed, latency, reorder);
    udp_stream(&engine, tx, rx, 8);
    engine.run_until(100 * MS).expect("no fault refused");
    hosts_ms(&engine)
}

/// What the engine draws for `count` packets on a link whose range spans `steps + 1` whole
/// ticks, for `seed`: ChaCha20 keyed by the engine's seed on the network's stream (3), one
/// `u64` per packet, taken modulo the number of steps (docs/engine.md#latency-and-loss).
fn drawn_ticks(seed: u64, count: usize, steps: u64) -> Vec<u64> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_stream(3);
    (0..count).map(|_| rng.next_u64() % (steps + 1)).collect()
}

#[test]
fn each_packet_draws_its_latency_in_the_range_and_a_fifo_link_never_lets_one_overtake() {
    let lines = udp_trace(1, Latency::range(MS, 10 * MS), false);
    // Seed 1's draws, 1 to 10 ms: 6, 8, 6, 9, 1, 10, 1, 10. Datagram i leaves at i ms;
    // one drawn shorter than the one before it waits for it (FIFO): 3 with 2 at 10, 5 with
    // 4 at 13, 7 with 6 at 16.
    let latencies: Vec<u64> = drawn_ticks(1, 8, 9).iter().map(|k| 1 + k).collect();
    assert_eq!(latencies, [6, 8, 6, 9, 1, 10, 1, 10]);
    assert_eq!(
        lines,
        [
            "7 rx got 1",
            "10 rx got 2",
            "10 rx got 3",
            "13 rx got 4",
            "13 rx got 5",
            "16 rx got 6",
            "16 rx got 7",
            "18 rx got 8",
        ]
    );
    let got = arrivals(&lines);
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    let mut last = 0;
    for (&(sent, at), latency) in got.iter().zip(&latencies) {
        last = (sent + latency).max(last);
        assert_eq!(at, last, "datagram {sent}");
    }
}

#[test]
fn with_reordering_allowed_a_shorter_draw_overtakes_on_the_same_draws() {
    let lines = udp_trace(1, Latency::range(MS, 10 * MS), true);
    // The same draws as the FIFO link above (6, 8, 6, 9, 1, 10, 1, 10), delivered as drawn.
    assert_eq!(
        lines,
        [
            "6 rx got 5",
            "7 rx got 1",
            "8 rx got 7",
            "9 rx got 3",
            "10 rx got 2",
            "13 rx got 4",
            "16 rx got 6",
            "18 rx got 8",
        ]
    );
}

#[test]
fn turmoils_spread_draws_a_geometric_number_of_ticks_skewed_to_the_least() {
    let lines = udp_trace(1, Latency::turmoil(MS, 5 * MS), false);
    // For 1–5 ms, one more tick with odds e^-1.25 = 286,504 ppm, at most 4 more: one u32 per
    // tick gone past, from the same stream.
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    rng.set_stream(3);
    let latencies: Vec<u64> = (0..8)
        .map(|_| {
            let mut k = 0;
            while k < 4 && rng.next_u32() % 1_000_000 < 286_504 {
                k += 1;
            }
            1 + k
        })
        .collect();
    assert_eq!(latencies, [3, 1, 1, 1, 3, 1, 1, 1]);
    // Six of eight at the least; 2 and 3 wait for 1 (FIFO), 6 and 7 for 5.
    assert_eq!(
        lines,
        [
            "4 rx got 1",
            "4 rx got 2",
            "4 rx got 3",
            "5 rx got 4",
            "8 rx got 5",
            "8 rx got 6",
            "8 rx got 7",
            "9 rx got 8",
        ]
    );
}

#[test]
fn the_same_seed_gives_the_same_bytes_and_another_seed_other_draws() {
    let latency = Latency::range(MS, 10 * MS);
    let trace = |seed| {
        let (mut engine, tx, rx) = tx_rx(seed, latency, false);
        udp_stream(&engine, tx, rx, 8);
        engine.run_until(100 * MS).expect("no fault refused");
        engine.trace()
    };
    let first = trace(1);
    assert_eq!(first, trace(1));
    assert_ne!(first, trace(2));
}

#[test]
fn a_fixed_latency_draws_nothing_and_a_range_narrower_than_a_tick_is_its_least() {
    let fixed = udp_trace(1, Latency::fixed(4 * MS), false);
    let narrow = udp_trace(1, Latency::range(4 * MS, 4 * MS + MS / 2), false);
    let expected: Vec<String> = (1..=8).map(|i| format!("{} rx got {i}", i + 4)).collect();
    assert_eq!(fixed, expected);
    assert_eq!(narrow, expected);
}

#[test]
fn a_latency_fault_draws_in_its_own_range_from_then_on() {
    let (mut engine, tx, rx) = tx_rx(1, Latency::fixed(MS), false);
    udp_stream(&engine, tx, rx, 8);
    let slow = Latency::range(20 * MS, 22 * MS);
    let fault = Event::Net {
        from: tx,
        to: rx,
        fault: NetFault::Latency(slow),
    };
    engine.schedule(4 * MS, fault);
    engine.run_until(100 * MS).expect("no fault refused");
    // 1 to 3 leave before the fault and take the fixed 1 ms, drawing nothing; 4 to 8 draw
    // the stream's first five in 20 to 22 ms: 21, 22, 20, 22, 20 (6 and 8 wait for 5 and 7).
    let latencies: Vec<u64> = drawn_ticks(1, 5, 2).iter().map(|k| 20 + k).collect();
    assert_eq!(latencies, [21, 22, 20, 22, 20]);
    assert_eq!(
        hosts_ms(&engine),
        [
            "2 rx got 1",
            "3 rx got 2",
            "4 rx got 3",
            "25 rx got 4",
            "27 rx got 5",
            "27 rx got 6",
            "29 rx got 7",
            "29 rx got 8",
        ]
    );
}

/// Once connected, `tx` writes 8 bytes on one TCP connection to `rx`, one per ms of its clock;
/// `rx` traces each read's bytes; over links of 1 to 10 ms, seed 1 (every segment and ACK
/// draws its latency, in the order they leave).
fn tcp_trickle(reorder: bool) -> Vec<String> {
    let (mut engine, tx, rx) = tx_rx(1, Latency::range(MS, 10 * MS), reorder);
    engine
        .spawn(rx, async {
            let listener = TcpListener::bind("0.0.0.0:9000").await.expect("bind");
            let (mut stream, _) = listener.accept().await.expect("accept");
            let mut buf = [0u8; 16];
            loop {
                let n = stream.read(&mut buf).await.expect("read");
                if n == 0 {
                    return;
                }
                leasesim_engine::trace(&format!("read {:?}", &buf[..n]));
            }
        })
        .expect("rx exists");
    engine
        .spawn(tx, async {
            let mut stream = TcpStream::connect("rx:9000").await.expect("connect");
            leasesim_engine::trace("connected");
            for i in 1..=8u8 {
                tokio::time::sleep(MS).await;
                stream.write_all(&[i]).await.expect("write");
            }
            tokio::time::sleep(2000 * MS).await;
        })
        .expect("tx exists");
    engine.run_until(2000 * MS).expect("no fault refused");
    hosts_ms(&engine)
}

#[test]
fn tcp_over_fifo_links_reads_every_byte_as_it_arrives() {
    // The handshake takes the stream's first draws (connected at 15); every byte is read
    // within 10 ms of its write, in order.
    assert_eq!(
        tcp_trickle(false),
        [
            "15 tx connected",
            "25 rx read [1, 2]",
            "28 rx read [3, 4]",
            "30 rx read [5, 6, 7, 8]"
        ]
    );
}

#[test]
fn tcp_over_reordering_links_drops_what_overtakes_and_waits_an_rto_for_it() {
    // The same draws, but the segment carrying 2 is overtaken: turmoil-net's receiver takes
    // only the next sequence number and drops the rest, so 3 to 8 are lost and the sender
    // sends them again after an RTO (200 ms) without ACK progress: 207 ms later than on
    // FIFO links.
    assert_eq!(
        tcp_trickle(true),
        [
            "15 tx connected",
            "25 rx read [1]",
            "237 rx read [2, 3, 4, 5, 6, 7, 8]"
        ]
    );
}

#[test]
fn bad_latencies_and_losses_are_refused_with_a_clear_error() {
    let backwards = Latency::range(5 * MS, MS);
    let config = NetConfig {
        latency: backwards,
        ..NetConfig::default()
    };
    let err = Engine::with_network(1, config).expect_err("refused");
    assert_eq!(err, EngineError::LatencyRange(backwards, Duration::ZERO));
    assert_eq!(
        err.to_string(),
        "a latency from 5ms to 1ms at 0ns: the most must not be shorter than the least"
    );
    for (fault, message) in [
        (
            NetFault::Latency(backwards),
            "a latency from 5ms to 1ms at 3ms: the most must not be shorter than the least",
        ),
        (
            NetFault::Loss(1_000_001),
            "a loss of 1000001 ppm at 3ms: at most 1000000 ppm (every packet)",
        ),
    ] {
        let (mut engine, tx, rx) = tx_rx(1, Latency::fixed(MS), false);
        engine.schedule(
            3 * MS,
            Event::Net {
                from: tx,
                to: rx,
                fault,
            },
        );
        let err = engine.run_until(10 * MS).expect_err("refused");
        assert_eq!(err.to_string(), message);
        assert_eq!(engine.now(), 3 * MS);
    }
}

/// Which of `count` packets a link losing `ppm` loses, for `seed`: one `u32` per packet from
/// the network's stream, lost when below `ppm` modulo a million (an integer ratio).
fn drawn_losses(seed: u64, count: usize, ppm: u32) -> Vec<bool> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_stream(3);
    (0..count)
        .map(|_| rng.next_u32() % 1_000_000 < ppm)
        .collect()
}

#[test]
fn a_lossy_link_drops_each_packet_with_its_probability_from_the_seed() {
    let (mut engine, tx, rx) = tx_rx(1, Latency::fixed(MS), false);
    udp_stream(&engine, tx, rx, 20);
    let loss = |ppm| Event::Net {
        from: tx,
        to: rx,
        fault: NetFault::Loss(ppm),
    };
    engine.schedule(Duration::ZERO, loss(250_000));
    engine.schedule(13 * MS, loss(0));
    engine.run_until(100 * MS).expect("no fault refused");
    let got: Vec<u64> = arrivals(&hosts_ms(&engine)).iter().map(|g| g.0).collect();
    // Datagrams 1 to 12 leave under a 25 % loss, each drawing once; 13 to 20 after it ends.
    let lost = drawn_losses(1, 12, 250_000);
    let kept: Vec<u64> = (1..=20)
        .filter(|&i| i > 12 || !lost[i as usize - 1])
        .collect();
    assert_eq!(kept, got);
    assert_eq!(
        got,
        [3, 4, 5, 6, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]
    );
}

/// A client (`tx`) that connects to the echo on `rx` and pings once, over 5 ms links, after
/// `faults` scheduled its faults.
fn echo_trace(faults: impl FnOnce(&mut Engine, HostId, HostId)) -> Vec<String> {
    let (mut engine, client, server) = tx_rx(1, Latency::fixed(5 * MS), false);
    engine
        .spawn(server, echo_server_on("0.0.0.0:9000"))
        .expect("a host");
    engine
        .spawn(client, async {
            let mut stream = match TcpStream::connect("rx:9000").await {
                Ok(stream) => stream,
                Err(e) => return leasesim_engine::trace(&format!("connect {:?}", e.kind())),
            };
            leasesim_engine::trace("connected");
            let mut buf = [0u8; 4];
            stream.write_all(b"ping").await.expect("write");
            match stream.read_exact(&mut buf).await {
                Ok(_) => leasesim_engine::trace(&String::from_utf8_lossy(&buf)),
                Err(e) => leasesim_engine::trace(&format!("error {:?}", e.kind())),
            }
        })
        .expect("a host");
    faults(&mut engine, client, server);
    engine.run_until(3000 * MS).expect("no fault refused");
    hosts_ms(&engine)
}

/// The echo with `fault` on both directions from time zero.
fn echo_with_both_ways(fault: NetFault) -> Vec<String> {
    echo_trace(|engine, client, server| {
        fault_at(engine, Duration::ZERO, client, server, fault);
        fault_at(engine, Duration::ZERO, server, client, fault);
    })
}

/// Echoes every read on every connection accepted at `addr`.
async fn echo_server_on(addr: &'static str) {
    let listener = TcpListener::bind(addr).await.expect("bind");
    loop {
        let (mut stream, _) = listener.accept().await.expect("accept");
        tokio::spawn(async move {
            let mut buf = [0u8; 64];
            while let Ok(n) = stream.read(&mut buf).await {
                if n == 0 || stream.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        });
    }
}

#[test]
fn tcp_retransmits_what_a_lossy_link_drops() {
    // 30 % of the packets lost both ways, seed 1: the handshake that takes 10 ms on clean
    // 5 ms links (tests/net.rs) completes with the SYN retransmitted at 400 ms (the first
    // two, or their SYN-ACKs, lost); the echo, 13 ms after the connect on clean links, comes
    // after retransmissions, each an RTO (200 ms) after the last ACK progress.
    assert_eq!(
        echo_with_both_ways(NetFault::Loss(300_000)),
        ["410 tx connected", "1013 tx ping"]
    );
}

#[test]
fn a_loss_of_every_packet_is_a_partition() {
    // As a cut both ways (tests/net.rs): five retransmissions of the SYN, then the sixth RTO
    // gives up at 1.2 s.
    assert_eq!(
        echo_with_both_ways(NetFault::Loss(1_000_000)),
        ["1200 tx connect TimedOut"]
    );
}

/// Schedules [`Engine::heal`] at `at`.
fn heal_at(engine: &mut Engine, at: Duration) {
    let heal = |engine: &mut Engine| engine.heal().expect("a network");
    engine.schedule(at, Event::Call(Box::new(heal)));
}

#[test]
fn a_heal_releases_what_is_held_and_gives_every_link_the_configs_latency_again() {
    let lines = echo_trace(|engine, client, server| {
        fault_at(
            engine,
            Duration::ZERO,
            client,
            server,
            NetFault::Latency(Latency::fixed(40 * MS)),
        );
        fault_at(engine, Duration::ZERO, server, client, NetFault::Hold);
        heal_at(engine, 150 * MS);
    });
    // The SYN takes 40 ms (1 → 41); its SYN-ACK is held until the heal at 150 and arrives
    // at 155; from then on both ways take the config's 5 ms: the ping leaves at 156 and
    // arrives at 161, the echo at 167.
    assert_eq!(lines, ["150 net heal", "155 tx connected", "167 tx ping"]);
}

#[test]
fn a_heal_ends_cuts_and_losses() {
    let lines = echo_trace(|engine, client, server| {
        fault_at(engine, Duration::ZERO, client, server, NetFault::Cut);
        fault_at(
            engine,
            Duration::ZERO,
            server,
            client,
            NetFault::Loss(1_000_000),
        );
        heal_at(engine, 300 * MS);
    });
    // The SYN (1 ms) and its retransmission at 200 ms are cut; the one at 400 ms, after the
    // heal, is answered and its SYN-ACK is not lost: connected at 410, the echo 12 ms later
    // as on clean links.
    assert_eq!(lines, ["300 net heal", "410 tx connected", "422 tx ping"]);
}

#[test]
fn a_heal_without_a_network_is_refused() {
    let mut engine = Engine::new(1);
    let err = engine.heal().expect_err("no network");
    assert_eq!(err, EngineError::NoNetwork);
}

/// A server on `rx` that echoes and traces how each connection ends, and a client on `tx`
/// that pings, then waits on a read and, if the connection fails, connects and pings again;
/// over 5 ms links, `reset` scheduled at 50 ms.
fn reset_trace(reset: impl FnOnce(&mut Engine, HostId, HostId)) -> Vec<String> {
    let (mut engine, client, server) = tx_rx(1, Latency::fixed(5 * MS), false);
    engine
        .spawn(server, async {
            let listener = TcpListener::bind("0.0.0.0:9000").await.expect("bind");
            loop {
                let (mut stream, _) = listener.accept().await.expect("accept");
                tokio::spawn(async move {
                    let mut buf = [0u8; 64];
                    let end = loop {
                        match stream.read(&mut buf).await {
                            Ok(0) => break "eof".to_owned(),
                            Ok(n) => drop(stream.write_all(&buf[..n]).await),
                            Err(e) => break format!("{:?}", e.kind()),
                        }
                    };
                    leasesim_engine::trace(&format!("connection ends: {end}"));
                });
            }
        })
        .expect("a host");
    engine
        .spawn(client, async {
            for _ in 0..2 {
                let mut stream = TcpStream::connect("rx:9000").await.expect("connect");
                let mut buf = [0u8; 4];
                stream.write_all(b"ping").await.expect("write");
                stream.read_exact(&mut buf).await.expect("the echo");
                leasesim_engine::trace("ping");
                let read = stream.read(&mut buf).await;
                leasesim_engine::trace(&format!("read {:?}", read.map_err(|e| e.kind())));
            }
        })
        .expect("a host");
    reset(&mut engine, client, server);
    engine.run_until(1000 * MS).expect("no fault refused");
    hosts_ms(&engine)
}

#[test]
fn a_reset_both_ways_fails_both_ends_at_once_and_a_new_connection_works() {
    let lines = reset_trace(|engine, client, server| {
        fault_at(engine, 50 * MS, client, server, NetFault::Reset);
        fault_at(engine, 50 * MS, server, client, NetFault::Reset);
    });
    // The echo at 23 as in tests/net.rs; at 50 both ends read ConnectionReset; the client
    // connects again at once: its SYN leaves at the 51 ms tick, the echo comes 22 ms later,
    // as the first one did after the SYN of the 1 ms tick.
    assert_eq!(
        lines,
        [
            "23 tx ping",
            "50 tx read Err(ConnectionReset)",
            "50 rx connection ends: ConnectionReset",
            "73 tx ping",
        ]
    );
}

#[test]
fn a_reset_one_way_fails_the_receiver_only() {
    let lines = reset_trace(|engine, client, server| {
        fault_at(engine, 50 * MS, server, client, NetFault::Reset);
    });
    // Only the client hears the RST; the server's end stays established, idle, and sees
    // nothing: it never sends on it. The client's new connection works as above.
    assert_eq!(
        lines,
        [
            "23 tx ping",
            "50 tx read Err(ConnectionReset)",
            "73 tx ping"
        ]
    );
}
