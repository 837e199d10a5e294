//! The pure renderer: a desired [`Table`] to one complete `nft -f` text.

use std::fmt::{self, Write};

use ipnet::IpNet;

use super::sets::{write_elements, Element, SetElements, SetId};

/// The table Ferrozone owns, family and name as `nft` spells them.
pub const TABLE: &str = "inet ferrozone";

/// A Linux interface name safe to put in an nftables rule: 1–15 letters, digits, `-`, `_`
/// or `.`, and not `.` or `..`. Anything else is refused rather than escaped: a `"` or `\`
/// would break out of the quoted string, and a `*` would make `nft` match a wildcard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfName(String);

/// Why a string is not an [`IfName`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidIfName(pub String);

impl fmt::Display for InvalidIfName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not an interface name: 1 to 15 letters, digits, '-', '_' or '.'", self.0.escape_debug())
    }
}

impl std::error::Error for InvalidIfName {}

impl IfName {
    /// Checks `name`.
    pub fn parse(name: &str) -> Result<Self, InvalidIfName> {
        let ok = (1..=15).contains(&name.len())
            && name != "."
            && name != ".."
            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if ok {
            Ok(Self(name.to_owned()))
        } else {
            Err(InvalidIfName(name.to_owned()))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IfName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the `inet ferrozone` table should hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The tunnel networks (IPv4 and IPv6): the sources masqueraded.
    pub tunnel_networks: Vec<IpNet>,
    /// Masquerade tunnel traffic leaving by this interface; `None` for routed deployments.
    pub masquerade_on: Option<IfName>,
    /// The egress rules, enforced on traffic entering from the WireGuard interface.
    pub egress: Egress,
    /// Whether the egress rules also decide traffic from the WireGuard interface to the
    /// gateway itself (the `input` hook), not only traffic it forwards.
    pub filter_host: bool,
}

/// Firezone's egress rules as the forward filter enforces them (docs/design/data-plane.md,
/// "Rules"): user rules, then group rules, then global ones; port rules before plain ones,
/// accept before drop; and [`Egress::default`] for what no rule matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Egress {
    /// The WireGuard interface: only traffic entering from it is filtered.
    pub wireguard: IfName,
    /// The rules, in any order (the renderer orders them by precedence).
    pub rules: Vec<EgressRule>,
    /// What happens to tunnel traffic no rule matches (Firezone: accept).
    pub default: Verdict,
}

/// One rule, resolved for the data plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressRule {
    pub scope: Scope,
    /// The destination network (host bits as stored; the renderer truncates).
    pub destination: IpNet,
    pub verdict: Verdict,
    /// Destination ports, for port rules.
    pub ports: Option<PortMatch>,
}

/// Whose traffic a rule applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every device (a rule without `user_id`).
    Everyone,
    /// Traffic from these source addresses: the tunnel addresses of the user's active
    /// devices. Empty when the user has none (the rule matches nothing).
    Sources(Vec<std::net::IpAddr>),
    /// A group's rule: traffic from the tunnel addresses of the active devices of the
    /// group's members, looked up after the user rules and before the global ones.
    Group(Vec<std::net::IpAddr>),
}

/// Accept or drop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Verdict {
    #[default]
    Accept,
    Drop,
}

/// A transport protocol and an inclusive destination port range (`first == last` for one
/// port).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PortMatch {
    pub protocol: Protocol,
    pub first: u16,
    pub last: u16,
}

/// The protocols of port rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    Tcp,
    Udp,
}

/// The complete `nft -f` text for `table`: declare (so the delete cannot fail on a first
/// apply), delete, define. `nft` runs a file as one transaction, so the table is replaced
/// atomically, and a text that fails to apply leaves the old table in place.
///
/// The egress rules are the elements of twenty-four interval sets (twelve per family, always
/// declared), looked up by the regular chain `egress`, which `forward` jumps to for traffic
/// entering from the WireGuard interface; see [`SetElements::of`] for how overlapping rows
/// are handled.
///
/// With [`Table::filter_host`], an `input` chain sends traffic from the WireGuard interface
/// to the gateway itself (any of its addresses) through the chain `host`, which accepts what
/// the tunnel needs whatever the rules say and then jumps to the same `egress` chain (see
/// [`write_host`]).
///
/// Masquerade matches the source network, not `iifname`: in the postrouting hook the input
/// interface is no longer known for locally routed packets, and the source says "tunnel".
pub fn render(table: &Table) -> String {
    render_with(table, &SetElements::of(&table.egress))
}

/// [`render`] with the egress sets already computed.
pub(crate) fn render_with(table: &Table, sets: &SetElements) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_table(&mut out, table, sets);
    out
}

