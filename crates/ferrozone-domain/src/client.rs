//! Who a client is, for the limits counted per client (connections, sign-in attempts,
//! sign-in flows): its network rather than its exact address.

use std::net::{IpAddr, Ipv6Addr};

/// The network a client address is counted under: an IPv4 address as is (also when written
/// IPv4-mapped in IPv6), an IPv6 address by its /64, which one client commonly holds whole.
pub fn client_network(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn ipv4_is_itself_and_ipv6_its_64() {
        assert_eq!(client_network(ip("192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(client_network(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(client_network(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_ne!(client_network(ip("2001:db8:1:2::1")), client_network(ip("2001:db8:1:3::1")));
    }
}
