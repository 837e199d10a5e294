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
    let mut body: serde_json::Value = res.json().await.unwrap();
    // The default external URL (a loopback one) is the one warning.
    let warnings = body.as_object_mut().unwrap().remove("warnings").unwrap();
    let warnings = warnings.as_array().unwrap();
    assert!(warnings.len() == 1 && warnings[0].as_str().unwrap().contains("FERROZONE_EXTERNAL_URL"), "{warnings:?}");
    let data_plane =
        json!({"backend": "none", "last_reconcile_at": null, "last_reconcile_failed": false, "peers_refused": 0});
    let routing = json!({"nftables": "not applied", "reason": "the WireGuard backend is none: nothing is enforced"});
    assert_eq!(body, json!({"status": "ok", "database": "ok", "data_plane": data_plane, "routing": routing}));
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

/// A provider that accepts connections and answers nothing until told to: each request it
/// reads is announced, and dropping `release` closes every connection it holds.
struct StalledProvider {
    url: String,
    arrived: std::sync::mpsc::Receiver<()>,
    release: Option<std::sync::mpsc::Sender<()>>,
}

impl StalledProvider {
    fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/.well-known/openid-configuration", listener.local_addr().unwrap());
        let (arrived_tx, arrived) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                let mut buf = [0u8; 1024];
                let _ = std::io::Read::read(&mut stream, &mut buf);
                held.push(stream);
                if arrived_tx.send(()).is_err() {
                    break;
                }
                // Holds every connection until released (the sender dropped).
                if released.recv().is_err() {
                    break;
                }
            }
        });
        Self { url, arrived, release: Some(release) }
    }
}

/// SIGTERM while a request is in flight: the server stops accepting connections, finishes
/// that request, then exits with status 0.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_the_request_in_flight() {
    let mut provider = StalledProvider::start();
    let providers = format!(
        r#"[{{"id":"corp","label":"Corp","client_id":"c","client_secret":"a-secret-value",
        "discovery_document_uri":"{}","auto_create_users":false}}]"#,
        provider.url
    );
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &[("FERROZONE_OPENID_CONNECT_PROVIDERS", &providers)]).await;
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let in_flight = tokio::spawn(client.get(format!("{}/auth/oidc/corp", server.base)).send());
    // The sign-in waits on the provider's discovery document: the request is in flight.
    tokio::task::block_in_place(|| provider.arrived.recv()).unwrap();

    let pid = server.child.id().to_string();
    assert!(std::process::Command::new("kill").args(["-s", "TERM", &pid]).status().unwrap().success());
    let address = server.base.trim_start_matches("http://").to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while tokio::net::TcpStream::connect(&address).await.is_ok() {
        assert!(std::time::Instant::now() < deadline, "the server still accepts connections after SIGTERM");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!in_flight.is_finished(), "the request in flight waits for the provider");

    provider.release.take();
    let answered = in_flight.await.unwrap().expect("the request in flight is answered");
    assert_eq!(answered.status(), 503, "the provider failed: a 503 page");
    let status = tokio::task::block_in_place(|| server.child.wait()).unwrap();
    assert!(status.success(), "{status}");
}

/// The resident and whole size, in kB, of the server's code mapping (`r-xp`, of its binary).
#[cfg(target_os = "linux")]
fn code_kb(pid: u32) -> (u64, u64) {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).expect("the server's smaps reads");
    let bin = std::fs::canonicalize(crate::harness::BIN).unwrap();
    let mut lines = smaps.lines();
    while let Some(line) = lines.next() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() == 6 && fields[1] == "r-xp" && std::path::Path::new(fields[5]) == bin {
            let kb = |name: &str| {
                let line = lines.clone().find(|l| l.starts_with(name)).expect("the mapping's sizes");
                line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap()
            };
            return (kb("Rss:"), kb("Size:"));
        }
    }
    panic!("no code mapping of {} in the server's smaps", bin.display());
}

/// Start-up's code is unmapped once start-up and the tasks' first passes are done
/// (crates/ferrozone/src/memory.rs): an idle server keeps mapped only the code that has run
/// since, about a third of this debug binary's. Before, the kernel's fault-around left four
/// fifths of it resident (three quarters of a release build's).
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_server_keeps_little_of_its_code_mapped() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (rss, size) = code_kb(server.child.id());
        if rss * 2 < size {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{rss} kB of the code's {size} kB still mapped");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let res = reqwest::get(format!("{}/healthz", server.base)).await.unwrap();
    assert_eq!(res.status(), 200, "the server answers on with its code mapped back");
}
