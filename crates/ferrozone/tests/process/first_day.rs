//! What a new operator meets on the first start: the first admin's password, Firezone's
//! variables, a database that cannot be reached, the default external URL.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{command, Api, Server};

/// Runs `ferrozone <args>` with `env`, and says how long it took.
fn run(dir: &std::path::Path, env: &[(&str, &str)], args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = command(dir, env).args(args).stdin(Stdio::null()).output().unwrap();
    (out, started.elapsed())
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Far below the pool's 10 s acquire timeout: the first connection's own timeout (2 s)
/// answers, or the error comes at once.
const PROMPT: Duration = Duration::from_secs(8);

#[tokio::test]
async fn the_first_admin_gets_the_password_given_and_a_later_start_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let password = "a first-day password";
    let server = Server::start(dir.path(), &[("DEFAULT_ADMIN_PASSWORD", password)]).await;
    let token = server.printed_token().expect("the admin token is still printed");
    let api = Api::new(&server.base, &token);
    let change = |current: &str| json!({"current_password": current, "password": "a second password", "password_confirmation": "a second password"});
    let (status, body) =
        api.call(reqwest::Method::POST, "/v0/me/password", Some(change("wrong password!"))).await.unwrap();
    assert_eq!((status, &body), (422, &json!({"errors": {"current_password": ["is not correct"]}})));
    let (status, _) = api.call(reqwest::Method::POST, "/v0/me/password", Some(change(password))).await.unwrap();
    assert_eq!(status, 204, "the admin's password is the one given at start");
    drop(server);
    // With an admin in the database, another password changes nothing.
    let again = Server::start(dir.path(), &[("FERROZONE_ADMIN_PASSWORD", "yet another password")]).await;
    let api = Api::new(&again.base, &token);
    let back =
        json!({"current_password": "a second password", "password": password, "password_confirmation": password});
    assert_eq!(api.call(reqwest::Method::POST, "/v0/me/password", Some(back)).await.unwrap().0, 204);
}

/// The first start says how to use the token, how the first admin gets a password and where
/// the web console is, at the external URL people reach, not at the address `serve` listens
/// on; the log says where the console is on every start.
#[tokio::test]
async fn the_first_start_points_to_the_web_console_at_the_external_url() {
    let dir = tempfile::tempdir().unwrap();
    let external = "https://vpn.example.com:8443";
    let server = Server::start_logged(dir.path(), &[("FERROZONE_EXTERNAL_URL", external)]).await;
    let (printed, token) = (server.printed(), server.printed_token().unwrap());
    let curl = format!("curl -H \"Authorization: Bearer {token}\" {external}/v0/users");
    assert!(printed.contains(&curl), "{printed}");
    let set_password = "`ferrozone user set-password --email admin@localhost --password-stdin`";
    assert!(printed.contains(set_password), "{printed}");
    assert!(printed.contains(&format!("sign in to the web console at {external}/")), "{printed}");
    assert!(!printed.contains("127.0.0.1") && !printed.contains("0.0.0.0"), "{printed}");
    let log = server.log();
    assert!(log.contains(&format!("the web console is at {external}/")), "{log}");
}

#[tokio::test]
async fn a_password_the_rules_refuse_stops_serve_without_showing_it_and_creates_no_admin() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = run(dir.path(), &[("FERROZONE_ADMIN_PASSWORD", "tooshort")], &["serve"]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains("FERROZONE_ADMIN_PASSWORD: the password should be at least 12 character(s)"), "{err}");
    assert!(!err.contains("tooshort") && !String::from_utf8_lossy(&out.stdout).contains("fz_"), "{err}");
}

#[test]
fn a_partial_set_of_firezone_database_variables_is_a_start_error() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = run(dir.path(), &[("DATABASE_PASSWORD", "secret"), ("DATABASE_HOST", "db")], &["migrate"]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains("DATABASE_HOST, DATABASE_PASSWORD set, but not DATABASE_NAME, DATABASE_USER"), "{err}");
    assert!(!dir.path().join("ferrozone.db").exists(), "no SQLite database was started");
}

#[test]
fn firezone_database_variables_name_the_postgresql_database() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("DATABASE_HOST", "127.0.0.1"),
        ("DATABASE_PORT", "1"),
        ("DATABASE_NAME", "firezone"),
        ("DATABASE_USER", "firezone"),
        ("DATABASE_PASSWORD", "p@ss word"),
    ];
    let (out, took) = run(dir.path(), &env, &["migrate"]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("cannot connect to postgres://firezone:***@127.0.0.1:1/firezone: connection refused"),
        "{err}"
    );
    assert!(!err.contains("p@ss") && !err.contains("p%40ss"), "{err}");
    assert!(took < PROMPT, "{took:?}");
    assert!(!dir.path().join("ferrozone.db").exists(), "no SQLite database was started");
}

