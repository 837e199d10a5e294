//! PostgreSQL restarted under load: while it is down, requests answer 503 with
//! `Retry-After`; once it is back, they succeed again without restarting Ferrozone.
//!
//! The test runs its own cluster, from `initdb` in a temporary directory, on a free port of
//! 127.0.0.1. PostgreSQL refuses to run as root: as root (CI), the cluster runs as the
//! `postgres` user. Without PostgreSQL's programs the test is skipped, except in CI, where
//! it fails (tests/support/programs.rs).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::durability::{as_refs, roomy_env};
use crate::harness::{Api, Server};

/// A PostgreSQL cluster of its own; stopped when dropped.
struct Cluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    /// `runuser -u postgres --` when running as root.
    as_user: Option<&'static str>,
}

impl Cluster {
    fn init() -> Option<Cluster> {
        let Some(bin) = postgres_bin() else {
            crate::programs::missing(
                "initdb",
                "apt-get install postgresql; looked in PATH and /usr/lib/postgresql/*/bin",
            );
            return None;
        };
        let as_user = is_root().then_some("postgres");
        let dir = tempfile::tempdir().unwrap();
        if let Some(user) = as_user {
            run(Command::new("chown").arg(user).arg(dir.path()));
        }
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let cluster = Cluster { bin, dir, port, as_user };
        let data = cluster.data();
        run(cluster.pg("initdb").args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "-D"]).arg(&data));
        let settings = format!(
            "\nlisten_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{}'\nfsync = off\n",
            cluster.dir.path().display()
        );
        let conf = data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).unwrap();
        text.push_str(&settings);
        std::fs::write(&conf, text).unwrap();
        cluster.start();
        Some(cluster)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// One of PostgreSQL's programs, as the user that owns the cluster.
    fn pg(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        match self.as_user {
            Some(user) => {
                let mut cmd = Command::new("runuser");
                cmd.args(["-u", user, "--"]).arg(path);
                cmd
            }
            None => Command::new(path),
        }
    }

    fn start(&self) {
        let log = self.dir.path().join("postgres.log");
        run(self.pg("pg_ctl").arg("-D").arg(self.data()).arg("-l").arg(log).args(["-w", "start"]));
    }

    fn stop(&self, mode: &str) {
        run(self.pg("pg_ctl").arg("-D").arg(self.data()).args(["-m", mode, "-w", "stop"]));
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.pg("pg_ctl").arg("-D").arg(self.data()).args(["-m", "immediate", "-w", "stop"]).output();
    }
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The directory of `initdb` and `pg_ctl`: on PATH, else Debian's newest version.
fn postgres_bin() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file());
    on_path.or_else(|| {
        let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|entry| Some(entry.ok()?.path().join("bin")))
            .filter(|bin| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
            .collect();
        versions
            .sort_by_key(|bin| bin.parent().and_then(Path::file_name).and_then(|v| v.to_str()?.parse::<u32>().ok()));
        versions.pop()
    })
}

fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// What a request answered: its status and whether a 503 said when to retry.
type Answers = Arc<Mutex<Vec<(u16, bool)>>>;

/// Clients that list and create devices until `stop`, recording every answer.
fn load(api: &Api, admin: &str, stop: &Arc<AtomicBool>, answers: &Answers) -> Vec<tokio::task::JoinHandle<()>> {
    (0..4)
        .map(|i| {
            let (api, admin, stop, answers) = (api.clone(), admin.to_owned(), stop.clone(), answers.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                while !stop.load(Ordering::Relaxed) {
                    let request = if i % 2 == 0 {
                        client.get(format!("{}/v0/devices", api.base))
                    } else {
                        let key = ferrozone_domain::crypto::generate_keypair().public_key;
                        let body = serde_json::json!({"device": {"user_id": admin, "public_key": key}});
                        client.post(format!("{}/v0/devices", api.base)).json(&body)
                    };
                    let res = request.bearer_auth(&api.token).send().await.expect("the server answers throughout");
                    answers.lock().unwrap().push((res.status().as_u16(), retry_after(&res)));
                }
            })
        })
        .collect()
}

fn retry_after(res: &reqwest::Response) -> bool {
    let value = res.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse::<u32>().ok());
    value.is_some_and(|seconds| seconds > 0)
}

/// Polls `GET path` until it answers `status` (a bounded wait for a state, not a timing
/// assertion); returns whether that answer carried a `Retry-After`.
async fn until_status(api: &Api, path: &str, status: u16) -> bool {
    let deadline = Instant::now() + Duration::from_secs(90);
    let client = reqwest::Client::new();
    loop {
        let res = client.get(format!("{}{path}", api.base)).bearer_auth(&api.token).send().await.unwrap();
        if res.status().as_u16() == status {
            return retry_after(&res);
        }
        assert!(Instant::now() < deadline, "{path} never answered {status} (last {})", res.status());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates a device once the database is back. A connection that was open when it went
/// down fails its next statement (503, and the pool replaces it), so a few attempts may
/// answer 503 first: each with `Retry-After`.
async fn until_created(api: &Api, admin: &str) -> String {
    for _ in 0..100 {
        let key = ferrozone_domain::crypto::generate_keypair().public_key;
        let body = serde_json::json!({"device": {"user_id": admin, "public_key": key}});
        let res = reqwest::Client::new()
            .post(format!("{}/v0/devices", api.base))
            .bearer_auth(&api.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        match res.status().as_u16() {
            201 => return res.json::<serde_json::Value>().await.unwrap()["data"]["id"].as_str().unwrap().to_owned(),
            503 => assert!(retry_after(&res), "a 503 says when to retry"),
            other => panic!("a create after the restart answered {other}"),
        }
    }
    panic!("no create succeeded after the restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_answer_503_while_postgres_is_down_and_succeed_once_it_is_back() {
    let Some(cluster) = Cluster::init() else { return };
    let dir = tempfile::tempdir().unwrap();
    let env = roomy_env(&cluster.url());
    let server = Server::start(dir.path(), &as_refs(&env)).await;
    let api = Api::new(&server.base, &server.printed_token().unwrap());
    let admin = api.admin_id().await;
    let (before, _) = api.create_device(&admin).await.unwrap().expect("201");

    let (stop, answers) = (Arc::new(AtomicBool::new(false)), Answers::default());
    let clients = load(&api, &admin, &stop, &answers);
    cluster.stop("fast");
    assert!(until_status(&api, "/v0/devices", 503).await, "a 503 says when to retry");
    assert!(until_status(&api, "/healthz", 503).await, "/healthz: a 503 says when to retry");
    let live = reqwest::get(format!("{}/livez", api.base)).await.unwrap();
    assert_eq!(live.status(), 200, "/livez does not need the database");
    cluster.start();
    until_status(&api, "/v0/devices", 200).await;
    until_status(&api, "/healthz", 200).await;
    let after = until_created(&api, &admin).await;
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }

    let (status, body) = api.get("/v0/devices").await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = body["data"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&before.as_str()) && ids.contains(&after.as_str()));
    let answers = answers.lock().unwrap();
    for (status, retry) in answers.iter() {
        assert!(matches!(status, 200 | 201 | 503), "under load, a request answered {status}");
        assert!(*status != 503 || *retry, "a 503 without Retry-After");
    }
    assert!(answers.iter().any(|(status, _)| *status == 503), "the load met the outage");
}
