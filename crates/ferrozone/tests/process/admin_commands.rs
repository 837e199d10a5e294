//! The operator's commands: their help, their errors, and what they do.

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use reqwest::Method;
use serde_json::json;

use crate::harness::{command, Api, Server};

fn run(dir: &Path, args: &[&str]) -> Output {
    command(dir, &[]).args(args).stdin(Stdio::null()).output().unwrap()
}

fn run_with_stdin(dir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = command(dir, &[])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `out` failed with exit code 1 and said `message` once, on one `error:` line (other
/// lines may warn of other things).
fn assert_error(out: &Output, message: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let saying: Vec<&str> = err.lines().filter(|l| l.contains(message)).collect();
    assert_eq!(saying, [format!("error: {message}")], "said once, in words: {err}");
}

#[test]
fn each_command_shows_its_own_flags_with_their_descriptions() {
    let dir = tempfile::tempdir().unwrap();
    let help = stdout(&run(dir.path(), &["user", "create", "--help"]));
    assert!(help.contains("--email <EMAIL>\n          The new user's email"), "{help}");
    assert!(help.contains("--database-url") && !help.contains("--wireguard-port"), "{help}");
    let serve = stdout(&run(dir.path(), &["serve", "--help"]));
    assert!(serve.contains("--wireguard-port") && serve.contains("--http-header-timeout"), "{serve}");
    let revoke = stdout(&run(dir.path(), &["token", "revoke", "--help"]));
    assert!(revoke.contains("The token's id"), "{revoke}");
}

#[test]
fn a_server_setting_still_reads_from_its_flag_or_variable_on_any_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["user", "list", "--wireguard-ipv4-network", "10.0.0.0/99"]);
    assert!(!out.status.success() && stderr(&out).contains("FERROZONE_WIREGUARD_IPV4_NETWORK"), "{}", stderr(&out));
}

#[test]
fn errors_are_one_line_in_words_and_usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    assert_error(&run(dir.path(), &["user", "disable", "--email", "nobody@x"]), "no user with email \"nobody@x\"");
    assert!(run(dir.path(), &["user", "create", "--email", "twice@example.com"]).status.success());
    let usage = run(dir.path(), &["user", "set-role", "--email", "twice@example.com", "--role", "boss"]);
    assert_eq!(usage.status.code(), Some(2), "{}", stderr(&usage));
}

/// A newcomer who runs `user create` for the first admin (made at the first start) learns
/// what to run instead; nothing about the user changes.
#[test]
fn creating_a_user_that_exists_names_the_commands_that_change_it() {
    let dir = tempfile::tempdir().unwrap();
    assert!(run(dir.path(), &["user", "create", "--email", "twice@example.com"]).status.success());
    let before = stdout(&run(dir.path(), &["user", "list"]));
    let again = run_with_stdin(
        dir.path(),
        &["user", "create", "--email", "Twice@Example.com", "--role", "admin", "--password-stdin"],
        "a long enough password\n",
    );
    assert_error(
        &again,
        "a user with email \"Twice@Example.com\" already exists; to change it, use \
         `ferrozone user set-password --email Twice@Example.com --password-stdin` or \
         `ferrozone user set-role --email Twice@Example.com --role admin|unprivileged`",
    );
    assert_eq!(stdout(&again), "", "no id printed");
    assert_eq!(stdout(&run(dir.path(), &["user", "list"])), before, "the user is as it was");
    let invalid = run(dir.path(), &["user", "create", "--email", "nope"]);
    assert_error(&invalid, "email is invalid email address");
}

#[tokio::test]
async fn set_password_applies_the_rules_and_the_new_password_works() {
    let dir = tempfile::tempdir().unwrap();
    let created = run_with_stdin(
        dir.path(),
        &["user", "create", "--email", "pw@example.com", "--password-stdin"],
        "the first long password\n",
    );
    assert!(created.status.success(), "{}", stderr(&created));
    let token = stdout(&run(dir.path(), &["token", "create", "--email", "pw@example.com"]));
    let set = |password: &str| {
        run_with_stdin(dir.path(), &["user", "set-password", "--email", "PW@example.com", "--password-stdin"], password)
    };
    assert_error(&set("short\n"), "password should be at least 12 character(s)");
    let out = set("the second long password\n");
    assert!(out.status.success() && stderr(&out).contains("its browser sessions ended"), "{}", stderr(&out));
    assert_eq!(run(dir.path(), &["user", "set-password", "--email", "pw@example.com"]).status.code(), Some(2));

    let server = Server::start(dir.path(), &[]).await;
    let api = Api::new(&server.base, token.trim());
    let change = |current: &str| json!({"current_password": current, "password": "a third long password", "password_confirmation": "a third long password"});
    let (status, _) = api.call(Method::POST, "/v0/me/password", Some(change("the first long password"))).await.unwrap();
    assert_eq!(status, 422, "the old password is gone");
    let (status, body) =
        api.call(Method::POST, "/v0/me/password", Some(change("the second long password"))).await.unwrap();
    assert_eq!(status, 204, "the new password is the user's: {body}");
}

