//! `TestApp`: the application with a fresh database, and a small client for it, for the
//! HTTP tests of the faces (the `testing` feature; release builds leave it out). A test
//! crate names the routes it serves with [`Faces`] and calls its app
//! `type TestApp = testing::TestApp<TheirFaces>`.
//!
//! Every response goes through [`send`], which checks the invariants docs/api.md section 2
//! promises for *every* answer, so each test checks them too: an `x-request-id`, no 5xx,
//! JSON bodies with `Content-Type: application/json; charset=utf-8` (a device's
//! configuration, on success, and the web sign-in's HTML pages are the exceptions),
//! `WWW-Authenticate: Bearer` on JSON 401s and no body on 204.

#![allow(clippy::unwrap_used)]

pub mod flaky;

use std::marker::PhantomData;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::Router;
use ferrozone_domain::crypto::{generate_keypair, Cipher};
use ferrozone_domain::input::NewUser;
use ferrozone_domain::{Domain, Principal, Role, Settings, Store};
use ferrozone_store::testing::TestDb;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;
use zeroize::Zeroizing;

use crate::AppState;

/// The routes a [`TestApp`] serves: one face, or both as `serve` assembles them.
pub trait Faces {
    /// The faces' routes, with their fallback, as [`crate::app`] takes them.
    fn routes() -> Router<AppState>;
}

pub const JSON_UTF8: &str = "application/json; charset=utf-8";

/// The content type of every answer under `/scim/v2` (RFC 7644 section 3.1).
pub const SCIM_JSON: &str = "application/scim+json";

/// The content type of the web sign-in's pages, on any status.
pub const HTML_UTF8: &str = "text/html; charset=utf-8";

/// The only content types a response may have besides JSON, and only on success: those of
/// `GET /v0/devices/{id}/config`, and the assets of the web pages.
pub const NOT_JSON: &[&str] = &[
    "text/plain; charset=utf-8",
    "image/png",
    "image/svg+xml",
    "text/css; charset=utf-8",
    "text/javascript; charset=utf-8",
];

pub struct TestApp<F> {
    pub router: Router,
    pub domain: Arc<Domain>,
    /// The store the domain writes through (wrapped, for an app made by [`TestApp::build`]),
    /// for tests that look at or prepare what is stored.
    pub store: Arc<dyn Store>,
    /// Token of the first admin, `admin@localhost`.
    pub admin: String,
    pub admin_id: String,
    pub db: TestDb,
    /// The secret key (base64) the domain encrypts with.
    secret_key: String,
    faces: PhantomData<F>,
}

#[derive(Debug)]
pub struct TestResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub raw: Vec<u8>,
}

impl TestResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `body.data` (panics with the body when missing, to make failures readable).
    pub fn data(&self) -> &Value {
        self.body.get("data").unwrap_or_else(|| panic!("no data in {} {}", self.status, self.body))
    }

    /// `body.data.id`.
    pub fn id(&self) -> String {
        self.data()["id"].as_str().unwrap_or_else(|| panic!("no data.id in {}", self.body)).to_owned()
    }

    /// Asserts the status, with the body in the message.
    #[track_caller]
    pub fn expect_status(&self, status: StatusCode) -> &Self {
        assert_eq!(self.status, status, "body: {}", String::from_utf8_lossy(&self.raw));
        self
    }

    /// Asserts the status and the exact JSON body.
    #[track_caller]
    pub fn expect(&self, status: StatusCode, body: Value) -> &Self {
        self.expect_status(status);
        assert_eq!(self.body, body);
        self
    }

    /// Asserts a 422 with exactly these `errors`.
    #[track_caller]
    pub fn expect_errors(&self, errors: Value) -> &Self {
        self.expect(StatusCode::UNPROCESSABLE_ENTITY, json!({ "errors": errors }))
    }

    /// Asserts a 400 `{"error":"bad_request","message":"…"}` with a non-empty message.
    #[track_caller]
    pub fn expect_bad_request(&self) -> &Self {
        self.expect_status(StatusCode::BAD_REQUEST);
        let object = self.body.as_object().unwrap_or_else(|| panic!("not an object: {}", self.body));
        assert_eq!(object.len(), 2, "{}", self.body);
        assert_eq!(self.body["error"], "bad_request");
        assert!(self.body["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", self.body);
        self
    }

    #[track_caller]
    pub fn expect_not_found(&self) -> &Self {
        self.expect(StatusCode::NOT_FOUND, json!({"error": "not_found"}))
    }

    #[track_caller]
    pub fn expect_forbidden(&self) -> &Self {
        self.expect(StatusCode::FORBIDDEN, json!({"error": "forbidden"}))
    }

    /// Asserts a 401 with `{"errors":{"auth": reason}}`.
    #[track_caller]
    pub fn expect_auth_error(&self, reason: &str) -> &Self {
        self.expect(StatusCode::UNAUTHORIZED, json!({"errors": {"auth": reason}}))
    }
}

