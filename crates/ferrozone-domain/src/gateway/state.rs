//! What a gateway on another host holds and enforces (docs/design/gateways.md, "The desired
//! state"): the interface's key and addresses, the peers with their session expiry, and the
//! egress policy. No database credential, no email, no password hash.
//!
//! The control plane answers a gateway's poll with the state at a version, either whole
//! ([`Answer::Snapshot`]) or as the changes from the version the gateway holds
//! ([`Answer::Changes`]). A version is the SHA-256 of the state's canonical JSON (peers
//! sorted by public key, rules by id), so every control-plane process sharing a database
//! computes the same version for the same state, and the gateway checks what it assembled
//! from changes against the version it was told ([`DesiredState::version`]).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;
use zeroize::Zeroize;

use crate::egress::{EgressPolicy, Membership, PortType, Ports, Rule, RuleAction, RuleSource};
use crate::time::Timestamp;

/// A key (the interface's private key, a peer's preshared key) in base64: never in a log.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecretKey(pub String);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey(…)")
    }
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

/// Everything a gateway enforces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesiredState {
    pub interface: InterfaceState,
    /// Sorted by public key, one per key.
    pub peers: Vec<StatePeer>,
    pub egress: EgressState,
}

/// The interface: its private key and its tunnel addresses (`10.3.2.1/24`: the gateway's
/// address in each pool, with the pool's prefix).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceState {
    pub private_key: SecretKey,
    pub addresses: Vec<String>,
}

/// One device as a peer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatePeer {
    pub public_key: String,
    pub preshared_key: SecretKey,
    pub ipv4: Option<Ipv4Addr>,
    pub ipv6: Option<Ipv6Addr>,
    /// Its owner, for the owner's egress rules.
    pub user_id: Uuid,
    /// When its owner's VPN session ends (microseconds since the Unix epoch); `None` when
    /// it never does. The gateway removes the peer then by itself.
    pub session_expires_at_us: Option<i64>,
    /// The groups its owner is a member of that egress rules name, sorted. A membership
    /// change therefore travels as the changed peers alone; absent when empty, so a state
    /// without group rules keeps the form (and the version) it had before them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Uuid>,
}

impl StatePeer {
    /// Whether the peer is still to be carried at `now`.
    pub fn active_at(&self, now: Timestamp) -> bool {
        self.session_expires_at_us.is_none_or(|at| at > now.micros())
    }
}

/// The egress rules, sorted by id, and what traffic no rule matches gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressState {
    pub default_action: RuleAction,
    pub rules: Vec<StateRule>,
}

/// An egress rule as a gateway needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateRule {
    pub id: Uuid,
    /// `None` (and no `group_id`): everyone's traffic.
    pub user_id: Option<Uuid>,
    /// A group's rule: its members' traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<Uuid>,
    pub destination: String,
    pub action: RuleAction,
    /// `tcp` or `udp`, with `port_range`.
    pub port_type: Option<String>,
    pub port_range: Option<String>,
}

impl From<&Rule> for StateRule {
    fn from(rule: &Rule) -> Self {
        Self {
            id: rule.id,
            user_id: rule.user_id,
            group_id: rule.group_id,
            destination: rule.destination.clone(),
            action: rule.action,
            port_type: rule.ports.as_ref().map(|p| p.port_type.as_str().to_owned()),
            port_range: rule.ports.as_ref().map(|p| p.range.clone()),
        }
    }
}

impl StateRule {
    /// The rule as the domain holds it; its times are not carried.
    pub fn to_rule(&self) -> Rule {
        let ports = match (self.port_type.as_deref().and_then(PortType::parse), &self.port_range) {
            (Some(port_type), Some(range)) => Some(Ports { port_type, range: range.clone() }),
            _ => None,
        };
        let (inserted_at, updated_at) = (Timestamp::from_micros(0), Timestamp::from_micros(0));
        Rule {
            id: self.id,
            user_id: self.user_id,
            group_id: self.group_id,
            destination: self.destination.clone(),
            action: self.action,
            ports,
            inserted_at,
            updated_at,
        }
    }
}

/// The revision of the state protocol this build speaks. 1: the first; 2: group rules
/// (`group_id` on rules, `groups` on peers), which a gateway of revision 1 would read as
/// everyone's rules. A gateway says its revision with each poll (`protocol`); one that says
/// none speaks 1.
pub const PROTOCOL: u32 = 2;

