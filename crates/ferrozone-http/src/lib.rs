//! The foundation of Ferrozone's HTTP service, under its two faces (the `/v0` API of
//! ferrozone-api and the pages of ferrozone-web): the application state, extractors,
//! session cookies and CSRF, the sign-in providers in effect, cursors, health types,
//! errors and replies, QR codes, telemetry and the transport. It knows no route and no
//! page; the binary gives [`app`] the faces' routes (docs/design/http-crates.md, "The
//! foundation and its two faces").

pub mod api_path;
pub mod cookies;
pub mod cursor;
pub mod disposition;
pub mod error;
pub mod extract;
pub mod health;
pub mod page;
pub mod qr;
pub mod reply;
pub mod report;
pub mod scrape;
pub mod server;
pub mod sign_in;
pub mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;
pub mod throttled;

use std::sync::Arc;

use axum::Router;
use ferrozone_domain::providers::Providers;
use ferrozone_domain::Domain;

pub use error::ApiError;
pub use ferrozone_saml::signin::{
    SamlLimits, SamlSp, DEFAULT_BODY_LIMIT as DEFAULT_SAML_CONSUMER_BODY_LIMIT,
    DEFAULT_ENTITY_ID as DEFAULT_SAML_ENTITY_ID,
};
pub use health::{DataPlaneHealth, DataPlaneProbe, NoDataPlane, RoutingHealth};
pub use report::{ReportedSetting, ServerReport, SettingSource};
pub use scrape::{metrics_app, MetricsExport, Render as RenderMetrics};

/// What every handler can reach, behind one `Arc`: the router clones the state of a
/// route for each request it serves, so a clone is one counter's increment, however
/// many parts the state has.
#[derive(Clone)]
pub struct AppState(Arc<AppParts>);

impl std::ops::Deref for AppState {
    type Target = AppParts;

    fn deref(&self) -> &AppParts {
        &self.0
    }
}

/// The parts of [`AppState`].
#[derive(Clone)]
pub struct AppParts {
    pub domain: Arc<Domain>,
    pub web: Arc<WebState>,
    /// What `/healthz` reports of the WireGuard data plane.
    pub data_plane: Arc<dyn DataPlaneProbe>,
    /// The version and start-up settings, for the settings page and `GET /v0/server`.
    pub report: Arc<ServerReport>,
    /// Start-up warnings an operator should act on, shown on `/healthz`.
    pub warnings: Arc<[String]>,
    /// How metrics are exported, when they are on: requests are then measured.
    pub metrics: Option<MetricsExport>,
}

impl AppState {
    /// `secure_cookies`: give cookies the `Secure` attribute (users reach Ferrozone over HTTPS).
    /// No identity providers; the external URL is the default one.
    pub fn new(domain: Arc<Domain>, secure_cookies: bool) -> Self {
        let external_url = if secure_cookies { "https://localhost:13000" } else { "http://localhost:13000" };
        Self::with_web(
            domain,
            WebSettings {
                external_url: external_url.to_owned(),
                secure_cookies,
                providers: Providers::default(),
                saml: Arc::default(),
            },
        )
    }

    pub fn with_web(domain: Arc<Domain>, settings: WebSettings) -> Self {
        let WebSettings { external_url, secure_cookies, providers, saml } = settings;
        let external_url = external_url.trim_end_matches('/').to_owned();
        let providers = sign_in::CurrentSignIn::new(&external_url, providers, saml);
        let web = WebState { external_url, secure_cookies, providers };
        let (data_plane, report) = (Arc::new(health::NoDataPlane), Arc::default());
        Self(Arc::new(AppParts {
            domain,
            web: Arc::new(web),
            data_plane,
            report,
            warnings: Arc::new([]),
            metrics: None,
        }))
    }

    /// Reports `probe`'s data plane on `/healthz`.
    #[must_use]
    pub fn with_data_plane(mut self, probe: Arc<dyn DataPlaneProbe>) -> Self {
        self.parts().data_plane = probe;
        self
    }

    /// Shows `report` on the settings page and `GET /v0/server`.
    #[must_use]
    pub fn with_report(mut self, report: ServerReport) -> Self {
        self.parts().report = Arc::new(report);
        self
    }

    /// Shows `warnings` on `/healthz` (and in `GET /v0/server`'s health).
    #[must_use]
    pub fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        self.parts().warnings = warnings.into();
        self
    }

    /// Measures requests, and serves `/metrics` on the API listener when `export` has a
    /// token (docs/design/metrics.md, "Metrics").
    #[must_use]
    pub fn with_metrics(mut self, export: MetricsExport) -> Self {
        self.parts().metrics = Some(export);
        self
    }

    /// The parts to set, copied first if a clone of this state shares them.
    fn parts(&mut self) -> &mut AppParts {
        Arc::make_mut(&mut self.0)
    }
}

/// What the web sign-in is configured with.
#[derive(Debug, Clone)]
pub struct WebSettings {
    /// The URL users reach Ferrozone at (`FERROZONE_EXTERNAL_URL`): providers send browsers back to it.
    pub external_url: String,
    /// Give cookies the `Secure` attribute.
    pub secure_cookies: bool,
    /// The start-up providers (the environment's): in effect while the configuration
    /// stores none.
    pub providers: Providers,
    /// The SAML service provider, checked against `providers.saml` ([`SamlSp::new`]); stored
    /// SAML IdPs get its entity id, key pair and limits.
    pub saml: Arc<SamlSp>,
}

/// The web sign-in's settings and the sign-in providers in effect.
#[derive(Debug)]
pub struct WebState {
    /// The external URL without a trailing `/`.
    pub external_url: String,
    pub secure_cookies: bool,
    providers: sign_in::CurrentSignIn,
}

impl WebState {
    /// The identity providers in effect now, with their clients.
    pub fn sign_in(&self, domain: &Domain) -> Arc<sign_in::SignIn> {
        self.providers.get(domain)
    }

    /// Checks new provider lists as start-up does beyond the parser (SAML metadata).
    pub fn check_providers(&self, providers: &Providers) -> Result<(), String> {
        self.providers.check(providers)
    }
}

/// The whole HTTP application around `faces`, the routes of the API and the pages (with
/// the fallback for unknown paths): the method-not-allowed fallback, request ids, tracing,
/// panic safety and, with metrics on, the request metrics and `/metrics`.
/// Serve it with [`server::serve`] (or `into_make_service_with_connect_info::<SocketAddr>()`):
/// sign-in throttling keys on the client's address.
pub fn app(state: AppState, faces: Router<AppState>) -> Router {
    let metrics = state.metrics.as_ref().map(scrape::api_route).unwrap_or_default();
    let metered = state.metrics.is_some();
    let router = faces.merge(metrics).method_not_allowed_fallback(error::method_not_allowed).with_state(state);
    telemetry::wrap(router, metered)
}
