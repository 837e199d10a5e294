//! The command-line forms scripts depend on.

use std::process::Stdio;

use crate::harness::{command, Api, Server};

fn run(dir: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = command(dir, &[]).args(args).stdin(Stdio::null()).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn first_start_prints_a_working_admin_token_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let token = server.printed_token().expect("a one-time token on the first start");
    let api = Api::new(&server.base, &token);
    let (status, body) = api.get("/v0/users").await;
    assert_eq!(status, 200);
    assert_eq!(body["data"][0]["email"], "admin@localhost");
    assert_eq!(body["data"][0]["role"], "admin");
    drop(server);
    let again = Server::start(dir.path(), &[]).await;
    assert_eq!(again.printed_token(), None, "the token is shown only once");
    assert_eq!(Api::new(&again.base, &token).get("/v0/users").await.0, 200, "the token survives a restart");
}

#[tokio::test]
async fn a_start_that_cannot_listen_creates_no_admin_and_the_next_start_prints_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = taken.local_addr().unwrap().to_string();
    let out = command(dir.path(), &[("FERROZONE_LISTEN", &listen)]).arg("serve").stdin(Stdio::null()).output().unwrap();
    assert!(!out.status.success(), "serve must fail on a port in use");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!stdout.contains("fz_"), "no token may be shown by a failed start: {stdout}");
    assert!(stderr.contains(&listen), "the error names the address: {stderr}");
    drop(taken);
    let server = Server::start(dir.path(), &[]).await;
    let token = server.printed_token().expect("the first start that serves shows the token");
    assert_eq!(Api::new(&server.base, &token).get("/v0/users").await.0, 200);
}

#[tokio::test]
async fn a_configuration_key_given_by_a_flag_cannot_be_patched() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("FERROZONE_DEFAULT_CLIENT_MTU", "1300")];
    let server = Server::start_with_flags(dir.path(), &env, &["--default-client-mtu", "1400"]).await;
    let api = Api::new(&server.base, &server.printed_token().unwrap());
    let body = serde_json::json!({"configuration": {"default_client_mtu": 1420, "default_client_dns": ["9.9.9.9"]}});
    let (status, body) = api.call(reqwest::Method::PATCH, "/v0/configuration", Some(body)).await.unwrap();
    assert_eq!(status, 422);
    let message = "cannot be changed; it is overridden by the --default-client-mtu command-line flag";
    assert_eq!(body, serde_json::json!({"errors": {"default_client_mtu": [message]}}));
    let (_, shown) = api.get("/v0/configuration").await;
    assert_eq!(shown["data"]["default_client_mtu"], 1400, "the flag's value");
    assert_eq!(shown["data"]["default_client_dns"], serde_json::json!(["1.1.1.1", "1.0.0.1"]), "nothing stored");
}

#[tokio::test]
async fn user_and_token_commands() {
    let dir = tempfile::tempdir().unwrap();
    assert!(run(dir.path(), &["migrate"]).0);
    let (ok, id, err) = run(dir.path(), &["user", "create", "--email", "ops@example.com", "--role", "admin"]);
    assert!(ok, "{err}");
    let (ok, token, _) =
        run(dir.path(), &["token", "create", "--email", "ops@example.com", "--name", "ci", "--days", "2"]);
    assert!(ok);
    let token = token.trim();
    assert!(token.starts_with("fz_") && !token.contains(char::is_whitespace), "token alone on stdout: {token:?}");
    let (_, list, _) = run(dir.path(), &["token", "list", "--email", "ops@example.com"]);
    assert_eq!(list.lines().count(), 1);
    assert!(list.contains("\tci\t") && !list.contains(token), "lists tokens, never secrets: {list}");
    let (_, users, _) = run(dir.path(), &["user", "list"]);
    assert!(users.contains(id.trim()) && users.contains("ops@example.com\tadmin"));
    let (ok, _, err) = run(dir.path(), &["user", "sign-out", "--email", "OPS@example.com"]);
    assert!(ok && err.contains("ended 0 session(s) of ops@example.com"), "{err}");
    let (ok, _, err) = run(dir.path(), &["user", "sign-out", "--email", "ghost@example.com"]);
    assert!(!ok && err.contains("no user with email"), "{err}");

    let server = Server::start(dir.path(), &[]).await;
    assert_eq!(server.printed_token(), None, "an admin exists already");
    let api = Api::new(&server.base, token);
    assert_eq!(api.get("/v0/users/ops@example.com").await.0, 200);
    let token_id = list.split('\t').next().unwrap();
    assert!(run(dir.path(), &["token", "revoke", token_id]).0);
    let (status, body) = api.get("/v0/users").await;
    assert_eq!((status, body["errors"]["auth"].as_str()), (401, Some("invalid_token")), "revocation is immediate");
}

