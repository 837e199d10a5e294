//! The HTTP server's connection limits against a real `ferrozone serve`: head, idle and
//! body deadlines, the per-address cap, and the open-file limit. Every assertion waits for
//! an event (the socket reads EOF, a response arrives) under a generous upper bound.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::harness::{Server, BIN};

/// Far longer than any deadline these tests set: reaching it means the server kept the
/// connection.
const BOUND: Duration = Duration::from_secs(30);

fn address(server_base: &str) -> SocketAddr {
    server_base.trim_start_matches("http://").parse().unwrap()
}

/// A connection to `server` from the loopback address `from` (127.0.0.2 and so on act as
/// other clients).
async fn connect_from(server: SocketAddr, from: &str) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(server).await.unwrap()
}

/// Reads until the server closes the connection (EOF or reset); `None` if it is still
/// open after [`BOUND`].
async fn closed_by_server(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut seen = Vec::new();
    let read = tokio::time::timeout(BOUND, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    });
    read.await.ok().map(|()| seen)
}

/// `GET /livez` from `from`, answered (status line) within [`BOUND`].
async fn livez_from(server: SocketAddr, from: &str) -> String {
    let exchange = async {
        let mut stream = connect_from(server, from).await;
        stream.write_all(b"GET /livez HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").await.unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        String::from_utf8_lossy(&answer).lines().next().unwrap_or_default().to_owned()
    };
    tokio::time::timeout(BOUND, exchange).await.unwrap_or_else(|_| "(no answer)".to_owned())
}

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_header_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[("FERROZONE_HTTP_HEADER_TIMEOUT", "1")]).await;
    let mut stream = TcpStream::connect(address(&server.base)).await.unwrap();
    let started = Instant::now();
    assert!(closed_by_server(&mut stream).await.is_some(), "a silent connection stayed open for {BOUND:?}");
    assert!(started.elapsed() >= Duration::from_millis(900), "closed before the timeout: {:?}", started.elapsed());
}

#[tokio::test]
async fn a_trickling_request_head_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[("FERROZONE_HTTP_HEADER_TIMEOUT", "2")]).await;
    let stream = TcpStream::connect(address(&server.base)).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    // One header byte every 100 ms, for ever: only the server can end this.
    let trickle = async move {
        writer.write_all(b"GET /livez HTTP/1.1\r\nX-Slow: ").await.unwrap();
        loop {
            if writer.write_all(b"a").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let closed = async move {
        let mut buf = [0u8; 1024];
        while let Ok(n) = reader.read(&mut buf).await {
            if n == 0 {
                return;
            }
        }
    };
    let cut = tokio::time::timeout(BOUND, async {
        tokio::select! {
            () = trickle => {},
            () = closed => {},
        }
    });
    assert!(cut.await.is_ok(), "a head trickled in one byte at a time was still read after {BOUND:?}");
}

#[tokio::test]
async fn a_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("FERROZONE_HTTP_HEADER_TIMEOUT", "60"), ("FERROZONE_HTTP_IDLE_TIMEOUT", "1")];
    let server = Server::start(dir.path(), &env).await;
    let mut stream = TcpStream::connect(address(&server.base)).await.unwrap();
    stream.write_all(b"GET /livez HTTP/1.1\r\nHost: t\r\n\r\n").await.unwrap();
    let seen = closed_by_server(&mut stream).await.expect("an idle keep-alive connection stayed open");
    assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&seen));
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[("FERROZONE_HTTP_BODY_TIMEOUT", "1")]).await;
    let token = server.printed_token().expect("the admin's token");
    let mut stream = TcpStream::connect(address(&server.base)).await.unwrap();
    let head = format!(
        "POST /v0/users HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"user\":"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let seen = closed_by_server(&mut stream).await.expect("a body missing 990 bytes kept the connection open");
    let status = String::from_utf8_lossy(&seen).lines().next().unwrap_or_default().to_owned();
    assert!(status.starts_with("HTTP/1.1 400"), "{status}");
}

