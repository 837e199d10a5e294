//! Several `ferrozone serve` processes sharing one PostgreSQL database. Runs when
//! `FERROZONE_TEST_DATABASE_URL` is set (CI's PostgreSQL pass); SQLite is one process.

use std::collections::HashSet;

use ferrozone_domain::crypto::Cipher;
use serde_json::Value;

use crate::durability::{as_refs, roomy_env};
use crate::harness::{Api, Server};

pub(crate) fn postgres_configured() -> bool {
    let set = std::env::var("FERROZONE_TEST_DATABASE_URL").is_ok_and(|u| !u.is_empty());
    if !set {
        eprintln!(
            "FERROZONE_TEST_DATABASE_URL is not set: the multi-process PostgreSQL test runs in the PostgreSQL pass"
        );
    }
    set
}

/// Two servers started at once on a fresh database (racing on migrations and on the
/// first admin), with one secret key.
pub(crate) async fn two_servers(
    extra: &[(&'static str, String)],
) -> (Server, Server, String, ferrozone_store::testing::TestDb) {
    let db = ferrozone_store::testing::fresh().await.unwrap();
    let mut env = roomy_env(&db.url);
    env.push(("FERROZONE_SECRET_KEY", Cipher::generate_key()));
    env.extend(extra.iter().cloned());
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let env = as_refs(&env);
    let (a, b) = tokio::join!(Server::start(dir_a.path(), &env), Server::start(dir_b.path(), &env));
    let tokens: Vec<String> = [a.printed_token(), b.printed_token()].into_iter().flatten().collect();
    assert_eq!(tokens.len(), 1, "exactly one process creates the first admin");
    (a, b, tokens[0].clone(), db)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_never_share_an_address() {
    if !postgres_configured() {
        return;
    }
    let (a, b, token, _db) = two_servers(&[]).await;
    let apis = [Api::new(&a.base, &token), Api::new(&b.base, &token)];
    let admin = apis[0].admin_id().await;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (api, admin) = (apis[i % 2].clone(), admin.clone());
            tokio::spawn(async move {
                let mut made = Vec::new();
                for _ in 0..15 {
                    made.push(api.create_device(&admin).await.unwrap().expect("201").1);
                }
                made
            })
        })
        .collect();
    let mut devices: Vec<Value> = Vec::new();
    for t in tasks {
        devices.extend(t.await.unwrap());
    }
    let distinct =
        |field: &str| devices.iter().map(|d| d[field].as_str().unwrap().to_owned()).collect::<HashSet<_>>().len();
    assert_eq!(devices.len(), 120);
    assert_eq!(distinct("ipv4"), 120, "IPv4 addresses are unique across processes");
    assert_eq!(distinct("ipv6"), 120, "IPv6 addresses are unique across processes");
    assert_eq!(distinct("server_public_key"), 1, "every process has the same server key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_limit_holds_across_servers() {
    if !postgres_configured() {
        return;
    }
    let (a, b, token, _db) = two_servers(&[("FERROZONE_MAX_DEVICES_PER_USER", "20".into())]).await;
    let apis = [Api::new(&a.base, &token), Api::new(&b.base, &token)];
    let admin = apis[0].admin_id().await;
    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let (api, admin) = (apis[i % 2].clone(), admin.clone());
            tokio::spawn(async move { api.create_device(&admin).await.unwrap() })
        })
        .collect();
    let mut created = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => created += 1,
            Err(status) => assert_eq!(status, 422),
        }
    }
    assert_eq!(created, 20, "exactly the limit is created across both processes");
}
