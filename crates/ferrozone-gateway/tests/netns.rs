//! The data plane's host side for real, each test in a throwaway network namespace: the
//! `inet ferrozone` table applied with `nft`, and the default route read from the kernel. Needs root (CAP_NET_ADMIN and `ip netns`); skipped otherwise.

#![allow(clippy::unwrap_used)]

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use ferrozone_gateway::nft::{render, Egress, IfName, Keeper, Nft, Table, TableState, Verdict};
use ferrozone_gateway::routing::default_route_interface;

#[path = "netns/agreement.rs"]
mod agreement;
#[path = "netns/delta.rs"]
mod delta;
#[path = "netns/host.rs"]
mod host;
#[path = "netns/packets.rs"]
mod packets;

/// A network namespace deleted on drop.
struct Namespace(String);

impl Namespace {
    /// A fresh namespace, or `None` (with a note) when not root.
    fn new() -> Option<Self> {
        if !is_root() {
            eprintln!("skipped: needs root for network namespaces and nftables");
            return None;
        }
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!("fznft-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        run(&["ip", "netns", "add", &name]);
        Some(Self(name))
    }

    fn nft(&self) -> Nft {
        Nft::in_netns(&self.0)
    }

    /// `nft ARGS…` in the namespace, as an administrator would type it.
    fn nft_cli(&self, args: &[&str]) -> String {
        let mut command = vec!["ip", "netns", "exec", &self.0, "nft"];
        command.extend_from_slice(args);
        run(&command)
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "delete", &self.0]).status();
    }
}

fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

