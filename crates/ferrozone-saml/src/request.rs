//! The AuthnRequest. By the HTTP-Redirect binding (preferred) the XML is deflated,
//! base64-encoded and put in the IdP's SSO URL with the RelayState; when the SP signs
//! requests, the query carries `SigAlg` (RSA-SHA256) and `Signature` over
//! `SAMLRequest=…&RelayState=…&SigAlg=…` as sent (SAML bindings 3.4.4.1). By the HTTP-POST
//! binding (for IdPs that offer only it) the XML, with an enveloped signature after its
//! `Issuer` when the SP signs requests, is base64-encoded into a form the browser posts.

use std::io::Write as _;

use base64::Engine as _;
use chrono::{DateTime, SecondsFormat, Utc};
use flate2::write::DeflateEncoder;
use flate2::Compression;

use crate::keys::SpKeyPair;
use crate::metadata::{IdpMetadata, SsoBinding, BINDING_POST};
use crate::xml::{escape, NS_ASSERTION};
use crate::Error;

/// Every request id Ferrozone makes starts with this (an XML ID must not start with a digit).
pub const REQUEST_ID_PREFIX: &str = "_fz";

const SIG_ALG_RSA_SHA256: &str = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";

/// A request to send: where the browser goes, and the id the response must answer.
#[derive(Debug, Clone)]
pub struct AuthnRequest {
    /// The AuthnRequest's `ID`: the Response's and the assertion's `InResponseTo` must be it.
    pub id: String,
    pub outgoing: Outgoing,
}

/// How the browser takes the request to the IdP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing {
    /// Go to this URL: the IdP's SSO URL with the encoded request, the RelayState and any
    /// signature.
    Redirect(String),
    /// Post these form fields (`SAMLRequest`, `RelayState`) to `url`.
    Post { url: String, fields: Vec<(String, String)> },
}

/// A fresh random request id.
pub fn new_request_id() -> String {
    format!("{REQUEST_ID_PREFIX}{:032x}", rand::random::<u128>())
}

impl AuthnRequest {
    /// The request `id` (from [`new_request_id`]) from the SP `sp_entity_id`, whose response
    /// goes to `acs_url` by HTTP-POST; `relay_state` comes back with the response. Signed
    /// with `signer` when given: an error, never an unsigned or empty request, when signing
    /// or deflating fails.
    pub fn new(
        id: String,
        idp: &IdpMetadata,
        sp_entity_id: &str,
        acs_url: &str,
        relay_state: &str,
        now: DateTime<Utc>,
        signer: Option<&SpKeyPair>,
    ) -> Result<Self, Error> {
        let xml = format!(
            concat!(
                r#"<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" "#,
                r#"xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="{id}" Version="2.0" "#,
                r#"IssueInstant="{instant}" Destination="{destination}" "#,
                r#"AssertionConsumerServiceURL="{acs}" ProtocolBinding="{binding}">"#,
                r#"<saml:Issuer>{issuer}</saml:Issuer>"#,
                r#"</samlp:AuthnRequest>"#
            ),
            id = id,
            instant = now.to_rfc3339_opts(SecondsFormat::Secs, true),
            destination = escape(&idp.sso_url),
            acs = escape(acs_url),
            binding = BINDING_POST,
            issuer = escape(sp_entity_id),
        );
        let engine = base64::engine::general_purpose::STANDARD;
        if idp.sso_binding == SsoBinding::Post {
            let xml = match signer {
                Some(pair) => crate::dsig::sign_enveloped(&xml, pair, Some((NS_ASSERTION, "Issuer")))
                    .map_err(|e| Error::Build(format!("signing the AuthnRequest: {e}")))?,
                None => xml,
            };
            let mut fields = vec![("SAMLRequest".to_owned(), engine.encode(xml))];
            if !relay_state.is_empty() {
                fields.push(("RelayState".to_owned(), relay_state.to_owned()));
            }
            return Ok(Self { id, outgoing: Outgoing::Post { url: idp.sso_url.clone(), fields } });
        }
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::default());
        let deflated = encoder
            .write_all(xml.as_bytes())
            .and_then(|()| encoder.finish())
            .map_err(|e| Error::Build(format!("deflating the AuthnRequest: {e}")))?;
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("SAMLRequest", &engine.encode(deflated));
        if !relay_state.is_empty() {
            query.append_pair("RelayState", relay_state);
        }
        if signer.is_some() {
            query.append_pair("SigAlg", SIG_ALG_RSA_SHA256);
        }
        let mut query = query.finish();
        if let Some(signer) = signer {
            let signature = engine.encode(signer.sign_sha256(query.as_bytes())?);
            query = form_urlencoded::Serializer::new(query).append_pair("Signature", &signature).finish();
        }
        let separator = if idp.sso_url.contains('?') { '&' } else { '?' };
        Ok(Self { id, outgoing: Outgoing::Redirect(format!("{}{separator}{query}", idp.sso_url)) })
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use rsa::Pkcs1v15Sign;
    use sha2::{Digest, Sha256};

    use super::*;
    use crate::keys::tests::{idp_key, SP_CERT, SP_KEY};

    fn idp(sso: &str) -> IdpMetadata {
        IdpMetadata {
            entity_id: "idp".into(),
            sso_url: sso.into(),
            sso_binding: SsoBinding::Redirect,
            signing_keys: vec![idp_key()],
        }
    }

