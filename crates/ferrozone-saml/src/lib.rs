//! SAML 2.0 sign-in for Ferrozone, as a service provider (SP): the identity provider's
//! metadata, the AuthnRequest (HTTP-Redirect binding, or HTTP-POST for IdPs that offer
//! only it), the SP's own metadata (optionally signed), and a strict verification of the
//! IdP's Response (HTTP-POST binding). Those protocol modules are pure: no I/O, no clock
//! (callers pass the time), so every rule is unit-tested here. [`signin`] is the service
//! provider's sign-in flow on top of them: the one-time flows, the consumer's bounded
//! verification and the provider sign-in, through Ferrozone's domain (no HTTP types).
//!
//! XML signatures are verified here, narrowly: exclusive canonicalization (with or without
//! comments, with an `InclusiveNamespaces` prefix list) of the element a signature covers,
//! the enveloped-signature transform, SHA-256/SHA-512 digests and RSA-SHA256/RSA-SHA512
//! signatures (SHA-1 is refused), checked with a certificate from the IdP's metadata only,
//! never one the message carries, over `SignedInfo` first and only then the digest. What is
//! consumed is exactly the element the signature covers (see [`response`]).
//!
//! Every document is pre-scanned in one linear pass before it is parsed (elements,
//! attributes and namespace declarations per element and in all, depth: `xml::prescan`), so
//! that no document within the size limit costs more than a few milliseconds.

mod c14n;
mod dsig;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod keys;
pub mod metadata;
pub mod request;
pub mod response;
pub mod signin;
pub mod sp;
mod xml;

pub use keys::SpKeyPair;
pub use metadata::{IdpMetadata, SsoBinding};
pub use request::{new_request_id, AuthnRequest, Outgoing, REQUEST_ID_PREFIX};
pub use response::{decode_post_response, verify_response, Expected, Verified, CLOCK_SKEW_SECS};
pub use signin::{SamlLimits, SamlProvider, SamlSp};
pub use sp::{sign_metadata, sp_metadata};

/// Why metadata, a key or a response was refused. The message says what and where; it never
/// holds secrets, and is meant for logs (the browser gets a generic page).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("IdP metadata: {0}")]
    Metadata(String),
    #[error("SAML key: {0}")]
    Key(String),
    #[error("SAML response refused: {0}")]
    Refused(String),
    /// Ferrozone could not make a message of its own (sign or deflate it): never sent
    /// unsigned or empty instead.
    #[error("SAML message not made: {0}")]
    Build(String),
}

pub(crate) fn refused(message: impl Into<String>) -> Error {
    Error::Refused(message.into())
}
