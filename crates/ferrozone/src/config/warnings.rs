//! Settings that start a server no one else can use: warned about at start and shown on
//! `/healthz`, since nothing fails until a user tries a device.

use super::Config;

impl Config {
    /// What an operator should change before users rely on this server.
    pub fn start_warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.external_url_is_loopback() {
            let endpoint = match &self.default_client_endpoint {
                Some(endpoint) if !endpoint.trim().is_empty() => String::new(),
                _ => " and every device configuration says Endpoint = localhost".to_owned(),
            };
            warnings.push(format!(
                "FERROZONE_EXTERNAL_URL is {} (a loopback address): sign-in links point at this machine{endpoint}; \
                 set it to the URL users reach Ferrozone at",
                self.external_url
            ));
        }
        warnings
    }

    /// Whether the external URL names this machine only (`localhost`, the default, or a
    /// loopback address).
    fn external_url_is_loopback(&self) -> bool {
        let Ok(url) = url::Url::parse(&self.external_url) else { return false };
        match url.host() {
            Some(url::Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                name == "localhost" || name.ends_with(".localhost")
            }
            Some(url::Host::Ipv4(address)) => address.is_loopback(),
            Some(url::Host::Ipv6(address)) => address.is_loopback(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::Cli;

    fn warnings(args: &[&str]) -> Vec<String> {
        Cli::parse_args(args).unwrap().config.start_warnings()
    }

    #[test]
    fn the_default_external_url_is_warned_about() {
        let warnings = warnings(&["ferrozone", "serve"]);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].starts_with("FERROZONE_EXTERNAL_URL is http://localhost:13000"), "{warnings:?}");
        assert!(warnings[0].contains("Endpoint = localhost"), "{warnings:?}");
    }

    #[test]
    fn a_loopback_address_is_warned_about_and_a_real_host_is_not() {
        assert_eq!(warnings(&["ferrozone", "serve", "--external-url", "http://127.0.0.1:13000"]).len(), 1);
        assert_eq!(warnings(&["ferrozone", "serve", "--external-url", "https://[::1]/"]).len(), 1);
        assert!(warnings(&["ferrozone", "serve", "--external-url", "https://vpn.example.com"]).is_empty());
    }

    #[test]
    fn with_an_endpoint_set_the_warning_leaves_the_endpoint_out() {
        let args = ["ferrozone", "serve", "--default-client-endpoint", "vpn.example.com:51820"];
        let warnings = warnings(&args);
        assert_eq!(warnings.len(), 1);
        assert!(!warnings[0].contains("Endpoint"), "{warnings:?}");
    }
}
