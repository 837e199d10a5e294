//! The SP metadata Ferrozone publishes for an IdP to import: its entity id, the assertion
//! consumer service (HTTP-POST) and, when it signs requests, its signing certificate.

use crate::keys::SpKeyPair;
use crate::xml::escape;

/// The SP's `EntityDescriptor`. Assertions are wanted signed (`WantAssertionsSigned`) when
/// `want_assertions_signed`; `AuthnRequestsSigned` says whether requests are.
pub fn sp_metadata(
    entity_id: &str,
    acs_url: &str,
    signing: Option<&SpKeyPair>,
    want_assertions_signed: bool,
) -> String {
    let key = signing
        .map(|pair| {
            format!(
                concat!(
                    r#"<md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#">"#,
                    r#"<ds:X509Data><ds:X509Certificate>{}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>"#,
                    r#"</md:KeyDescriptor>"#
                ),
                pair.certificate_base64()
            )
        })
        .unwrap_or_default();
    format!(
        concat!(
            r#"<?xml version="1.0" encoding="UTF-8"?>"#,
            "\n",
            r#"<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="{entity}">"#,
            r#"<md:SPSSODescriptor AuthnRequestsSigned="{signed}" WantAssertionsSigned="{want}" "#,
            r#"protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">{key}"#,
            r#"<md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>"#,
            r#"<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" "#,
            r#"Location="{acs}" index="0" isDefault="true"/>"#,
            r#"</md:SPSSODescriptor></md:EntityDescriptor>"#,
            "\n"
        ),
        entity = escape(entity_id),
        signed = signing.is_some(),
        want = want_assertions_signed,
        key = key,
        acs = escape(acs_url),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::tests::{SP_CERT, SP_KEY};
    use crate::xml::{NS_DSIG, NS_METADATA};

    #[test]
    fn describes_the_sp_with_its_certificate_when_it_signs() {
        let pair = SpKeyPair::from_pem(SP_KEY, SP_CERT).unwrap();
        let xml = sp_metadata("urn:sp&1", "https://sp/acs", Some(&pair), true);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let root = doc.root_element();
        assert!(root.has_tag_name((NS_METADATA, "EntityDescriptor")));
        assert_eq!(root.attribute("entityID"), Some("urn:sp&1"));
        let sp = root.first_element_child().unwrap();
        assert_eq!(sp.attribute("AuthnRequestsSigned"), Some("true"));
        assert_eq!(sp.attribute("WantAssertionsSigned"), Some("true"));
        let acs = doc.descendants().find(|n| n.has_tag_name((NS_METADATA, "AssertionConsumerService"))).unwrap();
        assert_eq!(acs.attribute("Location"), Some("https://sp/acs"));
        let cert = doc.descendants().find(|n| n.has_tag_name((NS_DSIG, "X509Certificate"))).unwrap();
        assert_eq!(cert.text(), Some(pair.certificate_base64().as_str()));

        let unsigned = sp_metadata("urn:sp", "https://sp/acs", None, false);
        assert!(unsigned.contains(r#"AuthnRequestsSigned="false""#) && !unsigned.contains("KeyDescriptor"));
    }
}
