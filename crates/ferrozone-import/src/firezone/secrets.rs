//! The source installation's configuration and secrets, from the files its installer
//! wrote: a Docker install's `.env`, an Omnibus install's `secrets.json`, and the server's
//! WireGuard private key file.

use std::collections::BTreeMap;

use anyhow::{bail, Context};
use ferrozone_domain::crypto::{is_valid_key, public_key_of};
use serde_json::Value;
use zeroize::Zeroizing;

/// The key of the encrypted columns.
pub const DATABASE_ENCRYPTION_KEY: &str = "DATABASE_ENCRYPTION_KEY";
/// The HS512 secret that signed the source's API tokens.
pub const GUARDIAN_SECRET_KEY: &str = "GUARDIAN_SECRET_KEY";

/// Environment variables of the source installation, by name. Values may be secrets:
/// `Debug` shows only the names, and values are wiped when dropped.
#[derive(Clone, Default)]
pub struct Variables(BTreeMap<String, Zeroizing<String>>);

impl std::fmt::Debug for Variables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Variables {
    /// Reads a Docker `.env` file: `KEY=VALUE` lines, `#` comments, blank lines, an
    /// optional `export `, values optionally in single or double quotes. Errors name the
    /// line, never its value.
    pub fn from_env_file(text: &str) -> anyhow::Result<Self> {
        let mut vars = Self::default();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let Some((key, value)) = line.split_once('=') else {
                bail!("line {} is not KEY=VALUE", number + 1);
            };
            let key = key.trim();
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                bail!("line {} does not start with a variable name", number + 1);
            }
            vars.set(key, unquote(value.trim()));
        }
        Ok(vars)
    }

    /// Reads an Omnibus `/etc/firezone/secrets.json`: its lower-case keys are the
    /// variables' names (`database_encryption_key` → `DATABASE_ENCRYPTION_KEY`).
    pub fn from_secrets_json(text: &str) -> anyhow::Result<Self> {
        let Value::Object(entries) = serde_json::from_str(text).context("secrets.json is not JSON")? else {
            bail!("secrets.json is not a JSON object");
        };
        let mut vars = Self::default();
        for (key, value) in entries {
            if let Value::String(value) = value {
                vars.set(&key.to_ascii_uppercase(), &value);
            }
        }
        Ok(vars)
    }

    pub fn set(&mut self, name: &str, value: &str) {
        self.0.insert(name.to_owned(), Zeroizing::new(value.to_owned()));
    }

    /// The value of `name`, when set and not blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(|v| v.as_str()).filter(|v| !v.trim().is_empty())
    }
}

/// `value` without one pair of surrounding quotes.
fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote).and_then(|v| v.strip_suffix(quote)) {
            return inner;
        }
    }
    value
}

/// The source server's WireGuard key pair: what its clients know it by.
pub struct ServerKey {
    pub private_key: Zeroizing<String>,
    pub public_key: String,
}

impl std::fmt::Debug for ServerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerKey").field("public_key", &self.public_key).finish_non_exhaustive()
    }
}

impl ServerKey {
    /// Reads the private key file as Firezone does (base64 text, white space trimmed) and
    /// checks that it is a Curve25519 key.
    pub fn from_file_text(text: &str) -> anyhow::Result<Self> {
        let private_key = Zeroizing::new(text.trim().to_owned());
        if !is_valid_key(&private_key) {
            bail!("the private key file does not hold a WireGuard key (base64 of 32 bytes)");
        }
        let public_key = public_key_of(&private_key).context("the private key file does not hold a WireGuard key")?;
        Ok(Self { private_key, public_key })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_files_read_as_docker_compose_writes_them() {
        let text =
            "# Firezone\nEXTERNAL_URL=https://vpn.example\n\nexport A='single'\nB=\"double\"\n  C = spaced \nD=a=b\n";
        let vars = Variables::from_env_file(text).unwrap();
        assert_eq!(vars.get("EXTERNAL_URL"), Some("https://vpn.example"));
        assert_eq!(vars.get("A"), Some("single"));
        assert_eq!(vars.get("B"), Some("double"));
        assert_eq!(vars.get("C"), Some("spaced"));
        assert_eq!(vars.get("D"), Some("a=b"));
        assert_eq!(vars.get("E"), None);
    }

    #[test]
    fn a_bad_env_line_is_named_without_its_content() {
        let err = Variables::from_env_file("A=1\nsecret-without-equals\n").unwrap_err().to_string();
        assert_eq!(err, "line 2 is not KEY=VALUE");
        assert!(Variables::from_env_file("=1").is_err());
    }

    #[test]
    fn secrets_json_keys_become_variable_names() {
        let vars =
            Variables::from_secrets_json(r#"{"database_encryption_key": "k", "guardian_secret_key": "g", "n": 1}"#)
                .unwrap();
        assert_eq!(vars.get(DATABASE_ENCRYPTION_KEY), Some("k"));
        assert_eq!(vars.get(GUARDIAN_SECRET_KEY), Some("g"));
        assert!(Variables::from_secrets_json("[]").is_err());
        let shown = format!("{vars:?}");
        assert!(shown.contains(DATABASE_ENCRYPTION_KEY) && !shown.contains('k') && !shown.contains('g'), "{shown}");
    }

    #[test]
    fn the_private_key_file_is_trimmed_and_checked() {
        let pair = ferrozone_domain::crypto::generate_keypair();
        let key = ServerKey::from_file_text(&format!("{}\n", *pair.private_key)).unwrap();
        assert_eq!(key.public_key, pair.public_key);
        assert!(!format!("{key:?}").contains(pair.private_key.as_str()));
        assert!(ServerKey::from_file_text("not a key").is_err());
        assert!(ServerKey::from_file_text("").is_err());
    }
}
