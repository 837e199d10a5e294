//! The refresh job against the provider: rotation, a revoked grant (the user disabled and
//! its peers gone), the switch that keeps users enabled, outages, and two processes.

use std::time::Duration;

use ferrozone_domain::Timestamp;
use ferrozone_oidc::PassReport;
use serde_json::json;

use super::Env;
use crate::admin_users::{admin_browser, page};

/// The public keys of the peers the data plane should carry.
async fn peer_keys(env: &Env) -> Vec<String> {
    env.app.domain.active_peers().await.unwrap().into_iter().map(|p| p.public_key).collect()
}

#[tokio::test]
async fn a_refresh_stores_the_rotated_token_which_then_works() {
    let Some(env) = Env::start().await else { return };
    env.signed_in("auto", "alice@example.com").await;
    let token = |env: &Env| {
        let domain = env.app.domain.clone();
        async move {
            let connections = domain.oidc_connections().await.unwrap();
            domain.reveal_refresh_token(&connections[0]).unwrap().to_string()
        }
    };
    let first = token(&env).await;
    assert_eq!(env.pass().await, PassReport { refreshed: 1, ..PassReport::default() });
    let second = token(&env).await;
    assert_ne!(first, second, "the provider rotates refresh tokens");
    // The provider revokes a grant whose used refresh token comes again, so this pass
    // working shows the rotated token was stored and used.
    assert_eq!(env.pass().await, PassReport { refreshed: 1, ..PassReport::default() });
    assert!(env.app.domain.find_user("alice@example.com").await.unwrap().disabled_at.is_none());
}

#[tokio::test]
async fn a_revoked_grant_disables_the_user_and_its_peers_leave() {
    let Some(env) = Env::start().await else { return };
    let (alice_id, alice_token) = env.app.user("alice@example.com", "unprivileged").await;
    let device = env.app.device(&alice_id).await;
    let key = device["public_key"].as_str().unwrap().to_owned();
    env.signed_in("idp", "alice@example.com").await;
    env.signed_in("auto", "bob@example.com").await;
    assert!(peer_keys(&env).await.contains(&key));

    let changes = env.app.domain.peer_changes();
    let _ = tokio::time::timeout(Duration::from_millis(10), changes.notified()).await;
    env.idp.revoke("alice@example.com").await;
    let report = env.pass().await;
    assert_eq!(report, PassReport { refreshed: 1, refused: 1, disabled: 1, ..PassReport::default() });
    tokio::time::timeout(Duration::from_secs(1), changes.notified()).await.expect("the data plane is woken");

    let alice = env.app.domain.find_user("alice@example.com").await.unwrap();
    assert!(alice.disabled_at.is_some());
    let shown = env.app.show_user(&alice_id).await;
    assert_eq!((&shown["disabled_by"], &shown["disabled_by_provider"]), (&json!("identity_provider"), &json!("idp")));
    let (mut admin, _, _) = admin_browser(&env.app).await;
    let user_page = page(&admin.get(&format!("/admin/users/{alice_id}")).await);
    assert!(user_page.contains("Disabled by the identity provider (idp)"), "{user_page}");
    assert!(user_page.contains("The provider refused to renew the user's sign-in"), "{user_page}");
    let list = page(&admin.get("/admin/users").await);
    let row = list.split(">alice@example.com</a>").nth(1).unwrap().split("</tr>").next().unwrap();
    assert!(row.contains("Disabled by the identity provider (idp)"), "{row}");
    assert!(!peer_keys(&env).await.contains(&key), "alice's device left the interface");
    env.app.get("/v0/devices", &alice_token).await.expect_auth_error("user_disabled");
    let left = env.app.domain.oidc_connections().await.unwrap();
    assert_eq!(left.len(), 1, "only bob's connection is left");
    assert!(env.app.domain.find_user("bob@example.com").await.unwrap().disabled_at.is_none());

    // Enabled again by the operator, alice stays enabled: her dead connection is gone.
    env.app
        .domain
        .set_user_disabled(&ferrozone_domain::Principal::operator(), "alice@example.com", false)
        .await
        .unwrap();
    assert_eq!(env.pass().await, PassReport { refreshed: 1, ..PassReport::default() });
    let alice = env.app.domain.find_user("alice@example.com").await.unwrap();
    assert_eq!((alice.disabled_at, alice.disabled_by), (None, None));
    assert!(peer_keys(&env).await.contains(&key));
}

