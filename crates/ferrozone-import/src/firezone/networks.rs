//! The source's tunnel networks. Clients keep their addresses and route to the server's
//! tunnel address, so Ferrozone must serve the very same networks: they are read from the
//! source's variables (Docker installs since 0.7.0 use 100.64.0.0/10 and fd00::/106, the
//! code default elsewhere is 10.3.2.0/24 and fd00::3:2:0/120), every device address is
//! checked against them, and a difference from Ferrozone's settings is turned into the
//! exact settings to set.

use std::net::IpAddr;

use anyhow::Context;
use ferrozone_domain::ipam::{Pool, Pools};
use ipnet::IpNet;

use super::secrets::Variables;

/// One family's network and the server's address in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    pub network: IpNet,
    pub address: IpAddr,
}

/// The source's networks; `None` where the family is disabled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelNetworks {
    pub v4: Option<Network>,
    pub v6: Option<Network>,
    /// Doubtful values that were read around (reported).
    pub warnings: Vec<String>,
}

/// The variable prefix, Firezone's defaults, and Ferrozone's variable prefix per family.
struct Family {
    source: &'static str,
    network: &'static str,
    address: &'static str,
    target: &'static str,
}

const V4: Family = Family {
    source: "WIREGUARD_IPV4",
    network: "10.3.2.0/24",
    address: "10.3.2.1",
    target: "FERROZONE_WIREGUARD_IPV4",
};
const V6: Family = Family {
    source: "WIREGUARD_IPV6",
    network: "fd00::3:2:0/120",
    address: "fd00::3:2:1",
    target: "FERROZONE_WIREGUARD_IPV6",
};

impl TunnelNetworks {
    /// The networks `vars` set, Firezone's defaults where they set none.
    pub fn from_variables(vars: &Variables) -> anyhow::Result<Self> {
        let mut warnings = Vec::new();
        let v4 = family(vars, &V4, true, &mut warnings)?;
        let v6 = family(vars, &V6, false, &mut warnings)?;
        Ok(Self { v4, v6, warnings })
    }

    /// Whether `ip` lies in the source's network of its family.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let network = if ip.is_ipv4() { self.v4 } else { self.v6 };
        network.is_some_and(|n| n.network.contains(&ip))
    }

    /// The Ferrozone settings to set so that it serves these networks, as
    /// `VARIABLE=value` lines; empty when `target` already does.
    pub fn settings_for(&self, target: &Pools) -> Vec<String> {
        let mut lines = Vec::new();
        advise(&V4, self.v4, target.v4.as_ref(), &mut lines);
        advise(&V6, self.v6, target.v6.as_ref(), &mut lines);
        lines
    }
}

fn family(vars: &Variables, family: &Family, v4: bool, warnings: &mut Vec<String>) -> anyhow::Result<Option<Network>> {
    let name = |suffix: &str| format!("{}_{suffix}", family.source);
    if vars.get(&name("ENABLED")).map(str::trim) == Some("false") {
        return Ok(None);
    }
    let text = vars.get(&name("NETWORK")).unwrap_or(family.network).trim();
    let network: IpNet = text.parse().with_context(|| format!("{} is not a network: {text:?}", name("NETWORK")))?;
    if network.addr().is_ipv4() != v4 {
        anyhow::bail!("{} is not an {} network: {text:?}", name("NETWORK"), if v4 { "IPv4" } else { "IPv6" });
    }
    let network = network.trunc();
    let text = vars.get(&name("ADDRESS")).unwrap_or(family.address).trim();
    let address = match text.parse::<IpAddr>() {
        Ok(address) if network.contains(&address) => address,
        _ => {
            // Some 0.7 installers wrote the IPv6 address into WIREGUARD_IPV4_ADDRESS.
            let first = network.hosts().next().unwrap_or(network.addr());
            warnings.push(format!(
                "{} ({text:?}) is not an address in {network}; assuming the server's tunnel address is {first}",
                name("ADDRESS")
            ));
            first
        }
    };
    Ok(Some(Network { network, address }))
}

fn advise(family: &Family, source: Option<Network>, target: Option<&Pool>, lines: &mut Vec<String>) {
    let prefix = family.target;
    match (source, target) {
        (None, None) => {}
        (None, Some(_)) => lines.push(format!("{prefix}_ENABLED=false")),
        (Some(source), target) => {
            if target.is_none() {
                lines.push(format!("{prefix}_ENABLED=true"));
            }
            if target.map(Pool::network) != Some(source.network) {
                lines.push(format!("{prefix}_NETWORK={}", source.network));
            }
            if target.map(Pool::gateway) != Some(source.address) {
                lines.push(format!("{prefix}_ADDRESS={}", source.address));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use ferrozone_domain::Settings;

    use super::*;

    fn vars(text: &str) -> Variables {
        Variables::from_env_file(text).unwrap()
    }

    #[test]
    fn firezone_defaults_match_ferrozone_defaults() {
        let networks = TunnelNetworks::from_variables(&Variables::default()).unwrap();
        assert_eq!(networks.settings_for(&Settings::standard().pools), Vec::<String>::new());
        assert!(networks.contains("10.3.2.9".parse().unwrap()));
        assert!(!networks.contains("100.64.0.2".parse().unwrap()));
    }

    #[test]
    fn a_docker_install_needs_its_networks_set() {
        let docker = "WIREGUARD_IPV4_NETWORK=100.64.0.0/10\nWIREGUARD_IPV4_ADDRESS=100.64.0.1\n\
                      WIREGUARD_IPV6_NETWORK=fd00::/106\nWIREGUARD_IPV6_ADDRESS=fd00::1\n";
        let networks = TunnelNetworks::from_variables(&vars(docker)).unwrap();
        assert!(networks.contains("100.64.3.4".parse().unwrap()));
        assert!(networks.contains("fd00::3:4".parse().unwrap()));
        assert_eq!(
            networks.settings_for(&Settings::standard().pools),
            [
                "FERROZONE_WIREGUARD_IPV4_NETWORK=100.64.0.0/10",
                "FERROZONE_WIREGUARD_IPV4_ADDRESS=100.64.0.1",
                "FERROZONE_WIREGUARD_IPV6_NETWORK=fd00::/106",
                "FERROZONE_WIREGUARD_IPV6_ADDRESS=fd00::1",
            ]
        );
    }

    #[test]
    fn a_disabled_family_and_a_misplaced_address() {
        let text = "WIREGUARD_IPV6_ENABLED=false\nWIREGUARD_IPV4_ADDRESS=fd00::1\n";
        let networks = TunnelNetworks::from_variables(&vars(text)).unwrap();
        assert_eq!(networks.v6, None);
        assert_eq!(networks.v4.unwrap().address, "10.3.2.1".parse::<IpAddr>().unwrap());
        assert_eq!(networks.warnings.len(), 1, "{:?}", networks.warnings);
        assert_eq!(networks.settings_for(&Settings::standard().pools), ["FERROZONE_WIREGUARD_IPV6_ENABLED=false"]);
        assert!(TunnelNetworks::from_variables(&vars("WIREGUARD_IPV4_NETWORK=fd00::/106")).is_err());
        assert!(TunnelNetworks::from_variables(&vars("WIREGUARD_IPV4_NETWORK=nope")).is_err());
    }
}