fn run(args: &[&str]) -> String {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn table(egress: Option<&str>) -> Table {
    Table {
        tunnel_networks: vec!["10.3.2.0/24".parse().unwrap(), "fd00::3:2:0/120".parse().unwrap()],
        masquerade_on: egress.map(|name| IfName::parse(name).unwrap()),
        egress: no_rules(),
        filter_host: true,
    }
}

fn no_rules() -> Egress {
    Egress { wireguard: IfName::parse("wg0").unwrap(), rules: vec![], default: Verdict::Accept }
}

fn present(state: &TableState) -> &serde_json::Value {
    match state {
        TableState::Present(value) => value,
        TableState::Absent => panic!("the table is absent"),
    }
}

#[tokio::test]
async fn apply_creates_replaces_and_repeats_to_the_same_table() {
    let Some(ns) = Namespace::new() else { return };
    let nft = ns.nft();
    assert_eq!(nft.read().await.unwrap(), TableState::Absent);

    nft.apply(&render(&table(Some("eth0")))).await.unwrap();
    let first = nft.read().await.unwrap();
    let listing = ns.nft_cli(&["list", "table", "inet", "ferrozone"]);
    assert!(listing.contains("ip saddr 10.3.2.0/24 oifname \"eth0\" masquerade"), "{listing}");
    assert!(listing.contains("ip6 saddr fd00::3:2:0/120 oifname \"eth0\" masquerade"), "{listing}");

    nft.apply(&render(&table(Some("eth0")))).await.unwrap();
    assert_eq!(nft.read().await.unwrap(), first, "a second apply changed the table");

    // A replace, not an addition: the masquerade rules go with the setting.
    nft.apply(&render(&table(None))).await.unwrap();
    let listing = ns.nft_cli(&["list", "table", "inet", "ferrozone"]);
    assert!(!listing.contains("masquerade"), "{listing}");
    assert_eq!(listing.matches("chain postrouting").count(), 1, "{listing}");
}

#[tokio::test]
async fn a_refused_ruleset_leaves_the_previous_table_whole() {
    let Some(ns) = Namespace::new() else { return };
    let nft = ns.nft();
    nft.apply(&render(&table(Some("eth0")))).await.unwrap();
    let before = nft.read().await.unwrap();

    // The delete and the new chains come before the error in the same file: were the file
    // not one transaction, the table would now be gone or half-built.
    let broken = render(&table(None)) + "add rule inet ferrozone forward ip daddr @no_such_set drop\n";
    let error = nft.apply(&broken).await.unwrap_err().to_string();
    assert!(error.contains("no_such_set"), "{error}");
    assert_eq!(nft.read().await.unwrap(), before);
}

#[tokio::test]
async fn other_tables_are_left_alone() {
    let Some(ns) = Namespace::new() else { return };
    let other = "table ip other {\n\tchain forward {\n\t\ttype filter hook forward priority filter; policy accept;\n\t\tcounter packets 0 bytes 0\n\t}\n}\n";
    let neighbour = "table inet ferrozone2 {\n\tchain c {\n\t}\n}\n";
    run(&["ip", "netns", "exec", &ns.0, "nft", other]);
    run(&["ip", "netns", "exec", &ns.0, "nft", neighbour]);
    let before = (ns.nft_cli(&["list", "table", "ip", "other"]), ns.nft_cli(&["list", "table", "inet", "ferrozone2"]));

    let nft = ns.nft();
    nft.apply(&render(&table(Some("eth0")))).await.unwrap();
    nft.apply(&render(&table(None))).await.unwrap();
    nft.remove().await.unwrap();
    assert_eq!(nft.read().await.unwrap(), TableState::Absent);
    nft.remove().await.unwrap();

    let after = (ns.nft_cli(&["list", "table", "ip", "other"]), ns.nft_cli(&["list", "table", "inet", "ferrozone2"]));
    assert_eq!(after, before);
}

#[tokio::test]
async fn a_flushed_table_is_seen_as_drift_and_repaired_by_the_next_apply() {
    let Some(ns) = Namespace::new() else { return };
    let nft = ns.nft();
    let ruleset = render(&table(Some("eth0")));
    nft.apply(&ruleset).await.unwrap();
    let applied = nft.read().await.unwrap();
    assert!(present(&applied).to_string().contains("masquerade"), "{applied:?}");

    ns.nft_cli(&["flush", "table", "inet", "ferrozone"]);
    let flushed = nft.read().await.unwrap();
    assert_ne!(flushed, applied, "the flush went unseen");
    assert!(!present(&flushed).to_string().contains("masquerade"));

    nft.apply(&ruleset).await.unwrap();
    assert_eq!(nft.read().await.unwrap(), applied);

    ns.nft_cli(&["delete", "table", "inet", "ferrozone"]);
    assert_eq!(nft.read().await.unwrap(), TableState::Absent);
}

#[test]
fn the_egress_interface_is_the_default_routes_in_the_kernels_own_table() {
    let Some(ns) = Namespace::new() else { return };
    let exec = |args: &[&str]| {
        let mut command = vec!["ip", "netns", "exec", &ns.0];
        command.extend_from_slice(args);
        run(&command)
    };
    for (name, address) in [("fzup0", "192.0.2.2/24"), ("fzback0", "198.51.100.2/24")] {
        let peer = format!("{name}p");
        exec(&["ip", "link", "add", name, "type", "veth", "peer", "name", &peer]);
        exec(&["ip", "link", "set", &peer, "up"]);
        exec(&["ip", "address", "add", address, "dev", name]);
        exec(&["ip", "link", "set", name, "up"]);
    }
    assert_eq!(default_route_interface(&exec(&["cat", "/proc/net/route"])), None);
    exec(&["ip", "route", "add", "default", "via", "198.51.100.1", "dev", "fzback0", "metric", "200"]);
    exec(&["ip", "route", "add", "default", "via", "192.0.2.1", "dev", "fzup0", "metric", "50"]);
    assert_eq!(default_route_interface(&exec(&["cat", "/proc/net/route"])).as_deref(), Some("fzup0"));
}

#[tokio::test]
async fn the_keeper_applies_once_then_only_on_drift_or_a_new_ruleset() {
    let Some(ns) = Namespace::new() else { return };
    let mut keeper = Keeper::new(ns.nft(), table(Some("eth0")));
    assert!(keeper.reconcile_once().await.unwrap(), "the first pass applies");
    assert!(!keeper.reconcile_once().await.unwrap(), "an unchanged table is left alone");

    ns.nft_cli(&["flush", "table", "inet", "ferrozone"]);
    assert!(keeper.reconcile_once().await.unwrap(), "a flush is repaired");
    assert!(!keeper.reconcile_once().await.unwrap());

    ns.nft_cli(&["add", "rule", "inet", "ferrozone", "forward", "meta", "mark", "42", "drop"]);
    assert!(keeper.reconcile_once().await.unwrap(), "an added rule is repaired");
    let listing = ns.nft_cli(&["list", "table", "inet", "ferrozone"]);
    assert!(!listing.contains("meta mark") && listing.contains("masquerade"), "{listing}");

    ns.nft_cli(&["delete", "table", "inet", "ferrozone"]);
    assert!(keeper.reconcile_once().await.unwrap(), "a deleted table is put back");

    keeper.set_table(table(Some("eth0")));
    assert!(!keeper.reconcile_once().await.unwrap(), "the same table is not a change");
    keeper.set_table(table(None));
    assert!(keeper.reconcile_once().await.unwrap(), "a new table is applied");
    assert!(!ns.nft_cli(&["list", "table", "inet", "ferrozone"]).contains("masquerade"));
}

/// `ip netns exec NS ARGS…`; whether it succeeded.
fn try_in(ns: &Namespace, args: &[&str]) -> bool {
    Command::new("ip").args(["netns", "exec", &ns.0]).args(args).output().unwrap().status.success()
}

/// A client with a tunnel address, a gateway, and an outside host that has no route back
/// to the tunnel network: the outside host answers only once the gateway masquerades.
#[tokio::test]
async fn masquerade_lets_tunnel_addresses_reach_a_host_with_no_route_back() {
    let (Some(client), Some(gateway), Some(outside)) = (Namespace::new(), Namespace::new(), Namespace::new()) else {
        return;
    };
    let link = |a: &Namespace, a_if: &str, b: &Namespace, b_if: &str| {
        run(&["ip", "link", "add", a_if, "netns", &a.0, "type", "veth", "peer", "name", b_if, "netns", &b.0]);
    };
    link(&client, "c0", &gateway, "g0");
    link(&gateway, "g1", &outside, "o0");
    for (ns, name, address) in [
        (&client, "c0", "10.3.2.2/24"),
        (&gateway, "g0", "10.3.2.1/24"),
        (&gateway, "g1", "192.0.2.1/24"),
        (&outside, "o0", "192.0.2.2/24"),
    ] {
        assert!(try_in(ns, &["ip", "address", "add", address, "dev", name]));
        assert!(try_in(ns, &["ip", "link", "set", name, "up"]));
    }
    for (ns, name, address) in [
        (&client, "c0", "fd00::3:2:2/120"),
        (&gateway, "g0", "fd00::3:2:1/120"),
        (&gateway, "g1", "2001:db8::1/64"),
        (&outside, "o0", "2001:db8::2/64"),
    ] {
        assert!(try_in(ns, &["ip", "address", "add", address, "dev", name, "nodad"]));
    }
    assert!(try_in(&client, &["ip", "route", "add", "default", "via", "10.3.2.1"]));
    assert!(try_in(&client, &["ip", "-6", "route", "add", "default", "via", "fd00::3:2:1"]));
    assert!(try_in(&gateway, &["sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"]));
    assert!(try_in(&gateway, &["sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/forwarding"]));
    let ping = |to: &str| try_in(&client, &["ping", "-c", "1", "-W", "1", to]);
    let outside_answers = || (ping("192.0.2.2"), ping("2001:db8::2"));
    assert!(ping("10.3.2.1") && ping("fd00::3:2:1"), "the gateway answers");
    assert_eq!(outside_answers(), (false, false), "the outside host answered without NAT: it has a route back");

    let table = Table {
        tunnel_networks: vec!["10.3.2.0/24".parse().unwrap(), "fd00::3:2:0/120".parse().unwrap()],
        masquerade_on: Some(IfName::parse("g1").unwrap()),
        egress: no_rules(),
        filter_host: true,
    };
    gateway.nft().apply(&render(&table)).await.unwrap();
    assert_eq!(outside_answers(), (true, true), "no answer through the masquerading gateway");

    gateway.nft().apply(&render(&Table { masquerade_on: None, ..table })).await.unwrap();
    assert_eq!(outside_answers(), (false, false), "still answered with masquerade off");
}