#[tokio::test]
async fn with_disabling_switched_off_a_refusal_only_drops_the_connection() {
    let Some(env) = Env::start().await else { return };
    env.signed_in("auto", "alice@example.com").await;
    env.idp.revoke("alice@example.com").await;
    // Switched off at run time, through the API, with the job's process already running.
    let off = serde_json::json!({"configuration": {"disable_vpn_on_oidc_error": false}});
    env.app.patch("/v0/configuration", &env.app.admin, off).await.expect_status(axum::http::StatusCode::OK);
    let report = env.job().pass(Timestamp::now().plus_secs(3600)).await.unwrap();
    assert_eq!(report, PassReport { refused: 1, ..PassReport::default() });
    assert!(env.app.domain.find_user("alice@example.com").await.unwrap().disabled_at.is_none());
    assert!(env.app.domain.oidc_connections().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_provider_outage_disables_nobody() {
    let Some(mut env) = Env::start().await else { return };
    env.signed_in("auto", "alice@example.com").await;
    env.signed_in("auto", "bob@example.com").await;

    // 503s: retried, then the provider's other connections wait for the next pass.
    env.idp.outage(true).await;
    let report = env.pass().await;
    assert_eq!((report.failed, report.skipped, report.refused), (1, 1, 0), "{report:?}");
    // Unreachable: connections refused.
    env.idp.stop().await;
    let report = env.pass().await;
    assert_eq!((report.failed, report.skipped, report.refused), (1, 1, 0), "{report:?}");

    for email in ["alice@example.com", "bob@example.com"] {
        assert!(env.app.domain.find_user(email).await.unwrap().disabled_at.is_none(), "{email}");
    }
    assert_eq!(env.app.domain.oidc_connections().await.unwrap().len(), 2, "connections are kept");
}

#[tokio::test]
async fn two_processes_refresh_a_connection_once() {
    let Some(env) = Env::start().await else { return };
    env.signed_in("auto", "alice@example.com").await;
    let (_, second) = env.app.second_instance().await;
    let backoff = ferrozone_oidc::job::Backoff { attempts: 1, first_delay: Duration::from_millis(1) };
    let other = ferrozone_oidc::RefreshJob::new(second, env.oidc.clone(), backoff);
    // As in `RefreshJob::run`, connections are due when refreshed before the pass began.
    let due = Timestamp::now();
    let mine = env.job();
    let (a, b) = tokio::join!(mine.pass(due), other.pass(due));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!((a.refreshed + b.refreshed, a.skipped + b.skipped), (1, 1), "{a:?} {b:?}");
    assert_eq!(a.refused + b.refused + a.failed + b.failed, 0);
    // Not due again for either process until the interval has passed.
    let report = env.job().pass(due).await.unwrap();
    assert_eq!(report, PassReport { skipped: 1, ..PassReport::default() });
}

#[tokio::test]
async fn a_refusal_of_a_token_that_a_sign_in_replaced_meanwhile_disables_nobody() {
    let Some(env) = Env::start().await else { return };
    env.signed_in("auto", "alice@example.com").await;
    let domain = &env.app.domain;
    let stale = domain.oidc_connections().await.unwrap().remove(0);
    let claimed = domain.claim_oidc_connection(&stale).await.unwrap().expect("claimed");
    // While the job works on the old token, alice signs in again: a new grant, a new token.
    env.signed_in("auto", "alice@example.com").await;
    assert!(!domain.oidc_refresh_refused(&claimed, true).await.unwrap());
    assert!(domain.find_user("alice@example.com").await.unwrap().disabled_at.is_none());
    assert_eq!(env.pass().await, PassReport { refreshed: 1, ..PassReport::default() }, "the new token is kept");
}

#[tokio::test]
async fn errors_about_the_client_or_the_provider_disable_nobody() {
    let Some(env) = Env::start().await else { return };
    env.signed_in("auto", "alice@example.com").await;
    env.signed_in("auto", "bob@example.com").await;
    let errors = [
        ("unauthorized_client", 400),
        ("invalid_client", 401),
        ("unsupported_grant_type", 400),
        ("temporarily_unavailable", 503),
        ("server_error", 500),
    ];
    for (code, status) in errors {
        env.idp.token_error(Some((code, status))).await;
        let report = env.pass().await;
        assert_eq!((report.failed, report.skipped, report.refused), (1, 1, 0), "{code}: {report:?}");
    }
    for email in ["alice@example.com", "bob@example.com"] {
        assert!(env.app.domain.find_user(email).await.unwrap().disabled_at.is_none(), "{email}");
    }
    assert_eq!(env.app.domain.oidc_connections().await.unwrap().len(), 2);

    // An explicit invalid_grant, by contrast, is definitive.
    env.idp.token_error(Some(("invalid_grant", 400))).await;
    let report = env.pass().await;
    assert_eq!((report.refused, report.disabled), (2, 2), "{report:?}");
}
