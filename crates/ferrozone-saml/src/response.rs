//! Verifying the IdP's `Response` (HTTP-POST binding), strictly.
//!
//! Against signature wrapping, Ferrozone consumes only what a verified signature covers:
//! - IDs are unique in the document, and there is exactly one `Assertion`, a child of the
//!   `Response` (no `EncryptedAssertion`: encrypted assertions are not supported);
//! - a signature is accepted only as a direct child of the element it signs (the `Response`
//!   or that `Assertion`), whose ID its one reference names; any other `Signature` is refused;
//! - the values read (issuer, subject, conditions, email) come from those very nodes.
//!
//! Which signatures are required follows the provider's `signed_envelopes_in_resp` (the
//! Response) and `signed_assertion_in_resp` (the Assertion); with both false, one of the two
//! is still required: an unsigned response is never accepted. A signature that is present
//! must verify, required or not.
//!
//! Only SP-initiated sign-in exists: the Response and the bearer `SubjectConfirmationData`
//! must answer (`InResponseTo`) the request Ferrozone issued. Times allow
//! [`CLOCK_SKEW_SECS`] of clock difference either way.

use base64::Engine as _;
use chrono::{DateTime, Duration, Utc};
use roxmltree::Node;

use crate::dsig::{signature_of, verify};
use crate::metadata::IdpMetadata;
use crate::xml::{self, children, is, only_child, optional_child, NS_ASSERTION, NS_DSIG, NS_PROTOCOL};
use crate::{refused, Error};

/// The clock difference allowed between Ferrozone and the IdP, in seconds.
pub const CLOCK_SKEW_SECS: i64 = 60;
/// The largest `SAMLResponse` accepted, decoded.
pub const MAX_RESPONSE_BYTES: usize = 256 * 1024;

const SUCCESS: &str = "urn:oasis:names:tc:SAML:2.0:status:Success";
const BEARER: &str = "urn:oasis:names:tc:SAML:2.0:cm:bearer";
const EMAIL_FORMAT: &str = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress";
/// Attribute names that carry the email when the NameID is not an email address.
const EMAIL_ATTRIBUTES: &[&str] = &[
    "email",
    "mail",
    "emailaddress",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
    "urn:oid:0.9.2342.19200300.100.1.3",
];

/// What the response must match.
#[derive(Debug, Clone)]
pub struct Expected<'a> {
    pub idp: &'a IdpMetadata,
    /// Ferrozone's SP entity id: the assertion's audience.
    pub sp_entity_id: &'a str,
    /// Where the response was posted: its Destination and the bearer Recipient.
    pub acs_url: &'a str,
    /// The AuthnRequest's ID.
    pub request_id: &'a str,
    pub require_signed_assertion: bool,
    pub require_signed_response: bool,
    pub now: DateTime<Utc>,
    /// The attribute holding the user's groups; `None`: groups are not read.
    pub groups_attribute: Option<&'a str>,
}

/// The signed-in identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub email: String,
    pub name_id: String,
    /// Every value of the groups attribute (none when the assertion has no such
    /// attribute); `None` when groups are not read.
    pub groups: Option<Vec<String>>,
}

/// The XML of a posted `SAMLResponse` field (base64, line breaks allowed).
pub fn decode_post_response(encoded: &str) -> Result<String, Error> {
    if encoded.len() > MAX_RESPONSE_BYTES * 4 / 3 + 1024 {
        return Err(refused("the SAMLResponse is too large"));
    }
    let compact: String = encoded.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|_| refused("the SAMLResponse is not base64"))?;
    String::from_utf8(bytes).map_err(|_| refused("the SAMLResponse is not UTF-8"))
}

