//! WireGuard's cross-platform userspace API (UAPI): `get=1` and `set=1` requests over a Unix
//! stream socket, as `key=value` lines ending with an empty line; keys are hex. Every
//! userspace implementation (`wireguard-go` here) speaks it.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use crate::diff::Changes;
use crate::key::Key;
use crate::peer::{InterfaceConfig, ObservedPeer, Peer, PeerStats};

/// Sends one request and returns the response lines before its `errno=`; a non-zero errno
/// is an error.
pub async fn request(socket: &Path, request: &str) -> anyhow::Result<String> {
    let stream = UnixStream::connect(socket).await.with_context(|| format!("connecting to {}", socket.display()))?;
    let (read, mut write) = stream.into_split();
    write.write_all(request.as_bytes()).await.context("writing a UAPI request")?;
    let mut lines = BufReader::with_capacity(64 * 1024, read).lines();
    let mut body = String::new();
    while let Some(line) = lines.next_line().await.context("reading a UAPI response")? {
        if let Some(errno) = line.strip_prefix("errno=") {
            match errno {
                "0" => return Ok(body),
                _ => bail!("the WireGuard interface refused the request (errno {errno})"),
            }
        }
        body.push_str(&line);
        body.push('\n');
    }
    bail!("the WireGuard interface closed the UAPI socket without an answer")
}

/// The `set` request for the interface's own key and port.
pub fn set_interface(config: &InterfaceConfig) -> String {
    format!("set=1\nprivate_key={}\nlisten_port={}\n\n", config.private_key.to_hex(), config.listen_port)
}

/// The `set` request that gives a running interface, which answered `get=1` with `running`,
/// the key and port of `config`: only what differs, or `None` when nothing does. A
/// `listen_port` line makes wireguard-go close and reopen its UDP sockets even for the port
/// it has, which drops packets in flight and forgets the address each peer's packets were
/// sent from (a gateway behind a floating address would then answer from its own address,
/// and clients would follow it there, out of the failover's reach:
/// docs/design/gateways.md, "Restarts drop no tunnel").
pub fn set_interface_changes(config: &InterfaceConfig, running: &str) -> Option<String> {
    let mut key = None;
    let mut port = None;
    // The interface's lines come before the first peer's.
    for line in running.lines().take_while(|line| !line.starts_with("public_key=")) {
        match line.split_once('=') {
            Some(("private_key", value)) => key = Some(value),
            Some(("listen_port", value)) => port = value.parse::<u16>().ok(),
            _ => {}
        }
    }
    let mut out = String::from("set=1\n");
    let wanted_key = config.private_key.to_hex();
    if key != Some(wanted_key.as_str()) {
        let _ = writeln!(out, "private_key={wanted_key}");
    }
    if port != Some(config.listen_port) {
        let _ = writeln!(out, "listen_port={}", config.listen_port);
    }
    (out.len() > "set=1\n".len()).then(|| out + "\n")
}

/// The `set` request applying `changes` in one batch: removals first, then each upsert
/// with its preshared key and its allowed IPs replaced whole.
pub fn set_peers(changes: &Changes) -> String {
    let mut out = String::with_capacity(32 + changes.remove.len() * 96 + changes.upsert.len() * 256);
    out.push_str("set=1\n");
    for key in &changes.remove {
        let _ = write!(out, "public_key={}\nremove=true\n", key.to_hex());
    }
    for peer in &changes.upsert {
        write_peer(&mut out, peer);
    }
    out.push('\n');
    out
}

fn write_peer(out: &mut String, peer: &Peer) {
    let psk = peer.preshared_key.unwrap_or(Key([0; 32]));
    let _ = write!(
        out,
        "public_key={}\npreshared_key={}\nreplace_allowed_ips=true\n",
        peer.public_key.to_hex(),
        psk.to_hex()
    );
    for ip in &peer.allowed_ips {
        let _ = writeln!(out, "allowed_ip={ip}");
    }
}

