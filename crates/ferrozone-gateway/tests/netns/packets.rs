//! Real packets through a gateway enforcing egress rules: a client namespace with two
//! users' addresses, a gateway whose client-side veth plays the WireGuard interface, and an
//! outside host echoing TCP and UDP (a routed deployment: no masquerade).

use std::process::{Child, Command, Stdio};

use ferrozone_gateway::nft::{Egress, EgressRule, IfName, Keeper, Pass, PortMatch, Protocol, Scope, Table, Verdict};

use super::{run, try_in, Namespace};

pub(super) const PROBE: &str = include_str!("probe.py");
pub(super) const OUTSIDE: &str = "192.0.2.2";
pub(super) const OUTSIDE6: &str = "2001:db8::2";
/// The two users' tunnel addresses (IPv4, IPv6).
pub(super) const USERS: [(&str, &str, &str); 2] = [("A", "10.3.2.2", "fd00::3:2:2"), ("B", "10.3.2.3", "fd00::3:2:3")];

/// Fields drop in order: the server stops before its namespace goes.
pub(super) struct Net {
    _server: Server,
    pub(super) client: Namespace,
    pub(super) gateway: Namespace,
    _outside: Namespace,
}

/// An echo server (`probe.py serve`) in a namespace, killed on drop.
pub(super) struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(super) fn setup() -> Option<Net> {
    let (client, gateway, outside) = (Namespace::new()?, Namespace::new()?, Namespace::new()?);
    let link = |a: &Namespace, a_if: &str, b: &Namespace, b_if: &str| {
        run(&["ip", "link", "add", a_if, "netns", &a.0, "type", "veth", "peer", "name", b_if, "netns", &b.0]);
    };
    link(&client, "c0", &gateway, "g0");
    link(&gateway, "g1", &outside, "o0");
    let addresses = [
        (&client, "c0", "10.3.2.2/24"),
        (&client, "c0", "10.3.2.3/24"),
        (&client, "c0", "fd00::3:2:2/120"),
        (&client, "c0", "fd00::3:2:3/120"),
        (&gateway, "g0", "10.3.2.1/24"),
        (&gateway, "g0", "fd00::3:2:1/120"),
        (&gateway, "g1", "192.0.2.1/24"),
        (&gateway, "g1", "2001:db8::1/64"),
        (&outside, "o0", "192.0.2.2/24"),
        (&outside, "o0", "2001:db8::2/64"),
    ];
    for (ns, name, address) in addresses {
        assert!(try_in(ns, &["ip", "address", "add", address, "dev", name, "nodad"]), "{address}");
        assert!(try_in(ns, &["ip", "link", "set", name, "up"]));
    }
    for (ns, route) in [
        (&client, ["-4", "default", "10.3.2.1"]),
        (&client, ["-6", "default", "fd00::3:2:1"]),
        (&outside, ["-4", "10.3.2.0/24", "192.0.2.1"]),
        (&outside, ["-6", "fd00::3:2:0/120", "2001:db8::1"]),
    ] {
        assert!(try_in(ns, &["ip", route[0], "route", "add", route[1], "via", route[2]]), "{route:?}");
    }
    assert!(try_in(&gateway, &["sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"]));
    assert!(try_in(&gateway, &["sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/forwarding"]));
    // The probes wait 1 s for an answer; the first IPv6 packets can wait longer for
    // neighbour discovery on the three links, so resolve the neighbours first.
    for (_, v4, v6) in USERS {
        for (source, dest) in [(v4, OUTSIDE), (v6, OUTSIDE6)] {
            assert!(try_in(&client, &["ping", "-c", "1", "-W", "5", "-I", source, dest]), "{source} -> {dest}");
        }
    }
    let server = serve(&outside);
    Some(Net { client, gateway, _server: server, _outside: outside })
}

