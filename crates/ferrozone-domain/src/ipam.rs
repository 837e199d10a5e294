//! Address pools: which addresses of a tunnel network a device may get.
//!
//! Assignment itself happens in the store, inside the insert transaction, with a
//! per-network cursor and a list of released addresses, so that its cost does not
//! depend on how many devices exist. This module holds the arithmetic.

use std::net::IpAddr;

use ipnet::IpNet;

/// Largest number of offsets considered in one network. Large IPv6 networks are used
/// from their start; 2^62 addresses is more than any deployment will assign.
const MAX_POOL_SIZE: u128 = 1 << 62;

/// One tunnel network and its gateway address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    network: IpNet,
    gateway: IpAddr,
}

/// The networks devices take addresses from; a disabled family is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pools {
    pub v4: Option<Pool>,
    pub v6: Option<Pool>,
}

impl Pool {
    /// `network` is normalised to its network address (`10.3.2.7/24` → `10.3.2.0/24`).
    pub fn new(network: IpNet, gateway: IpAddr) -> Result<Self, String> {
        let network = network.trunc();
        if network.addr().is_ipv4() != gateway.is_ipv4() {
            return Err(format!("gateway {gateway} is not of the same family as {network}"));
        }
        if !network.contains(&gateway) {
            return Err(format!("gateway {gateway} is not inside {network}"));
        }
        Ok(Self { network, gateway })
    }

    pub fn network(&self) -> IpNet {
        self.network
    }

    pub fn gateway(&self) -> IpAddr {
        self.gateway
    }

    /// The key under which the store keeps this pool's cursor: the network in CIDR form.
    pub fn key(&self) -> String {
        self.network.to_string()
    }

    /// Number of offsets in the pool, the network address (0) and the last one included.
    pub fn size(&self) -> u64 {
        let host_bits = u32::from(self.network.max_prefix_len() - self.network.prefix_len());
        let size = 1u128.checked_shl(host_bits).unwrap_or(u128::MAX).min(MAX_POOL_SIZE);
        u64::try_from(size).unwrap_or(u64::MAX)
    }

    /// The first offset the cursor tries.
    pub fn first_offset(&self) -> u64 {
        1
    }

    /// The address at `offset`, or `None` when it must never be assigned (the network
    /// address, the last address of the network, the gateway, or outside the pool).
    pub fn assignable(&self, offset: u64) -> Option<IpAddr> {
        if offset == 0 || offset >= self.size().saturating_sub(1) {
            return None;
        }
        let addr = self.address_at(offset);
        (addr != self.gateway).then_some(addr)
    }

    /// Whether `addr` lies inside the network.
    pub fn contains(&self, addr: IpAddr) -> bool {
        self.network.contains(&addr)
    }

    /// The network address, the gateway and the broadcast (last) address are reserved.
    pub fn is_reserved(&self, addr: IpAddr) -> bool {
        addr == self.network.network() || addr == self.gateway || addr == self.network.broadcast()
    }

    /// Whether the store may hand out `addr` (used for released addresses, which may date
    /// from an earlier network configuration).
    pub fn may_assign(&self, addr: IpAddr) -> bool {
        self.contains(addr) && !self.is_reserved(addr) && self.offset_of(addr) < u128::from(self.size())
    }

    pub fn exhausted_message(&self) -> String {
        format!("CIDR {} is exhausted", self.network)
    }

    pub fn outside_message(&self) -> String {
        format!("is not in the CIDR {}", self.network)
    }

    fn address_at(&self, offset: u64) -> IpAddr {
        match self.network.network() {
            IpAddr::V4(base) => {
                let low = u32::try_from(offset).unwrap_or(u32::MAX);
                IpAddr::V4((u32::from(base).wrapping_add(low)).into())
            }
            IpAddr::V6(base) => IpAddr::V6((u128::from(base).wrapping_add(u128::from(offset))).into()),
        }
    }

    fn offset_of(&self, addr: IpAddr) -> u128 {
        match (addr, self.network.network()) {
            (IpAddr::V4(a), IpAddr::V4(b)) => u128::from(u32::from(a).wrapping_sub(u32::from(b))),
            (IpAddr::V6(a), IpAddr::V6(b)) => u128::from(a).wrapping_sub(u128::from(b)),
            _ => u128::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(net: &str, gw: &str) -> Pool {
        Pool::new(net.parse().unwrap(), gw.parse().unwrap()).unwrap()
    }

    #[test]
    fn skips_network_gateway_and_broadcast() {
        let p = pool("10.3.2.0/24", "10.3.2.1");
        assert_eq!(p.size(), 256);
        assert_eq!(p.assignable(0), None);
        assert_eq!(p.assignable(1), None, "gateway");
        assert_eq!(p.assignable(2), Some("10.3.2.2".parse().unwrap()));
        assert_eq!(p.assignable(254), Some("10.3.2.254".parse().unwrap()));
        assert_eq!(p.assignable(255), None, "broadcast");
        let usable = (0..p.size()).filter_map(|o| p.assignable(o)).count();
        assert_eq!(usable, 253);
    }

    #[test]
    fn gateway_anywhere_in_the_network_is_skipped() {
        let p = pool("10.0.0.0/29", "10.0.0.5");
        let got: Vec<_> = (0..p.size()).filter_map(|o| p.assignable(o)).map(|a| a.to_string()).collect();
        assert_eq!(got, ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.6"]);
    }

    #[test]
    fn ipv6_pool_is_capped_and_canonical() {
        let p = pool("fd00::3:2:0/120", "fd00::3:2:1");
        assert_eq!(p.size(), 256);
        assert_eq!(p.assignable(2).unwrap().to_string(), "fd00::3:2:2");
        assert_eq!(pool("fd00::/8", "fd00::1").size(), 1 << 62);
    }

    #[test]
    fn reserved_and_membership() {
        let p = pool("10.3.2.0/24", "10.3.2.1");
        for a in ["10.3.2.0", "10.3.2.1", "10.3.2.255"] {
            assert!(p.is_reserved(a.parse().unwrap()), "{a}");
            assert!(!p.may_assign(a.parse().unwrap()), "{a}");
        }
        assert!(p.may_assign("10.3.2.9".parse().unwrap()));
        assert!(!p.may_assign("10.3.3.9".parse().unwrap()));
        assert!(!p.contains("fd00::1".parse().unwrap()));
    }

    #[test]
    fn network_is_normalised_and_gateway_checked() {
        assert_eq!(pool("10.3.2.7/24", "10.3.2.1").key(), "10.3.2.0/24");
        assert!(Pool::new("10.3.2.0/24".parse().unwrap(), "10.9.9.9".parse().unwrap()).is_err());
        assert!(Pool::new("10.3.2.0/24".parse().unwrap(), "fd00::1".parse().unwrap()).is_err());
    }

    #[test]
    fn tiny_networks_have_nothing_to_assign() {
        let p = pool("10.0.0.0/31", "10.0.0.0");
        assert!((0..p.size()).all(|o| p.assignable(o).is_none()));
    }
}
