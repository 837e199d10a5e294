//! A change of the rules alone, applied by the keeper as element deltas, leaves the table
//! exactly as a full apply of the new table does.

use ferrozone_gateway::nft::{render, EgressRule, Keeper, Pass, PortMatch, Protocol, Scope, Table, Verdict};

use super::{table, Namespace};

fn rule(scope: &Scope, destination: &str, verdict: Verdict, ports: Option<(Protocol, u16, u16)>) -> EgressRule {
    EgressRule {
        scope: scope.clone(),
        destination: destination.parse().unwrap(),
        verdict,
        ports: ports.map(|(protocol, first, last)| PortMatch { protocol, first, last }),
    }
}

fn user(addresses: &[&str]) -> Scope {
    Scope::Sources(addresses.iter().map(|a| a.parse().unwrap()).collect())
}

fn with_rules(rules: Vec<EgressRule>) -> Table {
    let mut table = table(Some("eth0"));
    table.egress.rules = rules;
    table
}

/// Before: a bit of everything. After: some rules gone, some new, one network widened in
/// place (a deletion and an overlapping addition in the same set and transaction).
fn before_and_after() -> (Table, Table) {
    let a = user(&["10.3.2.2", "fd00::3:2:2", "10.3.2.12"]);
    let b = user(&["10.3.2.3"]);
    let kept = vec![
        rule(&a, "1.1.1.1/24", Verdict::Drop, None),
        rule(&b, "2001:db8::/64", Verdict::Accept, Some((Protocol::Tcp, 80, 90))),
        rule(&Scope::Everyone, "9.9.9.9/32", Verdict::Drop, Some((Protocol::Udp, 53, 53))),
    ];
    let mut before = kept.clone();
    before.extend([
        rule(&a, "8.8.8.0/24", Verdict::Accept, None),
        rule(&Scope::Everyone, "fd99::/16", Verdict::Drop, None),
        rule(&a, "2001:db8:1::/48", Verdict::Drop, Some((Protocol::Udp, 1000, 2000))),
    ]);
    let mut after = kept;
    after.extend([
        rule(&a, "8.8.0.0/16", Verdict::Accept, None),
        rule(&b, "0.0.0.0/0", Verdict::Drop, None),
        rule(&Scope::Everyone, "::/0", Verdict::Accept, Some((Protocol::Tcp, 443, 443))),
    ]);
    (with_rules(before), with_rules(after))
}

#[tokio::test]
async fn a_rules_delta_reads_back_as_a_full_apply_of_the_new_table() {
    let (Some(kept), Some(reference)) = (Namespace::new(), Namespace::new()) else { return };
    let (before, after) = before_and_after();
    let mut keeper = Keeper::new(kept.nft(), before.clone());
    assert_eq!(keeper.reconcile().await.unwrap(), Pass::Full);

    for (table, name) in [(after, "after"), (before, "before"), (with_rules(vec![]), "no rules")] {
        keeper.set_table(table.clone());
        assert_eq!(keeper.reconcile().await.unwrap(), Pass::Delta, "{name}");
        reference.nft().apply(&render(&table)).await.unwrap();
        assert_eq!(kept.nft().read().await.unwrap(), reference.nft().read().await.unwrap(), "{name}");
        assert_eq!(keeper.reconcile().await.unwrap(), Pass::Unchanged, "{name}");
    }
}

#[tokio::test]
async fn beyond_the_rules_or_after_drift_the_keeper_replaces_the_table() {
    let Some(ns) = Namespace::new() else { return };
    let (before, after) = before_and_after();
    let mut keeper = Keeper::new(ns.nft(), before.clone());
    assert_eq!(keeper.reconcile().await.unwrap(), Pass::Full);

    let mut deny = before.clone();
    deny.egress.default = Verdict::Drop;
    keeper.set_table(deny);
    assert_eq!(keeper.reconcile().await.unwrap(), Pass::Full, "a new default is structure");

    keeper.set_table(before.clone());
    assert_eq!(keeper.reconcile().await.unwrap(), Pass::Full);
    ns.nft_cli(&["delete", "element", "inet", "ferrozone", "ip_port_drop", "{ 9.9.9.9 . udp . 53 }"]);
    keeper.set_table(after.clone());
    assert_eq!(keeper.reconcile().await.unwrap(), Pass::Delta, "a delta does not read the table first");
    assert_eq!(keeper.reconcile().await.unwrap(), Pass::Full, "an element deleted behind its back is drift");
    let reading = ns.nft().read().await.unwrap();
    ns.nft().apply(&render(&after)).await.unwrap();
    assert_eq!(ns.nft().read().await.unwrap(), reading);

    // A delta deleting an element someone already deleted fails as a whole; the keeper
    // then replaces the table.
    ns.nft_cli(&["delete", "element", "inet", "ferrozone", "ip6_port_accept", "{ ::/0 . tcp . 443 }"]);
    keeper.set_table(before.clone());
    assert_eq!(keeper.reconcile().await.unwrap(), Pass::Full, "a failed delta falls back to a full apply");
    assert_eq!(keeper.reconcile().await.unwrap(), Pass::Unchanged);
}

#[tokio::test]
async fn overlapping_rows_do_not_stop_the_table() {
    let Some(ns) = Namespace::new() else { return };
    let a = user(&["10.3.2.2", "10.3.2.2"]);
    let table = with_rules(vec![
        rule(&a, "1.1.1.1/32", Verdict::Drop, None),
        rule(&a, "1.1.1.0/24", Verdict::Drop, None),
        rule(&Scope::Everyone, "fd00::/8", Verdict::Accept, None),
        rule(&Scope::Everyone, "fd00::1/128", Verdict::Accept, None),
        rule(&Scope::Everyone, "9.9.9.9/32", Verdict::Drop, Some((Protocol::Tcp, 80, 90))),
        rule(&Scope::Everyone, "9.9.9.0/24", Verdict::Drop, Some((Protocol::Tcp, 85, 100))),
    ]);
    ns.nft().apply(&render(&table)).await.unwrap();
    let listing = ns.nft_cli(&["list", "table", "inet", "ferrozone"]);
    for element in ["10.3.2.2 . 1.1.1.0/24", "fd00::/8", "9.9.9.0/24 . tcp . 85-100"] {
        assert!(listing.contains(element), "{element}: {listing}");
    }
}
