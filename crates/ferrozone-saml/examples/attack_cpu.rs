//! The CPU time the SAML response verifier spends on each attack document of issue 16
//! (findings 1 and 2) and on a genuine response, measured on this thread (Linux'
//! `/proc/thread-self/schedstat`, the mean of as many runs as fill 0.3 s): what the assertion
//! consumer spends per body, the HTTP layer aside. Run against a release build:
//!
//! ```sh
//! cargo run --release -p ferrozone-saml --example attack_cpu
//! ```

use base64::Engine as _;
use chrono::Utc;
use ferrozone_saml::{decode_post_response, verify_response, Expected, IdpMetadata};

mod attacks {
    include!("../testdata/attacks.rs");
}

/// A response of the test IdP (`tests/idp/saml`), assertion signed.
const RESPONSE: &str = include_str!("../testdata/assertion-signed.xml");
const IDP_CERT: &str = include_str!("../../../tests/idp/saml/keys/idp.crt");

/// Nanoseconds this thread has run on a CPU.
fn thread_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("Linux' schedstat");
    stat.split_whitespace().next().and_then(|ns| ns.parse().ok()).expect("a run time in ns")
}

fn metadata() -> IdpMetadata {
    let certificate: String = IDP_CERT.lines().filter(|l| !l.starts_with("-----")).collect();
    let xml = format!(
        r#"<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example/metadata">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data>
      <ds:X509Certificate>{certificate}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example/sso"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>"#
    );
    IdpMetadata::parse(&xml).expect("the test IdP's metadata")
}

fn main() {
    let idp = metadata();
    let expected = Expected {
        idp: &idp,
        sp_entity_id: "urn:firezone.dev:firezone-app",
        acs_url: "https://vpn.example/auth/saml/sp/consume/test",
        request_id: "_fz0123",
        require_signed_assertion: true,
        require_signed_response: false,
        now: Utc::now(),
        groups_attribute: None,
    };
    let cases = [
        ("genuine response (expired by now)", RESPONSE.to_owned()),
        (
            "finding 1: 1,000 xmlns x 3,000 PrefixList x 8,000 children",
            attacks::namespace_bomb(RESPONSE, 1_000, 3_000, 8_000),
        ),
        ("finding 2: one element with 24,000 attributes", attacks::attribute_bomb(RESPONSE, 24_000)),
        (
            "finding 2 behind `<!-->`: one element with 24,000 attributes",
            attacks::hidden_attribute_bomb(RESPONSE, 24_000),
        ),
        ("finding 2: one element with 8,000 xmlns", attacks::declaration_bomb(RESPONSE, 8_000)),
        ("under the caps: 31 xmlns x 8 PrefixList x 9,000 children", attacks::namespace_bomb(RESPONSE, 31, 8, 9_000)),
        ("replayed SignedInfo: 31 xmlns x 9,000 children", attacks::namespace_bomb(RESPONSE, 31, 0, 9_000)),
    ];
    println!("{:>10}  {:>8}  case: outcome", "CPU ms", "body B");
    for (name, xml) in cases {
        let encoded = base64::engine::general_purpose::STANDARD.encode(&xml);
        // The run time is counted in scheduler ticks: repeat until it is well above one.
        let (start, mut runs) = (thread_cpu_ns(), 0_u32);
        let outcome = loop {
            let outcome = decode_post_response(&encoded).and_then(|xml| verify_response(&xml, &expected));
            runs += 1;
            if thread_cpu_ns() - start >= 300_000_000 || runs == 10_000 {
                break outcome;
            }
        };
        let spent = (thread_cpu_ns() - start) as f64 / f64::from(runs) / 1e6;
        let outcome = match outcome {
            Ok(verified) => format!("accepted {}", verified.email),
            Err(e) => e.to_string(),
        };
        println!("{spent:>10.3}  {:>8}  {name} ({runs} runs): {outcome}", encoded.len());
    }
}
