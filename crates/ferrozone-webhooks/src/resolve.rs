//! Name resolution for deliveries that drops the addresses webhooks may not call
//! ([`ferrozone_domain::webhook::address`]), so that the check is made on the address
//! actually connected to, at delivery time, whatever the name resolved to at registration.

use std::error::Error;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

use ferrozone_domain::webhook::address;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// A name resolved only to addresses webhooks may not call (or an IP-literal URL that is
/// one): the attempt's outcome is `refused_address`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedAddress(pub String);

impl fmt::Display for RefusedAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is a loopback, link-local or private address", self.0)
    }
}

impl Error for RefusedAddress {}

/// The system resolver, keeping only public addresses.
#[derive(Debug, Clone, Copy, Default)]
pub struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = found.iter().copied().filter(|a| address::is_public(a.ip())).collect();
            if public.is_empty() && !found.is_empty() {
                return Err(Box::new(RefusedAddress(host)) as Box<dyn Error + Send + Sync>);
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

/// Whether `err` or one of its causes is a [`RefusedAddress`].
pub fn is_refused(err: &(dyn Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(err) = cause {
        if err.is::<RefusedAddress>() {
            return true;
        }
        cause = err.source();
    }
    false
}

/// The refusal of an IP-literal host, which skips the resolver.
pub fn check_literal(url: &url::Url) -> Result<(), RefusedAddress> {
    let ip = match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
        _ => return Ok(()),
    };
    if address::is_public(ip) {
        Ok(())
    } else {
        Err(RefusedAddress(ip.to_string()))
    }
}