#[test]
fn firezone_variables_ferrozone_does_not_honour_are_named_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("GUARDIAN_SECRET_KEY", "k"),
        ("OUTBOUND_EMAIL_ADAPTER", "Elixir.Swoosh.Adapters.Mailgun"),
        ("FERROZONE_EXTRENAL_URL", "x"),
    ];
    let (out, _) = run(dir.path(), &env, &["migrate"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("GUARDIAN_SECRET_KEY is ignored: only `ferrozone import firezone` needs them"), "{err}");
    assert!(err.contains("OUTBOUND_EMAIL_ADAPTER=Elixir.Swoosh.Adapters.Mailgun is not supported"), "{err}");
    assert!(err.contains("Ferrozone sends email through SMTP only"), "{err}");
    assert!(err.contains("unknown setting FERROZONE_EXTRENAL_URL is ignored"), "{err}");
}

#[tokio::test]
async fn the_default_external_url_is_a_warning_on_healthz() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let health: serde_json::Value =
        reqwest::get(format!("{}/healthz", server.base)).await.unwrap().json().await.unwrap();
    let warnings = health["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{health}");
    assert!(warnings[0].as_str().unwrap().contains("Endpoint = localhost"), "{health}");
    assert_eq!(health["status"], "ok");
    drop(server);
    let server = Server::start(dir.path(), &[("EXTERNAL_URL", "https://vpn.example.com")]).await;
    let health: serde_json::Value =
        reqwest::get(format!("{}/healthz", server.base)).await.unwrap().json().await.unwrap();
    assert_eq!(health["warnings"], json!([]));
}

/// The test PostgreSQL's URL with `change` applied, when the PostgreSQL pass runs.
fn test_postgres(change: impl FnOnce(&mut url::Url)) -> Option<String> {
    let url = std::env::var("FERROZONE_TEST_DATABASE_URL").ok().filter(|u| !u.is_empty())?;
    let mut url = url::Url::parse(&url).unwrap();
    change(&mut url);
    Some(url.into())
}

#[test]
fn an_unreachable_postgresql_says_why_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = vec![("postgres://ferrozone@127.0.0.1:1/ferrozone".to_owned(), "connection refused".to_owned())];
    cases.push(("postgres://ferrozone@no-such-host.invalid/ferrozone".to_owned(), "could not be resolved".to_owned()));
    match (
        test_postgres(|url| {
            let _ = url.set_password(Some("not-the-password"));
        }),
        test_postgres(|url| url.set_path("/ferrozone_no_such_database")),
    ) {
        (Some(wrong_password), Some(unknown_database)) => {
            cases.push((wrong_password, "authentication failed for user".to_owned()));
            cases.push((unknown_database, "database ferrozone_no_such_database does not exist".to_owned()));
        }
        _ => eprintln!(
            "FERROZONE_TEST_DATABASE_URL is not set: the password and database cases run in the PostgreSQL pass"
        ),
    }
    for (url, expected) in cases {
        let (out, took) = run(dir.path(), &[("FERROZONE_DATABASE_URL", &url)], &["migrate"]);
        let err = stderr(&out);
        assert!(!out.status.success() && err.contains(&expected), "{expected}: {err}");
        assert!(!err.contains("not-the-password") && !err.contains("pool timed out"), "{err}");
        assert!(took < PROMPT, "{expected}: {took:?}");
    }
}

#[test]
fn an_sqlite_file_that_cannot_be_opened_says_why_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ferrozone.db");
    std::fs::create_dir(&file).unwrap();
    let (out, _) = run(dir.path(), &[], &["migrate"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&file.display().to_string()) && err.contains("it is a directory, not a database file"),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ferrozone.db");
    std::fs::write(&file, b"").unwrap();
    set_mode(&file, 0o000);
    if std::fs::File::open(&file).is_ok() {
        // Root reads a file whatever its mode: there is nothing to refuse.
        eprintln!("running with the power to read any file: the permission case is skipped");
        return;
    }
    let (out, _) = run(dir.path(), &[], &["migrate"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("permission denied") && err.contains(&file.display().to_string()), "{err}");
}

fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}
