//! OpenID Connect sign-in and the refresh job, against a real provider (oidc-provider, in
//! `tests/idp/oidc`) over HTTP: Ferrozone is served on a port of its own and a browser with
//! a cookie jar follows every redirect and fills in the provider's forms, as a person would.
//! Every test runs on the backend the environment selects (SQLite, or PostgreSQL).

mod attacks;
mod console;
mod discovery;
mod flows;
mod groups;
mod identities;
mod idp;
mod refresh;
mod signin;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ferrozone_domain::group_sync::GroupClaims;
use ferrozone_domain::providers::{OidcProviderConfig, Providers};
use ferrozone_domain::Timestamp;
use ferrozone_http::{AppState, WebSettings};
use ferrozone_oidc::job::Backoff;
use ferrozone_oidc::{Oidc, PassReport, RefreshJob};
use reqwest::cookie::Jar;
use reqwest::{StatusCode, Url};
use zeroize::Zeroizing;

use self::idp::{Idp, IdpClient};
use crate::helpers::TestApp;

/// Ferrozone's client at the provider; `other` is a second client of the same provider.
pub const CLIENT_ID: &str = "ferrozone";
pub const SECRET: &str = "a-long-client-secret-for-ferrozone-tests";

/// Ferrozone with two providers on one test IdP: `idp` (pre-provisioned users only) and
/// `auto` (`auto_create_users`), served on a free port.
pub struct Env {
    pub app: TestApp,
    pub base: String,
    pub idp: Idp,
    pub oidc: Arc<Oidc>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Env {
    /// `None` when the test provider cannot run here and the test is skipped (see [`Idp::start`]).
    pub async fn start() -> Option<Self> {
        Self::with(false).await
    }

    /// `email_in_id_token`: the provider puts the email in ID tokens (else only userinfo has it).
    pub async fn with(email_in_id_token: bool) -> Option<Self> {
        Self::custom(email_in_id_token, TestApp::new().await, |_| {}).await
    }

    /// Ferrozone `app` with both providers, each configured as `edit` says.
    pub async fn custom(email_in_id_token: bool, app: TestApp, edit: impl Fn(&mut OidcProviderConfig)) -> Option<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let callback = |id: &str| format!("{base}/auth/oidc/{id}/callback/");
        let clients = [
            IdpClient {
                client_id: CLIENT_ID.into(),
                client_secret: SECRET.into(),
                redirect_uris: vec![callback("idp"), callback("auto")],
            },
            IdpClient {
                client_id: "other".into(),
                client_secret: "another-long-client-secret-for-tests".into(),
                redirect_uris: vec!["http://127.0.0.1:9/elsewhere".into()],
            },
        ];
        let idp = Idp::start(&clients, email_in_id_token).await?;
        let provider = |id: &str, label: &str, auto_create_users: bool| {
            let mut config = OidcProviderConfig {
                id: id.into(),
                label: label.into(),
                client_id: CLIENT_ID.into(),
                client_secret: Zeroizing::new(SECRET.into()),
                discovery_document_uri: idp.discovery_uri(),
                scope: "openid email profile offline_access groups".into(),
                redirect_uri: None,
                auto_create_users,
                allow_admins: true,
                require_verified_email: false,
                consent_prompt: true,
                groups: GroupClaims::reading("groups"),
            };
            edit(&mut config);
            config
        };
        let providers = Providers {
            oidc: vec![provider("idp", "Test IdP", false), provider("auto", "Test IdP (open)", true)],
            saml: Vec::new(),
        };
        let web =
            WebSettings { external_url: base.clone(), secure_cookies: false, providers, saml: Default::default() };
        let state = AppState::with_web(app.domain.clone(), web);
        let oidc = state.web.sign_in(&app.domain).oidc.clone();
        let router = crate::helpers::app(state).into_make_service_with_connect_info::<SocketAddr>();
        let server = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Some(Self { app, base, idp, oidc, server })
    }

    pub fn browser(&self) -> Browser {
        Browser::new(&self.base)
    }

    /// The refresh job, with retries a test can wait for.
    pub fn job(&self) -> RefreshJob {
        let backoff = Backoff { attempts: 3, first_delay: Duration::from_millis(5) };
        RefreshJob::new(self.app.domain.clone(), self.oidc.clone(), backoff)
    }

