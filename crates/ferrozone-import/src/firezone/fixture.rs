//! A Firezone 0.7.36 installation for tests: a fresh PostgreSQL database with the 0.7.36
//! schema (`fixtures/firezone-0.7.36.sql`) and realistic rows, the secrets that go with
//! it, and the rows a malformed installation has (a device without a preshared key, an
//! MFA payload that is not a Cloak value, an address outside the tunnel networks, emails
//! that only Unicode case tells apart). Also a bulk mode for benchmarks.

use std::net::{Ipv4Addr, Ipv6Addr};

use anyhow::Context;
use argon2::password_hash::{rand_core::OsRng, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ferrozone_domain::crypto::{generate_keypair, generate_psk};
use ipnet::{Ipv4Net, Ipv6Net};
use rand::RngCore;
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use super::cloak::CloakKey;
use crate::scratch::ScratchDatabase;

/// The 0.7.36 schema.
pub const SCHEMA_SQL: &str = include_str!("../../fixtures/firezone-0.7.36.sql");

/// The password of the fixture's admin and of its other users.
pub const ADMIN_PASSWORD: &str = "firezone-admin-password";
pub const USER_PASSWORD: &str = "firezone-user-password";

/// How the installation was made, which decides its tunnel networks and secret files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `.env` with 100.64.0.0/10 and fd00::/106.
    Docker,
    /// `secrets.json`, Firezone's default networks 10.3.2.0/24 and fd00::3:2:0/120.
    Omnibus,
}

impl Layout {
    fn networks(self) -> (Ipv4Net, Ipv6Net) {
        let parse = |v4: &str, v6: &str| (v4.parse().expect("constant"), v6.parse().expect("constant"));
        match self {
            Layout::Docker => parse("100.64.0.0/10", "fd00::/106"),
            Layout::Omnibus => parse("10.3.2.0/24", "fd00::3:2:0/120"),
        }
    }
}

/// A built installation. Its database is dropped with it.
#[derive(Debug)]
pub struct Installation {
    pub database: ScratchDatabase,
    pub layout: Layout,
    pub database_encryption_key: String,
    pub guardian_secret_key: String,
    /// The text of the server's private key file.
    pub private_key_file: String,
    pub server_public_key: String,
    /// A Docker install's `.env` (for an Omnibus one: empty).
    pub env_file: String,
    /// An Omnibus install's `secrets.json` (for a Docker one: empty).
    pub secrets_json: String,
    /// The rows it holds and which ones are malformed.
    pub expected: Expected,
}

/// What the realistic installation holds.
#[derive(Debug, Clone, Default)]
pub struct Expected {
    pub users: usize,
    pub devices: usize,
    pub tokens: usize,
    pub rules: usize,
    pub oidc_connections: usize,
    pub mfa_methods: usize,
    /// The device kept without a preshared key.
    pub device_without_psk: Uuid,
    /// The device whose address is outside the tunnel networks.
    pub device_outside: Uuid,
    /// The MFA method whose payload is not a Cloak value.
    pub junk_mfa: Uuid,
    /// The email Ferrozone sees as a duplicate of another (Unicode case).
    pub duplicate_email: String,
    /// The admin's TOTP secret.
    pub totp_secret: Vec<u8>,
    /// The admin's laptop, as its WireGuard client holds it.
    pub client: Client,
}

/// What a Firezone client's configuration holds of its device: enough to bring the tunnel
/// up without asking the server for anything.
#[derive(Debug, Clone, Default)]
pub struct Client {
    pub device_id: Uuid,
    pub private_key: String,
    pub preshared_key: String,
    pub ipv4: String,
    pub ipv6: String,
}

/// The secrets of a new installation, made as its installer makes them.
struct Secrets {
    cloak: CloakKey,
    database_encryption_key: String,
    guardian_secret_key: String,
}

fn random_base64(len: usize) -> String {
    let mut bytes = vec![0u8; len];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    STANDARD.encode(bytes)
}

impl Secrets {
    fn new() -> Self {
        let database_encryption_key = random_base64(32);
        let cloak = CloakKey::from_base64(&database_encryption_key).expect("32 random bytes");
        Self { cloak, database_encryption_key, guardian_secret_key: random_base64(48) }
    }
}