/// Verifies `xml`, a Response, against `expected`; the identity it asserts, or why not.
pub fn verify_response(xml: &str, expected: &Expected<'_>) -> Result<Verified, Error> {
    if xml.len() > MAX_RESPONSE_BYTES {
        return Err(refused("the SAMLResponse is too large"));
    }
    let doc = xml::parse(xml).map_err(refused)?;
    let response = doc.root_element();
    if !is(response, NS_PROTOCOL, "Response") {
        return Err(refused("the document is not a SAML 2.0 Response"));
    }
    let mut ids: Vec<&str> = doc.descendants().filter_map(|n| n.attribute("ID")).collect();
    ids.sort_unstable();
    if ids.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(refused("two elements have the same ID"));
    }
    if doc.descendants().any(|n| is(n, NS_ASSERTION, "EncryptedAssertion")) {
        return Err(refused("encrypted assertions are not supported"));
    }
    let assertions: Vec<_> = doc.descendants().filter(|n| is(*n, NS_ASSERTION, "Assertion")).collect();
    let [assertion] = assertions.as_slice() else {
        return Err(refused(format!("the Response must hold exactly one Assertion, not {}", assertions.len())));
    };
    let assertion = *assertion;
    if assertion.parent() != Some(response) {
        return Err(refused("the Assertion is not a child of the Response"));
    }
    let signatures = doc.descendants().filter(|n| is(*n, NS_DSIG, "Signature"));
    if signatures.into_iter().any(|s| s.parent() != Some(response) && s.parent() != Some(assertion)) {
        return Err(refused("a Signature is somewhere other than on the Response or the Assertion"));
    }

    let keys = &expected.idp.signing_keys;
    let response_signed = check_signature(response, keys, "Response")?;
    let assertion_signed = check_signature(assertion, keys, "Assertion")?;
    if expected.require_signed_response && !response_signed {
        return Err(refused("the Response is not signed, and this provider requires it"));
    }
    if expected.require_signed_assertion && !assertion_signed {
        return Err(refused("the Assertion is not signed, and this provider requires it"));
    }
    if !response_signed && !assertion_signed {
        return Err(refused("neither the Response nor the Assertion is signed"));
    }

    check_response(response, expected)?;
    check_assertion(assertion, expected)
}

/// Whether `element` carries a signature, which must then verify.
fn check_signature(element: Node<'_, '_>, keys: &[rsa::RsaPublicKey], what: &str) -> Result<bool, Error> {
    match signature_of(element).map_err(refused)? {
        None => Ok(false),
        Some(signature) => {
            verify(element, signature, keys).map_err(|e| refused(format!("the {what}'s signature: {e}")))?;
            Ok(true)
        }
    }
}

fn check_response(response: Node<'_, '_>, expected: &Expected<'_>) -> Result<(), Error> {
    if response.attribute("Version") != Some("2.0") {
        return Err(refused("the Response is not SAML 2.0"));
    }
    if let Some(destination) = response.attribute("Destination") {
        if destination != expected.acs_url {
            return Err(refused("the Response's Destination is not this provider's ACS URL"));
        }
    }
    if response.attribute("InResponseTo") != Some(expected.request_id) {
        return Err(refused("the Response does not answer the request Ferrozone sent (InResponseTo)"));
    }
    if let Some(issuer) = optional_child(response, NS_ASSERTION, "Issuer").map_err(refused)? {
        check_issuer(issuer, expected)?;
    }
    let status = only_child(response, NS_PROTOCOL, "Status").map_err(refused)?;
    let code = only_child(status, NS_PROTOCOL, "StatusCode").map_err(refused)?;
    match code.attribute("Value") {
        Some(SUCCESS) => Ok(()),
        other => Err(refused(format!("the IdP answered with status {}", other.unwrap_or("(none)")))),
    }
}

fn check_issuer(issuer: Node<'_, '_>, expected: &Expected<'_>) -> Result<(), Error> {
    if xml::value(issuer).map_err(refused)? != expected.idp.entity_id {
        return Err(refused("the Issuer is not this provider's entity id"));
    }
    Ok(())
}

fn check_assertion(assertion: Node<'_, '_>, expected: &Expected<'_>) -> Result<Verified, Error> {
    if assertion.attribute("Version") != Some("2.0") {
        return Err(refused("the Assertion is not SAML 2.0"));
    }
    check_issuer(only_child(assertion, NS_ASSERTION, "Issuer").map_err(refused)?, expected)?;
    let now = expected.now;
    let skew = Duration::seconds(CLOCK_SKEW_SECS);

    let conditions = only_child(assertion, NS_ASSERTION, "Conditions").map_err(refused)?;
    if let Some(not_before) = time(conditions, "NotBefore")? {
        if now + skew < not_before {
            return Err(refused("the Assertion is not valid yet (Conditions NotBefore)"));
        }
    }
    if let Some(not_on_or_after) = time(conditions, "NotOnOrAfter")? {
        if now - skew >= not_on_or_after {
            return Err(refused("the Assertion has expired (Conditions NotOnOrAfter)"));
        }
    }
    let restrictions: Vec<_> = children(conditions, NS_ASSERTION, "AudienceRestriction").collect();
    if restrictions.is_empty() {
        return Err(refused("the Assertion has no AudienceRestriction"));
    }
    for restriction in restrictions {
        let mut audiences = children(restriction, NS_ASSERTION, "Audience");
        if !audiences.any(|a| xml::value(a).is_ok_and(|a| a == expected.sp_entity_id)) {
            return Err(refused("the Assertion's Audience is not Ferrozone's SP entity id"));
        }
    }

    let subject = only_child(assertion, NS_ASSERTION, "Subject").map_err(refused)?;
    let confirmations: Vec<_> = children(subject, NS_ASSERTION, "SubjectConfirmation")
        .filter(|c| c.attribute("Method") == Some(BEARER))
        .collect();
    let mut reason = refused("the Subject has no bearer SubjectConfirmation");
    if !confirmations.iter().any(|c| match check_confirmation(*c, expected) {
        Ok(()) => true,
        Err(e) => {
            reason = e;
            false
        }
    }) {
        return Err(reason);
    }
    if children(assertion, NS_ASSERTION, "AuthnStatement").next().is_none() {
        return Err(refused("the Assertion has no AuthnStatement"));
    }
    for statement in children(assertion, NS_ASSERTION, "AuthnStatement") {
        if let Some(end) = time(statement, "SessionNotOnOrAfter")? {
            if now - skew >= end {
                return Err(refused("the IdP session has ended (SessionNotOnOrAfter)"));
            }
        }
    }

    let name_id = only_child(subject, NS_ASSERTION, "NameID").map_err(refused)?;
    let name_id_value = xml::value(name_id).map_err(refused)?;
    let email = if name_id.attribute("Format") == Some(EMAIL_FORMAT) {
        name_id_value.clone()
    } else {
        email_attribute(assertion)?.ok_or_else(|| refused("the Assertion carries no email (NameID or attribute)"))?
    };
    if !plausible_email(&email) {
        return Err(refused("the asserted email is not an email address"));
    }
    let groups = expected.groups_attribute.map(|name| attribute_values(assertion, name)).transpose()?;
    Ok(Verified { email, name_id: name_id_value, groups })
}

