//! An identity provider's SAML metadata: its entity id, where to send AuthnRequests, and the
//! certificates its responses must be signed with.

use rsa::RsaPublicKey;

use crate::keys::certificate_key;
use crate::xml::{self, children, is, NS_DSIG, NS_METADATA};
use crate::Error;

pub const BINDING_REDIRECT: &str = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect";
pub const BINDING_POST: &str = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST";

/// How AuthnRequests reach the IdP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SsoBinding {
    /// In the query of a redirect (preferred when the IdP offers it).
    Redirect,
    /// In a form the browser posts.
    Post,
}

/// What Ferrozone uses of an IdP's metadata.
#[derive(Debug, Clone)]
pub struct IdpMetadata {
    pub entity_id: String,
    /// The `SingleSignOnService` location for `sso_binding`.
    pub sso_url: String,
    /// HTTP-Redirect when the IdP offers it, else HTTP-POST.
    pub sso_binding: SsoBinding,
    /// The keys of the signing certificates (`KeyDescriptor` with `use="signing"` or no
    /// `use`): a response signed by any of them is the IdP's.
    pub signing_keys: Vec<RsaPublicKey>,
}

fn invalid(message: impl Into<String>) -> Error {
    Error::Metadata(message.into())
}

impl IdpMetadata {
    /// Parses metadata XML: an `EntityDescriptor` (or an `EntitiesDescriptor` holding exactly
    /// one with an `IDPSSODescriptor`), which must have an entityID, an HTTP-Redirect or
    /// HTTP-POST SingleSignOnService and at least one RSA signing certificate.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let doc = xml::parse(text.trim()).map_err(invalid)?;
        let root = doc.root_element();
        let entity = if is(root, NS_METADATA, "EntityDescriptor") {
            root
        } else if is(root, NS_METADATA, "EntitiesDescriptor") {
            let mut idps = root
                .descendants()
                .filter(|n| is(*n, NS_METADATA, "EntityDescriptor"))
                .filter(|n| children(*n, NS_METADATA, "IDPSSODescriptor").next().is_some());
            match (idps.next(), idps.next()) {
                (Some(one), None) => one,
                _ => return Err(invalid("the EntitiesDescriptor must hold exactly one IdP EntityDescriptor")),
            }
        } else {
            return Err(invalid("the root element is not an EntityDescriptor (urn:oasis:names:tc:SAML:2.0:metadata)"));
        };
        let entity_id = entity
            .attribute("entityID")
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| invalid("the EntityDescriptor has no entityID"))?
            .to_owned();
        let idp = xml::only_child(entity, NS_METADATA, "IDPSSODescriptor").map_err(invalid)?;
        let location = |binding: &str| {
            children(idp, NS_METADATA, "SingleSignOnService")
                .filter(|s| s.attribute("Binding") == Some(binding))
                .filter_map(|s| s.attribute("Location").map(str::trim))
                .find(|l| l.starts_with("https://") || l.starts_with("http://"))
                .map(str::to_owned)
        };
        let (sso_url, sso_binding) = match (location(BINDING_REDIRECT), location(BINDING_POST)) {
            (Some(url), _) => (url, SsoBinding::Redirect),
            (None, Some(url)) => (url, SsoBinding::Post),
            (None, None) => {
                return Err(invalid(
                    "no SingleSignOnService with the HTTP-Redirect or HTTP-POST binding and an http(s) Location",
                ))
            }
        };
        let mut signing_keys = Vec::new();
        for descriptor in children(idp, NS_METADATA, "KeyDescriptor") {
            if !matches!(descriptor.attribute("use"), None | Some("signing")) {
                continue;
            }
            let certificates = descriptor.descendants().filter(|n| is(*n, NS_DSIG, "X509Certificate"));
            for certificate in certificates {
                let der = xml::base64(&xml::text(certificate).map_err(invalid)?)
                    .map_err(|e| invalid(format!("signing certificate: {e}")))?;
                signing_keys.push(certificate_key(&der).map_err(|e| invalid(format!("signing certificate: {e}")))?);
            }
        }
        if signing_keys.is_empty() {
            return Err(invalid("no signing certificate (KeyDescriptor use=\"signing\" with an X509Certificate)"));
        }
        Ok(Self { entity_id, sso_url, sso_binding, signing_keys })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::tests::{idp_key, IDP_CERT};

    pub fn metadata(entity: &str, sso: &str, key_use: &str) -> String {
        let cert: String = IDP_CERT.lines().filter(|l| !l.starts_with("-----")).collect();
        format!(
            r#"<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" {entity}>
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor {key_use}><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data>
      <ds:X509Certificate>
{cert}
      </ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://idp.example/post"/>
    {sso}
  </md:IDPSSODescriptor>
</md:EntityDescriptor>"#
        )
    }

    const REDIRECT: &str = r#"<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example/sso"/>"#;

    #[test]
    fn reads_the_entity_id_the_redirect_location_and_the_signing_key() {
        let parsed = IdpMetadata::parse(&metadata(r#"entityID="https://idp.example/""#, REDIRECT, "")).unwrap();
        assert_eq!(parsed.entity_id, "https://idp.example/");
        assert_eq!(parsed.sso_url, "https://idp.example/sso");
        assert_eq!(parsed.sso_binding, SsoBinding::Redirect);
        assert_eq!(parsed.signing_keys, vec![idp_key()]);
        let signing = metadata(r#"entityID="e""#, REDIRECT, r#"use="signing""#);
        assert_eq!(IdpMetadata::parse(&signing).unwrap().signing_keys.len(), 1);
    }

    #[test]
    fn says_what_is_missing() {
        let error = |xml: &str| IdpMetadata::parse(xml).unwrap_err().to_string();
        assert!(error(&metadata("", REDIRECT, "")).contains("entityID"));
        let post_only = IdpMetadata::parse(&metadata(r#"entityID="e""#, "", "")).unwrap();
        assert_eq!((post_only.sso_url.as_str(), post_only.sso_binding), ("https://idp.example/post", SsoBinding::Post));
        let neither = metadata(r#"entityID="e""#, "", "").replace("HTTP-POST", "SOAP");
        assert!(error(&neither).contains("HTTP-Redirect or HTTP-POST"));
        assert!(error(&metadata(r#"entityID="e""#, REDIRECT, r#"use="encryption""#)).contains("signing certificate"));
        assert!(error("<a/>").contains("EntityDescriptor"));
        assert!(error("not xml").contains("XML"));
        let broken = metadata(r#"entityID="e""#, REDIRECT, "").replace("MII", "MIX");
        assert!(error(&broken).contains("signing certificate"));
    }

    #[test]
    fn takes_the_one_idp_of_an_entities_descriptor() {
        let one = metadata(r#"entityID="e""#, REDIRECT, "").replace("<?xml version=\"1.0\"?>", "");
        let wrapped =
            format!(r#"<EntitiesDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata">{one}</EntitiesDescriptor>"#);
        assert_eq!(IdpMetadata::parse(&wrapped).unwrap().entity_id, "e");
        let two = format!(
            r#"<EntitiesDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata">{one}{one}</EntitiesDescriptor>"#
        );
        assert!(IdpMetadata::parse(&two).is_err());
    }
}