impl<F: Faces> TestApp<F> {
    pub async fn new() -> Self {
        Self::with_settings(|_| {}).await
    }

    pub async fn with_settings(edit: impl FnOnce(&mut Settings)) -> Self {
        Self::build(edit, |store| store).await
    }

    /// An app whose store is `wrap`ped (to inject failures, say).
    pub async fn build(edit: impl FnOnce(&mut Settings), wrap: impl FnOnce(Arc<dyn Store>) -> Arc<dyn Store>) -> Self {
        let db = ferrozone_store::testing::fresh().await.expect("a fresh test database");
        let mut settings = Settings::standard();
        edit(&mut settings);
        let secret_key = Cipher::generate_key();
        let store = wrap(db.store.clone());
        let domain = open_domain(store.clone(), settings, &secret_key).await;
        let admin = domain.bootstrap_admin("admin@localhost").await.expect("bootstrap").expect("a new admin");
        let admin_id = domain.find_user("admin@localhost").await.expect("admin exists").id.to_string();
        let router = crate::app(AppState::new(domain.clone(), false), F::routes());
        Self { router, domain, store, admin: admin.to_string(), admin_id, db, secret_key, faces: PhantomData }
    }

    /// The cipher the domain seals secrets with, for tests that store sealed values.
    pub fn cipher(&self) -> Cipher {
        Cipher::from_base64(&self.secret_key).expect("a generated key is valid")
    }

    /// Another instance on the same database, with a connection pool of its own, the same
    /// settings and the same secret key: what a second `serve` process would be.
    pub async fn second_instance(&self) -> (Router, Arc<Domain>) {
        let options = ferrozone_store::testing::test_options();
        let store = ferrozone_store::open(&self.db.url, &options).await.expect("the database opens again");
        let domain = open_domain(store.into_store(), self.domain.settings().clone(), &self.secret_key).await;
        (crate::app(AppState::new(domain.clone(), false), F::routes()), domain)
    }

    /// Sends a request; `body` is sent as JSON with `Content-Type: application/json`.
    pub async fn request(&self, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> TestResponse {
        self.send(json_request(method, path, token, body.as_ref())).await
    }

    pub async fn send(&self, req: Request<Body>) -> TestResponse {
        send(self.router.clone(), req).await
    }

    /// Sends `body` as is, with the given headers (for content types, raw bytes, auth schemes).
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Body>,
    ) -> TestResponse {
        let mut req = Request::builder().method(method).uri(path);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        self.send(req.body(body.into()).expect("a valid request")).await
    }

