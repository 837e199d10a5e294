//! The SP metadata Ferrozone publishes for an IdP to import: its entity id, the assertion
//! consumer service (HTTP-POST) and, when it signs requests, its signing certificate.
//! It can carry an enveloped XML signature by the SP key (`sign_metadata`).

use crate::keys::SpKeyPair;
use crate::xml::escape;
use crate::Error;

/// `metadata` (from [`sp_metadata`]) with an enveloped signature by `pair` over its
/// `EntityDescriptor`, placed first in it as the metadata schema wants. An error, never the
/// metadata unsigned, when it cannot be signed.
pub fn sign_metadata(metadata: &str, pair: &SpKeyPair) -> Result<String, Error> {
    crate::dsig::sign_enveloped(metadata, pair, None).map_err(|e| Error::Build(format!("signing the metadata: {e}")))
}

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
            r#"<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" ID="{id}" entityID="{entity}">"#,
            r#"<md:SPSSODescriptor AuthnRequestsSigned="{signed}" WantAssertionsSigned="{want}" "#,
            r#"protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">{key}"#,
            r#"<md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>"#,
            r#"<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" "#,
            r#"Location="{acs}" index="0" isDefault="true"/>"#,
            r#"</md:SPSSODescriptor></md:EntityDescriptor>"#,
            "\n"
        ),
        id = crate::request::new_request_id().replacen("_fz", "_fzmd", 1),
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

        let signed = sign_metadata(&xml, &pair).unwrap();
        let doc = roxmltree::Document::parse(&signed).unwrap();
        let root = doc.root_element();
        let signature = root.first_element_child().unwrap();
        assert!(signature.has_tag_name((NS_DSIG, "Signature")), "the signature comes first");
        crate::dsig::verify(root, signature, &[pair.public_key()]).unwrap();
        let altered = signed.replace("https://sp/acs", "https://evil/acs");
        let doc = roxmltree::Document::parse(&altered).unwrap();
        let root = doc.root_element();
        assert!(crate::dsig::verify(root, root.first_element_child().unwrap(), &[pair.public_key()]).is_err());

        let unsigned = sp_metadata("urn:sp", "https://sp/acs", None, false);
        assert!(unsigned.contains(r#"AuthnRequestsSigned="false""#) && !unsigned.contains("KeyDescriptor"));
    }

    #[test]
    fn says_when_it_cannot_sign_rather_than_sending_unsigned_metadata() {
        let pair = SpKeyPair::from_pem(SP_KEY, SP_CERT).unwrap();
        let without_id = r#"<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="e"/>"#;
        let error = sign_metadata(without_id, &pair).unwrap_err();
        assert!(matches!(&error, Error::Build(m) if m.contains("no ID")), "{error}");
    }
}
