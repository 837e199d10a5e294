//! The desired state gateways on other hosts poll (docs/design/gateways.md, "The desired
//! state"): built from the database, published at a version, and answered as a snapshot or
//! as the changes from the version a gateway holds.
//!
//! A process builds the state only while gateways poll it ([`IDLE`]): a control plane without
//! gateways does no work for them. While they do, one build per committed change serves
//! every gateway connected to this process; the last [`HISTORY`] versions are kept to answer
//! with changes rather than the whole state.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use uuid::Uuid;

use super::Domain;
use crate::crypto::hash_token;
use crate::error::Result;
use crate::gateway::state::{Answer, DesiredState, EgressState, InterfaceState, SecretKey, StatePeer, StateRule};
use crate::gateway::{Gateway, GatewayReport, Lease, LeaseOutcome, CREDENTIAL_PREFIX};
use crate::time::Timestamp;

/// How many published versions a process keeps to answer with changes.
const HISTORY: usize = 16;
/// A process stops building the state when no gateway polled it for this long.
pub const IDLE: Duration = Duration::from_secs(120);
/// How often the state is built again while gateways poll, with or without a change: a
/// change another process committed whose notification was lost is picked up by then.
const REBUILD: Duration = Duration::from_secs(30);
/// How long to wait before building again after a failed build.
const RETRY: Duration = Duration::from_secs(1);

/// One published version of the state.
#[derive(Debug)]
pub struct Published {
    pub version: String,
    pub state: DesiredState,
    /// Its peers' public keys, for the statistics gateways send.
    keys: std::collections::HashSet<String>,
}

/// This process's published state and the polls waiting on it.
pub struct StateHub {
    current: watch::Sender<Option<Arc<Published>>>,
    history: Mutex<VecDeque<Arc<Published>>>,
    demanded: Notify,
    last_demand: Mutex<Option<Instant>>,
    /// Preshared keys opened in earlier builds, by their sealed bytes.
    keys: Mutex<HashMap<Vec<u8>, SecretKey>>,
    /// Polls waiting for a change now.
    waiting: AtomicUsize,
}

impl Default for StateHub {
    fn default() -> Self {
        Self {
            current: watch::Sender::new(None),
            history: Mutex::default(),
            demanded: Notify::new(),
            last_demand: Mutex::default(),
            keys: Mutex::default(),
            waiting: AtomicUsize::new(0),
        }
    }
}

impl StateHub {
    /// The protocol revision a gateway needs for the published state; `None` before a
    /// first one is built.
    pub fn protocol_needed(&self) -> Option<u32> {
        self.current.borrow().as_ref().map(|published| published.state.protocol_needed())
    }

    /// The answer to a gateway holding `since`: unchanged, its changes, or the whole state.
    pub fn answer(&self, since: Option<&str>) -> Option<Answer> {
        let current = self.current.borrow().clone()?;
        let version = current.version.clone();
        let Some(since) = since else { return Some(Answer::Snapshot { version, state: current.state.clone() }) };
        if since == version {
            return Some(Answer::Unchanged { version });
        }
        let history = self.history.lock().unwrap_or_else(PoisonError::into_inner);
        Some(match history.iter().find(|p| p.version == since) {
            Some(held) => {
                Answer::Changes { version, from: since.to_owned(), changes: current.state.changes_from(&held.state) }
            }
            None => Answer::Snapshot { version, state: current.state.clone() },
        })
    }

    /// Waits until the published version differs from `since` (or a first one is built),
    /// at most until `deadline`; says a gateway is polling.
    pub async fn wait_for_change(&self, since: Option<&str>, deadline: std::time::Instant) {
        self.demand();
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let _waiting = scopeguard(|| self.waiting.fetch_sub(1, Ordering::SeqCst));
        let mut current = self.current.subscribe();
        let changed = |published: &Option<Arc<Published>>| match published {
            None => false,
            Some(p) => since != Some(p.version.as_str()),
        };
        let _ = tokio::time::timeout_at(deadline.into(), current.wait_for(changed)).await;
    }

    /// Whether the published state has a peer with `public_key`; `None` before a first
    /// build (then nothing is known to refuse).
    pub fn has_peer(&self, public_key: &str) -> Option<bool> {
        self.current.borrow().as_ref().map(|p| p.keys.contains(public_key))
    }

