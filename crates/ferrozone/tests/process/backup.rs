//! `ferrozone backup` of a server under load, and `ferrozone restore` of it into a fresh data
//! directory: every create acknowledged before the backup began is served again.

use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::durability::{as_refs, roomy_env};
use crate::harness::{command, Api, Server};

/// Runs `ferrozone ARGS` on `data_dir` off the runtime's threads, so the load goes on meanwhile.
async fn ferrozone(data_dir: &Path, env: &[(&'static str, String)], args: &[&str]) -> Output {
    let (dir, env) = (data_dir.to_owned(), env.to_vec());
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || command(&dir, &as_refs(&env)).args(&args).output().unwrap()).await.unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn sqlite_env(data_dir: &Path) -> Vec<(&'static str, String)> {
    roomy_env(&format!("sqlite://{}", data_dir.join("ferrozone.db").display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_load_restores_every_create_acknowledged_before_it_began() {
    let original = tempfile::tempdir().unwrap();
    let env = sqlite_env(original.path());
    let server = Server::start(original.path(), &as_refs(&env)).await;
    let api = Api::new(&server.base, &server.printed_token().unwrap());
    let admin = api.admin_id().await;

    let acked = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let (count_tx, mut count_rx) = watch::channel(0usize);
    let mut writers = Vec::new();
    for _ in 0..4 {
        let (api, admin, acked, stop, count_tx) =
            (api.clone(), admin.clone(), acked.clone(), stop.clone(), count_tx.clone());
        writers.push(tokio::spawn(async move {
            // Every 201 is recorded before the next request.
            while !stop.load(Ordering::Relaxed) {
                let (id, _) = api.create_device(&admin).await.unwrap().unwrap_or_else(|s| panic!("create: {s}"));
                let mut ids = acked.lock().unwrap();
                ids.push(id);
                count_tx.send_replace(ids.len());
            }
        }));
    }
    count_rx.wait_for(|n| *n >= 60).await.unwrap();

    let acked_before: Vec<String> = acked.lock().unwrap().clone();
    let out = original.path().join("backup.db");
    let out_arg = out.to_str().unwrap();
    let backed_up = ferrozone(original.path(), &env, &["backup", "--out", out_arg]).await;
    assert!(backed_up.status.success(), "{}", stderr(&backed_up));
    let printed = String::from_utf8_lossy(&backed_up.stdout).into_owned();
    assert!(printed.contains("devices: ") && printed.contains("users: 1"), "{printed}");
    let told = stderr(&backed_up);
    assert!(told.contains("keep the secret key") && told.contains("secret.key"), "{told}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);
    }

    // While the server runs: no restore over its database, and no backup over the backup.
    let refused = ferrozone(original.path(), &env, &["restore", out_arg]).await;
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("in use by a running `ferrozone serve`"), "{}", stderr(&refused));
    let again = ferrozone(original.path(), &env, &["backup", "--out", out_arg]).await;
    assert!(!again.status.success());
    assert!(stderr(&again).contains("already exists"), "{}", stderr(&again));

    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let token = api.token.clone();
    server.kill();

    // A new machine: the backup and the secret key.
    let restored_dir = tempfile::tempdir().unwrap();
    std::fs::copy(original.path().join("secret.key"), restored_dir.path().join("secret.key")).unwrap();
    let restored_env = sqlite_env(restored_dir.path());
    let restored = ferrozone(restored_dir.path(), &restored_env, &["restore", out_arg]).await;
    assert!(restored.status.success(), "{}", stderr(&restored));

    let server = Server::start(restored_dir.path(), &as_refs(&restored_env)).await;
    let api = Api::new(&server.base, &token);
    let (status, body) = api.get("/v0/devices").await;
    assert_eq!(status, 200, "{body}");
    let stored: std::collections::HashSet<&str> =
        body["data"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap()).collect();
    let lost: Vec<_> = acked_before.iter().filter(|id| !stored.contains(id.as_str())).collect();
    assert!(lost.is_empty(), "{} creates acknowledged before the backup are missing: {lost:?}", lost.len());
    for id in &acked_before {
        assert_eq!(api.get(&format!("/v0/devices/{id}")).await.0, 200, "{id}");
    }
    // The configuration holds the preshared key, sealed with the secret key.
    let config = reqwest::Client::new()
        .get(format!("{}/v0/devices/{}/config", server.base, acked_before[0]))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(config.status(), 200);
    let text = config.text().await.unwrap();
    assert!(text.contains("PresharedKey = ") && text.contains("PublicKey = "), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_refuses_a_damaged_file_and_leaves_no_database() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("backup.db");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.resize(16 * 1024, 0x5a);
    std::fs::write(&junk, bytes).unwrap();
    let data = dir.path().join("data");
    let env = sqlite_env(&data);
    let output = ferrozone(&data, &env, &["restore", junk.to_str().unwrap()]).await;
    assert!(!output.status.success());
    assert!(stderr(&output).contains("is refused"), "{}", stderr(&output));
    assert!(!data.join("ferrozone.db").exists());
}

/// PostgreSQL has its own tools; the commands say so rather than half-work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_and_restore_of_postgresql_point_to_its_tools() {
    let db = ferrozone_store::testing::fresh().await.unwrap();
    let url = if db.backend == "postgres" { db.url.clone() } else { "postgres://ferrozone@127.0.0.1:1/none".into() };
    let dir = tempfile::tempdir().unwrap();
    let env = vec![("FERROZONE_DATABASE_URL", url)];
    let out = dir.path().join("backup.db");
    let backup = ferrozone(dir.path(), &env, &["backup", "--out", out.to_str().unwrap()]).await;
    assert!(!backup.status.success());
    assert!(stderr(&backup).contains("pg_dump -Fc"), "{}", stderr(&backup));
    assert!(!out.exists());
    let restore = ferrozone(dir.path(), &env, &["restore", out.to_str().unwrap()]).await;
    assert!(!restore.status.success());
    assert!(stderr(&restore).contains("pg_restore"), "{}", stderr(&restore));
}
