//! The host side of routing: IP forwarding (sysctl files) and the egress interface (the
//! default route's, unless configured).

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// Where the sysctl files are: `/proc/sys`, or a directory standing in for it in tests.
#[derive(Debug, Clone)]
pub struct Sysctl {
    root: PathBuf,
}

impl Default for Sysctl {
    fn default() -> Self {
        Self { root: PathBuf::from("/proc/sys") }
    }
}

/// The forwarding switch of a family: its sysctl name, relative to the sysctl root.
const IPV4_FORWARDING: &str = "net/ipv4/ip_forward";
const IPV6_FORWARDING: &str = "net/ipv6/conf/all/forwarding";

impl Sysctl {
    /// Sysctl files under `root` instead of `/proc/sys`.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Turns forwarding on for the families the tunnel uses. A switch already on is left
    /// unwritten, so a container whose host turned it on needs no privilege; a switch Ferrozone
    /// may not turn on is an error naming it and the command that would.
    pub fn enable_forwarding(&self, ipv4: bool, ipv6: bool) -> anyhow::Result<()> {
        let wanted = [(ipv4, IPV4_FORWARDING), (ipv6, IPV6_FORWARDING)];
        for name in wanted.into_iter().filter_map(|(on, name)| on.then_some(name)) {
            self.turn_on(name)?;
        }
        Ok(())
    }

    fn turn_on(&self, name: &str) -> anyhow::Result<()> {
        let path = self.root.join(name);
        let dotted = name.replace('/', ".");
        let current = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {dotted} ({}): is this family enabled in the kernel?", path.display()))?;
        if current.trim() == "1" {
            return Ok(());
        }
        match std::fs::write(&path, "1\n") {
            Ok(()) => Ok(()),
            Err(error) if is_refusal(&error) => bail!(
                "cannot turn on {dotted}: {error}. Run Ferrozone as root (CAP_NET_ADMIN, /proc/sys writable), or turn it \
                 on on the host: `sysctl -w {dotted}=1`"
            ),
            Err(error) => Err(error).with_context(|| format!("writing 1 to {}", path.display())),
        }
    }
}

/// Not permitted (EACCES, EPERM) or a read-only /proc/sys, as in most containers (EROFS).
fn is_refusal(error: &std::io::Error) -> bool {
    const EROFS: i32 = 30;
    error.kind() == ErrorKind::PermissionDenied || error.raw_os_error() == Some(EROFS)
}

/// The interface of the IPv4 default route with the lowest metric, from the text of
/// `/proc/net/route` (columns `Iface Destination Gateway Flags RefCnt Use Metric Mask …`,
/// addresses in hexadecimal). `None` without an up default route.
pub fn default_route_interface(route_table: &str) -> Option<String> {
    const RTF_UP: u32 = 0x1;
    route_table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (iface, destination, flags, metric, mask) =
                (fields.first()?, fields.get(1)?, fields.get(3)?, fields.get(6)?, fields.get(7)?);
            let up = u32::from_str_radix(flags, 16).ok()? & RTF_UP != 0;
            let default = *destination == "00000000" && *mask == "00000000";
            (up && default).then(|| (metric.parse::<u32>().unwrap_or(u32::MAX), iface.to_string()))
        })
        .min()
        .map(|(_, iface)| iface)
}

/// The egress interface: `configured` if set, else the default route's (from
/// `/proc/net/route`), else an error asking for the setting.
pub fn egress_interface(configured: Option<&str>, proc_net_route: &Path) -> anyhow::Result<String> {
    if let Some(name) = configured {
        return Ok(name.to_owned());
    }
    let table = std::fs::read_to_string(proc_net_route)
        .with_context(|| format!("reading the routing table {}", proc_net_route.display()))?;
    default_route_interface(&table).context(
        "no IPv4 default route to take the egress interface from: set FERROZONE_EGRESS_INTERFACE, or \
         FERROZONE_MASQUERADE=false for a routed deployment",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTES: &str = "\
Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t0000A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
wlan0\t00000000\t0100A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0
eth0\t00000000\t0100A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
down0\t00000000\t0100A8C0\t0002\t0\t0\t1\t00000000\t0\t0\t0
";

    #[test]
    fn the_default_route_with_the_lowest_metric_wins() {
        assert_eq!(default_route_interface(ROUTES).as_deref(), Some("eth0"));
    }

    #[test]
    fn no_default_route_is_none() {
        let only_local = ROUTES.lines().take(2).collect::<Vec<_>>().join("\n");
        assert_eq!(default_route_interface(&only_local), None);
        assert_eq!(default_route_interface(""), None);
    }

    #[test]
    fn a_configured_egress_interface_wins_and_a_missing_route_says_what_to_set() {
        let dir = tempfile::tempdir().unwrap();
        let routes = dir.path().join("route");
        std::fs::write(&routes, ROUTES.lines().take(2).collect::<Vec<_>>().join("\n")).unwrap();
        assert_eq!(egress_interface(Some("ens3"), &routes).unwrap(), "ens3");
        let error = egress_interface(None, &routes).unwrap_err().to_string();
        assert!(error.contains("FERROZONE_EGRESS_INTERFACE"), "{error}");
        std::fs::write(&routes, ROUTES).unwrap();
        assert_eq!(egress_interface(None, &routes).unwrap(), "eth0");
    }

    fn sysctl_tree(ipv4: &str, ipv6: &str) -> (tempfile::TempDir, Sysctl) {
        let dir = tempfile::tempdir().unwrap();
        for (name, value) in [(IPV4_FORWARDING, ipv4), (IPV6_FORWARDING, ipv6)] {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, value).unwrap();
        }
        let sysctl = Sysctl::at(dir.path());
        (dir, sysctl)
    }

    #[test]
    fn forwarding_is_turned_on_for_the_families_asked() {
        let (dir, sysctl) = sysctl_tree("0\n", "0\n");
        sysctl.enable_forwarding(true, false).unwrap();
        let read = |name| std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert_eq!((read(IPV4_FORWARDING).trim(), read(IPV6_FORWARDING).trim()), ("1", "0"));
        sysctl.enable_forwarding(true, true).unwrap();
        assert_eq!(read(IPV6_FORWARDING).trim(), "1");
    }

    #[test]
    fn a_switch_that_cannot_be_written_is_a_clear_error_unless_already_on() {
        let (dir, sysctl) = sysctl_tree("1\n", "0\n");
        // A read-only sysctl refuses even root (proc checks the mode bits for everyone).
        let ipv6 = dir.path().join(IPV6_FORWARDING);
        std::fs::remove_file(&ipv6).unwrap();
        std::os::unix::fs::symlink("/proc/sys/kernel/osrelease", &ipv6).unwrap();
        sysctl.enable_forwarding(true, false).unwrap();
        let error = sysctl.enable_forwarding(true, true).unwrap_err().to_string();
        assert!(error.contains("cannot turn on net.ipv6.conf.all.forwarding"), "{error}");
        assert!(error.contains("sysctl -w net.ipv6.conf.all.forwarding=1"), "{error}");
    }
}
