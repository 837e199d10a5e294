//! Destinations and port ranges as Firezone reads them.

use std::net::IpAddr;

use super::{BAD_FORMAT, LOWER_ABOVE_UPPER, OUT_OF_RANGE};

/// An address with a prefix length (host bits kept, as sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Network {
    /// Whether one network contains the other (PostgreSQL's `inet && inet`).
    pub fn overlaps(&self, other: &Network) -> bool {
        let prefix = self.prefix.min(other.prefix);
        match (self.addr, other.addr) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                masked(u32::from(a).into(), prefix, 32) == masked(u32::from(b).into(), prefix, 32)
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => masked(u128::from(a), prefix, 128) == masked(u128::from(b), prefix, 128),
            _ => false,
        }
    }
}

/// The top `prefix` bits of a `width`-bit address.
fn masked(addr: u128, prefix: u8, width: u32) -> u128 {
    let host_bits = width - u32::from(prefix);
    if host_bits >= width {
        0
    } else {
        addr >> host_bits
    }
}

/// Firezone's cast: trim, split on the first `/`, an address, an integer prefix. A prefix
/// longer than the address (which Firezone let through to a database error) is refused too.
pub fn parse_destination(s: &str) -> Option<Network> {
    let s = s.trim();
    let (addr, prefix) = match s.split_once('/') {
        Some((addr, prefix)) => (addr, Some(prefix)),
        None => (s, None),
    };
    let addr: IpAddr = addr.parse().ok()?;
    let width = if addr.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix {
        Some(p) => p.parse::<u8>().ok().filter(|p| *p <= width)?,
        None => width,
    };
    Some(Network { addr, prefix })
}

/// `"lo-hi"`, `"lo - hi"`, `"n"` or the bracket form `"[lo,hi)"` (any of `[(` and `])`),
/// checked: both ports in 1..=65535, `lo` not above `hi`. Errors are Firezone's messages.
pub fn parse_port_range(s: &str) -> Result<(u16, u16), &'static str> {
    let (lo, hi) = bounds(s.trim()).ok_or(BAD_FORMAT)?;
    if lo > hi {
        return Err(LOWER_ABOVE_UPPER);
    }
    let port = |n: i64| u16::try_from(n).ok().filter(|p| *p >= 1);
    match (port(lo), port(hi)) {
        (Some(lo), Some(hi)) => Ok((lo, hi)),
        _ => Err(OUT_OF_RANGE),
    }
}

/// The inclusive bounds the text names, unchecked.
fn bounds(s: &str) -> Option<(i64, i64)> {
    if let Some(inner) = s.strip_prefix(['[', '(']) {
        let lower_open = s.starts_with('(');
        let (inner, upper_open) = match inner.strip_suffix(')') {
            Some(inner) => (inner, true),
            None => (inner.strip_suffix(']')?, false),
        };
        let (lo, hi) = inner.split_once(',')?;
        let (lo, hi) = (number(lo.trim())?, number(hi.trim())?);
        return Some((lo + i64::from(lower_open), hi - i64::from(upper_open)));
    }
    match s.split_once('-') {
        Some((lo, hi)) if !lo.trim().is_empty() => Some((number(lo.trim())?, number(hi.trim())?)),
        Some((_, n)) => number(n.trim()).map(|n| (n, n)),
        None => number(s).map(|n| (n, n)),
    }
}

/// Elixir's `Integer.parse`: leading digits, whatever follows ignored (`"80abc"` is 80).
fn number(s: &str) -> Option<i64> {
    let digits: &str = &s[..s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len())];
    if digits.is_empty() {
        return None;
    }
    Some(digits.parse::<i64>().unwrap_or(i64::MAX))
}
