//! Firezone 0.7's environment beyond the plain aliases: the `DATABASE_*` variables, which
//! together make the PostgreSQL URL, and the warnings for Firezone variables Ferrozone does
//! not honour, so that a Firezone `.env` never starts something other than it says in silence.

use anyhow::{bail, Context};
use ferrozone_domain::percent;

/// The parts of Firezone's database connection. Host, name and user have no default here
/// (Firezone's defaults suit its Docker network only), so each must be set.
const HOST: &str = "DATABASE_HOST";
const PORT: &str = "DATABASE_PORT";
const NAME: &str = "DATABASE_NAME";
const USER: &str = "DATABASE_USER";
const PASSWORD: &str = "DATABASE_PASSWORD";
/// `DATABASE_SSL` is the older name of `DATABASE_SSL_ENABLED`.
const SSL: [&str; 2] = ["DATABASE_SSL_ENABLED", "DATABASE_SSL"];

/// Every variable [`database_url`] reads.
pub const DATABASE_PARTS: [&str; 7] = [HOST, PORT, NAME, USER, PASSWORD, SSL[0], SSL[1]];

/// The PostgreSQL URL Firezone's `DATABASE_*` variables (read through `var`) describe, or
/// `None` when none is set. A set that names no complete database (a password without a
/// host, say) is an error that says what is missing, rather than a start on SQLite.
pub fn database_url(var: impl Fn(&str) -> Option<String>) -> anyhow::Result<Option<String>> {
    let set: Vec<&str> = DATABASE_PARTS.iter().copied().filter(|name| var(name).is_some()).collect();
    if set.is_empty() {
        return Ok(None);
    }
    let missing: Vec<&str> = [HOST, NAME, USER].into_iter().filter(|name| var(name).is_none()).collect();
    if !missing.is_empty() {
        bail!(
            "{} set, but not {}: Firezone's DATABASE_* variables name a PostgreSQL database only with \
             DATABASE_HOST, DATABASE_NAME and DATABASE_USER; set those, or FERROZONE_DATABASE_URL",
            set.join(", "),
            missing.join(", ")
        );
    }
    let port = match var(PORT) {
        Some(port) => port.trim().parse::<u16>().with_context(|| format!("{PORT}: `{port}` is not a port number"))?,
        None => 5432,
    };
    let mut url = url::Url::parse("postgres://localhost").unwrap_or_else(|_| unreachable!("a constant URL"));
    let host = var(HOST).unwrap_or_default();
    let host = if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host };
    url.set_host(Some(host.trim())).with_context(|| format!("{HOST}: `{host}` is not a host name or address"))?;
    // These cannot fail on a URL with a host. User, password and name are percent-encoded
    // here: the `url` crate leaves `%` alone in them, which the driver would then decode.
    let _ = url.set_port(Some(port));
    let _ = url.set_username(&percent::encode(&var(USER).unwrap_or_default(), b""));
    if let Some(password) = var(PASSWORD).filter(|p| !p.is_empty()) {
        let _ = url.set_password(Some(&percent::encode(&password, b"")));
    }
    url.set_path(&format!("/{}", percent::encode(&var(NAME).unwrap_or_default(), b"")));
    if ssl(&var)? {
        url.query_pairs_mut().append_pair("sslmode", "require");
    }
    Ok(Some(url.into()))
}

/// Whether `DATABASE_SSL_ENABLED` (or `DATABASE_SSL`) asks for TLS: Firezone's booleans are
/// exactly `true` or `false`.
fn ssl(var: &impl Fn(&str) -> Option<String>) -> anyhow::Result<bool> {
    let Some((name, value)) = SSL.iter().find_map(|name| var(name).map(|value| (name, value))) else {
        return Ok(false);
    };
    match value.trim() {
        "true" => Ok(true),
        "false" | "" => Ok(false),
        other => bail!("{name}: `{other}` is not `true` or `false`"),
    }
}

/// Firezone secrets that only an import reads.
const IMPORT_ONLY: &[&str] = &["DATABASE_ENCRYPTION_KEY", "GUARDIAN_SECRET_KEY"];

/// Firezone variables with no meaning here: Phoenix's cookie secrets (users sign in again
/// after a move) and the Docker install's own. Names as general as `VERSION`, `TID` or
/// `LOGO` are left out of every list: other software sets them too.
const NOT_NEEDED: &[&str] = &[
    "SECRET_KEY_BASE",
    "LIVE_VIEW_SIGNING_SALT",
    "COOKIE_SIGNING_SALT",
    "COOKIE_ENCRYPTION_SALT",
    "FZ_INSTALL_DIR",
    "TELEMETRY_ENABLED",
    "TELEMETRY_ID",
];

