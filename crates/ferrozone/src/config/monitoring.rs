//! Prometheus metrics: the scraper's token for `/metrics` on the API listener, and the
//! metrics listener (docs/operations.md, "Monitoring"). Neither set: metrics off.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use zeroize::Zeroizing;

/// The shortest metrics token accepted: long enough not to be guessed.
const MIN_TOKEN_LEN: usize = 16;
/// The longest: a header value, not a file.
const MAX_TOKEN_LEN: usize = 1024;

/// Metrics settings.
#[derive(Debug, Clone, Args)]
pub struct Monitoring {
    /// Bearer token a Prometheus scraper sends to GET /metrics on the API listener (at least
    /// 16 characters). It opens /metrics only: it is no API token. Without it and without
    /// FERROZONE_METRICS_LISTEN, metrics are off.
    #[arg(
        long,
        global = true,
        env = "FERROZONE_METRICS_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN",
        conflicts_with = "metrics_token_file"
    )]
    pub metrics_token: Option<String>,
    /// File whose first line is that token (a systemd credential, say).
    #[arg(long, global = true, env = "FERROZONE_METRICS_TOKEN_FILE", value_name = "FILE")]
    pub metrics_token_file: Option<PathBuf>,
    /// Address of a plain-HTTP listener serving GET /metrics without authentication, and
    /// nothing else, such as 127.0.0.1:9586: for a network only the scraper reaches.
    #[arg(long, global = true, env = "FERROZONE_METRICS_LISTEN", value_name = "ADDRESS")]
    pub metrics_listen: Option<String>,
}

impl Monitoring {
    /// The metrics listener's address, if one is set.
    pub fn listen(&self) -> Option<&str> {
        self.metrics_listen.as_deref().map(str::trim).filter(|a| !a.is_empty())
    }

    /// The metrics token, checked: a token too short or with characters a header cannot
    /// carry is a start error naming the setting, never shown.
    pub fn token(&self) -> anyhow::Result<Option<Zeroizing<String>>> {
        let (token, source) = match (&self.metrics_token, &self.metrics_token_file) {
            (Some(token), _) if !token.is_empty() => {
                (Zeroizing::new(token.clone()), "FERROZONE_METRICS_TOKEN".to_owned())
            }
            (_, Some(path)) => (read_first_line(path)?, format!("FERROZONE_METRICS_TOKEN_FILE ({})", path.display())),
            _ => return Ok(None),
        };
        if !(MIN_TOKEN_LEN..=MAX_TOKEN_LEN).contains(&token.len()) {
            bail!("{source}: the token must have {MIN_TOKEN_LEN} to {MAX_TOKEN_LEN} characters");
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            bail!("{source}: the token may hold only printable ASCII characters, without spaces");
        }
        Ok(Some(token))
    }
}

/// The first line of `path`, without its line ending.
fn read_first_line(path: &Path) -> anyhow::Result<Zeroizing<String>> {
    let text = Zeroizing::new(
        std::fs::read_to_string(path)
            .with_context(|| format!("FERROZONE_METRICS_TOKEN_FILE: reading {}", path.display()))?,
    );
    Ok(Zeroizing::new(text.lines().next().unwrap_or_default().to_owned()))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use crate::cli::Cli;

    fn monitoring(args: &[&str]) -> super::Monitoring {
        Cli::parse_args(args).unwrap().config.monitoring
    }

    #[test]
    fn a_token_and_a_listener_are_read_and_neither_is_the_default() {
        let unset = monitoring(&["ferrozone", "serve"]);
        assert!(unset.token().unwrap().is_none() && unset.listen().is_none());
        let listening = monitoring(&["ferrozone", "serve", "--metrics-listen", "127.0.0.1:9586"]);
        assert_eq!(listening.listen(), Some("127.0.0.1:9586"));
        let token = monitoring(&["ferrozone", "serve", "--metrics-token", "a-scraper-token-1234"]);
        assert_eq!(token.token().unwrap().as_deref().map(String::as_str), Some("a-scraper-token-1234"));
    }

    #[test]
    fn a_weak_token_is_a_start_error_that_does_not_show_it() {
        for weak in ["short", "has a space in it, sadly"] {
            let error = monitoring(&["ferrozone", "serve", "--metrics-token", weak]).token().unwrap_err();
            let error = format!("{error:#}");
            assert!(error.contains("FERROZONE_METRICS_TOKEN") && !error.contains(weak), "{error}");
        }
    }

    #[test]
    fn the_file_gives_its_first_line() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "token-from-a-file-0123\nsecond line").unwrap();
        let path = file.path().to_str().unwrap();
        let token = monitoring(&["ferrozone", "serve", "--metrics-token-file", path]).token().unwrap();
        assert_eq!(token.as_deref().map(String::as_str), Some("token-from-a-file-0123"));
        let empty = tempfile::NamedTempFile::new().unwrap();
        let path = empty.path().to_str().unwrap();
        let error = monitoring(&["ferrozone", "serve", "--metrics-token-file", path]).token().unwrap_err();
        assert!(error.to_string().contains("FERROZONE_METRICS_TOKEN_FILE"), "{error}");
    }
}
