//! Both backends have the same migration history (file names), applied by `fresh()`.

use std::path::Path;

fn names(backend: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(backend);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn both_backends_have_the_same_migration_files() {
    let sqlite = names("sqlite");
    assert!(!sqlite.is_empty());
    assert_eq!(sqlite, names("postgres"));
}

#[test]
fn embedded_migrations_match_the_files() {
    let sqlite: Vec<String> =
        ferrozone_store::sqlite::MIGRATIONS.iter().map(|m| format!("{:04}_{}.sql", m.version, m.name)).collect();
    assert_eq!(sqlite, names("sqlite"), "every SQLite migration file is embedded, in order");
    let postgres: Vec<i64> = ferrozone_store::postgres::MIGRATOR.iter().map(|m| m.version).collect();
    assert_eq!(ferrozone_store::sqlite::MIGRATIONS.iter().map(|m| m.version).collect::<Vec<_>>(), postgres);
}

#[tokio::test]
async fn an_in_memory_database_works() {
    use ferrozone_domain::model::Role;
    let options = ferrozone_store::StoreOptions::default();
    let db = ferrozone_store::open("sqlite::memory:", &options).await.unwrap();
    db.migrate().await.unwrap();
    let store = db.into_store();
    let user = crate::support::user("a@example.com", Role::Admin);
    store.insert_user(&user).await.unwrap();
    assert_eq!(store.user_by_id(user.id).await.unwrap(), Some(user));
}

#[tokio::test]
async fn other_schemes_are_refused() {
    let err = ferrozone_store::connect("mysql://localhost/db", &Default::default()).await.err().unwrap();
    assert_eq!(err.to_string(), "unsupported database scheme `mysql`; use sqlite:// or postgres://");
}