/// Firezone variables whose setting Ferrozone cannot honour, each with what to do instead.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("PHOENIX_LISTEN_ADDRESS", "set FERROZONE_LISTEN (address and port)"),
    ("PHOENIX_HTTP_PORT", "set FERROZONE_LISTEN (address and port)"),
    ("PHOENIX_PORT", "set FERROZONE_LISTEN (address and port)"),
    ("PHOENIX_SECURE_COOKIES", "cookies are Secure when FERROZONE_EXTERNAL_URL is https"),
    ("SECURE_COOKIES", "cookies are Secure when FERROZONE_EXTERNAL_URL is https"),
    ("PHOENIX_EXTERNAL_TRUSTED_PROXIES", "Ferrozone never trusts forwarded-for headers"),
    ("EXTERNAL_TRUSTED_PROXIES", "Ferrozone never trusts forwarded-for headers"),
    ("PHOENIX_PRIVATE_CLIENTS", "Ferrozone never trusts forwarded-for headers"),
    ("PRIVATE_CLIENTS", "Ferrozone never trusts forwarded-for headers"),
    ("PHOENIX_HTTP_PROTOCOL_OPTIONS", "the HTTP server has FERROZONE_HTTP_* settings of its own"),
    ("TLS_OPTS", "put a reverse proxy in front for TLS"),
    ("DATABASE_SSL_OPTS", "give sslmode, sslrootcert and friends in FERROZONE_DATABASE_URL"),
    ("DATABASE_PARAMETERS", "give connection parameters in FERROZONE_DATABASE_URL"),
    ("RESET_ADMIN_ON_BOOT", "change a password with the API or the web instead"),
    ("WIREGUARD_IPV4_MASQUERADE", "FERROZONE_MASQUERADE covers both address families"),
    ("WIREGUARD_IPV6_MASQUERADE", "FERROZONE_MASQUERADE covers both address families"),
    (
        "WIREGUARD_PRIVATE_KEY_PATH",
        "the server key lives in the database; `ferrozone import firezone --private-key-file` takes Firezone's",
    ),
    ("WIREGUARD_INTERFACE_NAME", "set FERROZONE_WIREGUARD_INTERFACE"),
    ("WIREGUARD_ALLOWED_IPS", "Firezone read it only when it first migrated; set DEFAULT_CLIENT_ALLOWED_IPS"),
    (
        "WIREGUARD_PERSISTENT_KEEPALIVE",
        "Firezone read it only when it first migrated; set DEFAULT_CLIENT_PERSISTENT_KEEPALIVE",
    ),
    ("WIREGUARD_ENDPOINT", "Firezone read it only when it first migrated; set DEFAULT_CLIENT_ENDPOINT"),
    ("AUTO_CREATE_OIDC_USERS", "set auto_create_users on each OpenID Connect provider"),
    ("CONNECTIVITY_CHECKS_ENABLED", "Ferrozone makes no connectivity checks"),
    ("CONNECTIVITY_CHECKS_INTERVAL", "Ferrozone makes no connectivity checks"),
    ("HTTP_CLIENT_SSL_OPTS", "outgoing TLS uses the system's certificate store"),
];

/// The warnings for the Firezone variables set (read through `var`) that Ferrozone does not
/// honour. `database_url_set`: `FERROZONE_DATABASE_URL` is set, so `DATABASE_*` are unused.
pub fn warnings(var: impl Fn(&str) -> Option<String>, database_url_set: bool) -> Vec<String> {
    let is_set = |name: &&str| var(name).is_some();
    let mut warnings = Vec::new();
    let import: Vec<&str> = IMPORT_ONLY.iter().copied().filter(is_set).collect();
    if !import.is_empty() {
        warnings.push(format!(
            "Firezone's {} ignored: only `ferrozone import firezone` needs them (give it the Firezone .env with --env-file)",
            names(&import)
        ));
    }
    let unneeded: Vec<&str> = NOT_NEEDED.iter().copied().filter(is_set).collect();
    if !unneeded.is_empty() {
        warnings.push(format!("Firezone's {} ignored: Ferrozone has no use for them", names(&unneeded)));
    }
    for (name, instead) in UNSUPPORTED.iter().filter(|(name, _)| is_set(name)) {
        warnings.push(format!("Firezone's {name} is not supported and is ignored: {instead}"));
    }
    let database: Vec<&str> = DATABASE_PARTS.iter().copied().filter(is_set).collect();
    if database_url_set && !database.is_empty() {
        warnings.push(format!("Firezone's {} ignored: FERROZONE_DATABASE_URL is set", names(&database)));
    }
    warnings
}