/// An Argon2id hash with Firezone 0.7's parameters (m=128 MiB, t=8, p=4): slow, so hash
/// each distinct password once.
pub fn firezone_hash(password: &str) -> anyhow::Result<String> {
    let params = Params::new(131_072, 8, 4, Some(32)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let salt = SaltString::generate(&mut OsRng);
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing failed: {e}"))
}

/// A new database on the server of `server_url` with the 0.7.36 schema and nothing else.
pub async fn empty(server_url: &str) -> anyhow::Result<(ScratchDatabase, PgConnection)> {
    let database = ScratchDatabase::create(server_url, "firezone_fixture").await?;
    let mut conn = PgConnection::connect(&database.url).await.context("connect to the fixture database")?;
    sqlx::raw_sql(SCHEMA_SQL).execute(&mut conn).await.context("load the 0.7.36 schema")?;
    Ok((database, conn))
}

fn files(layout: Layout, secrets: &Secrets) -> (String, String) {
    let Secrets { database_encryption_key: key, guardian_secret_key: guardian, .. } = secrets;
    match layout {
        Layout::Docker => (
            format!(
                "# Firezone's .env\nVERSION=0.7.36\nEXTERNAL_URL=https://vpn.example.com\n\
                 DEFAULT_ADMIN_EMAIL=admin@example.com\nGUARDIAN_SECRET_KEY={guardian}\n\
                 DATABASE_ENCRYPTION_KEY={key}\nSECRET_KEY_BASE={}\nDATABASE_PASSWORD=\"{}\"\n\
                 WIREGUARD_IPV4_NETWORK=100.64.0.0/10\nWIREGUARD_IPV4_ADDRESS=100.64.0.1\n\
                 WIREGUARD_IPV6_NETWORK=fd00::/106\nWIREGUARD_IPV6_ADDRESS=fd00::1\nTELEMETRY_ENABLED=false\n",
                random_base64(48),
                random_base64(12)
            ),
            String::new(),
        ),
        Layout::Omnibus => (
            String::new(),
            serde_json::json!({
                "guardian_secret_key": guardian,
                "database_encryption_key": key,
                "secret_key_base": random_base64(48),
                "live_view_signing_salt": random_base64(24),
                "cookie_signing_salt": random_base64(6),
                "cookie_encryption_salt": random_base64(6),
                "default_admin_password": random_base64(12),
            })
            .to_string(),
        ),
    }
}

/// A realistic installation of `layout`, with every malformed case.
pub async fn realistic(server_url: &str, layout: Layout) -> anyhow::Result<Installation> {
    let (database, mut conn) = empty(server_url).await?;
    let secrets = Secrets::new();
    let server = generate_keypair();
    let mut rows = Rows { conn: &mut conn, cloak: &secrets.cloak, layout, next_host: 2 };
    let expected = rows.fill().await?;
    drop(conn);
    let (env_file, secrets_json) = files(layout, &secrets);
    Ok(Installation {
        database,
        layout,
        database_encryption_key: secrets.database_encryption_key,
        guardian_secret_key: secrets.guardian_secret_key,
        private_key_file: format!("{}\n", *server.private_key),
        server_public_key: server.public_key,
        env_file,
        secrets_json,
        expected,
    })
}

struct Rows<'a> {
    conn: &'a mut PgConnection,
    cloak: &'a CloakKey,
    layout: Layout,
    /// The host number of the next device address in the tunnel networks.
    next_host: u32,
}

