//! Network values clients send: endpoints, DNS servers, allowed IPs.

use std::net::{IpAddr, Ipv6Addr};

/// Longest host name accepted (RFC 1035 limit on the textual form).
const MAX_HOST_LEN: usize = 253;

/// A host name: letters, digits, `.`, `_` and `-`, as Firezone accepted.
pub fn is_host_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_HOST_LEN
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn is_port(s: &str) -> bool {
    !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit()) && matches!(s.parse::<u32>(), Ok(1..=65535))
}

/// An endpoint: an IP, `IP:port`, `[IPv6]:port`, or a host name with an optional `:port`.
pub fn is_endpoint(s: &str) -> bool {
    if s.parse::<IpAddr>().is_ok() {
        return true;
    }
    if let Some(rest) = s.strip_prefix('[') {
        return match rest.split_once("]:") {
            Some((ip, port)) => ip.parse::<Ipv6Addr>().is_ok() && is_port(port),
            None => rest.strip_suffix(']').is_some_and(|ip| ip.parse::<Ipv6Addr>().is_ok()),
        };
    }
    match s.rsplit_once(':') {
        Some((host, port)) => (is_host_name(host) || host.parse::<std::net::Ipv4Addr>().is_ok()) && is_port(port),
        None => is_host_name(s),
    }
}

/// A DNS server: an IP address or a host name, without a port.
pub fn is_dns_server(s: &str) -> bool {
    s.parse::<IpAddr>().is_ok() || is_host_name(s)
}

/// An allowed-IPs entry: an address, or an address with a prefix length valid for its family.
/// Returns the canonical form used to detect duplicates.
pub fn allowed_ip(s: &str) -> Option<(IpAddr, Option<u8>)> {
    match s.split_once('/') {
        None => s.parse::<IpAddr>().ok().map(|ip| (ip, None)),
        Some((addr, len)) => {
            let ip = addr.parse::<IpAddr>().ok()?;
            if len.is_empty() || len.len() > 3 || !len.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let len: u8 = len.parse().ok()?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            (len <= max).then_some((ip, Some(len)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        for ok in [
            "1.2.3.4",
            "1.2.3.4:51820",
            "[fd00::1]:8080",
            "fd00::1",
            "[fd00::1]",
            "vpn.example.com",
            "vpn.example.com:1",
            "host:65535",
            "localhost",
        ] {
            assert!(is_endpoint(ok), "{ok}");
        }
        for bad in [
            "",
            "host:0",
            "host:65536",
            "host:",
            ":80",
            "[fd00::1]:",
            "[zz]:80",
            "a b",
            "http://x",
            "h:8o",
            "1.2.3.4:99999",
            "[fd00::1]:0",
        ] {
            assert!(!is_endpoint(bad), "{bad}");
        }
    }

    #[test]
    fn dns_servers() {
        assert!(is_dns_server("1.1.1.1") && is_dns_server("::1") && is_dns_server("dns.example.com"));
        assert!(!is_dns_server("1.1.1.1:53") && !is_dns_server("") && !is_dns_server("a b"));
    }

    #[test]
    fn allowed_ips() {
        assert_eq!(allowed_ip("10.0.0.0/8"), Some(("10.0.0.0".parse().unwrap(), Some(8))));
        assert_eq!(allowed_ip("1.1.1.1"), Some(("1.1.1.1".parse().unwrap(), None)));
        assert!(allowed_ip("::/0").is_some() && allowed_ip("::/128").is_some());
        for bad in ["10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/+8", "x/8", "1.1.1.1/0008", ""] {
            assert!(allowed_ip(bad).is_none(), "{bad}");
        }
    }
}
