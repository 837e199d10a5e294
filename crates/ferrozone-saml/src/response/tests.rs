//! Responses made by the test IdP (`tests/idp/saml`, a samlp-based IdP; the fixtures in
//! `testdata/` were produced by `tests/idp/saml/fixtures.py`), verified and attacked.

use super::*;
use crate::keys::tests::idp_key;

const ASSERTION_SIGNED: &str = include_str!("../../testdata/assertion-signed.xml");
const RESPONSE_SIGNED: &str = include_str!("../../testdata/response-signed.xml");
const BOTH_SIGNED: &str = include_str!("../../testdata/both-signed.xml");
/// Signed by another key than the metadata's.
const FORGED: &str = include_str!("../../testdata/forged.xml");

fn idp() -> IdpMetadata {
    IdpMetadata {
        entity_id: "https://idp.example/metadata".into(),
        sso_url: "https://idp.example/sso".into(),
        sso_binding: crate::metadata::SsoBinding::Redirect,
        signing_keys: vec![idp_key()],
    }
}

fn at(time: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(time).unwrap().to_utc()
}

/// Issued 17:15:09–10; the assertions live 300 s.
const NOW: &str = "2026-11-23T17:15:30Z";

/// What the SP expects of the fixtures' responses from `idp`, at [`NOW`].
fn expected(idp: &IdpMetadata) -> Expected<'_> {
    Expected {
        idp,
        sp_entity_id: "urn:firezone.dev:firezone-app",
        acs_url: "https://vpn.example/auth/saml/sp/consume/test",
        request_id: "_fz0123",
        require_signed_assertion: true,
        require_signed_response: false,
        now: at(NOW),
        groups_attribute: Some("groups"),
    }
}