#[tokio::test]
async fn a_disabled_users_token_is_refused_until_it_is_enabled() {
    let dir = tempfile::tempdir().unwrap();
    assert!(run(dir.path(), &["migrate"]).0);
    assert!(run(dir.path(), &["user", "create", "--email", "off@example.com"]).0);
    let (_, token, _) = run(dir.path(), &["token", "create", "--email", "off@example.com"]);
    let server = Server::start(dir.path(), &[]).await;
    let api = Api::new(&server.base, token.trim());
    assert_eq!(api.get("/v0/devices").await.0, 200);
    let listed = |column: &str| {
        let (_, users, _) = run(dir.path(), &["user", "list"]);
        let line = users.lines().find(|l| l.contains("off@example.com")).unwrap().to_owned();
        line.split('\t').find_map(|field| field.strip_prefix(column)).unwrap().to_owned()
    };
    let disabled_at = || listed("disabled:");

    let (ok, _, err) = run(dir.path(), &["user", "disable", "--email", "OFF@example.com"]);
    assert!(ok && err.contains("disabled off@example.com"), "{err}");
    let (status, body) = api.get("/v0/devices").await;
    assert_eq!((status, body["errors"]["auth"].as_str()), (401, Some("user_disabled")), "refused at once");
    let since = disabled_at();
    assert_ne!(since, "-");
    assert_eq!(listed("by:"), "cli", "the command line is named as who disabled the user");
    let (ok, _, err) = run(dir.path(), &["user", "disable", "--email", "off@example.com"]);
    assert!(ok && err.contains("already disabled") && err.contains(", by cli)"), "{err}");
    assert_eq!(disabled_at(), since, "the first timestamp is kept");

    let (ok, _, err) = run(dir.path(), &["user", "enable", "--email", "off@example.com"]);
    assert!(ok && err.contains("enabled off@example.com"), "{err}");
    assert_eq!(api.get("/v0/devices").await.0, 200, "the same token works again");
    assert_eq!((disabled_at(), listed("by:")), ("-".to_owned(), "-".to_owned()));
    let (ok, _, err) = run(dir.path(), &["user", "enable", "--email", "off@example.com"]);
    assert!(ok && err.contains("is not disabled"), "{err}");

    for command in ["disable", "enable"] {
        let (ok, _, err) = run(dir.path(), &["user", command, "--email", "ghost@example.com"]);
        assert!(!ok && err.contains("no user with email \"ghost@example.com\""), "{err}");
    }
}

#[tokio::test]
async fn invalid_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, err) = run(dir.path(), &["user", "create", "--email", "nope"]);
    assert!(!ok && err.contains("is invalid email address"), "{err}");
    let (ok, _, err) = run(dir.path(), &["token", "create", "--email", "ghost@example.com"]);
    assert!(!ok && err.contains("no user with email \"ghost@example.com\""), "{err}");
    let out = command(dir.path(), &[("FERROZONE_WIREGUARD_IPV4_NETWORK", "10.0.0.0/99")])
        .args(["user", "list"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("FERROZONE_WIREGUARD_IPV4_NETWORK"), "{err}");
}

#[tokio::test]
async fn password_from_stdin_and_openapi() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut child = command(dir.path(), &[])
        .args(["user", "create", "--email", "pw@example.com", "--password-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"a long enough password\n").unwrap();
    assert!(child.wait_with_output().unwrap().status.success());
    let (ok, doc, _) = run(dir.path(), &["openapi"]);
    assert!(ok);
    let doc: serde_json::Value = serde_json::from_str(&doc).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    assert!(doc["paths"]["/v0/devices/{id}"]["patch"].is_object());
}

/// The OpenAPI document is committed as docs/openapi.json so that every change to the API's
/// shape shows up in review. `UPDATE_SNAPSHOTS=1 cargo test` rewrites it deliberately.
#[test]
fn openapi_document_matches_the_committed_one() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, doc, err) = run(dir.path(), &["openapi"]);
    assert!(ok, "{err}");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &doc).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == doc,
        "the OpenAPI document changed; review it and run `UPDATE_SNAPSHOTS=1 cargo test -p ferrozone --test process` to accept"
    );
}

#[tokio::test]
async fn a_bad_provider_stops_serve_naming_the_provider_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let missing =
        r#"[{"id":"corp","client_id":"c","client_secret":"s","discovery_document_uri":"https://idp.example/x"}]"#;
    for (name, expected) in [
        (
            "FERROZONE_OPENID_CONNECT_PROVIDERS",
            "FERROZONE_OPENID_CONNECT_PROVIDERS: provider `corp`: `auto_create_users`",
        ),
        ("OPENID_CONNECT_PROVIDERS", "FERROZONE_OPENID_CONNECT_PROVIDERS: provider `corp`: `auto_create_users`"),
    ] {
        let out = command(dir.path(), &[(name, missing)]).arg("serve").stdin(Stdio::null()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(expected), "{name}: {err}");
    }
    let saml = r#"[{"id":"okta","auto_create_users":true}]"#;
    let out = command(dir.path(), &[("SAML_IDENTITY_PROVIDERS", saml)]).arg("serve").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("provider `okta`: `metadata` is missing"), "{err}");
    assert!(!err.contains("\"s\""), "no secret in the error: {err}");
}