fn check_confirmation(confirmation: Node<'_, '_>, expected: &Expected<'_>) -> Result<(), Error> {
    let data = only_child(confirmation, NS_ASSERTION, "SubjectConfirmationData").map_err(refused)?;
    let skew = Duration::seconds(CLOCK_SKEW_SECS);
    match time(data, "NotOnOrAfter")? {
        Some(end) if expected.now - skew < end => {}
        Some(_) => return Err(refused("the Assertion has expired (SubjectConfirmationData NotOnOrAfter)")),
        None => return Err(refused("the SubjectConfirmationData has no NotOnOrAfter")),
    }
    if let Some(start) = time(data, "NotBefore")? {
        if expected.now + skew < start {
            return Err(refused("the SubjectConfirmationData is not valid yet"));
        }
    }
    if data.attribute("Recipient") != Some(expected.acs_url) {
        return Err(refused("the bearer Recipient is not this provider's ACS URL"));
    }
    if data.attribute("InResponseTo") != Some(expected.request_id) {
        return Err(refused("the assertion does not answer the request Ferrozone sent (InResponseTo)"));
    }
    Ok(())
}

/// Every value of the attributes whose `Name` (or `FriendlyName`) is `name`, in order; a
/// value that is empty or not text is skipped, not a refusal of the sign-in.
fn attribute_values(assertion: Node<'_, '_>, name: &str) -> Result<Vec<String>, Error> {
    let mut values = Vec::new();
    for statement in children(assertion, NS_ASSERTION, "AttributeStatement") {
        for attribute in children(statement, NS_ASSERTION, "Attribute") {
            let named = attribute.attribute("Name") == Some(name) || attribute.attribute("FriendlyName") == Some(name);
            if named {
                values.extend(children(attribute, NS_ASSERTION, "AttributeValue").filter_map(|v| xml::value(v).ok()));
            }
        }
    }
    Ok(values)
}

/// The first value of the first email-like attribute.
fn email_attribute(assertion: Node<'_, '_>) -> Result<Option<String>, Error> {
    for statement in children(assertion, NS_ASSERTION, "AttributeStatement") {
        for attribute in children(statement, NS_ASSERTION, "Attribute") {
            let name = attribute.attribute("Name").unwrap_or_default();
            if EMAIL_ATTRIBUTES.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                if let Some(value) = children(attribute, NS_ASSERTION, "AttributeValue").next() {
                    return xml::value(value).map(Some).map_err(refused);
                }
            }
        }
    }
    Ok(None)
}

fn plausible_email(email: &str) -> bool {
    email.len() <= 320
        && email.split_once('@').is_some_and(|(local, domain)| !local.is_empty() && !domain.is_empty())
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The xs:dateTime attribute `name` of `node`, if present.
fn time(node: Node<'_, '_>, name: &str) -> Result<Option<DateTime<Utc>>, Error> {
    node.attribute(name)
        .map(|value| {
            DateTime::parse_from_rfc3339(value.trim())
                .map(|t| t.to_utc())
                .map_err(|_| refused(format!("{name} is not a UTC date-time")))
        })
        .transpose()
}

#[cfg(test)]
mod tests;
