//! The gateway's state directory (mode 0700): its credential (`credential`, 0600), a key of
//! its own (`local.key`, 0600, made on first start) and its last state (`state.sealed`,
//! sealed with that key: XChaCha20-Poly1305, as the control plane seals its secrets). The
//! state holds the interface's private key and the peers' preshared keys, so a copy of the
//! file alone reveals nothing.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;
use ferrozone_domain::crypto::{Cipher, Sealed};
use ferrozone_domain::gateway::state::DesiredState;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

const CREDENTIAL: &str = "credential";
const KEY: &str = "local.key";
const STATE: &str = "state.sealed";
const LOCK: &str = "lock";

/// The directory and the key that seals the state in it.
pub struct StateDir {
    path: PathBuf,
    cipher: Cipher,
    /// Held, locked, for as long as the directory is open.
    _lock: Lock,
}

/// What `state.sealed` holds.
#[derive(Serialize, Deserialize)]
struct Persisted {
    version: String,
    state: DesiredState,
}

impl StateDir {
    /// Opens `path`, making it (0700) and its key on first use; refused while another
    /// process has it open.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .with_context(|| format!("creating {}", path.display()))?;
        let lock = lock(&path.join(LOCK))?;
        let key_path = path.join(KEY);
        let key = match fs::read_to_string(&key_path) {
            Ok(key) => Zeroizing::new(key),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = Zeroizing::new(Cipher::generate_key());
                write_private(&key_path, key.as_bytes())?;
                key
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", key_path.display())),
        };
        let cipher = Cipher::from_base64(&key).with_context(|| format!("the key in {}", key_path.display()))?;
        Ok(Self { path: path.to_owned(), cipher, _lock: lock })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The credential, once enrolled.
    pub fn credential(&self) -> anyhow::Result<Option<Zeroizing<String>>> {
        let path = self.path.join(CREDENTIAL);
        match fs::read_to_string(&path) {
            Ok(text) => Ok(Some(Zeroizing::new(text.trim().to_owned()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    pub fn save_credential(&self, credential: &str) -> anyhow::Result<()> {
        write_private(&self.path.join(CREDENTIAL), credential.as_bytes())
    }

    /// The last state saved, with its version; `None` when there is none, or it cannot be
    /// opened (another key, a damaged file: said in the log, and the control plane's
    /// snapshot replaces it).
    pub fn load_state(&self) -> Option<(String, DesiredState)> {
        let path = self.path.join(STATE);
        let sealed = match fs::read(&path) {
            Ok(bytes) => Sealed(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(error = %e, path = %path.display(), "the saved state cannot be read");
                return None;
            }
        };
        let opened = self
            .cipher
            .open(&sealed)
            .context("opening it with local.key")
            .and_then(|plain| serde_json::from_slice::<Persisted>(&plain).context("reading it"));
        match opened {
            Ok(p) => Some((p.version, p.state)),
            Err(e) => {
                tracing::warn!(error = format!("{e:#}"), path = %path.display(), "the saved state is unusable");
                None
            }
        }
    }

    /// Saves `state` at `version`, atomically: a crash leaves the old file or the new one.
    pub fn save_state(&self, version: &str, state: &DesiredState) -> anyhow::Result<()> {
        let persisted = Persisted { version: version.to_owned(), state: state.clone() };
        let plain = Zeroizing::new(serde_json::to_vec(&persisted).context("serialising the state")?);
        let sealed = self.cipher.seal(&plain);
        let (path, temporary) = (self.path.join(STATE), self.path.join(format!("{STATE}.new")));
        write_private(&temporary, &sealed.0)?;
        fs::rename(&temporary, &path).with_context(|| format!("replacing {}", path.display()))?;
        if let Ok(dir) = fs::File::open(&self.path) {
            // The rename itself, durable: without it a power loss could bring back the old file.
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

/// An exclusive lock on a file, released when dropped.
///
/// Released explicitly rather than by closing the file: a `flock` belongs to the open file
/// description, which a child process shares from its fork until its exec closes it, so a
/// close alone can leave the lock held for a moment after the directory is closed.
struct Lock(fs::File);

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.0, rustix::fs::FlockOperation::Unlock);
    }
}

/// An exclusive lock on the file at `path`, held until the `Lock` is dropped.
fn lock(path: &Path) -> anyhow::Result<Lock> {
    use rustix::fs::{flock, FlockOperation};
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Lock(file)),
        Err(rustix::io::Errno::WOULDBLOCK) => {
            anyhow::bail!("another ferrozone gateway runs on {}", path.parent().unwrap_or(path).display())
        }
        Err(e) => Err(e).with_context(|| format!("locking {}", path.display())),
    }
}

/// Writes `bytes` to `path`, mode 0600, flushed to disk.
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let write = || -> std::io::Result<()> {
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
        file.write_all(bytes)?;
        file.sync_all()
    };
    write().with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrozone_domain::egress::RuleAction;
    use ferrozone_domain::gateway::state::{EgressState, InterfaceState, SecretKey};

    fn state() -> DesiredState {
        DesiredState {
            interface: InterfaceState {
                private_key: SecretKey("private".into()),
                addresses: vec!["10.3.2.1/24".into()],
            },
            peers: vec![],
            egress: EgressState { default_action: RuleAction::Drop, rules: vec![] },
        }
    }

    #[test]
    fn the_state_survives_a_reopen_sealed_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway");
        let opened = StateDir::open(&path).unwrap();
        assert_eq!(opened.load_state().map(|(v, _)| v), None);
        assert!(opened.credential().unwrap().is_none());
        opened.save_credential("fzgw_secret").unwrap();
        opened.save_state("v1", &state()).unwrap();
        let raw = fs::read(path.join(STATE)).unwrap();
        assert!(!String::from_utf8_lossy(&raw).contains("private"), "sealed");
        for file in [CREDENTIAL, KEY, STATE] {
            let mode = fs::metadata(path.join(file)).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{file}");
        }
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o700);

        let refused = StateDir::open(&path).err().expect("one process per directory");
        assert!(refused.to_string().contains("another ferrozone gateway runs on"), "{refused:#}");
        drop(opened);
        let reopened = StateDir::open(&path).unwrap();
        assert_eq!(reopened.credential().unwrap().as_deref().map(String::as_str), Some("fzgw_secret"));
        assert_eq!(reopened.load_state(), Some(("v1".to_owned(), state())));
    }

    #[test]
    fn a_state_sealed_with_another_key_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        StateDir::open(dir.path()).unwrap().save_state("v1", &state()).unwrap(); // closed again
        fs::remove_file(dir.path().join(KEY)).unwrap();
        assert_eq!(StateDir::open(dir.path()).unwrap().load_state(), None);
    }
}
