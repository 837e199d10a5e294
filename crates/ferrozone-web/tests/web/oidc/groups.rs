//! Issue 37: groups from the OpenID Connect provider, against the real provider (oidc-provider):
//! the `groups` claim read from userinfo and from the ID token, applied at every sign-in and
//! every refresh of the grant, marked as the provider's and not editable by hand, filtered
//! by prefix; a group's rule following the membership (docs/design/groups.md).

use std::time::Duration;

use axum::http::StatusCode;
use ferrozone_domain::group::Group;
use serde_json::json;

use super::Env;
use crate::helpers::TestApp;

/// `(name, source)` of every group, by name.
async fn groups(app: &TestApp) -> Vec<(String, String)> {
    let list = app.domain.list_groups(&ferrozone_domain::Principal::operator()).await.unwrap();
    list.into_iter().map(|g: Group| (g.name, g.source)).collect()
}

/// The names of the groups `email` is a member of, with each membership's source.
async fn memberships(app: &TestApp, email: &str) -> Vec<(String, String)> {
    let user = app.domain.find_user(email).await.unwrap();
    let operator = ferrozone_domain::Principal::operator();
    let mut out = Vec::new();
    for group in app.domain.user_groups(&operator, user.id).await.unwrap() {
        let member = app.store.group_member(group.id, user.id).await.unwrap().unwrap();
        out.push((group.name, member.source));
    }
    out
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

async fn sign_in_with_groups(email_in_id_token: bool) {
    let Some(env) = Env::with(email_in_id_token).await else { return };
    let app = &env.app;
    let ops = app.post("/v0/groups", &app.admin, json!({"group": {"name": "Ops"}})).await;
    let ops = ops.expect_status(StatusCode::CREATED).id();
    env.idp.set_groups("alice@example.com", &["eng", "ops", " eng "]).await;
    env.signed_in("auto", "alice@example.com").await;
    assert_eq!(groups(app).await, pairs(&[("eng", "idp:auto"), ("Ops", "manual")]), "eng made, Ops found by name");
    assert_eq!(memberships(app, "alice@example.com").await, pairs(&[("eng", "idp:auto"), ("Ops", "idp:auto")]));

    // Kept by the provider: not removed by hand.
    let alice = app.domain.find_user("alice@example.com").await.unwrap().id;
    let res = app.delete(&format!("/v0/groups/{ops}/members/{alice}"), &app.admin).await;
    res.expect_errors(json!({"user_id": ["is kept by idp:auto and ends there"]}));

    env.idp.set_groups("alice@example.com", &["eng"]).await;
    env.signed_in("auto", "alice@example.com").await;
    assert_eq!(memberships(app, "alice@example.com").await, pairs(&[("eng", "idp:auto")]), "ops ended at sign-in");
    let query = ferrozone_domain::audit::AuditQuery {
        after_seq: Some(0),
        action: Some("group.member_removed".into()),
        limit: 10,
        ..Default::default()
    };
    let removed = app.store.audit_records(&query).await.unwrap();
    assert_eq!(removed.len(), 1);
    assert!(format!("{:?}", removed[0].changes).contains("idp:auto"), "the event names the provider: {removed:?}");
}

#[tokio::test]
async fn the_groups_claim_from_userinfo_is_applied_at_each_sign_in() {
    sign_in_with_groups(false).await;
}

#[tokio::test]
async fn the_groups_claim_from_the_id_token_is_applied_at_each_sign_in() {
    sign_in_with_groups(true).await;
}

#[tokio::test]
async fn a_refresh_applies_the_groups_and_a_groups_rule_follows_within_a_second() {
    let Some(env) = Env::start().await else { return };
    let app = &env.app;
    let (alice, _) = app.user("alice@example.com", "unprivileged").await;
    app.device(&alice).await;
    env.idp.set_groups("alice@example.com", &["eng"]).await;
    env.signed_in("idp", "alice@example.com").await;
    let eng = app.domain.list_groups(&ferrozone_domain::Principal::operator()).await.unwrap()[0].id;
    let rule = json!({"rule": {"destination": "10.0.0.0/8", "action": "drop", "group_id": eng}});
    app.post("/v0/rules", &app.admin, rule).await.expect_status(StatusCode::CREATED);
    assert_eq!(app.domain.egress_policy().await.unwrap().memberships.len(), 1);

    let changes = app.domain.rule_changes();
    let _ = tokio::time::timeout(Duration::from_millis(10), changes.notified()).await;
    env.idp.set_groups("alice@example.com", &[]).await;
    assert_eq!(env.pass().await.refreshed, 1);
    tokio::time::timeout(Duration::from_secs(1), changes.notified()).await.expect("the data plane is woken");
    assert!(memberships(app, "alice@example.com").await.is_empty(), "left eng at the refresh");
    let policy = app.domain.egress_policy().await.unwrap();
    assert!(policy.memberships.is_empty() && policy.sources.is_empty(), "the rule no longer decides her traffic");
}

#[tokio::test]
async fn a_prefix_keeps_only_the_groups_it_names_and_false_reads_none() {
    let edit = |config: &mut ferrozone_domain::providers::OidcProviderConfig| {
        if config.id == "auto" {
            config.groups.prefix = Some("vpn-".into());
        } else {
            config.groups.claim = None;
        }
    };
    let Some(env) = Env::custom(false, TestApp::new().await, edit).await else { return };
    env.idp.set_groups("alice@example.com", &["vpn-eng", "payroll", "VPN-ops"]).await;
    env.signed_in("auto", "alice@example.com").await;
    assert_eq!(groups(&env.app).await, pairs(&[("vpn-eng", "idp:auto")]));
    env.app.user("bob@example.com", "unprivileged").await;
    env.idp.set_groups("bob@example.com", &["vpn-eng"]).await;
    env.signed_in("idp", "bob@example.com").await;
    assert!(memberships(&env.app, "bob@example.com").await.is_empty(), "a provider that reads no groups");
}
