//! A PostgreSQL database made for one job and dropped after it: where a `pg_dump` of the
//! source is loaded, and where test fixtures build a source.

use std::time::Duration;

use anyhow::Context;
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

/// A database created on a server; [`ScratchDatabase::drop_now`] (or dropping the value)
/// removes it.
#[derive(Debug)]
pub struct ScratchDatabase {
    /// The URL of the new database.
    pub url: String,
    /// The URL it was created through, to drop it with.
    server_url: String,
    name: String,
    dropped: bool,
}

impl ScratchDatabase {
    /// Creates an empty database named `<prefix>_<random>` on the server of `server_url`
    /// (whose role needs CREATEDB).
    pub async fn create(server_url: &str, prefix: &str) -> anyhow::Result<Self> {
        let name = format!("{prefix}_{}", Uuid::new_v4().simple());
        let mut conn = PgConnection::connect(server_url)
            .await
            .with_context(|| format!("cannot connect to the scratch database server {}", redacted(server_url)))?;
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .with_context(|| format!("cannot create the scratch database {name}"))?;
        let _ = conn.close().await;
        let mut url = url::Url::parse(server_url).context("the scratch database URL is not a URL")?;
        url.set_path(&name);
        Ok(Self { url: url.into(), server_url: server_url.to_owned(), name, dropped: false })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Drops the database, ending any connection still open to it.
    pub async fn drop_now(mut self) -> anyhow::Result<()> {
        self.dropped = true;
        drop_database(&self.server_url, &self.name).await
    }
}

async fn drop_database(server_url: &str, name: &str) -> anyhow::Result<()> {
    let mut conn = PgConnection::connect(server_url).await?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut conn)
        .await
        .with_context(|| format!("cannot drop the scratch database {name}"))?;
    let _ = conn.close().await;
    Ok(())
}

impl Drop for ScratchDatabase {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        // Drop may run inside a runtime, which cannot be blocked on: drop the database from
        // a thread with a runtime of its own. Best effort: a failure is only reported.
        let (server_url, name) = (self.server_url.clone(), self.name.clone());
        let dropper = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            // The timer must be made inside the runtime.
            let work = async { tokio::time::timeout(Duration::from_secs(15), drop_database(&server_url, &name)).await };
            match runtime.block_on(work) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => eprintln!("{e:#}"),
                Err(_) => eprintln!("cannot drop the scratch database {name}: timed out"),
            }
        });
        let _ = dropper.join();
    }
}

/// What the role of `server_url` may do beyond the databases it creates: being a
/// superuser, running programs or using files on the database server, or granting itself
/// that (CREATEDB alone is none of these). Empty for a role fit to load an untrusted dump.
pub async fn role_powers(server_url: &str) -> anyhow::Result<Vec<&'static str>> {
    let mut conn = PgConnection::connect(server_url)
        .await
        .with_context(|| format!("cannot connect to the scratch database server {}", redacted(server_url)))?;
    let powers: (bool, bool, bool, bool, bool) = sqlx::query_as(
        "SELECT r.rolsuper, r.rolcreaterole, \
         pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER'), \
         pg_has_role(current_user, 'pg_write_server_files', 'MEMBER'), \
         pg_has_role(current_user, 'pg_read_server_files', 'MEMBER') \
         FROM pg_roles r WHERE r.rolname = current_user",
    )
    .fetch_one(&mut conn)
    .await
    .context("reading the scratch role's attributes")?;
    let _ = conn.close().await;
    Ok(power_names(powers))
}

fn power_names((superuser, createrole, program, write, read): (bool, bool, bool, bool, bool)) -> Vec<&'static str> {
    if superuser {
        return vec!["SUPERUSER"];
    }
    [
        (createrole, "CREATEROLE"),
        (program, "pg_execute_server_program"),
        (write, "pg_write_server_files"),
        (read, "pg_read_server_files"),
    ]
    .into_iter()
    .filter_map(|(has, name)| has.then_some(name))
    .collect()
}

/// `url` without its password, for messages.
pub fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.into()
        }
        Ok(parsed) => parsed.into(),
        Err(_) => "<invalid URL>".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_superuser_is_named_as_such_and_other_powers_each() {
        assert_eq!(super::power_names((true, true, true, true, true)), ["SUPERUSER"]);
        assert_eq!(super::power_names((false, true, false, true, false)), ["CREATEROLE", "pg_write_server_files"]);
        assert!(super::power_names((false, false, false, false, false)).is_empty());
    }
}