impl DesiredState {
    /// The least protocol revision a gateway needs to enforce this state as it is meant.
    pub fn protocol_needed(&self) -> u32 {
        if self.egress.rules.iter().any(|rule| rule.group_id.is_some()) {
            2
        } else {
            1
        }
    }

    /// Puts peers and rules in their canonical order (the version depends on it).
    pub fn canonical(mut self) -> Self {
        self.peers.sort_by(|a, b| a.public_key.cmp(&b.public_key));
        self.peers.dedup_by(|a, b| a.public_key == b.public_key);
        self.egress.rules.sort_by_key(|rule| rule.id);
        self
    }

    /// The version: the first 16 bytes of the SHA-256 of the canonical JSON, in hex.
    pub fn version(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        hex::encode(&Sha256::digest(&json)[..16])
    }

    /// The egress policy as the table renders it at `now`: the rules, the memberships of
    /// the groups they name (as the active peers carry them), and the addresses of the
    /// active peers of each user a rule names or who is in such a group.
    pub fn egress_policy(&self, now: Timestamp) -> EgressPolicy {
        let users: HashSet<Uuid> = self.egress.rules.iter().filter_map(|r| r.user_id).collect();
        let groups: HashSet<Uuid> = self.egress.rules.iter().filter_map(|r| r.group_id).collect();
        let active = self.peers.iter().filter(|peer| peer.active_at(now));
        let mut memberships = BTreeSet::new();
        let mut sources = Vec::new();
        for peer in active {
            let mut named = users.contains(&peer.user_id);
            for group_id in peer.groups.iter().filter(|group| groups.contains(group)) {
                memberships.insert(Membership { group_id: *group_id, user_id: peer.user_id });
                named = true;
            }
            if named {
                sources.push(RuleSource { user_id: peer.user_id, ipv4: peer.ipv4, ipv6: peer.ipv6 });
            }
        }
        let rules = self.egress.rules.iter().map(StateRule::to_rule).collect();
        EgressPolicy {
            rules,
            default_action: self.egress.default_action,
            sources,
            memberships: memberships.into_iter().collect(),
        }
    }

    /// The earliest session expiry after `now`, when the gateway must look again.
    pub fn next_expiry(&self, now: Timestamp) -> Option<Timestamp> {
        let now = now.micros();
        let next = self.peers.iter().filter_map(|p| p.session_expires_at_us).filter(|at| *at > now).min();
        next.map(Timestamp::from_micros)
    }

    /// What turns `from` into `self`: the peers added or changed, the keys removed, and the
    /// interface and the egress policy whole (they are small).
    pub fn changes_from(&self, from: &DesiredState) -> StateChanges {
        let old: BTreeMap<&str, &StatePeer> = from.peers.iter().map(|p| (p.public_key.as_str(), p)).collect();
        let new: BTreeMap<&str, &StatePeer> = self.peers.iter().map(|p| (p.public_key.as_str(), p)).collect();
        let upsert = self.peers.iter().filter(|p| old.get(p.public_key.as_str()) != Some(p)).cloned().collect();
        let remove = old.keys().filter(|key| !new.contains_key(*key)).map(|key| (*key).to_owned()).collect();
        StateChanges { interface: self.interface.clone(), egress: self.egress.clone(), upsert, remove }
    }

    /// `self` with `changes` applied.
    pub fn apply(&self, changes: StateChanges) -> DesiredState {
        let mut peers: BTreeMap<String, StatePeer> =
            self.peers.iter().map(|p| (p.public_key.clone(), p.clone())).collect();
        for key in &changes.remove {
            peers.remove(key);
        }
        for peer in changes.upsert {
            peers.insert(peer.public_key.clone(), peer);
        }
        let state =
            DesiredState { interface: changes.interface, peers: peers.into_values().collect(), egress: changes.egress };
        state.canonical()
    }
}

/// The changes from one version to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateChanges {
    pub interface: InterfaceState,
    pub egress: EgressState,
    pub upsert: Vec<StatePeer>,
    /// Public keys.
    pub remove: Vec<String>,
}

/// The answer to a gateway's poll, at `version`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    /// The gateway already holds `version`: nothing changed while the poll waited.
    Unchanged { version: String },
    /// The whole state.
    Snapshot { version: String, state: DesiredState },
    /// The changes from the version the gateway said it holds (`from`).
    Changes { version: String, from: String, changes: StateChanges },
}

impl Answer {
    pub fn version(&self) -> &str {
        match self {
            Answer::Unchanged { version } | Answer::Snapshot { version, .. } | Answer::Changes { version, .. } => {
                version
            }
        }
    }
}

#[cfg(test)]
mod tests;