#[tokio::test]
async fn past_the_per_address_cap_a_connection_is_closed_and_other_addresses_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("FERROZONE_HTTP_MAX_CONNECTIONS_PER_ADDRESS", "4"), ("FERROZONE_HTTP_HEADER_TIMEOUT", "120")];
    let server = Server::start(dir.path(), &env).await;
    let to = address(&server.base);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(connect_from(to, "127.0.0.2").await);
    }
    let mut over = connect_from(to, "127.0.0.2").await;
    assert!(closed_by_server(&mut over).await.is_some(), "a fifth connection from one address was kept");
    assert!(livez_from(to, "127.0.0.3").await.starts_with("HTTP/1.1 200"));
    drop(held.pop());
    // The freed place is taken again by the same address.
    let deadline = Instant::now() + BOUND;
    loop {
        let status = livez_from(to, "127.0.0.2").await;
        if status.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(Instant::now() < deadline, "a closed connection's place was never freed: {status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_full_server_closes_the_longest_waiting_connection_to_serve_a_new_client() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("FERROZONE_HTTP_MAX_CONNECTIONS", "8"),
        ("FERROZONE_HTTP_MAX_CONNECTIONS_PER_ADDRESS", "0"),
        ("FERROZONE_HTTP_HEADER_TIMEOUT", "120"),
    ];
    let server = Server::start(dir.path(), &env).await;
    let to = address(&server.base);
    let mut first = connect_from(to, "127.0.0.2").await;
    let mut idle = Vec::new();
    for i in 3..10 {
        idle.push(connect_from(to, &format!("127.0.0.{i}")).await);
    }
    assert!(livez_from(to, "127.0.0.1").await.starts_with("HTTP/1.1 200"), "8 idle sockets locked a new client out");
    assert!(closed_by_server(&mut first).await.is_some(), "the longest waiting connection was kept");
}

/// `ferrozone serve` started through `sh` with the open-file limits `ulimit` sets.
struct Limited {
    child: Child,
    base: String,
}

impl Limited {
    async fn start(dir: &Path, ulimit: &str, env: &[(&str, &str)]) -> Limited {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let listen = format!("127.0.0.1:{port}");
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!("ulimit {ulimit} && exec \"$0\" serve")).arg(BIN);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("FERROZONE_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("FERROZONE_DATA_DIR", dir)
            .env("FERROZONE_WIREGUARD_BACKEND", "none")
            .env("FERROZONE_LISTEN", &listen)
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::null());
        let server = Limited { child: cmd.spawn().unwrap(), base: format!("http://{listen}") };
        let deadline = Instant::now() + Duration::from_secs(60);
        let client = reqwest::Client::new();
        while client.get(format!("{}/healthz", server.base)).send().await.map_or(true, |r| r.status() != 200) {
            assert!(Instant::now() < deadline, "ferrozone did not become healthy");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        server
    }
}

impl Drop for Limited {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_open_file_soft_limit_is_raised_to_the_hard_limit() {
    let dir = tempfile::tempdir().unwrap();
    let server = Limited::start(dir.path(), "-S -n 64", &[]).await;
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", server.child.id())).unwrap();
    let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap();
    let numbers: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(numbers[0], numbers[1], "soft and hard open-file limits: {line}");
    assert_ne!(numbers[0], "64", "{line}");
}

#[tokio::test]
async fn many_idle_sockets_under_a_small_open_file_limit_do_not_stop_livez() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("FERROZONE_HTTP_MAX_CONNECTIONS_PER_ADDRESS", "8"), ("FERROZONE_HTTP_HEADER_TIMEOUT", "120")];
    let server = Limited::start(dir.path(), "-n 128", &env).await;
    let to = address(&server.base);
    let mut idle = Vec::new();
    for _ in 0..150 {
        idle.push(connect_from(to, "127.0.0.2").await);
    }
    assert!(livez_from(to, "127.0.0.1").await.starts_with("HTTP/1.1 200"), "150 idle sockets stopped /livez");
    drop(idle);
}
