//! The groups a provider says a user is in (docs/design/groups.md, "Groups from the identity
//! providers"): the configured claim of the verified ID token, else of the userinfo answer.
//! A claim is a list of names (Okta, Keycloak, Entra ID) or, from some providers, one name.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use openidconnect::core::CoreGenderClaim;
use openidconnect::{AccessToken, AdditionalClaims, UserInfoClaims};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::discovery::{describe_userinfo_error, ReadyClient};
use crate::{Oidc, Provider};

/// Every claim of a userinfo answer beyond the standard ones.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub(crate) struct Extra {
    #[serde(flatten)]
    claims: Map<String, Value>,
}

impl AdditionalClaims for Extra {}

/// The names claim `claim` holds; `None` when `claims` has no such claim. Entries that are
/// not strings are ignored.
pub(crate) fn names(claims: &Map<String, Value>, claim: &str) -> Option<Vec<String>> {
    match claims.get(claim)? {
        Value::Array(items) => Some(items.iter().filter_map(Value::as_str).map(str::to_owned).collect()),
        Value::String(one) => Some(vec![one.clone()]),
        Value::Null => Some(Vec::new()),
        _ => None,
    }
}

/// Whether `claims` say that `claim` is to be fetched elsewhere (OpenID Connect Core 5.6.2,
/// distributed claims: `_claim_names`), as Entra ID does for a user in too many groups.
pub(crate) fn elsewhere(claims: &Map<String, Value>, claim: &str) -> bool {
    claims.get("_claim_names").and_then(Value::as_object).is_some_and(|names| names.contains_key(claim))
}

/// The claims of a compact JWS whose signature was verified already.
pub(crate) fn payload(jwt: &str) -> Option<Map<String, Value>> {
    let body = jwt.split('.').nth(1)?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(body).ok()?).ok()
}

impl Oidc {
    /// The groups of the user for `provider`, filtered by its configuration, from the
    /// verified ID token `id_token` when it carries the claim, else from the userinfo
    /// endpoint: `None` when the provider's groups are not read, or the userinfo answer
    /// failed (memberships then stay as they are); an empty list when neither has the
    /// claim (the user is in none of the provider's groups).
    pub(crate) async fn groups(
        &self,
        provider: &Provider,
        client: &ReadyClient,
        id_token: Option<&str>,
        access_token: &AccessToken,
    ) -> Option<Vec<String>> {
        let claim = provider.groups.claim.as_deref()?;
        let id_claims = id_token.and_then(payload).unwrap_or_default();
        if elsewhere(&id_claims, claim) {
            // Entra ID's "overage": too many groups for a token, a link to Graph instead.
            tracing::warn!(provider = %provider.id, claim,
                "the ID token points elsewhere for the groups claim (too many groups); memberships are left as they are");
            return None;
        }
        if let Some(sent) = names(&id_claims, claim) {
            return Some(provider.groups.keep(sent.iter().map(String::as_str)));
        }
        let request = client.user_info(access_token.clone(), None).ok()?;
        let answer: Result<UserInfoClaims<Extra, CoreGenderClaim>, _> = request.request_async(self.http()).await;
        match answer {
            Ok(info) if elsewhere(&info.additional_claims().claims, claim) => None,
            Ok(info) => {
                let sent = names(&info.additional_claims().claims, claim).unwrap_or_default();
                Some(provider.groups.keep(sent.iter().map(String::as_str)))
            }
            Err(e) => {
                tracing::warn!(provider = %provider.id, error = %describe_userinfo_error(&e),
                    "reading the user's groups from the userinfo endpoint failed; memberships are left as they are");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_a_list_or_one_name_and_may_be_missing() {
        let claims: Map<String, Value> =
            serde_json::from_str(r#"{"groups":["eng",7,"ops"],"role":"admin","none":null,"n":3}"#).unwrap();
        assert_eq!(names(&claims, "groups"), Some(vec!["eng".to_owned(), "ops".to_owned()]));
        assert_eq!(names(&claims, "role"), Some(vec!["admin".to_owned()]));
        assert_eq!(names(&claims, "none"), Some(vec![]));
        assert_eq!(names(&claims, "missing"), None);
        assert_eq!(names(&claims, "n"), None, "not names");
        let overage: Map<String, Value> =
            serde_json::from_str(r#"{"_claim_names":{"groups":"src1"},"_claim_sources":{"src1":{}}}"#).unwrap();
        assert!(elsewhere(&overage, "groups") && !elsewhere(&claims, "groups"));
    }

    #[test]
    fn a_jws_payload_is_read() {
        let body = URL_SAFE_NO_PAD.encode(br#"{"sub":"x","groups":["eng"]}"#);
        let claims = payload(&format!("eyJhbGciOiJSUzI1NiJ9.{body}.c2ln")).unwrap();
        assert_eq!(names(&claims, "groups"), Some(vec!["eng".to_owned()]));
        assert_eq!(payload("not a jwt"), None);
    }
}
