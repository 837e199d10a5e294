//! Issue 35: the access checker (`ferrozone_domain::egress::decide`) and the kernel agree.
//! Stored rules go through the gateway's own conversion into the table; then every probe
//! of both users is sent for real, and what the kernel let through must be what the checker
//! answers for the same packet (docs/design/egress-rules.md, "Check access").

use ferrozone_domain::egress::{
    decide, EgressPolicy, Membership, Packet, PortType, Ports, Rule, RuleAction, RuleSource, Transport,
};
use ferrozone_domain::Timestamp;
use ferrozone_gateway::gateway::egress;
use ferrozone_gateway::nft::{IfName, Keeper, Verdict};
use uuid::Uuid;

use super::packets::{failing, setup, table, OUTSIDE, OUTSIDE6, PROBE, USERS};

/// The users' ids, in the order of [`USERS`].
const IDS: [Uuid; 2] = [Uuid::from_u128(0xa), Uuid::from_u128(0xb)];
/// Two groups: the first holds both users, the second the second user alone.
const GROUPS: [Uuid; 2] = [Uuid::from_u128(0x90), Uuid::from_u128(0x91)];

/// The groups of the user at `index` in [`USERS`].
fn groups_of(index: usize) -> Vec<Uuid> {
    if index == 0 {
        vec![GROUPS[0]]
    } else {
        GROUPS.to_vec()
    }
}

/// The probes of one user: name, command arguments after the source, and the packet.
fn probes() -> Vec<(&'static str, bool, Vec<&'static str>, &'static str, Transport)> {
    vec![
        ("ping", false, vec![], OUTSIDE, Transport::Other),
        ("tcp/80", false, vec!["tcp", "80"], OUTSIDE, Transport::Tcp(80)),
        ("tcp/443", false, vec!["tcp", "443"], OUTSIDE, Transport::Tcp(443)),
        ("udp/53", false, vec!["udp", "53"], OUTSIDE, Transport::Udp(53)),
        ("udp/5353", false, vec!["udp", "5353"], OUTSIDE, Transport::Udp(5353)),
        ("ping6", true, vec![], OUTSIDE6, Transport::Other),
        ("tcp6/80", true, vec!["tcp", "80"], OUTSIDE6, Transport::Tcp(80)),
        ("udp6/53", true, vec!["udp", "53"], OUTSIDE6, Transport::Udp(53)),
    ]
}

fn rule(n: u128, user: Option<usize>, destination: &str, action: RuleAction, ports: Option<(PortType, &str)>) -> Rule {
    let at = Timestamp::from_micros(0);
    Rule {
        id: Uuid::from_u128(n),
        user_id: user.map(|i| IDS[i]),
        group_id: None,
        destination: destination.to_owned(),
        action,
        ports: ports.map(|(port_type, range)| Ports { port_type, range: range.to_owned() }),
        inserted_at: at,
        updated_at: at,
    }
}

/// A rule of the group at `group` in [`GROUPS`].
fn group_rule(n: u128, group: usize, destination: &str, action: RuleAction, ports: Option<(PortType, &str)>) -> Rule {
    Rule { group_id: Some(GROUPS[group]), ..rule(n, None, destination, action, ports) }
}

/// The policy as the database would give it: both users' devices active, in their groups.
fn policy(rules: Vec<Rule>, default_action: RuleAction) -> EgressPolicy {
    let sources = USERS
        .iter()
        .zip(IDS)
        .map(|((_, v4, v6), user_id)| RuleSource {
            user_id,
            ipv4: Some(v4.parse().unwrap()),
            ipv6: Some(v6.parse().unwrap()),
        })
        .collect();
    let memberships = (0..USERS.len())
        .flat_map(|index| {
            groups_of(index).into_iter().map(move |group_id| Membership { group_id, user_id: IDS[index] })
        })
        .collect();
    EgressPolicy { rules, sources, default_action, memberships }
}

use PortType::{Tcp, Udp};
use RuleAction::{Accept, Drop};

