//! XML-DSig verification of one enveloped signature, narrowly: exactly one `Reference`,
//! whose URI is `#` + the ID of the element that holds the signature; the transforms
//! enveloped-signature then exclusive C14N; SHA-256/SHA-512 digests; RSA-SHA256/SHA512
//! signatures over the exclusively canonicalized `SignedInfo`, checked against the given
//! keys (from the IdP's metadata), before the reference's digest is computed. Anything else
//! is refused: SHA-1, other transforms, several references, a reference to anything but the
//! enclosing element, an `InclusiveNamespaces` prefix list of more than
//! [`MAX_INCLUSIVE_PREFIXES`].

use roxmltree::Node;
use rsa::{Pkcs1v15Sign, RsaPublicKey};
use sha2::{Digest, Sha256, Sha512};

use base64::Engine as _;

use crate::c14n::{canonicalize, Options};
use crate::keys::SpKeyPair;
use crate::xml::{base64, children, escape, is, only_child, optional_child, NS_DSIG, NS_EXC_C14N};

const EXC_C14N: &str = "http://www.w3.org/2001/10/xml-exc-c14n#";
const EXC_C14N_COMMENTS: &str = "http://www.w3.org/2001/10/xml-exc-c14n#WithComments";
const ENVELOPED: &str = "http://www.w3.org/2000/09/xmldsig#enveloped-signature";
const RSA_SHA256: &str = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
const RSA_SHA512: &str = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512";
const SHA256: &str = "http://www.w3.org/2001/04/xmlenc#sha256";
const SHA512: &str = "http://www.w3.org/2001/04/xmlenc#sha512";

#[derive(Clone, Copy)]
enum Hash {
    Sha256,
    Sha512,
}

impl Hash {
    fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha256 => Sha256::digest(data).to_vec(),
            Hash::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    fn padding(self) -> Pkcs1v15Sign {
        match self {
            Hash::Sha256 => Pkcs1v15Sign::new::<Sha256>(),
            Hash::Sha512 => Pkcs1v15Sign::new::<Sha512>(),
        }
    }
}

/// The `ds:Signature` child of `element`, if any; several is an error.
pub fn signature_of<'a, 'i>(element: Node<'a, 'i>) -> Result<Option<Node<'a, 'i>>, String> {
    optional_child(element, NS_DSIG, "Signature")
}

/// Most prefixes an `InclusiveNamespaces PrefixList` may name: IdPs list one or two (`xs`),
/// and canonicalization looks every listed prefix up at every element.
pub const MAX_INCLUSIVE_PREFIXES: usize = 8;

/// Verifies `signature`, a child of `signed`, against `keys`: `Ok` only if it covers exactly
/// `signed` (minus the signature itself) and one of the keys made it.
///
/// The signature over `SignedInfo` is checked first, and only then the reference's digest:
/// the transforms the digest follows are then the IdP's, never a sender's choice.
pub fn verify(signed: Node<'_, '_>, signature: Node<'_, '_>, keys: &[RsaPublicKey]) -> Result<(), String> {
    if signature.parent() != Some(signed) || !is(signature, NS_DSIG, "Signature") {
        return Err("the signature is not enveloped in the element it signs".into());
    }
    let id = signed.attribute("ID").filter(|id| !id.is_empty()).ok_or("the signed element has no ID")?;
    let signed_info = only_child(signature, NS_DSIG, "SignedInfo")?;
    let signature_value = base64(&crate::xml::text(only_child(signature, NS_DSIG, "SignatureValue")?)?)?;
    let info = SignedInfo::read(signed_info, id)?;
    let reference = info.verify(signed_info, &signature_value, keys)?;
    reference.check_digest(signed, signature)
}

/// What `SignedInfo` says, read and checked for what is accepted, not yet verified.
struct SignedInfo {
    c14n: Options,
    hash: Hash,
    reference: Reference,
}

/// The one reference of a `SignedInfo` whose signature verified.
struct Reference {
    c14n: Options,
    digest_hash: Hash,
    digest_value: Vec<u8>,
}

impl SignedInfo {
    /// Reads `signed_info`, whose one reference must be `#id`.
    fn read(signed_info: Node<'_, '_>, id: &str) -> Result<Self, String> {
        let method = only_child(signed_info, NS_DSIG, "CanonicalizationMethod")?;
        let c14n = c14n_method(method)?;
        let hash = match algorithm(only_child(signed_info, NS_DSIG, "SignatureMethod")?)? {
            RSA_SHA256 => Hash::Sha256,
            RSA_SHA512 => Hash::Sha512,
            other => return Err(format!("signature algorithm {other} is not accepted (RSA-SHA256 or RSA-SHA512)")),
        };
        let reference = only_child(signed_info, NS_DSIG, "Reference")?;
        if reference.attribute("URI") != Some(&format!("#{id}")) {
            return Err("the signature's reference is not the signed element".into());
        }
        Ok(Self { c14n, hash, reference: Reference::read(reference)? })
    }

    /// Checks the signature over the canonical `signed_info`; the reference, to check next.
    fn verify(self, signed_info: Node<'_, '_>, value: &[u8], keys: &[RsaPublicKey]) -> Result<Reference, String> {
        let canonical = canonicalize(signed_info, None, &self.c14n);
        let hashed = self.hash.digest(canonical.as_bytes());
        if keys.iter().any(|key| key.verify(self.hash.padding(), &hashed, value).is_ok()) {
            Ok(self.reference)
        } else {
            Err("the signature was not made by a key in the IdP's metadata".into())
        }
    }
}