fn check(xml: &str, edit: impl FnOnce(&mut Expected<'_>)) -> Result<Verified, Error> {
    let idp = idp();
    let mut expected = expected(&idp);
    edit(&mut expected);
    verify_response(xml, &expected)
}

#[track_caller]
fn refused_with(result: Result<Verified, Error>, words: &str) {
    match result {
        Err(Error::Refused(message)) => assert!(message.contains(words), "{message:?} lacks {words:?}"),
        other => panic!("expected a refusal mentioning {words:?}, got {other:?}"),
    }
}

fn alice() -> Verified {
    Verified { email: "alice@example.com".into(), name_id: "alice@example.com".into(), groups: Some(vec![]) }
}

#[test]
fn accepts_the_idps_signed_responses() {
    assert_eq!(check(ASSERTION_SIGNED, |_| {}), Ok(alice()));
    assert_eq!(check(BOTH_SIGNED, |e| e.require_signed_response = true), Ok(alice()));
    assert_eq!(
        check(RESPONSE_SIGNED, |e| {
            e.require_signed_assertion = false;
            e.require_signed_response = true;
        }),
        Ok(alice())
    );
}

#[test]
fn requires_the_signatures_the_provider_asks_for() {
    refused_with(check(ASSERTION_SIGNED, |e| e.require_signed_response = true), "Response is not signed");
    refused_with(check(RESPONSE_SIGNED, |_| {}), "Assertion is not signed");
    // Both flags off: one signature is still needed.
    let unsigned = strip_signatures(ASSERTION_SIGNED);
    refused_with(check(&unsigned, |e| e.require_signed_assertion = false), "neither");
}

fn strip_signatures(xml: &str) -> String {
    let start = xml.find("<Signature").unwrap();
    let end = xml.find("</Signature>").unwrap() + "</Signature>".len();
    format!("{}{}", &xml[..start], &xml[end..])
}

#[test]
fn refuses_a_response_signed_by_another_key() {
    refused_with(check(FORGED, |_| {}), "not made by a key in the IdP's metadata");
}

#[test]
fn refuses_an_altered_assertion() {
    let altered = ASSERTION_SIGNED.replace("alice@example.com", "admin@localhost");
    refused_with(check(&altered, |_| {}), "digest does not match");
    // The Response signature covers the assertion too.
    let altered = RESPONSE_SIGNED.replace("alice@example.com", "admin@localhost");
    refused_with(check(&altered, |e| e.require_signed_assertion = false), "digest does not match");
}

#[test]
fn reads_no_value_split_by_a_comment() {
    // A comment is not digested (same-document reference), so the signature still holds;
    // reading only the first text node would give `admin@localhost`.
    let name = "alice@example.com</saml:NameID>";
    let injected = ASSERTION_SIGNED.replacen(name, "alice@example.com<!---->.evil</saml:NameID>", 1);
    assert_ne!(injected, ASSERTION_SIGNED);
    refused_with(check(&injected, |_| {}), "digest does not match");
    let split = ASSERTION_SIGNED.replacen(name, "alice@<!---->example.com</saml:NameID>", 1);
    refused_with(check(&split, |_| {}), "NameID holds more than text");
}

#[test]
fn checks_times_with_a_small_skew() {
    refused_with(check(ASSERTION_SIGNED, |e| e.now = at("2026-11-23T17:21:10Z")), "expired");
    assert!(check(ASSERTION_SIGNED, |e| e.now = at("2026-11-23T17:20:30Z")).is_ok(), "within the skew");
    refused_with(check(ASSERTION_SIGNED, |e| e.now = at("2026-11-23T17:13:30Z")), "not valid yet");
    assert!(check(ASSERTION_SIGNED, |e| e.now = at("2026-11-23T17:14:30Z")).is_ok(), "within the skew");
}

#[test]
fn checks_audience_recipient_issuer_and_request() {
    refused_with(check(ASSERTION_SIGNED, |e| e.sp_entity_id = "urn:other"), "Audience");
    refused_with(check(ASSERTION_SIGNED, |e| e.acs_url = "https://vpn.example/other"), "Destination");
    refused_with(check(ASSERTION_SIGNED, |e| e.request_id = "_fzother"), "InResponseTo");
    let other_idp = IdpMetadata { entity_id: "https://other.example".into(), ..idp() };
    refused_with(verify_response(ASSERTION_SIGNED, &expected(&other_idp)), "Issuer");
}

#[test]
fn refuses_non_success_status_and_garbage() {
    let failed = ASSERTION_SIGNED.replace("status:Success", "status:Responder");
    refused_with(check(&failed, |_| {}), "status");
    refused_with(check("<a/>", |_| {}), "not a SAML 2.0 Response");
    refused_with(check("<a", |_| {}), "XML");
    assert!(decode_post_response("%%%").is_err());
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(ASSERTION_SIGNED);
    let wrapped = format!("{}\n{}", &encoded[..60], &encoded[60..]);
    assert_eq!(decode_post_response(&wrapped).unwrap(), ASSERTION_SIGNED);
}

/// The signed assertion, its opening tag, and the evil copy's opening tag.
fn assertion_parts(xml: &str) -> (String, String) {
    let start = xml.find("<saml:Assertion").unwrap();
    let end = xml.find("</saml:Assertion>").unwrap() + "</saml:Assertion>".len();
    (xml[start..end].to_owned(), format!("{}{}", &xml[..start], &xml[end..]))
}

#[test]
fn refuses_signature_wrapping() {
    let (signed, rest) = assertion_parts(ASSERTION_SIGNED);
    let evil = signed.replace("alice@example.com", "admin@localhost");
    let status_end = rest.find("</samlp:Status>").unwrap() + "</samlp:Status>".len();
    let insert = |extra: &str| format!("{}{}{}", &rest[..status_end], extra, &rest[status_end..]);

    // The evil assertion beside the signed one.
    refused_with(check(&insert(&format!("{evil}{signed}")), |_| {}), "two elements have the same ID");
    // The evil one with another ID, the signed one hidden in an extension.
    let evil_other_id = evil.replacen(" ID=\"", " ID=\"x", 1);
    let hidden = format!("<samlp:Extensions>{signed}</samlp:Extensions>{evil_other_id}");
    refused_with(check(&insert(&hidden), |_| {}), "exactly one Assertion");
    // Only the evil one, carrying the signed one's signature (reference to another ID).
    let without_signed = insert(&evil_other_id);
    refused_with(check(&without_signed, |_| {}), "reference is not the signed element");
    // The signed one inside the evil one.
    let nested = evil_other_id.replacen("</saml:Assertion>", &format!("{signed}</saml:Assertion>"), 1);
    refused_with(check(&insert(&nested), |_| {}), "exactly one Assertion");
}

#[test]
fn refuses_encrypted_assertions_and_stray_signatures() {
    let (signed, rest) = assertion_parts(ASSERTION_SIGNED);
    let encrypted = rest.replace(
        "</samlp:Response>",
        "<saml:EncryptedAssertion xmlns:saml=\"urn:oasis:names:tc:SAML:2.0:assertion\"/></samlp:Response>",
    );
    refused_with(check(&encrypted, |_| {}), "encrypted");
    let signature_start = signed.find("<Signature").unwrap();
    let signature_end = signed.find("</Signature>").unwrap() + "</Signature>".len();
    let stray = ASSERTION_SIGNED.replacen(
        "</saml:Subject>",
        &format!("<x>{}</x></saml:Subject>", &signed[signature_start..signature_end]),
        1,
    );
    refused_with(check(&stray, |_| {}), "a Signature is somewhere other");
}

#[test]
fn refuses_sha1_and_other_algorithms() {
    let sha1 = ASSERTION_SIGNED.replace("xmldsig-more#rsa-sha256", "xmldsig#rsa-sha1");
    refused_with(check(&sha1, |_| {}), "not accepted");
    let inclusive = ASSERTION_SIGNED.replacen(
        "http://www.w3.org/2001/10/xml-exc-c14n#",
        "http://www.w3.org/TR/2001/REC-xml-c14n-20010315",
        1,
    );
    refused_with(check(&inclusive, |_| {}), "not accepted");
}

#[test]
fn takes_the_email_from_an_attribute_when_the_name_id_is_not_one() {
    // Unsigned edits are fine here: the check under test is after verification.
    let idp = idp();
    let expected = expected(&idp);
    // The assertion's own checks, without the response around it.
    let check_in = |xml: &str| {
        let doc = xml::parse(xml).unwrap();
        let assertion = doc.descendants().find(|n| is(*n, NS_ASSERTION, "Assertion")).unwrap();
        check_assertion(assertion, &expected)
    };
    assert_eq!(check_in(ASSERTION_SIGNED).unwrap().email, "alice@example.com");
    let persistent = ASSERTION_SIGNED
        .replace("nameid-format:emailAddress\">alice@example.com", "nameid-format:persistent\">u-123")
        .replace("Name=\"email\"", "Name=\"mail\"");
    assert_eq!(
        check_in(&persistent).unwrap(),
        Verified { email: "alice@example.com".into(), name_id: "u-123".into(), groups: Some(vec![]) }
    );
    let no_email = persistent.replace("Name=\"mail\"", "Name=\"name\"");
    assert!(check_in(&no_email).is_err());
}

mod attacks {
    include!("../../testdata/attacks.rs");
}

#[test]
fn refuses_a_namespace_bomb_before_parsing_it() {
    // Issue 16 finding 1: 66 KB that held a release build for 22 s.
    let bomb = attacks::namespace_bomb(ASSERTION_SIGNED, 1_000, 3_000, 8_000);
    assert!((60_000..80_000).contains(&bomb.len()), "{} bytes", bomb.len());
    refused_with(check(&bomb, |_| {}), "declares more than 32 namespaces");
}

#[test]
fn refuses_an_element_with_thousands_of_attributes_before_parsing_it() {
    // Issue 16 finding 2: the parser's duplicate checks are quadratic.
    refused_with(check(&attacks::attribute_bomb(ASSERTION_SIGNED, 24_000), |_| {}), "more than 64 attributes");
    refused_with(check(&attacks::declaration_bomb(ASSERTION_SIGNED, 10_000), |_| {}), "more than 32 namespaces");
    // Also behind a comment opened with `<!-->`, which the pre-scan once took for a whole one.
    refused_with(check(&attacks::hidden_attribute_bomb(ASSERTION_SIGNED, 24_000), |_| {}), "more than 64 attributes");
}

#[test]
fn caps_inclusive_prefix_lists() {
    let listed = |prefixes| attacks::namespace_bomb(ASSERTION_SIGNED, 0, prefixes, 0);
    refused_with(check(&listed(9), |_| {}), "PrefixList names more than 8 prefixes");
    // Within the cap, the list is read (and, not being the IdP's, breaks the signature).
    refused_with(check(&listed(8), |_| {}), "not made by a key");
}

/// How many canonicalizations verifying `xml` took.
fn canonicalizations(xml: &str) -> (Result<Verified, Error>, usize) {
    let before = crate::c14n::CANONICALIZED.with(std::cell::Cell::get);
    let result = check(xml, |_| {});
    (result, crate::c14n::CANONICALIZED.with(std::cell::Cell::get) - before)
}

#[test]
fn checks_the_signature_before_digesting_the_reference() {
    let altered = ASSERTION_SIGNED.replace("alice@example.com", "admin@localhost");
    let value = "<SignatureValue>";
    let forged = altered.replacen(&format!("{value}du"), &format!("{value}AA"), 1);
    assert_ne!(forged, altered);
    let (result, count) = canonicalizations(&forged);
    refused_with(result, "not made by a key in the IdP's metadata");
    assert_eq!(count, 1, "only SignedInfo was canonicalized, no reference digested");
    // A good signature over an altered element: then, and only then, the digest.
    let (result, count) = canonicalizations(&altered);
    refused_with(result, "digest does not match");
    assert_eq!(count, 2);
}
