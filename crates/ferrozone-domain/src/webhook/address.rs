//! Which addresses a webhook may be delivered to.
//!
//! A receiver URL is chosen by an administrator, but delivering to it is a request the
//! server makes from inside its network: without a rule, a URL could reach the server's
//! own loopback services, a cloud metadata endpoint or the private network. Unless
//! `FERROZONE_WEBHOOK_ALLOW_PRIVATE` is on, only public unicast addresses are called; the
//! check runs on each address a name resolves to, at delivery time.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is a public unicast address a webhook may be delivered to.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT), 100.64.0.0/10
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments, 192.0.0.0/24
        || (a == 198 && (b == 18 || b == 19)) // benchmarking, 198.18.0.0/15
        || a >= 240; // reserved, 240.0.0.0/4
    !refused
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return is_public_v4(v4);
    }
    let first = ip.segments()[0];
    let refused = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local, fc00::/7
        || (first & 0xffc0) == 0xfe80 // link-local, fe80::/10
        || (first & 0xffc0) == 0xfec0 // site-local (deprecated), fec0::/10
        || (first == 0x2001 && ip.segments()[1] == 0x0db8) // documentation, 2001:db8::/32
        || ip.segments()[..3] == [0x64, 0xff9b, 0x0001] // NAT64 local-use, 64:ff9b:1::/48 (RFC 8215)
        || ip.segments()[..6] == [0; 6]; // IPv4-compatible (deprecated) and the rest of ::/96
    !refused
}

/// The IPv4 address an IPv6 address stands for, where it is one in disguise: mapped
/// (`::ffff:a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) or 6to4 (`2002:aabb:ccdd::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if let Some(mapped) = ip.to_ipv4_mapped() {
        Some(mapped)
    } else if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(low)
    } else if s[0] == 0x2002 {
        Some(Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_table() {
        let table = [
            ("93.184.216.34", true),
            ("1.1.1.1", true),
            ("127.0.0.1", false),
            ("127.8.9.10", false),
            ("10.1.2.3", false),
            ("172.16.0.1", false),
            ("172.31.255.255", false),
            ("172.32.0.1", true),
            ("192.168.1.1", false),
            ("100.64.0.1", false),
            ("100.127.255.254", false),
            ("100.128.0.1", true),
            ("169.254.169.254", false),
            ("0.0.0.0", false),
            ("0.1.2.3", false),
            ("255.255.255.255", false),
            ("224.0.0.1", false),
            ("192.0.2.10", false),
            ("198.51.100.1", false),
            ("203.0.113.1", false),
            ("198.18.0.1", false),
            ("240.0.0.1", false),
            ("2606:4700::1111", true),
            ("::1", false),
            ("::", false),
            ("fc00::1", false),
            ("fd12:3456::1", false),
            ("fe80::1", false),
            ("ff02::1", false),
            ("2001:db8::1", false),
            ("::ffff:127.0.0.1", false),
            ("::ffff:10.0.0.1", false),
            ("::ffff:169.254.169.254", false),
            ("::ffff:93.184.216.34", true),
            ("::127.0.0.1", false),
            ("64:ff9b::10.0.0.1", false),
            ("64:ff9b::93.184.216.34", true),
            // Local-use NAT64 (RFC 8215): the translator and the embedding are the site's own,
            // so the address behind it can be anything, the translator's own network too.
            ("64:ff9b:1::5db8:d822", false),
            ("64:ff9b:1:ffff::a00:1", false),
            ("64:ff9b:1:0:0:0:7f00:1", false),
            ("2002:7f00:1::", false),
            ("2002:5db8:d822::", true),
        ];
        for (text, public) in table {
            let ip: IpAddr = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(is_public(ip), public, "{text}");
        }
    }
}
