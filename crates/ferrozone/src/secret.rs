//! The key that encrypts secrets at rest: from `FERROZONE_SECRET_KEY`, from
//! `FERROZONE_SECRET_KEY_FILE`, or generated once into the data directory (mode 0600).

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use ferrozone_domain::crypto::Cipher;
use zeroize::Zeroizing;

use crate::config::Config;

const KEY_FILE: &str = "secret.key";

pub fn load(config: &Config) -> anyhow::Result<Cipher> {
    if let Some(key) = &config.secret_key {
        return Cipher::from_base64(key).context("FERROZONE_SECRET_KEY");
    }
    if let Some(path) = &config.secret_key_file {
        return read(path).context("FERROZONE_SECRET_KEY_FILE");
    }
    let path = config.data_dir.join(KEY_FILE);
    if !path.exists() {
        generate(&path)?;
    }
    read(&path)
}

fn read(path: &Path) -> anyhow::Result<Cipher> {
    let text = Zeroizing::new(
        std::fs::read_to_string(path).with_context(|| format!("reading the secret key {}", path.display()))?,
    );
    Cipher::from_base64(&text).with_context(|| format!("the secret key in {}", path.display()))
}

/// Writes a new key with `create_new`, so two processes starting at once cannot both
/// write one: the loser reads the winner's.
fn generate(path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        crate::startup::create_private_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut file) => {
            let key = Zeroizing::new(Cipher::generate_key());
            file.write_all(key.as_bytes())?;
            file.sync_all()?;
            tracing::info!(path = %path.display(), "generated a new secret key; back it up with the database");
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating the secret key {}", path.display())),
    }
}
