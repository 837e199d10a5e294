//! The keeper for real: `nft` in a throwaway network namespace (needs root; skipped
//! otherwise), rules written through the domain of this process and of another one sharing
//! the database (PostgreSQL when `FERROZONE_TEST_DATABASE_URL` is set, else SQLite).

use std::net::IpAddr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use crate::nft::{Scope, Verdict};
use ferrozone_domain::crypto::Cipher;
use ferrozone_domain::egress::RuleAction;
use ferrozone_domain::input::{ConfigurationChanges, NewDevice, NewRule, NewUser, Patch};
use ferrozone_domain::{Domain, Principal, Settings};
use ferrozone_store::testing::{fresh, test_options, TestDb};

use super::*;

/// A network namespace deleted on drop.
struct Namespace(String);

impl Namespace {
    fn new() -> Option<Self> {
        let uid = Command::new("id").arg("-u").output().ok()?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            eprintln!("skipped: needs root for network namespaces and nftables");
            return None;
        }
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!("fzwire-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let added = Command::new("ip").args(["netns", "add", &name]).status().unwrap();
        assert!(added.success(), "ip netns add {name}");
        Some(Self(name))
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let quiet = std::process::Stdio::null();
        let _ = Command::new("ip").args(["netns", "delete", &self.0]).stderr(quiet).status();
    }
}

/// Far longer than a pass takes on a loaded machine: only a lost wake-up runs into it.
const PATIENCE: Duration = Duration::from_secs(30);
/// How long one attempt waits for a change of the other process: the watch may not be
/// listening yet when the first change commits (a deadline, not a timing assertion).
const ATTEMPT: Duration = Duration::from_secs(3);
/// The timed pass is an hour away: only the change signal can bring the rules in.
const NO_TIMED_PASS: Duration = Duration::from_secs(3600);

async fn domain_on(db: &TestDb, key: &str) -> Arc<Domain> {
    let store = ferrozone_store::open(&db.url, &test_options()).await.unwrap().into_store();
    let cipher = Cipher::from_base64(key).unwrap();
    Arc::new(Domain::open(store, Arc::new(Settings::standard()), cipher).await.unwrap())
}

fn base_table(domain: &Domain) -> Table {
    let pools = &domain.settings().pools;
    Table {
        tunnel_networks: [&pools.v4, &pools.v6].into_iter().flatten().map(|pool| pool.network()).collect(),
        masquerade_on: None,
        egress: egress(&Default::default(), IfName::parse("wg0").unwrap()).0,
        filter_host: true,
    }
}

async fn create_rule(domain: &Domain, destination: String) {
    let rule = NewRule { destination: Some(destination), ..NewRule::default() };
    domain.create_rule(&Principal::operator(), &rule).await.unwrap();
}