    /// How many polls wait for a change now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// Says a gateway polls; wakes the builder only when nothing is published (the first
    /// poll, or the first after [`IDLE`]). A published state is kept current by the
    /// committed changes and [`REBUILD`]: a build per poll cost every connected gateway's
    /// poll a build of the whole state.
    fn demand(&self) {
        let mut last = self.last_demand.lock().unwrap_or_else(PoisonError::into_inner);
        let idle = last.is_none_or(|at| at.elapsed() >= IDLE);
        *last = Some(Instant::now());
        drop(last);
        if idle || self.current.borrow().is_none() {
            self.demanded.notify_one();
        }
    }

    fn demanded_recently(&self) -> bool {
        self.last_demand.lock().unwrap_or_else(PoisonError::into_inner).is_some_and(|at| at.elapsed() < IDLE)
    }

    fn publish(&self, state: DesiredState) {
        let version = state.version();
        if self.current.borrow().as_ref().is_some_and(|p| p.version == version) {
            return;
        }
        let keys = state.peers.iter().map(|peer| peer.public_key.clone()).collect();
        let published = Arc::new(Published { version, state, keys });
        let mut history = self.history.lock().unwrap_or_else(PoisonError::into_inner);
        history.push_back(published.clone());
        while history.len() > HISTORY {
            history.pop_front();
        }
        drop(history);
        self.current.send_replace(Some(published));
    }