impl Rows<'_> {
    async fn fill(&mut self) -> anyhow::Result<Expected> {
        let admin_hash = firezone_hash(ADMIN_PASSWORD)?;
        let user_hash = firezone_hash(USER_PASSWORD)?;
        let admin = self.user("admin@example.com", Some(&admin_hash), "admin", false).await?;
        let bob = self.user("bob@example.com", Some(&user_hash), "unprivileged", false).await?;
        let carol = self.user("carol@example.com", None, "unprivileged", false).await?;
        let dave = self.user("dave@example.com", Some(&user_hash), "unprivileged", true).await?;
        let kate = self.user("kate@example.com", Some(&user_hash), "unprivileged", false).await?;
        // PostgreSQL's lower() gives `σ` for a final `Σ` (or keeps it, in the C locale), so
        // citext tells these apart; Unicode's lower case gives the final `ς`, so Ferrozone
        // does not.
        self.user("\u{3bf}\u{3b4}\u{3bf}\u{3c2}@example.com", Some(&user_hash), "unprivileged", false).await?;
        let duplicate_email = "\u{39f}\u{394}\u{39f}\u{3a3}@example.com".to_owned();
        self.user(&duplicate_email, Some(&user_hash), "unprivileged", false).await?;

        let psk = |rows: &Self| Some(rows.cloak.seal(generate_psk().as_bytes()));
        let client = self.client_device(admin, "admin-laptop").await?;
        self.device(bob, "bob-phone", psk(self), None).await?;
        let device_without_psk = self.device(bob, "bob-old-router", None, None).await?;
        self.device(dave, "dave-laptop", psk(self), None).await?;
        let device_outside = self.device(kate, "kate-desktop", psk(self), Some("192.168.77.7")).await?;
        self.custom_device(carol).await?;

        self.token(admin, Some("30 days")).await?;
        self.token(admin, None).await?;
        self.token(bob, Some("-1 day")).await?;

        self.rule("10.0.0.0/8", "drop", None, None).await?;
        self.rule("10.0.0.5", "accept", Some(bob), Some(("tcp", 80, 443))).await?;
        self.rule("1.1.1.1/24", "accept", None, Some(("udp", 53, 53))).await?;

        let totp_secret: Vec<u8> = (0..20).map(|i| i * 7 + 1).collect();
        let payload = format!(r#"{{"secret":"{}"}}"#, STANDARD.encode(&totp_secret));
        self.mfa(admin, "totp", self.cloak.seal(payload.as_bytes())).await?;
        // Migration 20230116200524 filled empty payloads with random base64, not Cloak values.
        let junk_mfa = self.mfa(bob, "totp", random_base64(24).into_bytes()).await?;

        sqlx::query(
            "INSERT INTO oidc_connections (user_id, provider, refresh_token, refreshed_at, refresh_response, \
             inserted_at, updated_at) VALUES ($1, 'google', 'refresh-token-of-carol', now(), '{}', now(), now())",
        )
        .bind(carol)
        .execute(&mut *self.conn)
        .await?;
        self.configuration().await?;
        Ok(Expected {
            users: 7,
            devices: 6,
            tokens: 3,
            rules: 3,
            oidc_connections: 1,
            mfa_methods: 2,
            device_without_psk,
            device_outside,
            junk_mfa,
            duplicate_email,
            totp_secret,
            client,
        })
    }

    /// A device whose private and preshared keys are known, as its client has them.
    async fn client_device(&mut self, user_id: Uuid, name: &str) -> anyhow::Result<Client> {
        let keys = generate_keypair();
        let preshared_key = generate_psk().to_string();
        let (ipv4, ipv6) = self.next_addresses();
        let sealed = Some(self.cloak.seal(preshared_key.as_bytes()));
        let device_id = self.insert_device(user_id, name, &keys.public_key, sealed, &ipv4.to_string(), ipv6).await?;
        let private_key = keys.private_key.to_string();
        Ok(Client { device_id, private_key, preshared_key, ipv4: ipv4.to_string(), ipv6: ipv6.to_string() })
    }

    async fn user(&mut self, email: &str, hash: Option<&str>, role: &str, disabled: bool) -> anyhow::Result<Uuid> {
        let id: Uuid = sqlx::query_scalar(
            "INSERT INTO users (email, password_hash, role, last_signed_in_at, last_signed_in_method, \
             disabled_at, inserted_at, updated_at) VALUES ($1, $2, $3::role_enum, now() - interval '1 day', \
             'email', CASE WHEN $4 THEN now() ELSE NULL END, now() - interval '90 days', now()) RETURNING id",
        )
        .bind(email)
        .bind(hash)
        .bind(role)
        .bind(disabled)
        .fetch_one(&mut *self.conn)
        .await?;
        Ok(id)
    }

    fn next_addresses(&mut self) -> (Ipv4Addr, Ipv6Addr) {
        let (v4, v6) = self.layout.networks();
        let host = self.next_host;
        self.next_host += 1;
        (Ipv4Addr::from(u32::from(v4.network()) + host), Ipv6Addr::from(u128::from(v6.network()) + u128::from(host)))
    }

    async fn device(
        &mut self,
        user_id: Uuid,
        name: &str,
        psk: Option<Vec<u8>>,
        ipv4: Option<&str>,
    ) -> anyhow::Result<Uuid> {
        let (v4, v6) = self.next_addresses();
        let ipv4 = ipv4.map_or_else(|| v4.to_string(), str::to_owned);
        self.insert_device(user_id, name, &generate_keypair().public_key, psk, &ipv4, v6).await
    }

    async fn insert_device(
        &mut self,
        user_id: Uuid,
        name: &str,
        public_key: &str,
        psk: Option<Vec<u8>>,
        ipv4: &str,
        ipv6: Ipv6Addr,
    ) -> anyhow::Result<Uuid> {
        let id: Uuid = sqlx::query_scalar(
            "INSERT INTO devices (user_id, name, public_key, preshared_key, ipv4, ipv6, remote_ip, \
             latest_handshake, rx_bytes, tx_bytes, inserted_at, updated_at) VALUES ($1, $2, $3, $4, $5::inet, \
             $6::inet, '203.0.113.9', now() - interval '1 minute', 1000, 2000, now() - interval '30 days', now()) \
             RETURNING id",
        )
        .bind(user_id)
        .bind(name)
        .bind(public_key)
        .bind(psk)
        .bind(ipv4)
        .bind(ipv6.to_string())
        .fetch_one(&mut *self.conn)
        .await?;
        Ok(id)
    }

    /// A device with its own client settings instead of the defaults.
    async fn custom_device(&mut self, user_id: Uuid) -> anyhow::Result<Uuid> {
        let (v4, v6) = self.next_addresses();
        let id: Uuid = sqlx::query_scalar(
            "INSERT INTO devices (user_id, name, description, public_key, preshared_key, ipv4, ipv6, allowed_ips, \
             dns, endpoint, mtu, persistent_keepalive, use_default_allowed_ips, use_default_dns, \
             use_default_endpoint, use_default_mtu, use_default_persistent_keepalive, inserted_at, updated_at) \
             VALUES ($1, 'carol-split', 'split tunnel', $2, $3, $4::inet, $5::inet, '{10.0.0.0/8,192.168.1.1}', \
             '{9.9.9.9}', 'vpn2.example.com:51820', 1380, 15, false, false, false, false, false, now(), now()) \
             RETURNING id",
        )
        .bind(user_id)
        .bind(generate_keypair().public_key)
        .bind(self.cloak.seal(generate_psk().as_bytes()))
        .bind(v4.to_string())
        .bind(v6.to_string())
        .fetch_one(&mut *self.conn)
        .await?;
        Ok(id)
    }

    async fn token(&mut self, user_id: Uuid, expires_in: Option<&str>) -> anyhow::Result<()> {
        sqlx::query(
            "INSERT INTO api_tokens (user_id, expires_at, inserted_at) VALUES ($1, now() + $2::interval, now())",
        )
        .bind(user_id)
        .bind(expires_in)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }

    async fn rule(
        &mut self,
        destination: &str,
        action: &str,
        user_id: Option<Uuid>,
        ports: Option<(&str, i32, i32)>,
    ) -> anyhow::Result<()> {
        sqlx::query(
            "INSERT INTO rules (destination, action, user_id, port_type, port_range, inserted_at, updated_at) \
             VALUES ($1::inet, $2::action_enum, $3, $4::port_type_enum, \
             CASE WHEN $5::int IS NULL THEN NULL ELSE int4range($5, $6, '[]') END, now(), now())",
        )
        .bind(destination)
        .bind(action)
        .bind(user_id)
        .bind(ports.map(|p| p.0))
        .bind(ports.map(|p| p.1))
        .bind(ports.map(|p| p.2))
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }

    async fn mfa(&mut self, user_id: Uuid, kind: &str, payload: Vec<u8>) -> anyhow::Result<Uuid> {
        let id: Uuid = sqlx::query_scalar(
            "INSERT INTO mfa_methods (user_id, name, type, payload, last_used_at, inserted_at, updated_at) \
             VALUES ($1, 'My Authenticator', $2::mfa_type_enum, $3, now() at time zone 'utc', now(), now()) \
             RETURNING id",
        )
        .bind(user_id)
        .bind(kind)
        .bind(payload)
        .fetch_one(&mut *self.conn)
        .await?;
        Ok(id)
    }

    async fn configuration(&mut self) -> anyhow::Result<()> {
        let oidc = serde_json::json!([{
            "id": "google", "label": "Google", "scope": "openid email profile", "response_type": "code",
            "client_id": "fixture-client", "client_secret": "fixture-secret", "auto_create_users": true,
            "discovery_document_uri": "https://accounts.google.com/.well-known/openid-configuration",
            "redirect_uri": null
        }]);
        sqlx::query(
            "INSERT INTO configurations (local_auth_enabled, allow_unprivileged_device_management, \
             allow_unprivileged_device_configuration, disable_vpn_on_oidc_error, \
             default_client_persistent_keepalive, default_client_mtu, default_client_endpoint, default_client_dns, \
             default_client_allowed_ips, vpn_session_duration, openid_connect_providers, saml_identity_providers, \
             inserted_at, updated_at) VALUES (true, true, false, false, 25, 1280, 'vpn.example.com:51820', \
             '{1.1.1.1,1.0.0.1}', '{0.0.0.0/0,::/0}', 0, $1::jsonb, '[]', now(), now())",
        )
        .bind(oidc.to_string())
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }
}

