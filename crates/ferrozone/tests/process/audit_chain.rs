//! `ferrozone audit verify` against a real database: intact after a server's writes (two
//! servers at once on PostgreSQL), and naming the event someone edited, swapped, deleted or
//! added behind Ferrozone's back, or the head they moved.

use std::collections::HashSet;

use ferrozone_domain::audit::AuditQuery;
use ferrozone_domain::crypto::Cipher;
use ferrozone_store::testing::TestDb;

use crate::durability::{as_refs, roomy_env};
use crate::harness::{command, Api, Server};
use crate::shared_postgres::{postgres_configured, two_servers};

/// Runs `ferrozone audit verify` on `env`'s database: (success, what it said).
fn verify(env: &[(&str, &str)]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = command(dir.path(), env).args(["audit", "verify"]).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), said)
}

/// The seqs of every event, oldest first.
async fn seqs(db: &TestDb) -> Vec<i64> {
    let query = AuditQuery { after_seq: Some(0), limit: 10_000, ..AuditQuery::default() };
    db.store.audit_records(&query).await.unwrap().iter().map(|record| record.seq).collect()
}

/// Runs `statements` on the database directly, as someone with write access but no key.
async fn tamper(db: &TestDb, statements: &[&str]) {
    if db.backend == "postgres" {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        for statement in statements {
            sqlx::query(statement).execute(&pool).await.unwrap();
        }
        pool.close().await;
    } else {
        let path = db.url.trim_start_matches("sqlite://").to_owned();
        let statements: Vec<String> = statements.iter().map(|s| (*s).to_owned()).collect();
        tokio::task::spawn_blocking(move || {
            let conn = rusqlite::Connection::open(path).unwrap();
            for statement in statements {
                conn.execute_batch(&statement).unwrap();
            }
        })
        .await
        .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_names_the_event_that_was_edited_swapped_or_deleted() {
    let db = ferrozone_store::testing::fresh().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut env = roomy_env(&db.url);
    env.push(("FERROZONE_SECRET_KEY", Cipher::generate_key()));
    let env = as_refs(&env);
    let server = Server::start(dir.path(), &env).await;
    let api = Api::new(&server.base, &server.printed_token().unwrap());
    let admin = api.admin_id().await;
    for _ in 0..8 {
        api.create_device(&admin).await.unwrap().expect("201");
    }
    server.kill();
    // Verified before the test's own reads: on PostgreSQL a read seals the events still
    // pending, and the test's store chains with another key than the server's.
    let (ok, said) = verify(&env);
    let last = *seqs(&db).await.last().unwrap();
    assert!(ok, "{said}");
    assert!(said.contains(&format!("audit chain intact: {last} events (seq 1..{last})")), "{said}");

    tamper(
        &db,
        &[
            "UPDATE audit_events SET seq = -1 WHERE seq = 6",
            "UPDATE audit_events SET seq = 6 WHERE seq = 7",
            "UPDATE audit_events SET seq = 7 WHERE seq = -1",
        ],
    )
    .await;
    let (ok, said) = verify(&env);
    assert!(!ok && said.contains("audit chain broken at event 6"), "swapped: {said}");
    tamper(
        &db,
        &[
            "UPDATE audit_events SET seq = -1 WHERE seq = 7",
            "UPDATE audit_events SET seq = 7 WHERE seq = 6",
            "UPDATE audit_events SET seq = 6 WHERE seq = -1",
        ],
    )
    .await;
    assert!(verify(&env).0, "swapped back");

    tamper(&db, &["UPDATE audit_events SET request_id = 'forged' WHERE seq = 3"]).await;
    let (ok, said) = verify(&env);
    assert!(!ok && said.contains("audit chain broken at event 3: event 3 was edited"), "edited: {said}");

    tamper(&db, &["DELETE FROM audit_events WHERE seq <= 4 AND seq >= 3"]).await;
    let (ok, said) = verify(&env);
    assert!(!ok && said.contains("audit chain broken at event 3: events 3 to 4 are missing"), "deleted: {said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_finds_a_row_after_the_head_and_a_moved_pruned_mark() {
    let db = ferrozone_store::testing::fresh().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut env = roomy_env(&db.url);
    env.push(("FERROZONE_SECRET_KEY", Cipher::generate_key()));
    let env = as_refs(&env);
    let server = Server::start(dir.path(), &env).await;
    let api = Api::new(&server.base, &server.printed_token().unwrap());
    let admin = api.admin_id().await;
    for _ in 0..6 {
        api.create_device(&admin).await.unwrap().expect("201");
    }
    server.kill();
    let (ok, said) = verify(&env);
    assert!(ok, "{said}");
    let last = *seqs(&db).await.last().unwrap();

    // A copy of the last row, one seq further, the head left as it is.
    let added = format!(
        "INSERT INTO audit_events (seq, id, at, actor_kind, actor_id, actor_user_id, action, subject_kind, \
         subject_id, changes, client_address, request_id, prev_hash, hash) \
         SELECT seq + 1, {}, at, actor_kind, actor_id, actor_user_id, action, subject_kind, subject_id, \
         changes, client_address, request_id, hash, hash FROM audit_events WHERE seq = {last}",
        if db.backend == "postgres" { "gen_random_uuid()" } else { "randomblob(16)" }
    );
    tamper(&db, &[&added]).await;
    let (ok, said) = verify(&env);
    let expected = format!("audit chain broken at event {}: event {} comes after the chain's head", last + 1, last + 1);
    assert!(!ok && said.contains(&expected), "added: {said}");
    tamper(&db, &[&format!("DELETE FROM audit_events WHERE seq > {last}")]).await;
    assert!(verify(&env).0, "removed again");

    // The first three events deleted and the mark moved past them, as retention would.
    tamper(
        &db,
        &[
            "UPDATE audit_head SET pruned_seq = 3, pruned_hash = (SELECT hash FROM audit_events WHERE seq = 3)",
            "DELETE FROM audit_events WHERE seq <= 3",
        ],
    )
    .await;
    let (ok, said) = verify(&env);
    assert!(!ok && said.contains("audit chain broken: the chain's head does not match its seal"), "moved: {said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_postgres_append_one_chain_without_gaps() {
    if !postgres_configured() {
        return;
    }
    let key = Cipher::generate_key();
    let (a, b, token, db) = two_servers(&[("FERROZONE_SECRET_KEY", key.clone())]).await;
    let apis = [Api::new(&a.base, &token), Api::new(&b.base, &token)];
    let admin = apis[0].admin_id().await;
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let (api, admin) = (apis[i % 2].clone(), admin.clone());
            tokio::spawn(async move {
                for _ in 0..10 {
                    api.create_device(&admin).await.unwrap().expect("201");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }

    // Verified (and so sealed, with the servers' key) before the test's own reads, which
    // would seal what is still pending with the test store's key.
    let mut env = roomy_env(&db.url);
    env.push(("FERROZONE_SECRET_KEY", key));
    let (ok, said) = verify(&as_refs(&env));
    let seqs = seqs(&db).await;
    let n = i64::try_from(seqs.len()).unwrap();
    assert_eq!(seqs, (1..=n).collect::<Vec<_>>(), "seqs 1..N in seal order, no gap");
    let query = AuditQuery { action: Some("device.created".into()), limit: 1000, ..AuditQuery::default() };
    let created = db.store.audit_records(&query).await.unwrap();
    let devices: HashSet<_> = created.iter().map(|record| record.subject_id.clone()).collect();
    assert_eq!(devices.len(), 60, "one device.created per device");
    assert!(ok, "{said}");
    assert!(said.contains(&format!("audit chain intact: {n} events (seq 1..{n})")), "{said}");
}