/// The peers of a `get=1` response.
pub fn parse_peers(body: &str) -> anyhow::Result<Vec<ObservedPeer>> {
    let mut peers = Vec::new();
    let mut current: Option<Building> = None;
    for line in body.lines().filter(|line| !line.is_empty()) {
        let (key, value) = line.split_once('=').with_context(|| format!("a UAPI line without '=': {line:?}"))?;
        if key == "public_key" {
            peers.extend(current.take().map(Building::finish).transpose()?);
            current = Some(Building::new(Key::from_hex(value)?));
            continue;
        }
        // Lines before the first peer describe the interface.
        let Some(peer) = current.as_mut() else { continue };
        peer.set(key, value).with_context(|| format!("the UAPI line {key}=…"))?;
    }
    peers.extend(current.map(Building::finish).transpose()?);
    Ok(peers)
}

/// A peer being read, line by line.
struct Building {
    peer: Peer,
    stats: PeerStats,
    handshake_secs: u64,
    handshake_nanos: u32,
}

impl Building {
    fn new(public_key: Key) -> Self {
        let peer = Peer { public_key, preshared_key: None, allowed_ips: Vec::new() };
        Self { peer, stats: PeerStats::default(), handshake_secs: 0, handshake_nanos: 0 }
    }

    fn set(&mut self, key: &str, value: &str) -> anyhow::Result<()> {
        match key {
            "preshared_key" => self.peer.preshared_key = Some(Key::from_hex(value)?),
            "allowed_ip" => self.peer.allowed_ips.push(value.parse()?),
            "endpoint" => self.stats.endpoint = Some(value.parse()?),
            "rx_bytes" => self.stats.rx_bytes = value.parse()?,
            "tx_bytes" => self.stats.tx_bytes = value.parse()?,
            "last_handshake_time_sec" => self.handshake_secs = value.parse()?,
            "last_handshake_time_nsec" => self.handshake_nanos = value.parse()?,
            _ => {}
        }
        Ok(())
    }

    /// The peer read; a handshake time past what the system clock can represent is an
    /// error, not a panic (found by fuzzing: fuzz/, target `wg_uapi`).
    fn finish(self) -> anyhow::Result<ObservedPeer> {
        let Building { peer, mut stats, handshake_secs, handshake_nanos } = self;
        if handshake_secs > 0 {
            let since_epoch =
                Duration::from_secs(handshake_secs).checked_add(Duration::from_nanos(handshake_nanos.into()));
            let time = since_epoch.and_then(|d| SystemTime::UNIX_EPOCH.checked_add(d));
            stats.latest_handshake = Some(time.with_context(|| {
                format!("the handshake time {handshake_secs}s {handshake_nanos}ns is out of range")
            })?);
        }
        Ok(ObservedPeer { peer: Peer::new(peer.public_key, peer.preshared_key, peer.allowed_ips), stats })
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    const GET: &str = "private_key=e84b5a6d2717c1003a13b431570353dbaca9146cf150c5f8575680feba52027a
listen_port=51820
public_key=b85996fecc9c7f1fc6d2572a76eda11d59bcd20be8e543b15ce4bd85a8e75a33
preshared_key=188515093e952f5f22e865cef3012e72f8b5f0b598ac0309d5dacce3b70fcf52
protocol_version=1
endpoint=192.0.2.7:38333
last_handshake_time_sec=1700000000
last_handshake_time_nsec=500
tx_bytes=38333
rx_bytes=2224
persistent_keepalive_interval=0
allowed_ip=10.3.2.2/32
allowed_ip=fd00::3:2:2/128
public_key=58402e695ba1772b1cc9309755f043251ea77fdcf10fbe63989ceb7e19321376
preshared_key=0000000000000000000000000000000000000000000000000000000000000000
last_handshake_time_sec=0
last_handshake_time_nsec=0
tx_bytes=0
rx_bytes=0
allowed_ip=10.3.2.3/32
";

    #[test]
    fn a_get_response_is_parsed_into_peers_and_statistics() {
        let peers = parse_peers(GET).unwrap();
        assert_eq!(peers.len(), 2);
        let first = &peers[0];
        assert_eq!(first.peer.public_key.to_hex(), "b85996fecc9c7f1fc6d2572a76eda11d59bcd20be8e543b15ce4bd85a8e75a33");
        assert!(first.peer.preshared_key.is_some());
        assert_eq!(first.peer.allowed_ips, vec!["10.3.2.2/32".parse().unwrap(), "fd00::3:2:2/128".parse().unwrap()]);
        assert_eq!(first.stats.endpoint, Some("192.0.2.7:38333".parse().unwrap()));
        assert_eq!((first.stats.rx_bytes, first.stats.tx_bytes), (2224, 38333));
        assert_eq!(first.stats.latest_handshake, Some(SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 500)));
        let second = &peers[1];
        assert_eq!(second.peer.preshared_key, None, "all zeros is no preshared key");
        assert_eq!(second.stats, PeerStats::default());
    }

