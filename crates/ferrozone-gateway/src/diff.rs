//! The difference between the peers an interface should have and the ones it has.

use std::collections::{HashMap, HashSet};

use crate::key::Key;
use crate::peer::Peer;

/// What to change on an interface: peers to add or rewrite, and peers to remove.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Added, or rewritten whole (preshared key and allowed IPs replaced).
    pub upsert: Vec<Peer>,
    pub remove: Vec<Key>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.upsert.is_empty() && self.remove.is_empty()
    }
}

/// The changes that turn `observed` into `desired`: a peer that is missing or differs in
/// preshared key or allowed IPs is upserted, a peer nobody wants is removed, and the rest
/// is left alone (its handshake and counters survive). Both outputs follow the order of
/// their input, so the result is deterministic.
pub fn diff(desired: &[Peer], observed: &[Peer]) -> Changes {
    let on_interface: HashMap<&Key, &Peer> = observed.iter().map(|p| (&p.public_key, p)).collect();
    let wanted: HashSet<&Key> = desired.iter().map(|p| &p.public_key).collect();
    let upsert = desired.iter().filter(|peer| on_interface.get(&peer.public_key) != Some(peer)).cloned().collect();
    let remove = observed.iter().map(|p| p.public_key).filter(|key| !wanted.contains(key)).collect();
    Changes { upsert, remove }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(n: u8, psk: Option<u8>, ips: &[&str]) -> Peer {
        Peer::new(Key([n; 32]), psk.map(|p| Key([p; 32])), ips.iter().map(|ip| ip.parse().unwrap()).collect())
    }

    fn seen(peers: &[Peer]) -> Vec<Peer> {
        peers.to_vec()
    }

    #[test]
    fn nothing_to_do_when_both_sides_agree() {
        let peers = [peer(1, Some(9), &["10.0.0.2/32", "fd00::2/128"]), peer(2, None, &["10.0.0.3/32"])];
        assert!(diff(&peers, &seen(&peers)).is_empty());
        assert!(diff(&[], &[]).is_empty());
    }

    #[test]
    fn allowed_ips_compare_as_sets() {
        let desired = [peer(1, None, &["fd00::2/128", "10.0.0.2/32", "10.0.0.2/32"])];
        let observed = seen(&[peer(1, None, &["10.0.0.2/32", "fd00::2/128"])]);
        assert!(diff(&desired, &observed).is_empty());
    }

    #[test]
    fn missing_peers_are_added_and_unwanted_ones_removed() {
        let desired = [peer(1, None, &["10.0.0.2/32"]), peer(3, Some(4), &["10.0.0.4/32"])];
        let observed = seen(&[peer(1, None, &["10.0.0.2/32"]), peer(2, None, &["10.0.0.3/32"])]);
        let changes = diff(&desired, &observed);
        assert_eq!(changes.upsert, vec![desired[1].clone()]);
        assert_eq!(changes.remove, vec![Key([2; 32])]);
    }

    #[test]
    fn a_changed_key_or_address_rewrites_the_peer() {
        let observed = seen(&[peer(1, Some(5), &["10.0.0.2/32"]), peer(2, None, &["10.0.0.3/32"])]);
        for desired in [
            [peer(1, Some(6), &["10.0.0.2/32"]), peer(2, None, &["10.0.0.3/32"])],
            [peer(1, None, &["10.0.0.2/32"]), peer(2, None, &["10.0.0.3/32"])],
            [peer(1, Some(5), &["10.0.0.9/32"]), peer(2, None, &["10.0.0.3/32"])],
            [peer(1, Some(5), &["10.0.0.2/32", "fd00::2/128"]), peer(2, None, &["10.0.0.3/32"])],
        ] {
            let changes = diff(&desired, &observed);
            assert_eq!(changes, Changes { upsert: vec![desired[0].clone()], remove: vec![] }, "{desired:?}");
        }
    }

    #[test]
    fn an_all_zero_preshared_key_means_none() {
        let with_zero = Peer::new(Key([1; 32]), Some(Key([0; 32])), vec![]);
        assert_eq!(with_zero, peer(1, None, &[]));
    }

    #[test]
    fn an_empty_desired_set_removes_everything() {
        let observed = seen(&[peer(1, None, &[]), peer(2, None, &[])]);
        assert_eq!(diff(&[], &observed).remove, vec![Key([1; 32]), Key([2; 32])]);
    }
}