#[tokio::test]
async fn bad_saml_metadata_or_a_missing_sp_key_stops_serve() {
    let dir = tempfile::tempdir().unwrap();
    let unusable = r#"[{"id":"okta","metadata":"<EntityDescriptor xmlns=\"urn:oasis:names:tc:SAML:2.0:metadata\" entityID=\"e\"/>","auto_create_users":true}]"#;
    let out = command(dir.path(), &[("SAML_IDENTITY_PROVIDERS", unusable)])
        .arg("serve")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let expected =
        "FERROZONE_SAML_IDENTITY_PROVIDERS: provider `okta`: `metadata`: EntityDescriptor has no IDPSSODescriptor";
    assert!(!out.status.success() && err.contains(expected), "{err}");

    let idp_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/idp/saml");
    let cert = std::fs::read_to_string(idp_dir.join("keys/idp.crt")).unwrap();
    let cert: String = cert.lines().filter(|l| !l.starts_with("-----")).collect();
    let metadata = format!(
        r#"<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="e"><IDPSSODescriptor>
<KeyDescriptor><KeyInfo xmlns="http://www.w3.org/2000/09/xmldsig#"><X509Data><X509Certificate>{cert}</X509Certificate></X509Data></KeyInfo></KeyDescriptor>
<SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example/sso"/>
</IDPSSODescriptor></EntityDescriptor>"#
    );
    // sign_requests defaults to true, and no SP key is configured.
    let providers = serde_json::json!([{"id": "okta", "metadata": metadata, "auto_create_users": true}]).to_string();
    let out = command(dir.path(), &[("SAML_IDENTITY_PROVIDERS", &providers)])
        .arg("serve")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("provider `okta`: `sign_requests` is true but no SP key"), "{err}");

    // The Firezone names of the key files; both are needed, and must be readable.
    let key = idp_dir.join("keys/sp.key");
    let env = [("SAML_IDENTITY_PROVIDERS", providers.as_str()), ("SAML_KEYFILE_PATH", key.to_str().unwrap())];
    let out = command(dir.path(), &env).arg("serve").stdin(Stdio::null()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("must be set together"), "{err}");
    let env = [
        ("SAML_IDENTITY_PROVIDERS", providers.as_str()),
        ("SAML_KEYFILE_PATH", key.to_str().unwrap()),
        ("SAML_CERTFILE_PATH", "/nonexistent/saml.crt"),
    ];
    let out = command(dir.path(), &env).arg("serve").stdin(Stdio::null()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("FERROZONE_SAML_CERTFILE: reading /nonexistent/saml.crt"), "{err}");
}

#[tokio::test]
async fn serve_starts_with_an_unreachable_oidc_provider_and_its_sign_in_is_a_503() {
    let dir = tempfile::tempdir().unwrap();
    let providers = r#"[{"id":"corp","label":"Corp","client_id":"c","client_secret":"a-secret-value",
        "discovery_document_uri":"http://127.0.0.1:1/.well-known/openid-configuration","auto_create_users":false}]"#;
    let env = [
        ("FERROZONE_OPENID_CONNECT_PROVIDERS", providers),
        ("FERROZONE_OIDC_REFRESH_INTERVAL", "60"),
        ("DISABLE_VPN_ON_OIDC_ERROR", "false"),
    ];
    let server = Server::start(dir.path(), &env).await;
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let res = client.get(format!("{}/auth/oidc/corp", server.base)).send().await.unwrap();
    assert_eq!(res.status(), 503);
    assert!(res.text().await.unwrap().contains("cannot be reached"));

    let out = command(dir.path(), &[("FERROZONE_OIDC_REFRESH_INTERVAL", "5")]).arg("serve").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("oidc-refresh-interval"), "{err}");
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, err) = run(dir.path(), &["--version"]);
    assert!(ok, "{err}");
    // build.rs gives the binary and this test the same commit.
    let commit = option_env!("BUILD_COMMIT").unwrap_or("unknown");
    assert_eq!(out.trim(), format!("ferrozone {} (commit {commit})", env!("CARGO_PKG_VERSION")));
    let in_git = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.git").exists();
    assert!(!in_git || commit != "unknown", "a build in a git clone knows its commit");
}