    pub async fn get(&self, path: &str, token: &str) -> TestResponse {
        self.request(Method::GET, path, Some(token), None).await
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> TestResponse {
        self.request(Method::POST, path, Some(token), Some(body)).await
    }

    pub async fn patch(&self, path: &str, token: &str, body: Value) -> TestResponse {
        self.request(Method::PATCH, path, Some(token), Some(body)).await
    }

    pub async fn put(&self, path: &str, token: &str, body: Value) -> TestResponse {
        self.request(Method::PUT, path, Some(token), Some(body)).await
    }

    pub async fn delete(&self, path: &str, token: &str) -> TestResponse {
        self.request(Method::DELETE, path, Some(token), None).await
    }

    /// Creates a user through the use case (not the API) and returns its id and a token.
    pub async fn user(&self, email: &str, role: &str) -> (String, String) {
        let role = Role::parse(role).expect("a role");
        let input = NewUser { email: Some(email.to_owned()), role: Some(role), ..NewUser::default() };
        let user = self.domain.create_user(&Principal::operator(), &input).await.expect("user created");
        (user.id.to_string(), self.token(email).await)
    }

    /// A new API token for the user with `email`.
    pub async fn token(&self, email: &str) -> String {
        let (_, token) = self.domain.create_token(email, None, None).await.expect("token created");
        token.to_string()
    }

    /// Creates a device for `user_id` through the API as admin; returns its JSON.
    pub async fn device(&self, user_id: &str) -> Value {
        self.device_with(user_id, json!({})).await
    }

    /// Like [`TestApp::device`], with more attributes (which win over the defaults).
    pub async fn device_with(&self, user_id: &str, attrs: Value) -> Value {
        let res = self.create_device(merge(json!({"user_id": user_id, "public_key": key()}), attrs)).await;
        res.expect_status(StatusCode::CREATED);
        res.data().clone()
    }

    /// `POST /v0/devices` as admin with `{"device": attrs}`.
    pub async fn create_device(&self, attrs: Value) -> TestResponse {
        self.post("/v0/devices", &self.admin, json!({ "device": attrs })).await
    }

    /// `GET /v0/devices/{id}` as admin; asserts 200 and returns `data`.
    pub async fn show_device(&self, id: &str) -> Value {
        let res = self.get(&format!("/v0/devices/{id}"), &self.admin).await;
        res.expect_status(StatusCode::OK);
        res.data().clone()
    }

    /// `GET /v0/users/{id}` as admin; asserts 200 and returns `data`.
    pub async fn show_user(&self, id: &str) -> Value {
        let res = self.get(&format!("/v0/users/{id}"), &self.admin).await;
        res.expect_status(StatusCode::OK);
        res.data().clone()
    }

    /// The `data` array of `GET path` as admin.
    pub async fn list(&self, path: &str) -> Vec<Value> {
        let res = self.get(path, &self.admin).await;
        res.expect_status(StatusCode::OK);
        res.data().as_array().unwrap_or_else(|| panic!("not a list: {}", res.body)).clone()
    }

    /// The ids of `GET path` as admin, in order.
    pub async fn list_ids(&self, path: &str) -> Vec<String> {
        self.list(path).await.iter().map(|item| item["id"].as_str().expect("an id").to_owned()).collect()
    }

    /// How many devices and users exist.
    pub async fn counts(&self) -> (usize, usize) {
        (self.list("/v0/devices").await.len(), self.list("/v0/users").await.len())
    }
}

async fn open_domain(store: Arc<dyn Store>, settings: Settings, secret_key: &str) -> Arc<Domain> {
    let cipher = Cipher::from_base64(secret_key).expect("a generated key is valid");
    Arc::new(Domain::open(store, Arc::new(settings), cipher).await.expect("domain"))
}

/// A JSON request; `body` is sent with `Content-Type: application/json`.
pub fn json_request(method: Method, path: &str, token: Option<&str>, body: Option<&Value>) -> Request<Body> {
    let mut req = Request::builder().method(method).uri(path);
    if let Some(token) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let body = match body {
        Some(v) => {
            req = req.header(header::CONTENT_TYPE, "application/json");
            Body::from(serde_json::to_vec(v).expect("serialisable"))
        }
        None => Body::empty(),
    };
    req.body(body).expect("a valid request")
}

/// Sends `req` through `router` (usable from spawned tasks) and checks the invariants
/// every response must satisfy, and that it is no 5xx.
pub async fn send(router: Router, req: Request<Body>) -> TestResponse {
    let what = format!("{} {}", req.method(), req.uri().path().chars().take(120).collect::<String>());
    let res = send_any(router, req).await;
    assert!(!res.status.is_server_error(), "{what}: a 5xx ({}): {}", res.status, String::from_utf8_lossy(&res.raw));
    res
}

/// Like [`send`], but a 5xx is allowed (for tests of failures).
pub async fn send_any(router: Router, req: Request<Body>) -> TestResponse {
    let what = format!("{} {}", req.method(), req.uri().path().chars().take(120).collect::<String>());
    let res = router.oneshot(req).await.expect("the router never fails");
    let status = res.status();
    let headers = res.headers().clone();
    let raw = res.into_body().collect().await.expect("a body").to_bytes().to_vec();
    let text = String::from_utf8_lossy(&raw);
    assert!(headers.contains_key("x-request-id"), "{what}: no x-request-id");
    if what.split(' ').nth(1).is_some_and(|path| path == "/v0" || path.starts_with("/v0/")) {
        assert_eq!(headers.get(header::CACHE_CONTROL).map(|v| v.as_bytes()), Some(&b"no-store"[..]), "{what}");
        assert_eq!(headers.get("x-content-type-options").map(|v| v.as_bytes()), Some(&b"nosniff"[..]), "{what}");
    }
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let html = content_type == Some(HTML_UTF8);
    let body = if raw.is_empty() || html {
        // Nothing, or a page of the web sign-in: the test reads `raw`.
        Value::Null
    } else if status.is_success() && content_type.is_some_and(|t| NOT_JSON.contains(&t)) {
        // A device configuration or its QR code: the test reads `raw`.
        Value::Null
    } else {
        let scim = what.split(' ').nth(1).is_some_and(|path| path.starts_with("/scim/"));
        let expected = if scim { SCIM_JSON } else { JSON_UTF8 };
        assert_eq!(content_type, Some(expected), "{what}: content type of {status} {text}");
        serde_json::from_slice(&raw).unwrap_or_else(|e| panic!("{what}: {status} body is not JSON ({e}): {text}"))
    };
    if status == StatusCode::UNAUTHORIZED && !html {
        let challenge = headers.get(header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok());
        assert_eq!(challenge, Some("Bearer"), "{what}: 401 without WWW-Authenticate: Bearer");
    }
    if status == StatusCode::NO_CONTENT {
        assert!(raw.is_empty(), "{what}: 204 with a body: {text}");
    }
    TestResponse { status, headers, body, raw }
}

/// Sends all `requests` at once through `app`, each from its own task; returns the
/// responses in order.
pub async fn concurrently<F>(app: &TestApp<F>, requests: Vec<Request<Body>>) -> Vec<TestResponse> {
    concurrently_via(requests.into_iter().map(|req| (app.router.clone(), req)).collect()).await
}

/// Sends each request through its router at once, each from its own task.
pub async fn concurrently_via(requests: Vec<(Router, Request<Body>)>) -> Vec<TestResponse> {
    let tasks: Vec<_> = requests.into_iter().map(|(router, req)| tokio::spawn(send(router, req))).collect();
    let mut responses = Vec::with_capacity(tasks.len());
    for task in tasks {
        responses.push(task.await.expect("the request task"));
    }
    responses
}

/// Asserts `after` is `before` with the fields of `changed` replaced, `inserted_at` kept,
/// and `updated_at` moved forward if `moved`, kept otherwise.
#[track_caller]
pub fn assert_changed(before: &Value, after: &Value, changed: &Value, moved: bool) {
    let mut expected = merge(before.clone(), changed.clone());
    expected["updated_at"] = after["updated_at"].clone();
    assert_eq!(after, &expected);
    if moved {
        assert!(after["updated_at"].as_str() > before["updated_at"].as_str(), "updated_at moved: {before} {after}");
    } else {
        assert_eq!(after["updated_at"], before["updated_at"], "nothing changed, updated_at kept");
    }
}

/// Asserts that GET, PATCH, PUT and DELETE on `path` are all 404 for the admin.
pub async fn expect_not_found_everywhere<F: Faces>(app: &TestApp<F>, path: &str, wrapper: &str) {
    app.get(path, &app.admin).await.expect_not_found();
    app.patch(path, &app.admin, json!({ wrapper: {} })).await.expect_not_found();
    app.put(path, &app.admin, json!({ wrapper: {"name": "x", "role": "admin"} })).await.expect_not_found();
    app.delete(path, &app.admin).await.expect_not_found();
}

/// The password of the users [`password_user`] makes.
pub const PASSWORD: &str = "correct horse battery staple";

/// A user with a password, through the use case.
pub async fn password_user<F: Faces>(app: &TestApp<F>, email: &str, role: &str) -> String {
    let password = Some(Zeroizing::new(PASSWORD.to_owned()));
    let input = NewUser {
        email: Some(email.to_owned()),
        role: Role::parse(role),
        password_confirmation: password.clone(),
        password,
        ..NewUser::default()
    };
    let user = app.domain.create_user(&Principal::operator(), &input).await.expect("user created");
    user.id.to_string()
}

/// The text of the one QR code in a PNG.
pub fn decode_qr(png_bytes: &[u8]) -> String {
    let mut reader = png::Decoder::new(std::io::Cursor::new(png_bytes)).read_info().expect("a PNG");
    let mut pixels = vec![0; reader.output_buffer_size().expect("a size")];
    let frame = reader.next_frame(&mut pixels).expect("a frame");
    assert_eq!((frame.color_type, frame.bit_depth), (png::ColorType::Grayscale, png::BitDepth::Eight));
    let (w, h) = (frame.width as usize, frame.height as usize);
    assert_eq!(w, h, "square");
    let mut image = rqrr::PreparedImage::prepare_from_greyscale(w, h, |x, y| pixels[y * frame.line_size + x]);
    let grids = image.detect_grids();
    assert_eq!(grids.len(), 1, "one QR code");
    grids[0].decode().expect("a readable QR code").1
}

/// A fresh, valid WireGuard public key.
pub fn key() -> String {
    generate_keypair().public_key
}

/// `base` with the keys of `extra` added or replaced (both must be objects).
pub fn merge(mut base: Value, extra: Value) -> Value {
    let target = base.as_object_mut().expect("base is an object");
    for (k, v) in extra.as_object().expect("extra is an object") {
        target.insert(k.clone(), v.clone());
    }
    base
}

/// `value` without the key `key` (an object).
pub fn without(mut value: Value, key: &str) -> Value {
    value.as_object_mut().expect("an object").remove(key);
    value
}

/// Whether `s` is `YYYY-MM-DDTHH:MM:SS.ffffffZ` (`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`).
pub fn is_api_timestamp(s: &str) -> bool {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd.ddddddZ";
    s.len() == SHAPE.len()
        && s.bytes().zip(SHAPE).all(|(c, &want)| if want == b'd' { c.is_ascii_digit() } else { c == want })
}

/// Asserts `value` is a timestamp in the API's format.
#[track_caller]
pub fn assert_timestamp(value: &Value) {
    let text = value.as_str().unwrap_or_else(|| panic!("not a string: {value}"));
    assert!(is_api_timestamp(text), "not an API timestamp: {text}");
}

/// The keys of a JSON object, sorted.
pub fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> =
        value.as_object().unwrap_or_else(|| panic!("not an object: {value}")).keys().cloned().collect();
    keys.sort();
    keys
}

/// Sorted copies of `names`, for comparing with [`keys`].
pub fn sorted(names: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
    names.sort();
    names
}

#[cfg(test)]
#[test]
fn timestamp_shape() {
    assert!(is_api_timestamp("2026-11-22T10:04:05.123456Z"));
    for bad in ["2026-11-22T10:04:05.12345Z", "2026-11-22T10:04:05.123456", "2026-11-22 10:04:05.123456Z", ""] {
        assert!(!is_api_timestamp(bad), "{bad}");
    }
}
