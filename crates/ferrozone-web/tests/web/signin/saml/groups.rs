//! Issue 37: groups from a SAML assertion's `groups` attribute, against the real IdP (samlp):
//! applied at every sign-in as the provider's memberships, filtered by the provider's
//! settings (docs/design/groups.md, "Groups from the identity providers").

use reqwest::StatusCode;
use serde_json::json;

use super::idp::{browser, serve, Idp};
use super::{post_answer, provider, sign_in_at_idp_with, PROVIDER};
use crate::helpers::TestApp;

/// Signs `email` in through the IdP, which asserts `groups` (names separated by commas;
/// blank: no groups attribute).
async fn sign_in_in_groups(base: &str, email: &str, groups: &str) {
    let browser = browser();
    let page = browser.get(format!("{base}/auth/saml/{PROVIDER}?return_to=/")).send().await.unwrap();
    let answer = sign_in_at_idp_with(&browser, base, page, email, &[("groups", groups)]).await;
    let (status, path, page) = post_answer(&browser, &answer).await;
    assert_eq!((status, path.as_str()), (StatusCode::OK, "/"), "{page}");
}

/// `name:source` of each group `email` is a member of, by name.
async fn memberships(app: &TestApp, email: &str) -> Vec<String> {
    let user = app.domain.find_user(email).await.unwrap();
    let mut out = Vec::new();
    for group in app.store.user_groups(user.id).await.unwrap() {
        let member = app.store.group_member(group.id, user.id).await.unwrap().unwrap();
        out.push(format!("{}:{}", group.name, member.source));
    }
    out
}

#[tokio::test]
async fn the_groups_attribute_is_applied_at_each_sign_in() {
    let app = TestApp::new().await;
    let Some(idp) = Idp::start(json!({})) else { return };
    let base = serve(&app, &idp, provider(true), false).await;
    sign_in_in_groups(&base, "kate@example.com", "eng,ops").await;
    let source = format!("idp:{PROVIDER}");
    assert_eq!(memberships(&app, "kate@example.com").await, [format!("eng:{source}"), format!("ops:{source}")]);
    sign_in_in_groups(&base, "kate@example.com", "ops").await;
    assert_eq!(memberships(&app, "kate@example.com").await, [format!("ops:{source}")], "eng ended");
    sign_in_in_groups(&base, "kate@example.com", "").await;
    assert!(memberships(&app, "kate@example.com").await.is_empty(), "no attribute: in none of the provider's groups");
}

#[tokio::test]
async fn the_providers_filter_and_attribute_name_apply() {
    let app = TestApp::new().await;
    let Some(idp) = Idp::start(json!({})) else { return };
    let mut filtered = provider(true);
    filtered["groups_allowed"] = json!(["Eng"]);
    let base = serve(&app, &idp, filtered, false).await;
    sign_in_in_groups(&base, "kate@example.com", "eng,ops").await;
    assert_eq!(memberships(&app, "kate@example.com").await, [format!("eng:idp:{PROVIDER}")], "only the listed one");

    let other = TestApp::new().await;
    let mut elsewhere = provider(true);
    elsewhere["groups_attribute"] = json!("memberOf");
    let base = serve(&other, &idp, elsewhere, false).await;
    sign_in_in_groups(&base, "kate@example.com", "eng").await;
    assert!(memberships(&other, "kate@example.com").await.is_empty(), "the assertion has no memberOf");
}
