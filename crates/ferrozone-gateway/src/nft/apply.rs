//! Running `nft`: applying a rendered table in one transaction and reading it back.

use std::process::Stdio;

use anyhow::{bail, Context};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::generation::Generation;
use super::render::TABLE;

/// The table as `nft -j list table` shows it, without the handles (which change on every
/// replace): two readings are equal when the table's content is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableState {
    /// No `inet ferrozone` table.
    Absent,
    /// The table's objects (table, chains, rules, sets) in `nft`'s JSON, handles removed.
    Present(Value),
}

/// How `nft` is run: the program and the arguments before nft's own.
#[derive(Debug, Clone)]
pub struct Nft {
    command: Vec<String>,
    /// The `ip netns` namespace it runs in; `None`: this process's.
    namespace: Option<String>,
}

impl Default for Nft {
    fn default() -> Self {
        Self::program("nft")
    }
}

impl Nft {
    /// The nft program at `program` (a name looked up in `PATH`, or a path).
    pub fn program(program: &str) -> Self {
        Self { command: vec![program.to_owned()], namespace: None }
    }

    /// `nft` in another network namespace (`ip netns exec NS nft`): for tests.
    pub fn in_netns(namespace: &str) -> Self {
        let command = ["ip", "netns", "exec", namespace, "nft"].map(str::to_owned).to_vec();
        Self { command, namespace: Some(namespace.to_owned()) }
    }

    /// The ruleset generation of the namespace it runs in.
    pub fn generation(&self) -> anyhow::Result<Generation> {
        match &self.namespace {
            None => Generation::here(),
            Some(namespace) => Generation::in_netns(namespace),
        }
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.command[0]);
        command.args(&self.command[1..]).kill_on_drop(true);
        command
    }

    /// Gives `ruleset` (a text from [`render()`](super::render)) to `nft -f -`: one
    /// transaction, all or nothing. A failure carries nft's message.
    pub async fn apply(&self, ruleset: &str) -> anyhow::Result<()> {
        let mut child = self
            .command()
            .args(["-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("running `nft` (nftables)")?;
        let mut stdin = child.stdin.take().context("nft's standard input")?;
        stdin.write_all(ruleset.as_bytes()).await.context("writing the ruleset to nft")?;
        drop(stdin);
        let output = child.wait_with_output().await.context("waiting for nft")?;
        if !output.status.success() {
            bail!("`nft -f -` refused the {TABLE} table: {}", String::from_utf8_lossy(&output.stderr).trim());
        }
        Ok(())
    }

    /// The table now (`nft -j list table inet ferrozone`).
    pub async fn read(&self) -> anyhow::Result<TableState> {
        let output = self
            .command()
            .args(["-j", "list", "table"])
            .args(TABLE.split(' '))
            .output()
            .await
            .context("running `nft` (nftables)")?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            // nft 1.0 says "Error: No such file or directory" (ENOENT) for a missing table.
            if stderr.contains("No such file or directory") {
                return Ok(TableState::Absent);
            }
            bail!("`nft -j list table {TABLE}` failed: {}", stderr.trim());
        }
        let json: Value = serde_json::from_slice(&output.stdout).context("parsing `nft -j` output")?;
        Ok(TableState::Present(objects(json)))
    }

    /// Deletes the table if it exists (on clean shutdown, when a setting says so).
    pub async fn remove(&self) -> anyhow::Result<()> {
        self.apply(&format!("table {TABLE}\ndelete table {TABLE}\n")).await
    }
}

/// The `nftables` array without its `metainfo` entry (nft's version) and without handles,
/// each set's elements sorted: a set has no order, and the kernel lists a concatenated
/// interval set's elements in the order they were added, so a set built by additions and
/// deletions would otherwise read differently from the same set applied whole.
fn objects(json: Value) -> Value {
    let Value::Object(mut top) = json else { return json };
    let Some(Value::Array(items)) = top.remove("nftables") else { return Value::Null };
    let items = items
        .into_iter()
        .filter(|item| item.get("metainfo").is_none())
        .map(without_handles)
        .map(with_sorted_elements)
        .collect();
    Value::Array(items)
}

fn with_sorted_elements(mut item: Value) -> Value {
    if let Some(Value::Array(elements)) = item.get_mut("set").and_then(|set| set.get_mut("elem")) {
        elements.sort_by_cached_key(Value::to_string);
    }
    item
}

fn without_handles(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter().filter(|(key, _)| key != "handle").map(|(k, v)| (k, without_handles(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_handles).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn readings_ignore_nft_version_and_handles() {
        let reading = |version: &str, handle: u64| {
            objects(json!({"nftables": [
                {"metainfo": {"version": version, "json_schema_version": 1}},
                {"table": {"family": "inet", "name": "ferrozone", "handle": handle}},
                {"rule": {"family": "inet", "table": "ferrozone", "chain": "postrouting", "handle": handle + 3,
                          "expr": [{"masquerade": null}]}},
            ]}))
        };
        assert_eq!(reading("1.0.6", 7), reading("1.0.9", 12));
        assert_eq!(reading("1.0.6", 7).as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn readings_ignore_the_order_of_set_elements() {
        let reading = |elements: [&str; 2]| {
            objects(json!({"nftables": [{"set": {"family": "inet", "name": "ip_drop", "elem": elements}}]}))
        };
        assert_eq!(reading(["1.1.1.1", "2.2.2.2"]), reading(["2.2.2.2", "1.1.1.1"]));
        assert_ne!(reading(["1.1.1.1", "2.2.2.2"]), reading(["1.1.1.1", "3.3.3.3"]));
    }
}