/// A large Docker installation: `users` users with `devices` devices spread over them,
/// each with its own key, preshared key and addresses; one password hash for all.
pub async fn bulk(server_url: &str, users: usize, devices: usize) -> anyhow::Result<Installation> {
    anyhow::ensure!(users > 0 || devices == 0, "devices need users");
    let (database, mut conn) = empty(server_url).await?;
    let secrets = Secrets::new();
    let hash = firezone_hash(USER_PASSWORD)?;
    let user_ids: Vec<Uuid> = (0..users).map(|_| Uuid::new_v4()).collect();
    for chunk in user_ids.chunks(5_000) {
        sqlx::query(
            "INSERT INTO users (id, email, password_hash, role, inserted_at, updated_at) \
             SELECT id, 'user-' || id || '@bulk.example', $2, 'unprivileged', now(), now() FROM unnest($1::uuid[]) id",
        )
        .bind(chunk)
        .bind(&hash)
        .execute(&mut conn)
        .await?;
    }
    let (v4, v6) = Layout::Docker.networks();
    for start in (0..devices).step_by(5_000) {
        let end = (start + 5_000).min(devices);
        let owners: Vec<Uuid> = (start..end).map(|i| user_ids[i % users]).collect();
        let keys: Vec<String> = (start..end).map(|_| random_base64(32)).collect();
        let psks: Vec<Vec<u8>> = (start..end).map(|_| secrets.cloak.seal(generate_psk().as_bytes())).collect();
        let host = |i: usize| u32::try_from(i + 2).expect("fewer than 2^32 devices");
        let ipv4s: Vec<String> =
            (start..end).map(|i| Ipv4Addr::from(u32::from(v4.network()) + host(i)).to_string()).collect();
        let ipv6s: Vec<String> =
            (start..end).map(|i| Ipv6Addr::from(u128::from(v6.network()) + u128::from(host(i))).to_string()).collect();
        sqlx::query(
            "INSERT INTO devices (user_id, name, public_key, preshared_key, ipv4, ipv6, inserted_at, updated_at) \
             SELECT u, 'device-' || k, k, p, v4::inet, v6::inet, now(), now() \
             FROM unnest($1::uuid[], $2::text[], $3::bytea[], $4::text[], $5::text[]) AS t(u, k, p, v4, v6)",
        )
        .bind(&owners)
        .bind(&keys)
        .bind(&psks)
        .bind(&ipv4s)
        .bind(&ipv6s)
        .execute(&mut conn)
        .await?;
    }
    drop(conn);
    let server = generate_keypair();
    let (env_file, secrets_json) = files(Layout::Docker, &secrets);
    Ok(Installation {
        database,
        layout: Layout::Docker,
        database_encryption_key: secrets.database_encryption_key,
        guardian_secret_key: secrets.guardian_secret_key,
        private_key_file: server.private_key.to_string(),
        server_public_key: server.public_key,
        env_file,
        secrets_json,
        expected: Expected { users, devices, ..Expected::default() },
    })
}
