//! First-run hints at the top of the console's pages: what an administrator should still
//! set up. Each comes from the running process, so it goes away once the cause is fixed.

use ferrozone_http::health::RoutingHealth;
use ferrozone_http::AppState;

/// A thing to fix, and how.
pub struct Hint {
    pub title: &'static str,
    pub text: String,
}

/// The hints that apply now: the external URL still naming this machine (device
/// configurations would send clients to `localhost`), and a data plane that does not run
/// or whose last pass failed.
pub fn hints(app: &AppState) -> Vec<Hint> {
    let mut hints = Vec::new();
    if names_this_machine(&app.web.external_url) {
        hints.push(Hint {
            title: "Set the external URL",
            text: format!(
                "FERROZONE_EXTERNAL_URL is {}, so device configurations send clients to this machine's own \
                 name. Set it (or --external-url) to the address users reach this server at, such as \
                 https://vpn.example.com, and restart.",
                app.web.external_url
            ),
        });
    }
    let health = app.data_plane.health();
    if health.backend == "none" {
        hints.push(Hint {
            title: "WireGuard is not running",
            text: "This process has no WireGuard backend (FERROZONE_WIREGUARD_BACKEND is none, or no backend \
                   could start): devices can be managed but no tunnel is up and nothing is enforced. Check the \
                   start-up log, the NET_ADMIN capability and the wireguard kernel module or wireguard-go."
                .to_owned(),
        });
    } else if health.last_reconcile_failed {
        hints.push(Hint {
            title: "WireGuard is out of date",
            text: format!(
                "The last update of the {} WireGuard interface failed: peers may be missing or stale. \
                 Check the log and /healthz.",
                health.backend
            ),
        });
    }
    if health.peers_refused > 0 {
        hints.push(Hint {
            title: "Too many devices for this WireGuard backend",
            text: format!(
                "{} devices are not on the {} WireGuard interface: wireguard-go holds at most 65,536 peers. Use the \
                 kernel backend (FERROZONE_WIREGUARD_BACKEND=kernel, with the wireguard module), or spread the \
                 devices over gateways on other hosts.",
                health.peers_refused, health.backend
            ),
        });
    }
    if matches!(health.routing, RoutingHealth::Applied { last_pass_failed: true, .. }) {
        hints.push(Hint {
            title: "Firewall rules are out of date",
            text: "The last pass over the nftables table failed: it holds the rules applied before. Check that \
                   nft is installed and the log."
                .to_owned(),
        });
    }
    hints
}

/// Whether `url`'s host is a loopback name or address.
fn names_this_machine(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default(),
    };
    let host = host.to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified())
}

#[cfg(test)]
mod tests {
    use super::names_this_machine;

    #[test]
    fn loopback_hosts_name_this_machine() {
        for url in ["http://localhost:13000", "https://LOCALHOST", "http://127.0.0.1:1/x", "http://[::1]:13000"] {
            assert!(names_this_machine(url), "{url}");
        }
        for url in ["https://vpn.example.com", "https://localhost.example.com", "http://10.0.0.1:13000"] {
            assert!(!names_this_machine(url), "{url}");
        }
    }
}