fn write_table(out: &mut String, table: &Table, sets: &SetElements) -> fmt::Result {
    writeln!(out, "table {TABLE}")?;
    writeln!(out, "delete table {TABLE}")?;
    writeln!(out, "table {TABLE} {{")?;
    for set in SetId::all() {
        write_set(out, set, sets.get(set))?;
    }
    writeln!(out, "\tchain forward {{")?;
    writeln!(out, "\t\ttype filter hook forward priority filter; policy accept;")?;
    writeln!(out, "\t\tiifname \"{}\" jump egress", table.egress.wireguard)?;
    writeln!(out, "\t}}")?;
    writeln!(out, "\tchain egress {{")?;
    for set in SetId::all() {
        writeln!(out, "\t\t{}", set.rule())?;
    }
    if table.egress.default == Verdict::Drop {
        writeln!(out, "\t\tdrop")?;
    }
    writeln!(out, "\t}}")?;
    if table.filter_host {
        write_host(out, table)?;
    }
    writeln!(out, "\tchain postrouting {{")?;
    writeln!(out, "\t\ttype nat hook postrouting priority srcnat; policy accept;")?;
    if let Some(egress) = &table.masquerade_on {
        for network in &table.tunnel_networks {
            let family = if network.addr().is_ipv4() { "ip" } else { "ip6" };
            let network = network.trunc();
            writeln!(out, "\t\t{family} saddr {network} oifname \"{egress}\" masquerade")?;
        }
    }
    writeln!(out, "\t}}")?;
    writeln!(out, "}}")
}

/// The `input` chain and the `host` chain it jumps to for traffic from the WireGuard
/// interface. Before the rules, `host` accepts what the tunnel itself needs: replies to
/// connections the gateway opened (`ct direction reply`: a client's own connections stay
/// subject to the rules, so a new drop rule ends them as it ends forwarded ones), ICMP
/// errors (path MTU discovery), IPv6 neighbour discovery (none on a WireGuard interface, but
/// kept for interfaces that need it), and DNS, UDP and TCP port 53, to the gateway's tunnel
/// addresses: a gateway serving DNS to its clients answers there. Everything else goes
/// through `egress`, so rules and default action decide as they do for forwarded traffic.
fn write_host(out: &mut String, table: &Table) -> fmt::Result {
    writeln!(out, "\tchain input {{")?;
    writeln!(out, "\t\ttype filter hook input priority filter; policy accept;")?;
    writeln!(out, "\t\tiifname \"{}\" jump host", table.egress.wireguard)?;
    writeln!(out, "\t}}")?;
    writeln!(out, "\tchain host {{")?;
    writeln!(out, "\t\tct state established,related ct direction reply accept")?;
    writeln!(out, "\t\ticmp type {{ destination-unreachable, time-exceeded, parameter-problem }} accept")?;
    writeln!(
        out,
        "\t\ticmpv6 type {{ destination-unreachable, packet-too-big, time-exceeded, parameter-problem, \
         nd-neighbor-solicit, nd-neighbor-advert }} accept"
    )?;
    for network in &table.tunnel_networks {
        let family = if network.addr().is_ipv4() { "ip" } else { "ip6" };
        writeln!(out, "\t\t{family} daddr {} meta l4proto {{ tcp, udp }} th dport 53 accept", network.trunc())?;
    }
    writeln!(out, "\t\tjump egress")?;
    writeln!(out, "\t}}")
}

