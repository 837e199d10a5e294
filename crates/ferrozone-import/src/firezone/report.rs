//! What reading the source found: how much of each kind will be imported, what will not
//! be and why, what will be but deserves a look, and which Ferrozone settings to set.

use std::fmt;

use ferrozone_domain::import::{ImportBatch, Skipped};

/// The result of reading and converting a source, printed by the command.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The source rows of each kind, in a fixed order: `(kind, read, to import)`.
    pub counts: Vec<(&'static str, usize, usize)>,
    /// Rows that will not be imported.
    pub skipped: Vec<Skipped>,
    /// Rows imported as they are, or repaired, that the operator should look at.
    pub warnings: Vec<Skipped>,
    /// `VARIABLE=value` lines Ferrozone must run with to serve the source's clients.
    pub settings_to_set: Vec<String>,
    /// The public key clients know the server by, when the key file was given.
    pub server_public_key: Option<String>,
}

impl Report {
    pub(crate) fn skip(&mut self, kind: &'static str, id: impl ToString, reason: impl Into<String>) {
        self.skipped.push(Skipped { kind, id: id.to_string(), reason: reason.into() });
    }

    pub(crate) fn warn(&mut self, kind: &'static str, id: impl ToString, reason: impl Into<String>) {
        self.warnings.push(Skipped { kind, id: id.to_string(), reason: reason.into() });
    }

    /// The rows read of `kind` and how many of them the batch holds.
    pub fn count(&self, kind: &str) -> Option<(usize, usize)> {
        self.counts.iter().find(|(k, _, _)| *k == kind).map(|(_, read, kept)| (*read, *kept))
    }

    pub(crate) fn set_counts(&mut self, read: [usize; 6], batch: &ImportBatch) {
        let kept = [
            batch.users.len(),
            batch.devices.len(),
            batch.tokens.len(),
            batch.rules.len(),
            batch.oidc_connections.len(),
            batch.totp.len(),
        ];
        let kinds = ["user", "device", "token", "rule", "oidc_connection", "totp"];
        self.counts = kinds.iter().zip(read).zip(kept).map(|((kind, read), kept)| (*kind, read, kept)).collect();
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{:<16} {:>8} {:>10}", "kind", "read", "to import")?;
        for (kind, read, kept) in &self.counts {
            writeln!(f, "{kind:<16} {read:>8} {kept:>10}")?;
        }
        if let Some(key) = &self.server_public_key {
            writeln!(f, "\nserver public key: {key}")?;
        }
        list(f, "not imported", &self.skipped)?;
        list(f, "imported, but check", &self.warnings)?;
        if !self.settings_to_set.is_empty() {
            writeln!(f, "\nthe source's clients use other tunnel networks; run Ferrozone with:")?;
            for line in &self.settings_to_set {
                writeln!(f, "  {line}")?;
            }
        }
        Ok(())
    }
}

fn list(f: &mut fmt::Formatter<'_>, title: &str, rows: &[Skipped]) -> fmt::Result {
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(f, "\n{title} ({}):", rows.len())?;
    for row in rows {
        writeln!(f, "  {} {}: {}", row.kind, row.id, row.reason)?;
    }
    Ok(())
}