#[test]
fn set_role_keeps_an_admin() {
    let dir = tempfile::tempdir().unwrap();
    assert!(run(dir.path(), &["user", "create", "--email", "first@example.com", "--role", "admin"]).status.success());
    assert!(run(dir.path(), &["user", "create", "--email", "ops@example.com"]).status.success());
    let role = |email: &str| {
        let users = stdout(&run(dir.path(), &["user", "list"]));
        users.lines().find(|l| l.contains(email)).unwrap().split('\t').nth(2).unwrap().to_owned()
    };
    let out = run(dir.path(), &["user", "set-role", "--email", "ops@example.com", "--role", "admin"]);
    assert!(out.status.success() && stderr(&out).contains("is now admin"), "{}", stderr(&out));
    assert_eq!(role("ops@example.com"), "admin");
    assert!(run(dir.path(), &["user", "set-role", "--email", "ops@example.com", "--role", "unprivileged"])
        .status
        .success());
    assert_error(
        &run(dir.path(), &["user", "set-role", "--email", "first@example.com", "--role", "unprivileged"]),
        "cannot remove the last admin",
    );
    assert_eq!(role("first@example.com"), "admin");
}

#[tokio::test]
async fn devices_are_listed_and_go_with_their_deleted_user() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let api = Api::new(&server.base, &server.printed_token().unwrap());
    let user_id = stdout(&run(dir.path(), &["user", "create", "--email", "leaver@example.com"]));
    let (device_id, device) = api.create_device(user_id.trim()).await.unwrap().unwrap();

    let listed = stdout(&run(dir.path(), &["device", "list", "--email", "LEAVER@example.com"]));
    let fields: Vec<&str> = listed.trim_end().split('\t').collect();
    let addresses = format!("{},{}", device["ipv4"].as_str().unwrap(), device["ipv6"].as_str().unwrap());
    let public_key = device["public_key"].as_str().unwrap();
    let name = device["name"].as_str().unwrap();
    assert_eq!(fields, [&device_id, name, "leaver@example.com", &addresses, public_key, "last_handshake:never"]);
    assert!(stdout(&run(dir.path(), &["device", "list", "--email", "admin@localhost"])).is_empty());
    assert_eq!(stdout(&run(dir.path(), &["device", "list"])).lines().count(), 1);

    assert_error(
        &run(dir.path(), &["user", "delete", "--email", "leaver@example.com"]),
        &format!(
            "not deleted: this would delete leaver@example.com ({}) with its 1 device(s) and API tokens; add --yes",
            user_id.trim()
        ),
    );
    assert_eq!(api.get(&format!("/v0/devices/{device_id}")).await.0, 200, "nothing deleted without --yes");
    let out = run(dir.path(), &["user", "delete", "--email", "leaver@example.com", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(api.get(&format!("/v0/devices/{device_id}")).await.0, 404, "its device went with it");
    assert_eq!(api.get("/v0/users/leaver@example.com").await.0, 404);
    assert_error(
        &run(dir.path(), &["user", "delete", "--email", "admin@localhost", "--yes"]),
        "cannot remove the last admin",
    );
}

#[tokio::test]
async fn status_reports_the_running_servers_data_plane_or_that_none_answers() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let listen = server.base.trim_start_matches("http://").to_owned();
    let status = |listen: &str| {
        let out =
            command(dir.path(), &[("FERROZONE_LISTEN", listen)]).arg("status").stdin(Stdio::null()).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let shown = status(&listen);
    assert!(shown.starts_with("online: 0 device(s)"), "{shown}");
    assert!(shown.contains("status: ok") && shown.contains("data plane: backend none"), "{shown}");
    drop(server);
    let shown = status(&listen);
    assert!(shown.contains(&format!("server: not answering at {listen}")), "{shown}");
}

#[test]
fn audit_list_checks_its_filters_and_prints_nothing_for_an_empty_log() {
    let dir = tempfile::tempdir().unwrap();
    let empty = run(dir.path(), &["audit", "list", "--json", "--action", "nothing."]);
    assert!(empty.status.success(), "{}", stderr(&empty));
    assert_eq!(stdout(&empty), "");
    assert_error(&run(dir.path(), &["audit", "list", "--user", "nobody@example.com"]), "no user nobody@example.com");
    for bad in [["--limit", "0"], ["--limit", "501"], ["--since", "soon"], ["--actor-kind", "robot"]] {
        let out = run(dir.path(), &["audit", "list", bad[0], bad[1]]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
    }
}
