//! Real packets from the tunnel to the gateway itself (the `input` chain): the egress rules
//! and the default action decide them as they decide forwarded traffic, after what the
//! tunnel needs (replies to the gateway's own connections, neighbour discovery, DNS to the
//! tunnel address); with host filtering off nothing is filtered.

use ferrozone_gateway::nft::{EgressRule, Keeper, Pass, Protocol, Scope, Table, Verdict};

use super::packets::{failing, rule, serve, setup, table, user, Net, PROBE, USERS};
use super::{try_in, Namespace};

/// The gateway's addresses: on the tunnel side (the interface playing WireGuard) and on
/// the LAN side.
const GATEWAY: [(&str, &str); 4] =
    [("tunnel", "10.3.2.1"), ("lan", "192.0.2.1"), ("tunnel6", "fd00::3:2:1"), ("lan6", "2001:db8::1")];

/// Every probe of both users to the gateway that got no answer, as "A tcp/lan", "B ping", …:
/// TCP port 80 on each gateway address, DNS (UDP 53) on the tunnel addresses, and a ping to
/// the tunnel address (run at once).
fn refused(client: &Namespace) -> Vec<String> {
    let mut probes = Vec::new();
    for (user, v4, v6) in USERS {
        let python = |kind: &str, dest: &str, port: &str| {
            let source = if dest.contains(':') { v6 } else { v4 };
            ["python3", "-c", PROBE, kind, source, dest, port].map(str::to_owned).to_vec()
        };
        for (name, address) in GATEWAY {
            probes.push((format!("{user} tcp/{name}"), python("tcp", address, "80")));
        }
        probes.push((format!("{user} dns/tunnel"), python("udp", "10.3.2.1", "53")));
        probes.push((format!("{user} dns/tunnel6"), python("udp", "fd00::3:2:1", "53")));
        let ping = ["ping", "-c", "1", "-W", "1", "-I", v4, "10.3.2.1"].map(str::to_owned).to_vec();
        probes.push((format!("{user} ping/tunnel"), ping));
    }
    failing(client, &probes)
}

/// Whether the gateway's own pings to user A's addresses come back: replies to connections
/// the gateway opened, which no rule may take away.
fn gateway_pings_user_a(gateway: &Namespace) -> bool {
    let (_, v4, v6) = USERS[0];
    [v4, v6].iter().all(|address| try_in(gateway, &["ping", "-c", "1", "-W", "2", address]))
}

async fn applied(net: &Net, keeper: &mut Keeper, table: Table, pass: Pass) -> Vec<String> {
    keeper.set_table(table);
    assert_eq!(keeper.reconcile().await.unwrap(), pass);
    refused(&net.client)
}

fn names(user: &str, probes: &[&str]) -> Vec<String> {
    probes.iter().map(|probe| format!("{user} {probe}")).collect()
}

#[tokio::test]
async fn the_rules_decide_traffic_to_the_gateway_itself_after_what_the_tunnel_needs() {
    let Some(net) = setup() else { return };
    let _server = serve(&net.gateway);
    let a = user("A");
    let mut keeper = Keeper::new(net.gateway.nft(), table(vec![], Verdict::Accept));
    assert_eq!(keeper.reconcile().await.unwrap(), Pass::Full);
    assert_eq!(refused(&net.client), Vec::<String>::new(), "no rules: the gateway answers everything");

    let rules: Vec<EgressRule> = vec![
        rule(&Scope::Everyone, "0.0.0.0/0", Verdict::Drop, None),
        rule(&Scope::Everyone, "::/0", Verdict::Drop, None),
        rule(&a, "192.0.2.1/32", Verdict::Accept, Some((Protocol::Tcp, 80))),
        rule(&a, "fd00::3:2:1/128", Verdict::Accept, None),
    ];
    let got = applied(&net, &mut keeper, table(rules, Verdict::Accept), Pass::Delta).await;
    let mut expected = names("A", &["tcp/tunnel", "tcp/lan6", "ping/tunnel"]);
    expected.extend(names("B", &["tcp/tunnel", "tcp/lan", "tcp/tunnel6", "tcp/lan6", "ping/tunnel"]));
    assert_eq!(got, expected, "global drops cover the gateway's addresses; a user's accept wins, port or plain");
    assert!(gateway_pings_user_a(&net.gateway), "replies to the gateway's own pings were dropped");

    let got = applied(&net, &mut keeper, table(vec![], Verdict::Drop), Pass::Full).await;
    let closed = ["tcp/tunnel", "tcp/lan", "tcp/tunnel6", "tcp/lan6", "ping/tunnel"];
    let mut expected = names("A", &closed);
    expected.extend(names("B", &closed));
    assert_eq!(got, expected, "the default drop closes the gateway but for DNS on its tunnel addresses");
    assert!(gateway_pings_user_a(&net.gateway), "replies to the gateway's own pings were dropped");

    let unfiltered = Table { filter_host: false, ..table(vec![], Verdict::Drop) };
    let got = applied(&net, &mut keeper, unfiltered, Pass::Full).await;
    assert_eq!(got, Vec::<String>::new(), "with host filtering off the gateway answers everything");
}