    /// Forgets the published state (nobody polls): the next poll waits for a fresh build.
    fn forget(&self) {
        self.current.send_replace(None);
        self.history.lock().unwrap_or_else(PoisonError::into_inner).clear();
        self.keys.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

/// Runs `f` when dropped (a poll that ends, however it ends).
fn scopeguard<F: FnMut() -> usize>(f: F) -> impl Drop {
    struct Guard<F: FnMut() -> usize>(F);
    impl<F: FnMut() -> usize> Drop for Guard<F> {
        fn drop(&mut self) {
            (self.0)();
        }
    }
    Guard(f)
}

impl Domain {
    /// This process's published gateway state.
    pub fn gateway_states(&self) -> &StateHub {
        &self.gateway_states
    }

    /// Builds the gateway state on each of `changes` (committed changes of the peers or of
    /// the rules, here or in another process), while gateways poll: runs as long as the
    /// process.
    pub async fn publish_gateway_states(&self, changes: crate::model::DataPlaneChanges) {
        let hub = &self.gateway_states;
        loop {
            tokio::select! {
                () = changes.peers.notified() => {}
                () = changes.rules.notified() => {}
                () = hub.demanded.notified() => {}
                () = tokio::time::sleep(REBUILD) => {}
            }
            if !hub.demanded_recently() {
                hub.forget();
                continue;
            }
            if let Err(e) = self.build_and_publish().await {
                tracing::warn!(error = %format!("{e:#}"), "building the gateways' state failed; retrying");
                tokio::time::sleep(RETRY).await;
                hub.demanded.notify_one();
            }
        }
    }

    async fn build_and_publish(&self) -> Result<()> {
        let started = std::time::Instant::now();
        let state = self.gateway_state().await?;
        let peers = state.peers.len();
        self.gateway_states.publish(state);
        tracing::debug!(peers, elapsed_ms = started.elapsed().as_secs_f64() * 1000.0, "gateway state built");
        Ok(())
    }

    /// What gateways enforce now: the interface, the active peers with their session
    /// expiry, the egress rules.
    pub async fn gateway_state(&self) -> Result<DesiredState> {
        let session = self.vpn_session();
        let starts = match session.cutoff() {
            Some(cutoff) => self.store().vpn_session_starts(cutoff).await?.into_iter().collect(),
            None => HashMap::new(),
        };
        let (active, policy) = tokio::try_join!(self.active_peers(), self.egress_policy())?;
        let mut known = std::mem::take(&mut *self.gateway_states.keys.lock().unwrap_or_else(PoisonError::into_inner));
        let mut keys = HashMap::with_capacity(active.len());
        let mut peers = Vec::with_capacity(active.len());
        let mut groups_of: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
        for membership in &policy.memberships {
            groups_of.entry(membership.user_id).or_default().push(membership.group_id);
        }
        for groups in groups_of.values_mut() {
            groups.sort_unstable();
            groups.dedup();
        }
        for peer in active {
            let psk = match known.remove(&peer.preshared_key.0) {
                Some(psk) => psk,
                None => SecretKey(self.reveal(&peer.preshared_key)?),
            };
            let expires = starts.get(&peer.user_id).and_then(|at: &Timestamp| session.expires_at(*at));
            peers.push(StatePeer {
                public_key: peer.public_key,
                preshared_key: psk.clone(),
                ipv4: peer.ipv4,
                ipv6: peer.ipv6,
                user_id: peer.user_id,
                session_expires_at_us: expires.map(Timestamp::micros),
                groups: groups_of.get(&peer.user_id).cloned().unwrap_or_default(),
            });
            keys.insert(peer.preshared_key.0, psk);
        }
        *self.gateway_states.keys.lock().unwrap_or_else(PoisonError::into_inner) = keys;
        let pools = &self.settings().pools;
        let addresses = [&pools.v4, &pools.v6]
            .into_iter()
            .flatten()
            .map(|pool| format!("{}/{}", pool.gateway(), pool.network().prefix_len()))
            .collect();
        let interface = InterfaceState { private_key: SecretKey(self.server_private_key().to_string()), addresses };
        let egress = EgressState {
            default_action: policy.default_action,
            rules: policy.rules.iter().map(StateRule::from).collect(),
        };
        Ok(DesiredState { interface, peers, egress }.canonical())
    }

    /// Renews or starts the session of the gateway process `session` presenting
    /// `credential`; a credential that is not a gateway's is [`LeaseOutcome::Unknown`].
    pub async fn hold_gateway_session(
        &self,
        credential: &str,
        session: Uuid,
        report: GatewayReport,
    ) -> Result<LeaseOutcome> {
        // A read first: a wrong credential, however often sent, costs no write.
        if self.authenticate_gateway(credential).await?.is_none() {
            return Ok(LeaseOutcome::Unknown);
        }
        let lease = Lease { credential_hash: hash_token(credential).to_vec(), session, now: Timestamp::now(), report };
        let outcome = self.store().hold_gateway_session(&lease).await?;
        if let LeaseOutcome::Started(gateway) = &outcome {
            tracing::info!(gateway.id = %gateway.id, gateway.name = %gateway.name, "gateway connected");
        }
        Ok(outcome)
    }

    /// Ends the session of a gateway process that stops; whether it held one.
    pub async fn release_gateway_session(&self, credential: &str, session: Uuid) -> Result<bool> {
        if !credential.starts_with(CREDENTIAL_PREFIX) {
            return Ok(false);
        }
        let now = Timestamp::now();
        let lease =
            Lease { credential_hash: hash_token(credential).to_vec(), session, now, report: Default::default() };
        self.store().release_gateway_session(&lease).await
    }

    /// Ends the sessions of gateways that stopped polling ([`crate::gateway::LEASE_SECS`]),
    /// with an audit event each; run periodically by every process (a session ends once).
    pub async fn end_lapsed_gateway_sessions(&self) -> Result<Vec<Gateway>> {
        let before = Timestamp::now().plus_secs(-crate::gateway::LEASE_SECS);
        let ended = self.store().end_lapsed_gateway_sessions(before).await?;
        for gateway in &ended {
            tracing::warn!(gateway.id = %gateway.id, gateway.name = %gateway.name, "gateway connection lost");
        }
        Ok(ended)
    }

    /// Whether the gateway `id` is still enrolled (not revoked): a waiting poll checks.
    pub async fn gateway_is_live(&self, id: Uuid) -> Result<bool> {
        Ok(self.store().gateway_by_id(id).await?.is_some_and(|g| g.revoked_at.is_none()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::egress::RuleAction;

    /// Whether the builder has been woken (a permit is stored), taking the permit.
    fn woken(hub: &StateHub) -> bool {
        let notified = hub.demanded.notified();
        tokio::pin!(notified);
        notified.as_mut().enable()
    }

    fn empty() -> DesiredState {
        let interface = InterfaceState { private_key: SecretKey("key".into()), addresses: vec![] };
        DesiredState {
            interface,
            peers: vec![],
            egress: EgressState { default_action: RuleAction::Accept, rules: vec![] },
        }
    }

    #[test]
    fn polls_wake_the_builder_only_while_nothing_is_published() {
        let hub = StateHub::default();
        hub.demand();
        assert!(woken(&hub), "the first poll asks for a build");
        hub.demand();
        assert!(woken(&hub), "polls before the first build ask again");
        hub.publish(empty());
        hub.demand();
        assert!(!woken(&hub), "a published state is kept current by changes, not by polls");
        hub.forget();
        hub.demand();
        assert!(woken(&hub), "a forgotten state is built again");
    }
}