/// `A is` or `A, B are`.
fn names(list: &[&str]) -> String {
    match list {
        [one] => format!("{one} is"),
        many => format!("{} are", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn no_database_variable_gives_no_url() {
        assert_eq!(database_url(env(&[])).unwrap(), None);
    }

    #[test]
    fn the_database_variables_make_a_url_with_user_and_password_encoded() {
        let url = database_url(env(&[
            ("DATABASE_HOST", "db.internal"),
            ("DATABASE_NAME", "firezone"),
            ("DATABASE_USER", "fz user"),
            ("DATABASE_PASSWORD", "p@ss:w/rd?#%"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(url, "postgres://fz%20user:p%40ss%3Aw%2Frd%3F%23%25@db.internal:5432/firezone");
        // The driver reads back what was set.
        let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
        assert_eq!((options.get_host(), options.get_port(), options.get_username()), ("db.internal", 5432, "fz user"));
        assert_eq!(options.get_database(), Some("firezone"));
    }

    #[test]
    fn port_ssl_and_an_ipv6_host_are_honoured() {
        let url = database_url(env(&[
            ("DATABASE_HOST", "::1"),
            ("DATABASE_PORT", "15432"),
            ("DATABASE_NAME", "firezone"),
            ("DATABASE_USER", "firezone"),
            ("DATABASE_SSL", "true"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(url, "postgres://firezone@[::1]:15432/firezone?sslmode=require");
        let error = database_url(env(&[
            ("DATABASE_HOST", "h"),
            ("DATABASE_NAME", "n"),
            ("DATABASE_USER", "u"),
            ("DATABASE_SSL_ENABLED", "yes"),
        ]))
        .unwrap_err();
        assert!(error.to_string().contains("DATABASE_SSL_ENABLED: `yes` is not `true` or `false`"), "{error}");
        let error = database_url(env(&[
            ("DATABASE_HOST", "h"),
            ("DATABASE_NAME", "n"),
            ("DATABASE_USER", "u"),
            ("DATABASE_PORT", "x"),
        ]))
        .unwrap_err();
        assert!(error.to_string().contains("DATABASE_PORT: `x` is not a port number"), "{error}");
    }

    #[test]
    fn a_partial_set_is_an_error_naming_what_is_missing() {
        let error = database_url(env(&[("DATABASE_PASSWORD", "secret"), ("DATABASE_HOST", "postgres")])).unwrap_err();
        let error = error.to_string();
        assert!(
            error.starts_with("DATABASE_HOST, DATABASE_PASSWORD set, but not DATABASE_NAME, DATABASE_USER"),
            "{error}"
        );
        assert!(!error.contains("secret"), "{error}");
    }

    #[test]
    fn each_kind_of_unhonoured_variable_is_named() {
        let warnings = warnings(
            env(&[
                ("GUARDIAN_SECRET_KEY", "k"),
                ("DATABASE_ENCRYPTION_KEY", "k"),
                ("SECRET_KEY_BASE", "k"),
                ("CONNECTIVITY_CHECKS_ENABLED", "true"),
                ("DATABASE_HOST", "postgres"),
            ]),
            true,
        );
        assert_eq!(warnings.len(), 4, "{warnings:?}");
        assert!(warnings[0].contains("DATABASE_ENCRYPTION_KEY, GUARDIAN_SECRET_KEY are ignored"), "{warnings:?}");
        assert!(warnings[0].contains("ferrozone import firezone"));
        assert!(warnings[1].contains("SECRET_KEY_BASE is ignored"));
        assert!(warnings[2].contains("CONNECTIVITY_CHECKS_ENABLED is not supported"), "{warnings:?}");
        assert!(warnings[3].contains("DATABASE_HOST is ignored: FERROZONE_DATABASE_URL is set"));
        assert!(super::warnings(env(&[("DATABASE_HOST", "postgres")]), false).is_empty());
    }

    #[test]
    fn no_variable_is_both_mapped_and_unhonoured() {
        let mapped: Vec<&str> = super::super::env::alias_names().chain(DATABASE_PARTS).collect();
        let unhonoured = IMPORT_ONLY.iter().chain(NOT_NEEDED).copied().chain(UNSUPPORTED.iter().map(|(n, _)| *n));
        for name in unhonoured {
            assert!(!mapped.contains(&name), "{name}");
        }
    }
}
