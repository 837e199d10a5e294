//! What ACME keeps in its directory (`<data dir>/acme`, mode 0700): `account.json` (the
//! account's key and URL, and the directory it belongs to) and `<host>.pem` (the certificate
//! chain followed by its private key). Both files hold private keys: they are written with
//! mode 0600, through a temporary file renamed into place so a crash never leaves half a file.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use instant_acme::AccountCredentials;
use serde::{Deserialize, Serialize};

use crate::certificate::Issued;

const ACCOUNT_FILE: &str = "account.json";

#[derive(Debug, Clone)]
pub(crate) struct Cache {
    dir: PathBuf,
}

/// The account's credentials with the directory that issued them: an account is only
/// reused with the same ACME server.
#[derive(Serialize, Deserialize)]
pub(crate) struct StoredAccount {
    pub(crate) directory_url: String,
    pub(crate) credentials: AccountCredentials,
}

impl Cache {
    pub(crate) fn open(dir: PathBuf) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
                .with_context(|| format!("restricting {}", dir.display()))?;
        }
        Ok(Self { dir })
    }

    pub(crate) fn certificate_path(&self, host: &str) -> PathBuf {
        self.dir.join(format!("{host}.pem"))
    }

    /// The stored certificate for `host`; `None` when there is none or it cannot be used
    /// (logged), so a damaged file leads to a new order rather than a server that cannot start.
    pub(crate) fn load_certificate(&self, host: &str) -> Option<Issued> {
        let path = self.certificate_path(host);
        let pem = match std::fs::read_to_string(&path) {
            Ok(pem) => pem,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot read the stored certificate; ordering a new one");
                return None;
            }
        };
        match Issued::from_pem(&pem) {
            Ok(issued) => Some(issued),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = format!("{e:#}"), "the stored certificate is unusable; ordering a new one");
                None
            }
        }
    }

    pub(crate) fn store_certificate(&self, host: &str, pem: &str) -> anyhow::Result<()> {
        write_private(&self.certificate_path(host), pem.as_bytes())
    }

    pub(crate) fn load_account(&self) -> anyhow::Result<Option<StoredAccount>> {
        let path = self.dir.join(ACCOUNT_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let account = serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        Ok(Some(account))
    }

    pub(crate) fn store_account(&self, account: &StoredAccount) -> anyhow::Result<()> {
        let text = serde_json::to_vec_pretty(account).context("serializing the ACME account")?;
        write_private(&self.dir.join(ACCOUNT_FILE), &text)
    }
}

/// Replaces `path` with `contents`, readable by the owner only.
fn write_private(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    let temporary = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temporary).with_context(|| format!("creating {}", temporary.display()))?;
    #[cfg(unix)]
    {
        // A temporary file left by a crash keeps the mode it was created with.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(contents)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path).with_context(|| format!("writing {}", path.display()))
}