async fn until_rules(status: &mut watch::Receiver<RoutingStatus>, rules: usize, patience: Duration) -> bool {
    tokio::time::timeout(patience, status.wait_for(|s| s.rules == rules)).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_written_here_or_by_another_process_reach_the_table_on_the_change_signal() {
    let Some(ns) = Namespace::new() else { return };
    let db = fresh().await.unwrap();
    let key = Cipher::generate_key();
    let (domain, other) = (domain_on(&db, &key).await, domain_on(&db, &key).await);
    let table = base_table(&domain);
    let routing = Routing::open(Nft::in_netns(&ns.0), domain.clone(), table).await.unwrap();
    let mut status = routing.status();
    assert_eq!(*status.borrow(), RoutingStatus { last_pass_failed: false, ..*status.borrow() });
    assert!(status.borrow().last_apply.is_some(), "the first pass applies the table");
    // What `serve` runs: the domain's signals fanned out, the database watched.
    let wakes = TableWakes::default();
    let fan_out = tokio::spawn(super::super::fan_out(domain.peer_changes(), vec![wakes.changes.clone()]));
    let rules_fan_out = tokio::spawn(super::super::fan_out(domain.rule_changes(), vec![wakes.rules.clone()]));
    let watch = tokio::spawn({
        let domain = domain.clone();
        async move { domain.watch_peer_changes().await }
    });
    let keeper = tokio::spawn(keep(routing, wakes, NO_TIMED_PASS, std::future::pending(), false));

    let started = Instant::now();
    create_rule(&domain, "192.0.2.0/24".into()).await;
    assert!(until_rules(&mut status, 1, PATIENCE).await, "a rule written here never reached the table");
    eprintln!("{}: a rule written here reached the table in {:?}", db.backend, started.elapsed());

    let mut count = 1;
    let heard = loop {
        count += 1;
        assert!(count < 12, "no rule written by the other process reached the table");
        let started = Instant::now();
        create_rule(&other, format!("198.51.100.{count}")).await;
        if until_rules(&mut status, count, ATTEMPT).await {
            break started.elapsed();
        }
    };
    eprintln!("{}: a rule written by another process reached the table in {heard:?}", db.backend);
    assert!(!status.borrow().last_pass_failed);
    fan_out.abort();
    rules_fan_out.abort();
    keeper.abort();
    watch.abort();
}

#[tokio::test]
async fn a_failed_pass_is_reported_and_the_default_action_is_applied() {
    let Some(ns) = Namespace::new() else { return };
    let db = fresh().await.unwrap();
    let domain = domain_on(&db, &Cipher::generate_key()).await;
    create_rule(&domain, "192.0.2.0/24".into()).await;
    let drop_all = ConfigurationChanges { egress_default_action: Patch::Value(RuleAction::Drop), ..Default::default() };
    domain.update_configuration(&Principal::operator(), &drop_all, &|_| Ok(())).await.unwrap();
    let table = base_table(&domain);
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let recording = metrics::set_default_local_recorder(&recorder);
    let mut routing = Routing::open(Nft::in_netns(&ns.0), domain.clone(), table).await.unwrap();
    drop(recording);
    assert_eq!(routing.status.borrow().rules, 1, "the first pass reads the rules");
    assert_eq!(rules_applied(&recorder), Some(1.0));
    assert_eq!(routing.table.egress.default, Verdict::Drop, "the configuration's default action");
    assert_eq!(routing.status.borrow().default_action, Verdict::Drop);
    assert!(!routing.status.borrow().last_pass_failed);
    // `nft` cannot run any more: the namespace is gone (a new rule needs it).
    let deleted = Command::new("ip").args(["netns", "delete", &ns.0]).status().unwrap();
    assert!(deleted.success());
    create_rule(&domain, "198.51.100.0/24".into()).await;
    routing.pass(Pass::Rules).await.unwrap_err();
    let status = *routing.status.borrow();
    assert!(status.last_pass_failed);
    assert_eq!(status.rules, 1, "the last rules applied");
}

/// The value of the `ferrozone_rules_applied` gauge the recorder holds.
fn rules_applied(recorder: &metrics_util::debugging::DebuggingRecorder) -> Option<f64> {
    let snapshot = recorder.snapshotter().snapshot().into_vec();
    snapshot.into_iter().find_map(|(key, _, _, value)| match value {
        metrics_util::debugging::DebugValue::Gauge(x) if key.key().name() == crate::metrics::RULES_APPLIED => Some(x.0),
        _ => None,
    })
}

/// The timed pass repairs the table even while changes keep coming (on SQLite every commit
/// of any process is one), and a change that leaves the rules alone does not rewrite it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_table_is_put_back_by_the_timed_pass_however_often_changes_come() {
    let Some(ns) = Namespace::new() else { return };
    let db = fresh().await.unwrap();
    let domain = domain_on(&db, &Cipher::generate_key()).await;
    let table = base_table(&domain);
    let routing = Routing::open(Nft::in_netns(&ns.0), domain.clone(), table).await.unwrap();
    let mut status = routing.status();
    let first_apply = status.borrow().last_apply;
    let wakes = TableWakes::default();
    let keeper = tokio::spawn(keep(routing, wakes.clone(), Duration::from_millis(300), std::future::pending(), false));
    let noise = tokio::spawn(async move {
        loop {
            wakes.changes.notify_one();
            wakes.rules.notify_one();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(status.borrow().last_apply, first_apply, "changes that leave the rules alone apply nothing");
    let deleted =
        Command::new("ip").args(["netns", "exec", &ns.0, "nft", "delete", "table", "inet", "ferrozone"]).status();
    assert!(deleted.unwrap().success());
    let repaired = tokio::time::timeout(PATIENCE, status.wait_for(|s| s.last_apply != first_apply)).await;
    repaired.expect("the table was never put back").unwrap();
    let listed =
        Command::new("ip").args(["netns", "exec", &ns.0, "nft", "list", "table", "inet", "ferrozone"]).output();
    assert!(listed.unwrap().status.success(), "the table is back");
    noise.abort();
    keeper.abort();
}

/// A user's rule matches that user's devices, and nothing once the user is disabled: its
/// traffic is dropped as its peers leave. Enabling it brings the addresses back.
#[tokio::test]
async fn a_users_rule_follows_its_active_devices() {
    let Some(ns) = Namespace::new() else { return };
    let db = fresh().await.unwrap();
    let domain = domain_on(&db, &Cipher::generate_key()).await;
    let admin = Principal::operator();
    let (user, addresses) = user_with_device(&domain, "roams@example.com").await;
    let rule = NewRule { destination: Some("192.0.2.7".into()), user_id: Some(user.to_string()), ..NewRule::default() };
    domain.create_rule(&admin, &rule).await.unwrap();
    let table = base_table(&domain);
    let mut routing = Routing::open(Nft::in_netns(&ns.0), domain.clone(), table).await.unwrap();
    assert_eq!(addresses.len(), 2);
    assert_eq!(routing.table.egress.rules[0].scope, Scope::Sources(addresses.clone()));

    domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "roams@example.com", true).await.unwrap();
    routing.pass(Pass::Changes).await.unwrap();
    assert_eq!(routing.table.egress.rules[0].scope, Scope::Sources(vec![]), "disabled: no sources");
    domain.set_user_disabled(&ferrozone_domain::Principal::operator(), "roams@example.com", false).await.unwrap();
    routing.pass(Pass::Changes).await.unwrap();
    assert_eq!(routing.table.egress.rules[0].scope, Scope::Sources(addresses));
}

/// A stored rule that does not parse (written past the domain, as by hand) is left out; the
/// table is applied with the others.
#[tokio::test]
async fn a_stored_rule_that_does_not_parse_is_left_out_and_the_rest_applied() {
    let Some(ns) = Namespace::new() else { return };
    let db = fresh().await.unwrap();
    let domain = domain_on(&db, &Cipher::generate_key()).await;
    create_rule(&domain, "192.0.2.0/24".into()).await;
    let mut broken = domain.list_rules(&Principal::operator()).await.unwrap().remove(0);
    broken.id = uuid::Uuid::now_v7();
    broken.destination = "not an address".into();
    db.store.insert_rule(&broken).await.unwrap();
    let table = base_table(&domain);
    let routing = Routing::open(Nft::in_netns(&ns.0), domain.clone(), table).await.unwrap();
    assert_eq!(routing.status.borrow().rules, 1);
    assert!(!routing.status.borrow().last_pass_failed);
    assert_eq!(routing.skipped.len(), 1);
    assert_eq!(routing.skipped[0].id, broken.id);
}

/// `/proc/net/route` with one default route, by `interface`.
fn default_route_by(interface: &str) -> String {
    let header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n";
    format!("{header}{interface}\t00000000\t0100A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n")
}

fn masquerade_rules(ns: &Namespace) -> Vec<String> {
    let args = ["netns", "exec", &ns.0, "nft", "list", "chain", "inet", "ferrozone", "postrouting"];
    let out = Command::new("ip").args(args).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().filter(|line| line.contains("masquerade")).map(|line| line.trim().to_owned()).collect()
}

/// A default route that moves takes the masquerade with it at the next repair pass (not
/// at a mere change pass); a route that is gone keeps the last interface.
#[tokio::test]
async fn the_masquerade_follows_the_default_route_at_repair_passes() {
    let Some(ns) = Namespace::new() else { return };
    let db = fresh().await.unwrap();
    let domain = domain_on(&db, &Cipher::generate_key()).await;
    let routes = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(routes.path(), default_route_by("uplink0")).unwrap();
    let table = Table { masquerade_on: Some(IfName::parse("uplink0").unwrap()), ..base_table(&domain) };
    let mut routing = Routing::open(Nft::in_netns(&ns.0), domain.clone(), table).await.unwrap();
    routing.follow_default_route(routes.path().to_owned());
    let on = |name: &str| masquerade_rules(&ns).iter().all(|rule| rule.contains(&format!("oifname \"{name}\"")));
    assert_eq!(masquerade_rules(&ns).len(), 2, "IPv4 and IPv6 masquerade: {:?}", masquerade_rules(&ns));
    assert!(on("uplink0"));

    std::fs::write(routes.path(), default_route_by("uplink1")).unwrap();
    routing.pass(Pass::Changes).await.unwrap();
    assert!(on("uplink0"), "a change pass does not read the routes");
    routing.pass(Pass::Repair).await.unwrap();
    assert!(on("uplink1"), "moved with the default route: {:?}", masquerade_rules(&ns));

    std::fs::write(routes.path(), default_route_by("uplink1").lines().next().unwrap()).unwrap();
    routing.pass(Pass::Repair).await.unwrap();
    assert!(on("uplink1") && masquerade_rules(&ns).len() == 2, "no default route: kept");
}

/// Counts the reads of a [`PolicySource`]: whole policies and rules alone.
struct Counted {
    domain: Arc<Domain>,
    whole: AtomicU32,
    rules: AtomicU32,
}

#[async_trait::async_trait]
impl PolicySource for Counted {
    async fn egress_policy(&self) -> anyhow::Result<ferrozone_domain::egress::EgressPolicy> {
        self.whole.fetch_add(1, Ordering::SeqCst);
        self.domain.egress_policy().await.map_err(Into::into)
    }
    async fn egress_rules(&self) -> anyhow::Result<Option<ferrozone_domain::egress::EgressRules>> {
        self.rules.fetch_add(1, Ordering::SeqCst);
        Ok(Some(self.domain.egress_rules().await?))
    }
}

/// A rules pass (docs/design/groups.md, "Membership changes") reads the rules and the
/// memberships alone and takes the sources of the last whole read; a membership naming a
/// user that read did not cover reads the whole policy instead. Either way the group's
/// rule matches exactly its members' addresses.
#[tokio::test]
async fn a_membership_change_reads_the_rules_alone_when_the_sources_cover_it() {
    use ferrozone_domain::service::groups::MemberInput;
    let Some(ns) = Namespace::new() else { return };
    let db = fresh().await.unwrap();
    let domain = domain_on(&db, &Cipher::generate_key()).await;
    let admin = Principal::operator();
    let mut addresses = std::collections::HashMap::new();
    for email in ["alice@example.com", "bob@example.com"] {
        addresses.insert(email, user_with_device(&domain, email).await);
    }
    let (staff, ops) = (group(&domain, "Staff").await, group(&domain, "Ops").await);
    let member = |email: &str| MemberInput { user_id: Some(addresses[email].0.to_string()), ..MemberInput::default() };
    domain.add_group_member(&admin, staff, &member("alice@example.com")).await.unwrap();
    for (group, destination) in [(staff, "192.0.2.0/24"), (ops, "198.51.100.0/24")] {
        let rule =
            NewRule { destination: Some(destination.into()), group_id: Some(group.to_string()), ..NewRule::default() };
        domain.create_rule(&admin, &rule).await.unwrap();
    }
    let counted = Arc::new(Counted { domain: domain.clone(), whole: AtomicU32::new(0), rules: AtomicU32::new(0) });
    let mut routing = Routing::open(Nft::in_netns(&ns.0), counted.clone(), base_table(&domain)).await.unwrap();
    let reads = || (counted.whole.load(Ordering::SeqCst), counted.rules.load(Ordering::SeqCst));
    let scopes =
        |routing: &Routing| -> Vec<Scope> { routing.table.egress.rules.iter().map(|r| r.scope.clone()).collect() };
    let alice = addresses["alice@example.com"].1.clone();
    assert_eq!(scopes(&routing), [Scope::Group(alice.clone()), Scope::Group(vec![])]);
    assert_eq!(reads(), (1, 0));

    // Alice joins Ops: her devices were read, the rules alone are.
    domain.add_group_member(&admin, ops, &member("alice@example.com")).await.unwrap();
    routing.pass(Pass::Rules).await.unwrap();
    assert_eq!(reads(), (1, 1));
    assert_eq!(scopes(&routing), [Scope::Group(alice.clone()), Scope::Group(alice.clone())]);

    // Bob joins Staff: no read covered him, so the whole policy is read.
    domain.add_group_member(&admin, staff, &member("bob@example.com")).await.unwrap();
    routing.pass(Pass::Rules).await.unwrap();
    assert_eq!(reads(), (2, 2));
    let mut both: Vec<IpAddr> = alice.iter().chain(&addresses["bob@example.com"].1).copied().collect();
    both.sort_unstable();
    assert_eq!(scopes(&routing), [Scope::Group(both), Scope::Group(alice.clone())]);

    // Bob leaves: covered, the rules alone again.
    domain.remove_group_member(&admin, staff, addresses["bob@example.com"].0).await.unwrap();
    routing.pass(Pass::Rules).await.unwrap();
    assert_eq!(reads(), (2, 3));
    assert_eq!(scopes(&routing), [Scope::Group(alice.clone()), Scope::Group(alice)]);
    let listed = Command::new("ip")
        .args(["netns", "exec", &ns.0, "nft", "list", "set", "inet", "ferrozone", "group_ip_drop"])
        .output()
        .unwrap();
    let listed = String::from_utf8(listed.stdout).unwrap();
    let bob_v4 = addresses["bob@example.com"].1.iter().find(|a| a.is_ipv4()).unwrap().to_string();
    assert!(!listed.contains(&bob_v4), "bob's address left the kernel's set: {listed}");
}

/// A new user with one device: its id and the device's tunnel addresses.
async fn user_with_device(domain: &Domain, email: &str) -> (uuid::Uuid, Vec<IpAddr>) {
    let admin = Principal::operator();
    let new_user = NewUser { email: Some(email.into()), ..NewUser::default() };
    let user = domain.create_user(&admin, &new_user).await.unwrap();
    let new_device = NewDevice { user_id: Some(user.id.to_string()), ..NewDevice::default() };
    let device = domain.create_device(&admin, &new_device).await.unwrap().device;
    (user.id, device.ipv4.map(IpAddr::V4).into_iter().chain(device.ipv6.map(IpAddr::V6)).collect())
}

async fn group(domain: &Domain, name: &str) -> uuid::Uuid {
    let input = ferrozone_domain::service::groups::GroupInput { name: Patch::Value(name.into()), ..Default::default() };
    domain.create_group(&Principal::operator(), &input).await.unwrap().id
}

/// `nft` in the namespace, which must succeed.
fn nft_in(ns: &Namespace, args: &[&str]) -> String {
    let out = Command::new("ip").args(["netns", "exec", &ns.0, "nft"]).args(args).output().unwrap();
    assert!(out.status.success(), "nft {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The repair pass lists the table only when the ruleset generation moved since the table
/// was last known (docs/design/data-plane.md, "Drift"): not after its own applies, once
/// after another table's commit, and an edit of the table's elements is still put right.
#[tokio::test]
async fn a_repair_lists_the_table_only_when_the_ruleset_generation_moved() {
    let Some(ns) = Namespace::new() else { return };
    let db = fresh().await.unwrap();
    let domain = domain_on(&db, &Cipher::generate_key()).await;
    create_rule(&domain, "192.0.2.0/24".into()).await;
    let mut routing = Routing::open(Nft::in_netns(&ns.0), domain.clone(), base_table(&domain)).await.unwrap();
    let listed = routing.keeper.listings();
    routing.pass(Pass::Repair).await.unwrap();
    assert_eq!(routing.keeper.listings(), listed, "nothing was committed since the first apply");

    create_rule(&domain, "198.51.100.0/24".into()).await;
    routing.pass(Pass::Rules).await.unwrap();
    routing.pass(Pass::Repair).await.unwrap();
    assert_eq!(routing.keeper.listings(), listed, "the delta was the only commit");

    nft_in(&ns, &["add", "table", "inet", "elsewhere"]);
    routing.pass(Pass::Repair).await.unwrap();
    assert_eq!(routing.keeper.listings(), listed + 1, "another table's commit: listed, found as applied");
    routing.pass(Pass::Repair).await.unwrap();
    assert_eq!(routing.keeper.listings(), listed + 1, "known again");

    let applied = routing.status.borrow().last_apply;
    nft_in(&ns, &["flush", "set", "inet", "ferrozone", "ip_drop"]);
    routing.pass(Pass::Repair).await.unwrap();
    assert_ne!(routing.status.borrow().last_apply, applied, "the flushed set was applied again");
    let set = nft_in(&ns, &["list", "set", "inet", "ferrozone", "ip_drop"]);
    assert!(set.contains("192.0.2.0/24") && set.contains("198.51.100.0/24"), "{set}");
}