fn write_set(out: &mut String, set: SetId, elements: &[Element]) -> fmt::Result {
    writeln!(out, "\tset {} {{", set.name())?;
    writeln!(out, "\t\ttype {}", set.key_type())?;
    writeln!(out, "\t\tflags interval")?;
    if !elements.is_empty() {
        writeln!(out, "\t\telements = {{")?;
        write_elements(out, elements, "\t\t\t")?;
        writeln!(out, "\t\t}}")?;
    }
    writeln!(out, "\t}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(masquerade: bool) -> Table {
        Table {
            tunnel_networks: vec!["10.3.2.1/24".parse().unwrap(), "fd00::3:2:0/120".parse().unwrap()],
            masquerade_on: masquerade.then(|| IfName::parse("eth0").unwrap()),
            egress: Egress { wireguard: IfName::parse("wg0").unwrap(), rules: vec![], default: Verdict::Accept },
            filter_host: true,
        }
    }

    #[test]
    fn renders_the_whole_table_with_masquerade_rules_and_default_drop() {
        let mut table = table(true);
        let user = Scope::Sources(vec!["10.3.2.2".parse().unwrap(), "fd00::3:2:2".parse().unwrap()]);
        let tcp = |first, last| Some(PortMatch { protocol: Protocol::Tcp, first, last });
        table.egress.rules = vec![
            EgressRule {
                scope: Scope::Everyone,
                destination: "1.1.1.1/24".parse().unwrap(),
                verdict: Verdict::Drop,
                ports: None,
            },
            EgressRule {
                scope: Scope::Everyone,
                destination: "::/0".parse().unwrap(),
                verdict: Verdict::Drop,
                ports: None,
            },
            EgressRule {
                scope: user.clone(),
                destination: "1.1.1.7/32".parse().unwrap(),
                verdict: Verdict::Accept,
                ports: None,
            },
            EgressRule {
                scope: user,
                destination: "2001:db8::1/64".parse().unwrap(),
                verdict: Verdict::Accept,
                ports: tcp(80, 90),
            },
            EgressRule {
                scope: Scope::Everyone,
                destination: "9.9.9.9/32".parse().unwrap(),
                verdict: Verdict::Drop,
                ports: Some(PortMatch { protocol: Protocol::Udp, first: 53, last: 53 }),
            },
            EgressRule {
                scope: Scope::Group(vec!["10.3.2.2".parse().unwrap(), "10.3.2.3".parse().unwrap()]),
                destination: "10.0.0.0/8".parse().unwrap(),
                verdict: Verdict::Accept,
                ports: tcp(22, 22),
            },
        ];
        table.egress.default = Verdict::Drop;
        assert_eq!(render(&table), include_str!("testdata/egress.nft"));
    }

    #[test]
    fn without_masquerade_the_nat_chain_is_empty() {
        let text = render(&table(false));
        assert!(!text.contains("masquerade"), "{text}");
        assert!(text.contains("chain postrouting {"), "{text}");
    }

    #[test]
    fn duplicate_and_overlapping_rows_render_once_and_the_wider_network_wins() {
        let mut table = table(false);
        let user = Scope::Sources(vec!["10.3.2.2".parse().unwrap(), "10.3.2.2".parse().unwrap()]);
        let drop = |scope: &Scope, destination: &str| EgressRule {
            scope: scope.clone(),
            destination: destination.parse().unwrap(),
            verdict: Verdict::Drop,
            ports: None,
        };
        table.egress.rules = vec![
            drop(&user, "1.1.1.1/32"),
            drop(&user, "1.1.1.0/24"),
            drop(&user, "1.1.1.9/24"),
            drop(&Scope::Everyone, "fd00::/8"),
            drop(&Scope::Everyone, "fd00::1/128"),
        ];
        let text = render(&table);
        let user_drop = "\tset user_ip_drop {\n\t\ttype ipv4_addr . ipv4_addr\n\t\tflags interval\n\t\telements = {\n\t\t\t10.3.2.2 . 1.1.1.0/24,\n\t\t}\n\t}\n";
        let global_drop =
            "\tset ip6_drop {\n\t\ttype ipv6_addr\n\t\tflags interval\n\t\telements = {\n\t\t\tfd00::/8,\n\t\t}\n\t}\n";
        assert!(text.contains(user_drop), "{text}");
        assert!(text.contains(global_drop), "{text}");
        assert_eq!(text.matches("elements").count(), 2, "{text}");
    }

    #[test]
    fn default_accept_ends_the_egress_chain_without_a_drop_and_sets_are_declared_empty() {
        let text = render(&table(false));
        assert!(text.contains("\t\tiifname \"wg0\" jump egress\n"), "{text}");
        assert!(text.contains("\t\tip6 daddr @ip6_drop drop\n\t}\n"), "{text}");
        assert_eq!(text.matches("\t\tflags interval\n\t}\n").count(), 24, "{text}");
        assert!(!text.contains("elements"), "{text}");
    }

    #[test]
    fn the_gateway_itself_is_filtered_by_the_egress_chain_after_what_the_tunnel_needs() {
        let mut table = table(false);
        table.egress.default = Verdict::Drop;
        let text = render(&table);
        let input = "\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n\t\tiifname \"wg0\" jump host\n\t}\n";
        assert!(text.contains(input), "{text}");
        let host = text.split("\tchain host {\n").nth(1).and_then(|rest| rest.split("\t}\n").next()).unwrap();
        let rules: Vec<&str> = host.lines().map(str::trim).collect();
        assert_eq!(
            rules,
            [
                "ct state established,related ct direction reply accept",
                "icmp type { destination-unreachable, time-exceeded, parameter-problem } accept",
                "icmpv6 type { destination-unreachable, packet-too-big, time-exceeded, parameter-problem, \
                 nd-neighbor-solicit, nd-neighbor-advert } accept",
                "ip daddr 10.3.2.0/24 meta l4proto { tcp, udp } th dport 53 accept",
                "ip6 daddr fd00::3:2:0/120 meta l4proto { tcp, udp } th dport 53 accept",
                "jump egress",
            ]
        );
        // The default drop ends `egress`, which both `forward` and `host` jump to.
        assert!(text.contains("\t\tip6 daddr @ip6_drop drop\n\t\tdrop\n\t}\n"), "{text}");
    }

    #[test]
    fn without_host_filtering_there_is_no_input_chain() {
        let table = Table { filter_host: false, ..table(true) };
        let text = render(&table);
        assert!(!text.contains("hook input") && !text.contains("chain host"), "{text}");
        assert_eq!(text.matches("jump egress").count(), 1, "{text}");
    }

    #[test]
    fn interface_names_that_could_escape_or_match_a_wildcard_are_refused() {
        for bad in ["", ".", "..", "eth0\"", "a\\b", "eth*", "wg 0", "a/b", "a:b", "sixteen-chars-xx", "é"] {
            assert!(IfName::parse(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["eth0", "wg-ferrozone", "en_p0s1.100", "a"] {
            assert_eq!(IfName::parse(good).unwrap().as_str(), good);
        }
    }
}
