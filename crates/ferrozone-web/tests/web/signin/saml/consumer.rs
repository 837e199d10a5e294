//! The assertion consumer's limits (issue 16, findings 1 and 2): a bounded body, a bounded
//! queue of verifications (503 with `Retry-After` beyond it, the flow kept), and attack
//! documents refused. The IdP here is only metadata (the test IdP's certificate); the
//! responses are the SAML crate's fixtures, which fail the request checks anyway.

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use ferrozone_domain::providers::Providers;
use ferrozone_http::{AppState, SamlLimits, SamlSp, WebSettings};
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::idp::{key_file, SP_ENTITY_ID};
use crate::helpers::TestApp;

mod attacks {
    include!("../../../../../ferrozone-saml/testdata/attacks.rs");
}

const RESPONSE: &str = include_str!("../../../../../ferrozone-saml/testdata/assertion-signed.xml");
const PROVIDER: &str = "limited";

fn metadata() -> String {
    let certificate: String = key_file("idp.crt").lines().filter(|l| !l.starts_with("-----")).collect();
    format!(
        r#"<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example/metadata">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data>
      <ds:X509Certificate>{certificate}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example/sso"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>"#
    )
}

/// Ferrozone on a real port with one SAML provider and `limits`: its base URL and its SP.
async fn serve(app: &TestApp, limits: SamlLimits) -> (String, Arc<SamlSp>) {
    let provider = json!({
        "id": PROVIDER, "label": "Limited", "metadata": metadata(), "sign_requests": false,
        "signed_assertion_in_resp": true, "signed_envelopes_in_resp": false, "auto_create_users": true,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let providers = Providers::parse(None, "O", Some(&Value::Array(vec![provider]).to_string()), "S").unwrap();
    let saml = Arc::new(SamlSp::new(SP_ENTITY_ID, None, &providers.saml).unwrap().with_limits(limits));
    let web = WebSettings { external_url: base.clone(), secure_cookies: false, providers, saml: Arc::clone(&saml) };
    let router = crate::helpers::app(AppState::with_web(app.domain.clone(), web));
    let service = router.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await });
    (base, saml)
}

/// Starts a sign-in: the RelayState the IdP would post back.
async fn relay_state(base: &str) -> String {
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let res = client.get(format!("{base}/auth/saml/{PROVIDER}")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let location = reqwest::Url::parse(res.headers()["location"].to_str().unwrap()).unwrap();
    location.query_pairs().find(|(k, _)| k == "RelayState").unwrap().1.into_owned()
}

/// Posts `xml` as the IdP's answer to the flow `relay_state`: status, `Retry-After`, page.
async fn post(base: &str, relay_state: &str, xml: &str) -> (StatusCode, Option<String>, String) {
    let encoded = base64::engine::general_purpose::STANDARD.encode(xml);
    let form = [("SAMLResponse", encoded.as_str()), ("RelayState", relay_state)];
    let res = reqwest::Client::new().post(format!("{base}/auth/saml/sp/consume/{PROVIDER}")).form(&form).send();
    let res = res.await.unwrap();
    let retry = res.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    assert!(res.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    (res.status(), retry, res.text().await.unwrap())
}

fn limits(concurrency: usize, body_limit: usize) -> SamlLimits {
    SamlLimits { concurrency, body_limit }
}

#[tokio::test]
async fn a_body_over_the_consumer_limit_is_refused_with_413() {
    let app = TestApp::new().await;
    let (base, _) = serve(&app, limits(2, 64 * 1024)).await;
    let state = relay_state(&base).await;
    // 60 KB of XML is 80 KB as base64: over this consumer's 64 KiB, under the API's 1 MiB.
    let padded = RESPONSE.replacen("</samlp:Response>", &format!("<!--{}--></samlp:Response>", "x".repeat(60_000)), 1);
    let (status, _, page) = post(&base, &state, &padded).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{page}");
    assert!(page.contains("larger than this server accepts"), "{page}");
    // The default (256 KiB) refuses the 24,000-attribute document before reading it all.
    let (base, _) = serve(&app, SamlLimits::default()).await;
    let state = relay_state(&base).await;
    let (status, _, _) = post(&base, &state, &attacks::attribute_bomb(RESPONSE, 24_000)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn a_full_verification_queue_answers_503_and_keeps_the_flow() {
    let app = TestApp::new().await;
    let (base, saml) = serve(&app, limits(1, 256 * 1024)).await;
    let state = relay_state(&base).await;
    // One verification running and one waiting fill a queue of concurrency 1.
    let held = [saml.hold_verification_place().unwrap(), saml.hold_verification_place().unwrap()];
    assert!(saml.hold_verification_place().is_none());
    let (status, retry, page) = post(&base, &state, RESPONSE).await;
    assert_eq!((status, retry.as_deref()), (StatusCode::SERVICE_UNAVAILABLE, Some("2")), "{page}");
    assert!(page.contains("Please try again"), "{page}");
    drop(held);
    // The flow was not taken: the same answer is verified now (and refused: it answers
    // another request), not turned away as an unknown flow.
    let (status, _, page) = post(&base, &state, RESPONSE).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
    assert!(page.contains("could not be verified"), "{page}");
}

#[tokio::test]
async fn attack_documents_are_refused() {
    let app = TestApp::new().await;
    let (base, _) = serve(&app, SamlLimits::default()).await;
    let bombs = [
        attacks::namespace_bomb(RESPONSE, 1_000, 3_000, 8_000),
        attacks::attribute_bomb(RESPONSE, 15_000),
        attacks::declaration_bomb(RESPONSE, 8_000),
        attacks::hidden_attribute_bomb(RESPONSE, 15_000),
    ];
    for bomb in bombs {
        let state = relay_state(&base).await;
        let (status, _, page) = post(&base, &state, &bomb).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
        assert!(page.contains("could not be verified"), "{page}");
    }
}