impl Reference {
    fn read(reference: Node<'_, '_>) -> Result<Self, String> {
        let transforms: Vec<_> =
            children(only_child(reference, NS_DSIG, "Transforms")?, NS_DSIG, "Transform").collect();
        let [enveloped, c14n] = transforms.as_slice() else {
            return Err("the transforms must be enveloped-signature and exclusive C14N".into());
        };
        if algorithm(*enveloped)? != ENVELOPED {
            return Err("the first transform must be enveloped-signature".into());
        }
        let mut c14n = c14n_method(*c14n)?;
        // A same-document reference (`#id`) removes comments whatever the canonicalization says
        // (XML-DSig 4.3.3.3): what is digested never holds them.
        c14n.with_comments = false;
        let digest_hash = match algorithm(only_child(reference, NS_DSIG, "DigestMethod")?)? {
            SHA256 => Hash::Sha256,
            SHA512 => Hash::Sha512,
            other => return Err(format!("digest algorithm {other} is not accepted (SHA-256 or SHA-512)")),
        };
        let digest_value = base64(&crate::xml::text(only_child(reference, NS_DSIG, "DigestValue")?)?)?;
        Ok(Self { c14n, digest_hash, digest_value })
    }

    /// Whether the digest of `signed` without its enveloped `signature` is the signed one.
    fn check_digest(self, signed: Node<'_, '_>, signature: Node<'_, '_>) -> Result<(), String> {
        let canonical = canonicalize(signed, Some(signature.id()), &self.c14n);
        if self.digest_hash.digest(canonical.as_bytes()) != self.digest_value {
            return Err("the digest does not match: the signed element was altered".into());
        }
        Ok(())
    }
}

fn algorithm<'a>(node: Node<'a, '_>) -> Result<&'a str, String> {
    node.attribute("Algorithm").ok_or_else(|| format!("{} has no Algorithm", node.tag_name().name()))
}

/// Canonicalization options for an exclusive C14N `CanonicalizationMethod` or `Transform`.
fn c14n_method(node: Node<'_, '_>) -> Result<Options, String> {
    let with_comments = match algorithm(node)? {
        EXC_C14N => false,
        EXC_C14N_COMMENTS => true,
        other => return Err(format!("canonicalization {other} is not accepted (exclusive C14N only)")),
    };
    let inclusive_prefixes: Vec<String> = match optional_child(node, NS_EXC_C14N, "InclusiveNamespaces")? {
        Some(list) => {
            let prefixes = list.attribute("PrefixList").unwrap_or_default().split_ascii_whitespace();
            prefixes.take(MAX_INCLUSIVE_PREFIXES + 1).map(str::to_owned).collect()
        }
        None => Vec::new(),
    };
    if inclusive_prefixes.len() > MAX_INCLUSIVE_PREFIXES {
        return Err(format!("an InclusiveNamespaces PrefixList names more than {MAX_INCLUSIVE_PREFIXES} prefixes"));
    }
    Ok(Options { with_comments, inclusive_prefixes })
}

/// `xml` with an enveloped signature by `pair` over its document element (which must have
/// an `ID`): exclusive C14N, SHA-256, RSA-SHA256, the certificate in `KeyInfo`. The
/// signature goes right after the root's child `{ns}name` when `after` names one (SAML
/// protocol messages put it after their `Issuer`), else first in the root.
pub fn sign_enveloped(xml: &str, pair: &SpKeyPair, after: Option<(&str, &str)>) -> Result<String, String> {
    let engine = base64::engine::general_purpose::STANDARD;
    let doc = crate::xml::parse(xml)?;
    let root = doc.root_element();
    let id = root.attribute("ID").ok_or("the element to sign has no ID")?;
    // No signature yet: the enveloped transform leaves the element as it is.
    let digest = engine.encode(Sha256::digest(canonicalize(root, None, &Options::default()).as_bytes()));
    let signed_info = format!(
        concat!(
            r#"<ds:SignedInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#">"#,
            r#"<ds:CanonicalizationMethod Algorithm="{c14n}"/>"#,
            r#"<ds:SignatureMethod Algorithm="{rsa}"/>"#,
            r##"<ds:Reference URI="#{id}"><ds:Transforms>"##,
            r#"<ds:Transform Algorithm="{enveloped}"/><ds:Transform Algorithm="{c14n}"/></ds:Transforms>"#,
            r#"<ds:DigestMethod Algorithm="{sha256}"/><ds:DigestValue>{digest}</ds:DigestValue>"#,
            r#"</ds:Reference></ds:SignedInfo>"#
        ),
        c14n = EXC_C14N,
        rsa = RSA_SHA256,
        id = escape(id),
        enveloped = ENVELOPED,
        sha256 = SHA256,
        digest = digest,
    );
    // Its canonical form is the same standalone as inside the signature: it declares the one
    // prefix it uses.
    let info_doc = crate::xml::parse(&signed_info)?;
    let canonical_info = canonicalize(info_doc.root_element(), None, &Options::default());
    let value = engine.encode(pair.sign_sha256(canonical_info.as_bytes()).map_err(|e| e.to_string())?);
    let signature = format!(
        concat!(
            r#"<ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#">{info}"#,
            r#"<ds:SignatureValue>{value}</ds:SignatureValue><ds:KeyInfo><ds:X509Data>"#,
            r#"<ds:X509Certificate>{certificate}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></ds:Signature>"#
        ),
        info = signed_info,
        value = value,
        certificate = pair.certificate_base64(),
    );
    let at = match after {
        Some((ns, name)) => only_child(root, ns, name)?.range().end,
        None => root.first_child().map(|child| child.range().start).ok_or("the element to sign is empty")?,
    };
    Ok(format!("{}{signature}{}", &xml[..at], &xml[at..]))
}
