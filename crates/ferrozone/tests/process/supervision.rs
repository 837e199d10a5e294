//! `serve` as one supervised whole: `/healthz` reports the data plane next to the database,
//! and SIGTERM or SIGINT stop it in order, with exit status 0.

use serde_json::json;

use crate::harness::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_reports_the_database_and_the_data_plane() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let res = reqwest::get(format!("{}/healthz", server.base)).await.unwrap();
    assert_eq!(res.status(), 200);
    let body: serde_json::Value = res.json().await.unwrap();
    let data_plane = json!({"backend": "none", "last_reconcile_at": null, "last_reconcile_failed": false});
    assert_eq!(body, json!({"status": "ok", "database": "ok", "data_plane": data_plane}));
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_and_sigint_stop_the_server_with_status_0() {
    for signal in ["TERM", "INT"] {
        let dir = tempfile::tempdir().unwrap();
        let mut server = Server::start(dir.path(), &[]).await;
        let pid = server.child.id().to_string();
        let sent = std::process::Command::new("kill").args(["-s", signal, &pid]).status().unwrap();
        assert!(sent.success());
        let status = tokio::task::block_in_place(|| server.child.wait()).unwrap();
        assert!(status.success(), "SIG{signal}: {status}");
    }
}
