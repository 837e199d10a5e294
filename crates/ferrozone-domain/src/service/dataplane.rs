//! What the WireGuard data plane reads from and writes to the domain.

use std::sync::Arc;

use tokio::sync::Notify;
use zeroize::Zeroizing;

use super::Domain;
use crate::egress::{EgressPolicy, EgressRules};
use crate::error::Result;
use crate::model::{ActivePeer, DataPlaneChanges, StatsReport};
use crate::time::Timestamp;
use crate::vpn_session::VpnSession;

impl Domain {
    /// Notified (one stored permit, so nothing is missed) after every committed change in
    /// this process that can change the peers or the rules' sources: device writes, user
    /// deletes, disabling, a sign-in (which renews a VPN session), a new
    /// `vpn_session_duration` or default action (read by this process, whichever wrote it).
    /// One permit wakes one consumer: a process with several fans it out.
    pub fn peer_changes(&self) -> Arc<Notify> {
        self.data_plane_changes.peers.clone()
    }

    /// Notified, as [`Domain::peer_changes`], after every committed change in this process
    /// of the rules or of the memberships of groups, and nothing else: the peers do not
    /// change with them (docs/design/groups.md, "Membership changes").
    pub fn rule_changes(&self) -> Arc<Notify> {
        self.data_plane_changes.rules.clone()
    }

    /// Both wake-ups, for a single consumer of both (a test's).
    pub fn data_plane_changes(&self) -> DataPlaneChanges {
        self.data_plane_changes.clone()
    }

    /// Called after the commit, never before: a reconciler woken by it reads the new state.
    pub(crate) fn peers_changed(&self) {
        self.data_plane_changes.peers.notify_one();
    }

    /// [`Domain::peers_changed`] for a change of rules or memberships only.
    pub(crate) fn rules_changed(&self) {
        self.data_plane_changes.rules.notify_one();
    }

    /// The server's WireGuard private key (base64), for the interface.
    pub fn server_private_key(&self) -> &Zeroizing<String> {
        &self.server_private_key
    }

    /// The peers that should be on the interface, the active devices as of now with the
    /// current `vpn_session_duration` ([`Domain::vpn_session`]); preshared keys still
    /// sealed (see [`Domain::reveal`]).
    pub async fn active_peers(&self) -> Result<Vec<ActivePeer>> {
        self.store().active_peers(self.vpn_session()).await
    }

    /// What "active" means now: the effective `vpn_session_duration`, read per use, as of
    /// this moment.
    pub fn vpn_session(&self) -> VpnSession {
        VpnSession::new(self.current_values().vpn_session_duration, Timestamp::now())
    }

    /// The egress rules and the tunnel addresses of the active devices of the users they
    /// name, from one snapshot: a disabled user's devices, or those of an expired VPN
    /// session, are not there, like its peers. The default action is the one in effect.
    pub async fn egress_policy(&self) -> Result<EgressPolicy> {
        let mut policy = self.store().egress_policy(self.vpn_session()).await?;
        policy.default_action = self.current_values().egress_default_action;
        Ok(policy)
    }

    /// The rules and the memberships of the groups they name, as in
    /// [`Domain::egress_policy`] but without the sources: what a change of
    /// [`Domain::rule_changes`] alone needs read again.
    pub async fn egress_rules(&self) -> Result<EgressRules> {
        let mut rules = self.store().egress_rules().await?;
        rules.default_action = self.current_values().egress_default_action;
        Ok(rules)
    }

    /// Runs until the store is closed, notifying [`Domain::peer_changes`] and
    /// [`Domain::rule_changes`] after the changes other processes commit (this process's
    /// own notify them directly). An error ends the watch: the caller may start it again.
    pub async fn watch_peer_changes(&self) -> Result<()> {
        self.store().watch_data_plane(self.data_plane_changes.clone()).await
    }

    /// Stores statistics read from the embedded gateway's interface.
    pub async fn record_stats(&self, reports: Vec<StatsReport>) -> Result<()> {
        self.store().record_stats(reports).await
    }

    /// Stores statistics a gateway on another host read from its interface.
    pub async fn record_gateway_stats(&self, gateway: uuid::Uuid, reports: Vec<StatsReport>) -> Result<()> {
        self.store().record_stats_from(gateway, reports).await
    }
}