    /// One pass over every connection, due or not.
    pub async fn pass(&self) -> PassReport {
        self.job().pass(Timestamp::now().plus_secs(3600)).await.unwrap()
    }

    /// Signs `email` in through `provider`; asserts it ends on Ferrozone's home page.
    pub async fn signed_in(&self, provider: &str, email: &str) -> Browser {
        let browser = self.browser();
        let page = browser.sign_in(provider, email, "/").await;
        assert_eq!((page.status, page.url.path()), (StatusCode::OK, "/"), "{}", page.body);
        assert!(page.body.to_lowercase().contains(&email.to_lowercase()), "{}", page.body);
        browser
    }
}

/// Where a browser ended.
#[derive(Debug)]
pub struct Page {
    pub url: Url,
    pub status: StatusCode,
    pub body: String,
}

/// A browser: one cookie jar, redirects followed, the provider's forms filled in.
pub struct Browser {
    pub client: reqwest::Client,
    pub base: String,
}

/// How a walk through redirects ended.
enum Walk {
    Done(Page),
    /// Stopped before following a redirect to Ferrozone's callback.
    Held(Url),
}

impl Browser {
    fn new(base: &str) -> Self {
        let client = reqwest::Client::builder()
            .cookie_provider(Arc::new(Jar::default()))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Self { client, base: base.to_owned() }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `GET url` (absolute, or a path on Ferrozone), following redirects.
    pub async fn get(&self, url: &str) -> Page {
        let url = if url.starts_with('/') { self.url(url) } else { url.to_owned() };
        match self.walk(self.client.get(url), "", false).await {
            Walk::Done(page) => page,
            Walk::Held(_) => unreachable!(),
        }
    }

    /// The whole sign-in: Ferrozone, the provider's login (as `email`) and consent, back.
    pub async fn sign_in(&self, provider: &str, email: &str, return_to: &str) -> Page {
        match self.walk(self.client.get(self.start_url(provider, return_to)), email, false).await {
            Walk::Done(page) => page,
            Walk::Held(_) => unreachable!(),
        }
    }

    /// The sign-in up to the provider's redirect back: the callback URL, not yet visited.
    pub async fn callback_url(&self, provider: &str, email: &str) -> Url {
        match self.walk(self.client.get(self.start_url(provider, "/")), email, true).await {
            Walk::Held(url) => url,
            Walk::Done(page) => panic!("the sign-in ended before the callback: {page:?}"),
        }
    }

    fn start_url(&self, provider: &str, return_to: &str) -> String {
        let query = form_urlencoded::Serializer::new(String::new()).append_pair("return_to", return_to).finish();
        self.url(&format!("/auth/oidc/{provider}?{query}"))
    }

    async fn walk(&self, mut request: reqwest::RequestBuilder, email: &str, hold: bool) -> Walk {
        for _ in 0..30 {
            let res = request.send().await.unwrap();
            let (url, status) = (res.url().clone(), res.status());
            if status.is_redirection() {
                let location = res.headers()["location"].to_str().unwrap();
                let next = url.join(location).unwrap();
                if hold && next.as_str().starts_with(&self.base) && next.path().contains("/callback") {
                    return Walk::Held(next);
                }
                request = self.client.get(next);
                continue;
            }
            let body = res.text().await.unwrap();
            if !url.as_str().starts_with(&self.base) && url.path().starts_with("/interaction/") && status.is_success() {
                let action = url.join(between(&body, "action=\"")).unwrap();
                request = match between(&body, "data-prompt=\"") {
                    "login" => self.client.post(action).form(&[("email", email)]),
                    _ => self.client.post(action).form(&[("confirm", "yes")]),
                };
                continue;
            }
            return Walk::Done(Page { url, status, body });
        }
        panic!("more than 30 redirects and forms");
    }

    /// The session's CSRF token, from the home page.
    pub async fn csrf_token(&self) -> String {
        let home = self.get("/").await;
        between(&home.body, "<meta name=\"csrf-token\" content=\"").to_owned()
    }
}

/// The text after `start` up to the next `"`.
fn between<'a>(text: &'a str, start: &str) -> &'a str {
    let from = text.find(start).unwrap_or_else(|| panic!("no {start} in {text}")) + start.len();
    let rest = &text[from..];
    &rest[..rest.find('"').unwrap()]
}