    fn redirect_url(request: &AuthnRequest) -> &str {
        match &request.outgoing {
            Outgoing::Redirect(url) => url,
            other => panic!("not a redirect: {other:?}"),
        }
    }

    fn query(url: &str) -> Vec<(String, String)> {
        let query = url.split_once('?').unwrap().1;
        form_urlencoded::parse(query.as_bytes()).into_owned().collect()
    }

    fn inflate(encoded: &str) -> String {
        let deflated = base64::engine::general_purpose::STANDARD.decode(encoded).unwrap();
        let mut xml = String::new();
        flate2::read::DeflateDecoder::new(deflated.as_slice()).read_to_string(&mut xml).unwrap();
        xml
    }

    #[test]
    fn encodes_the_request_with_its_relay_state() {
        let now = DateTime::parse_from_rfc3339("2026-01-02T03:04:05Z").unwrap().to_utc();
        let request = AuthnRequest::new(
            new_request_id(),
            &idp("https://idp.example/sso?x=1"),
            "urn:sp",
            "https://sp/acs",
            "state&1",
            now,
            None,
        )
        .unwrap();
        assert!(request.id.starts_with(REQUEST_ID_PREFIX) && request.id.len() == REQUEST_ID_PREFIX.len() + 32);
        assert!(redirect_url(&request).starts_with("https://idp.example/sso?x=1&SAMLRequest="));
        let fields = query(redirect_url(&request));
        assert_eq!(fields[2], ("RelayState".into(), "state&1".into()));
        assert_eq!(fields.len(), 3, "unsigned: no SigAlg or Signature");
        let xml = inflate(&fields[1].1);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let root = doc.root_element();
        assert_eq!(root.attribute("ID"), Some(request.id.as_str()));
        assert_eq!(root.attribute("AssertionConsumerServiceURL"), Some("https://sp/acs"));
        assert_eq!(root.attribute("IssueInstant"), Some("2026-01-02T03:04:05Z"));
        assert_eq!(root.attribute("Destination"), Some("https://idp.example/sso?x=1"));
        assert_eq!(root.first_element_child().unwrap().text(), Some("urn:sp"));
        let other = AuthnRequest::new(
            new_request_id(),
            &idp("https://idp.example/sso"),
            "urn:sp",
            "https://sp/acs",
            "s",
            now,
            None,
        )
        .unwrap();
        assert_ne!(other.id, request.id, "ids are random");
    }

    #[test]
    fn signs_the_query_as_sent() {
        let pair = SpKeyPair::from_pem(SP_KEY, SP_CERT).unwrap();
        let request = AuthnRequest::new(
            new_request_id(),
            &idp("https://idp.example/sso"),
            "urn:sp",
            "https://sp/acs",
            "s",
            Utc::now(),
            Some(&pair),
        )
        .unwrap();
        let query = redirect_url(&request).split_once('?').unwrap().1;
        let (signed, signature) = query.split_once("&Signature=").unwrap();
        assert!(
            signed.ends_with("&SigAlg=http%3A%2F%2Fwww.w3.org%2F2001%2F04%2Fxmldsig-more%23rsa-sha256"),
            "{signed}"
        );
        let signature: String = form_urlencoded::parse(format!("s={signature}").as_bytes()).next().unwrap().1.into();
        let signature = base64::engine::general_purpose::STANDARD.decode(signature).unwrap();
        let hashed = Sha256::digest(signed.as_bytes());
        pair.public_key().verify(Pkcs1v15Sign::new::<Sha256>(), &hashed, &signature).unwrap();
    }
}

#[cfg(test)]
mod post_tests {
    use super::*;
    use crate::keys::tests::{idp_key, SP_CERT, SP_KEY};

    #[test]
    fn posts_the_request_signed_after_its_issuer() {
        let idp = IdpMetadata {
            entity_id: "idp".into(),
            sso_url: "https://idp.example/post".into(),
            sso_binding: SsoBinding::Post,
            signing_keys: vec![idp_key()],
        };
        let pair = SpKeyPair::from_pem(SP_KEY, SP_CERT).unwrap();
        let request =
            AuthnRequest::new(new_request_id(), &idp, "urn:sp", "https://sp/acs", "s", Utc::now(), Some(&pair))
                .unwrap();
        let Outgoing::Post { url, fields } = &request.outgoing else { panic!("{:?}", request.outgoing) };
        assert_eq!(url, "https://idp.example/post");
        assert_eq!(fields[1], ("RelayState".to_owned(), "s".to_owned()));
        let xml = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(&fields[0].1).unwrap()).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let root = doc.root_element();
        assert_eq!(root.attribute("ID"), Some(request.id.as_str()));
        let names: Vec<_> = root.children().map(|c| c.tag_name().name().to_owned()).collect();
        assert_eq!(names, ["Issuer", "Signature"], "the signature follows the Issuer");
        let signature = root.children().nth(1).unwrap();
        crate::dsig::verify(root, signature, &[pair.public_key()]).unwrap();

        let unsigned =
            AuthnRequest::new(new_request_id(), &idp, "urn:sp", "https://sp/acs", "", Utc::now(), None).unwrap();
        let Outgoing::Post { fields, .. } = &unsigned.outgoing else { panic!() };
        assert_eq!(fields.len(), 1, "no RelayState when empty");
    }
}