    #[test]
    fn malformed_responses_are_errors() {
        assert!(parse_peers("public_key=zz\n").is_err());
        assert!(parse_peers(&format!("public_key={}\nallowed_ip=10.0.0.300/32\n", "ab".repeat(32))).is_err());
        assert!(parse_peers("no equals sign\n").is_err());
        assert!(parse_peers("").unwrap().is_empty());
    }

    /// Found by the `wg_uapi` fuzz target: a handshake time the system clock cannot hold
    /// panicked (`SystemTime` + `Duration` overflowed).
    #[test]
    fn an_out_of_range_handshake_time_is_an_error_not_a_panic() {
        let peer = format!("public_key={}\n", "ab".repeat(32));
        for time in [
            "last_handshake_time_sec=13694530962363972969\n",
            "last_handshake_time_sec=18446744073709551615\nlast_handshake_time_nsec=999999999\n",
        ] {
            let error = parse_peers(&format!("{peer}{time}")).expect_err("out of range");
            assert!(format!("{error:#}").contains("out of range"), "{error:#}");
        }
        let nanos_carry =
            parse_peers(&format!("{peer}last_handshake_time_sec=1\nlast_handshake_time_nsec=4294967295\n")).unwrap();
        assert_eq!(
            nanos_carry[0].stats.latest_handshake,
            Some(SystemTime::UNIX_EPOCH + Duration::new(1, 4_294_967_295))
        );
    }

    #[test]
    fn a_set_request_removes_then_upserts_in_one_batch() {
        let peer = Peer::new(Key([1; 32]), Some(Key([2; 32])), vec!["10.0.0.2/32".parse().unwrap()]);
        let changes = Changes { upsert: vec![peer], remove: vec![Key([3; 32])] };
        let text = set_peers(&changes);
        let expected = format!(
            "set=1\npublic_key={}\nremove=true\npublic_key={}\npreshared_key={}\nreplace_allowed_ips=true\nallowed_ip=10.0.0.2/32\n\n",
            "03".repeat(32),
            "01".repeat(32),
            "02".repeat(32)
        );
        assert_eq!(text, expected);
        let parsed = parse_peers(text.trim_start_matches("set=1\n")).unwrap();
        assert_eq!(parsed.len(), 2, "the request is itself in the get format");
    }

    #[test]
    fn an_adopted_interface_is_set_only_where_it_differs() {
        let config =
            InterfaceConfig { name: "wg0".into(), private_key: Key([7; 32]), listen_port: 51820, addresses: vec![] };
        let key = Key([7; 32]).to_hex();
        let running = format!(
            "private_key={key}\nlisten_port=51820\npublic_key={}\nrx_bytes=1\nerrno=0\n",
            Key([1; 32]).to_hex()
        );
        assert_eq!(set_interface_changes(&config, &running), None, "the same key and port: no rebind");
        let moved = running.replace("listen_port=51820", "listen_port=51821");
        assert_eq!(set_interface_changes(&config, &moved).as_deref(), Some("set=1\nlisten_port=51820\n\n"));
        let fresh = "listen_port=40000\nerrno=0\n";
        assert_eq!(set_interface_changes(&config, fresh), Some(set_interface(&config)), "a fresh process gets both");
        // A peer's line of the same name is not the interface's.
        let other = format!("private_key={key}\npublic_key={}\nlisten_port=51820\n", Key([1; 32]).to_hex());
        assert_eq!(set_interface_changes(&config, &other).as_deref(), Some("set=1\nlisten_port=51820\n\n"));
    }
}