/// The echo server on TCP and UDP ports 80, 443, 53 and 5353 of every address of `outside`.
pub(super) fn serve(outside: &Namespace) -> Server {
    use std::io::BufRead;
    let mut child = Command::new("ip")
        .args(["netns", "exec", &outside.0, "python3", "-c", PROBE, "serve", "80", "443", "53", "5353"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    Server(child)
}

/// Every probe of both users that got no answer, as "A tcp/80", "B ping6", … (run at once).
fn blocked(client: &Namespace) -> Vec<String> {
    let mut probes = Vec::new();
    for (user, v4, v6) in USERS {
        let python = |kind: &str, source: &str, dest: &str, port: &str| {
            ["python3", "-c", PROBE, kind, source, dest, port].map(str::to_owned).to_vec()
        };
        let ping =
            |source: &str, dest: &str| ["ping", "-c", "1", "-W", "1", "-I", source, dest].map(str::to_owned).to_vec();
        probes.extend([
            (format!("{user} ping"), ping(v4, OUTSIDE)),
            (format!("{user} tcp/80"), python("tcp", v4, OUTSIDE, "80")),
            (format!("{user} tcp/443"), python("tcp", v4, OUTSIDE, "443")),
            (format!("{user} udp/53"), python("udp", v4, OUTSIDE, "53")),
            (format!("{user} udp/5353"), python("udp", v4, OUTSIDE, "5353")),
            (format!("{user} ping6"), ping(v6, OUTSIDE6)),
            (format!("{user} tcp6/80"), python("tcp", v6, OUTSIDE6, "80")),
        ]);
    }
    failing(client, &probes)
}

/// The names of the `probes` (a name and a command each) that fail in `client`, all run at
/// once.
pub(super) fn failing(client: &Namespace, probes: &[(String, Vec<String>)]) -> Vec<String> {
    std::thread::scope(|scope| {
        let running: Vec<_> = probes
            .iter()
            .map(|(name, args)| {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                (name, scope.spawn(move || try_in(client, &args)))
            })
            .collect();
        running.into_iter().filter_map(|(name, probe)| (!probe.join().unwrap()).then(|| name.clone())).collect()
    })
}

pub(super) fn rule(scope: &Scope, destination: &str, verdict: Verdict, ports: Option<(Protocol, u16)>) -> EgressRule {
    EgressRule {
        scope: scope.clone(),
        destination: destination.parse().unwrap(),
        verdict,
        ports: ports.map(|(protocol, port)| PortMatch { protocol, first: port, last: port }),
    }
}

pub(super) fn user(name: &str) -> Scope {
    let (_, v4, v6) = USERS.into_iter().find(|(user, _, _)| *user == name).unwrap();
    Scope::Sources(vec![v4.parse().unwrap(), v6.parse().unwrap()])
}

pub(super) fn table(rules: Vec<EgressRule>, default: Verdict) -> Table {
    Table {
        tunnel_networks: vec!["10.3.2.0/24".parse().unwrap(), "fd00::3:2:0/120".parse().unwrap()],
        masquerade_on: None,
        egress: Egress { wireguard: IfName::parse("g0").unwrap(), rules, default },
        filter_host: true,
    }
}

/// Applies `rules` through the keeper and returns what is blocked.
async fn with_rules(
    net: &Net,
    keeper: &mut Keeper,
    rules: Vec<EgressRule>,
    default: Verdict,
    pass: Pass,
) -> Vec<String> {
    keeper.set_table(table(rules, default));
    assert_eq!(keeper.reconcile().await.unwrap(), pass);
    blocked(&net.client)
}

fn all_of(user: &str) -> Vec<String> {
    ["ping", "tcp/80", "tcp/443", "udp/53", "udp/5353", "ping6", "tcp6/80"]
        .map(|probe| format!("{user} {probe}"))
        .to_vec()
}

#[tokio::test]
async fn egress_rules_decide_real_packets_with_firezones_precedence() {
    let Some(net) = setup() else { return };
    let a = user("A");
    let mut keeper = Keeper::new(net.gateway.nft(), table(vec![], Verdict::Accept));
    assert_eq!(keeper.reconcile().await.unwrap(), Pass::Full);
    assert_eq!(blocked(&net.client), Vec::<String>::new(), "no rules: everything passes");

    let drop_a = vec![rule(&a, "192.0.2.2/32", Verdict::Drop, None), rule(&a, "2001:db8::2/128", Verdict::Drop, None)];
    let got = with_rules(&net, &mut keeper, drop_a, Verdict::Accept, Pass::Delta).await;
    assert_eq!(got, all_of("A"), "a user's drop rule blocks that user only");

    let got = with_rules(&net, &mut keeper, vec![], Verdict::Accept, Pass::Delta).await;
    assert_eq!(got, Vec::<String>::new(), "deleting the rule (a delta) restores the traffic");

    let ports = vec![
        rule(&Scope::Everyone, "192.0.2.0/24", Verdict::Drop, Some((Protocol::Tcp, 80))),
        rule(&Scope::Everyone, "192.0.2.2/32", Verdict::Drop, Some((Protocol::Udp, 53))),
    ];
    let got = with_rules(&net, &mut keeper, ports, Verdict::Accept, Pass::Delta).await;
    assert_eq!(got, ["A tcp/80", "A udp/53", "B tcp/80", "B udp/53"], "a port rule blocks only its port and protocol");

    let user_over_global = vec![
        rule(&Scope::Everyone, "192.0.2.2/32", Verdict::Drop, None),
        rule(&a, "192.0.2.0/24", Verdict::Accept, None),
    ];
    let got = with_rules(&net, &mut keeper, user_over_global, Verdict::Accept, Pass::Delta).await;
    assert_eq!(got, all_of("B")[..5], "a user's accept beats a global drop");

    let port_over_plain = vec![
        rule(&a, "192.0.2.2/32", Verdict::Drop, None),
        rule(&a, "192.0.2.2/32", Verdict::Accept, Some((Protocol::Tcp, 443))),
        rule(&Scope::Everyone, "0.0.0.0/0", Verdict::Drop, None),
        rule(&Scope::Everyone, "192.0.2.0/24", Verdict::Accept, Some((Protocol::Tcp, 443))),
    ];
    let got = with_rules(&net, &mut keeper, port_over_plain, Verdict::Accept, Pass::Delta).await;
    let expected = ["A ping", "A tcp/80", "A udp/53", "A udp/5353", "B ping", "B tcp/80", "B udp/53", "B udp/5353"];
    assert_eq!(got, expected, "a port accept beats a plain drop, for a user and globally");

    let only_a = vec![rule(&a, "192.0.2.2/32", Verdict::Accept, None)];
    let got = with_rules(&net, &mut keeper, only_a, Verdict::Drop, Pass::Full).await;
    let mut expected = vec!["A ping6".to_owned(), "A tcp6/80".to_owned()];
    expected.extend(all_of("B"));
    assert_eq!(got, expected, "the default drop blocks what no rule accepts");

    let got = with_rules(&net, &mut keeper, vec![], Verdict::Accept, Pass::Full).await;
    assert_eq!(got, Vec::<String>::new());
}