/// Rule sets that exercise every step of the lookup: scope, ports, action, family, default.
fn scenarios() -> Vec<(&'static str, Vec<Rule>, RuleAction)> {
    vec![
        ("no rules, default accept", vec![], Accept),
        (
            "user drop beats global port accept",
            vec![
                rule(1, Some(0), "192.0.2.0/24", Drop, None),
                rule(2, None, "192.0.2.2", Accept, Some((Tcp, "443"))),
                rule(3, None, "0.0.0.0/0", Drop, Some((Udp, "1-1000"))),
                rule(14, None, "192.0.2.2", Accept, Some((Udp, "53"))),
            ],
            Accept,
        ),
        (
            "default drop, accepts by port and family",
            vec![
                rule(4, Some(1), "192.0.2.2/32", Accept, Some((Tcp, "80-443"))),
                rule(5, None, "2001:db8::/64", Accept, None),
                rule(6, Some(0), "2001:db8::2", Drop, Some((Udp, "[50,60)"))),
                rule(7, None, "192.0.2.2", Accept, Some((Udp, "5353"))),
            ],
            Drop,
        ),
        (
            "global drop-all with exceptions, a user's plain accept",
            vec![
                rule(8, None, "0.0.0.0/0", Drop, None),
                rule(9, None, "::/0", Drop, None),
                rule(10, None, "192.0.2.0/24", Accept, Some((Tcp, "80"))),
                rule(11, Some(1), "192.0.2.2", Accept, None),
                rule(12, Some(1), "192.0.2.2", Drop, Some((Tcp, "443"))),
                rule(13, Some(0), "2001:db8::2/128", Accept, Some((Udp, "53"))),
            ],
            Accept,
        ),
        (
            "group rules between the user's and the global ones, a member of two groups",
            vec![
                rule(15, None, "0.0.0.0/0", Drop, None),
                group_rule(16, 0, "192.0.2.0/24", Accept, Some((Tcp, "1-100"))),
                group_rule(17, 1, "192.0.2.2", Accept, Some((Tcp, "50-443"))),
                group_rule(18, 1, "192.0.2.2", Drop, Some((Tcp, "80"))),
                rule(19, Some(1), "192.0.2.2", Drop, Some((Tcp, "443"))),
                group_rule(20, 0, "2001:db8::/64", Drop, Some((Udp, "53"))),
                rule(21, None, "2001:db8::2", Accept, Some((Udp, "1-100"))),
                group_rule(22, 1, "192.0.2.2", Accept, None),
            ],
            Accept,
        ),
    ]
}

#[tokio::test]
async fn the_access_checker_and_the_kernel_agree_on_every_probe() {
    let Some(net) = setup() else { return };
    let wireguard = IfName::parse("g0").unwrap();
    let mut keeper = Keeper::new(net.gateway.nft(), table(vec![], Verdict::Accept));
    for (name, rules, default_action) in scenarios() {
        let (egress, skipped) = egress(&policy(rules.clone(), default_action), wireguard.clone());
        assert!(skipped.is_empty(), "{name}");
        keeper.set_table(table(egress.rules, egress.default));
        keeper.reconcile().await.unwrap();

        let mut commands = Vec::new();
        let mut expected = Vec::new();
        for (index, ((user, v4, v6), user_id)) in USERS.iter().zip(IDS).enumerate() {
            let groups = groups_of(index);
            for (probe, six, args, destination, transport) in probes() {
                let label = format!("{user} {probe}");
                let source = if six { v6 } else { v4 };
                let command: Vec<String> = if args.is_empty() {
                    ["ping", "-c", "1", "-W", "1", "-I", source, destination].map(str::to_owned).to_vec()
                } else {
                    ["python3", "-c", PROBE, args[0], source, destination, args[1]].map(str::to_owned).to_vec()
                };
                let destination = destination.parse().unwrap();
                let packet = Packet { user_id: Some(user_id), groups: &groups, destination, transport };
                if decide(&rules, &packet, default_action).action == Drop {
                    expected.push(label.clone());
                }
                commands.push((label, command));
            }
        }
        assert_eq!(failing(&net.client, &commands), expected, "{name}: the kernel blocked what the checker drops");
    }
}
