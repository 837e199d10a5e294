//! Keys: an IdP's RSA signing key from an X.509 certificate (its validity dates are not
//! checked: the metadata pins the key), and the SP's own key pair for signing requests.

use base64::Engine as _;
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs1v15::SigningKey;
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::rand_core::CryptoRngCore;
use rsa::signature::{RandomizedSigner, SignatureEncoding};
use rsa::traits::PublicKeyParts;
use rsa::{RsaPrivateKey, RsaPublicKey};
use sha2::{Digest, Sha256};
use x509_cert::der::{Decode, Encode};
use x509_cert::Certificate;

use crate::Error;

/// The smallest RSA modulus accepted, in bits.
pub const MIN_RSA_BITS: usize = 2048;

/// The RSA public key of a DER certificate.
pub fn certificate_key(der: &[u8]) -> Result<RsaPublicKey, String> {
    let certificate = Certificate::from_der(der).map_err(|e| format!("not an X.509 certificate: {e}"))?;
    let spki = certificate
        .tbs_certificate
        .subject_public_key_info
        .to_der()
        .map_err(|e| format!("unreadable public key: {e}"))?;
    let key =
        RsaPublicKey::from_public_key_der(&spki).map_err(|_| "the certificate's key is not an RSA key".to_owned())?;
    if key.size() * 8 < MIN_RSA_BITS {
        return Err(format!("the certificate's RSA key has fewer than {MIN_RSA_BITS} bits"));
    }
    Ok(key)
}

/// The DER bytes of the first PEM block labelled `label` in `pem`.
fn pem_block(pem: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = pem.find(&begin)? + begin.len();
    let stop = start + pem[start..].find(&end)?;
    crate::xml::base64(&pem[start..stop]).ok()
}

/// The SP's key pair: it signs AuthnRequests, and its certificate is in the SP metadata.
pub struct SpKeyPair {
    key: RsaPrivateKey,
    /// The certificate, DER.
    certificate: Vec<u8>,
}

impl std::fmt::Debug for SpKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpKeyPair").field("certificate_sha256", &hex_sha256(&self.certificate)).finish_non_exhaustive()
    }
}

fn hex_sha256(data: &[u8]) -> String {
    Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}

impl SpKeyPair {
    /// Reads a PEM private key (`PRIVATE KEY`, PKCS#8, or `RSA PRIVATE KEY`, PKCS#1) and a PEM
    /// certificate, which must hold the same key.
    pub fn from_pem(key_pem: &str, certificate_pem: &str) -> Result<Self, Error> {
        let key = if let Some(der) = pem_block(key_pem, "PRIVATE KEY") {
            RsaPrivateKey::from_pkcs8_der(&der)
                .map_err(|_| Error::Key("the key file's key is not an RSA key".into()))?
        } else if let Some(der) = pem_block(key_pem, "RSA PRIVATE KEY") {
            RsaPrivateKey::from_pkcs1_der(&der)
                .map_err(|_| Error::Key("the key file holds an unreadable RSA key".into()))?
        } else {
            return Err(Error::Key("the key file holds no PEM private key (PRIVATE KEY or RSA PRIVATE KEY)".into()));
        };
        let certificate = pem_block(certificate_pem, "CERTIFICATE")
            .ok_or_else(|| Error::Key("the certificate file holds no PEM CERTIFICATE".into()))?;
        let public = certificate_key(&certificate).map_err(|e| Error::Key(format!("certificate file: {e}")))?;
        if public != key.to_public_key() {
            return Err(Error::Key("the certificate does not hold the key file's key".into()));
        }
        Ok(Self { key, certificate })
    }

    /// The certificate as base64 DER, as `ds:X509Certificate` holds it.
    pub fn certificate_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.certificate)
    }

    /// An RSA-SHA256 (PKCS#1 v1.5) signature of `data`, blinded with the system's random
    /// generator (so its timing does not depend on the private key).
    pub fn sign_sha256(&self, data: &[u8]) -> Result<Vec<u8>, Error> {
        self.sign_sha256_with_rng(&mut rand::thread_rng(), data)
    }

    /// [`Self::sign_sha256`], blinded with `rng`.
    fn sign_sha256_with_rng(&self, rng: &mut impl CryptoRngCore, data: &[u8]) -> Result<Vec<u8>, Error> {
        let signer = SigningKey::<Sha256>::new(self.key.clone());
        let signature =
            signer.try_sign_with_rng(rng, data).map_err(|e| Error::Key(format!("RSA signing failed: {e}")))?;
        Ok(signature.to_vec())
    }

    #[cfg(test)]
    pub(crate) fn public_key(&self) -> RsaPublicKey {
        self.key.to_public_key()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use rsa::Pkcs1v15Sign;

    use super::*;

    pub const IDP_CERT: &str = include_str!("../../../tests/idp/saml/keys/idp.crt");
    pub const SP_KEY: &str = include_str!("../../../tests/idp/saml/keys/sp.key");
    pub const SP_CERT: &str = include_str!("../../../tests/idp/saml/keys/sp.crt");

    pub fn idp_key() -> RsaPublicKey {
        certificate_key(&pem_block(IDP_CERT, "CERTIFICATE").unwrap()).unwrap()
    }

    /// A random generator that counts how often it is drawn from.
    struct Counting(usize, rand::rngs::ThreadRng);

    impl rand::RngCore for Counting {
        fn next_u32(&mut self) -> u32 {
            self.0 += 1;
            self.1.next_u32()
        }
        fn next_u64(&mut self) -> u64 {
            self.0 += 1;
            self.1.next_u64()
        }
        fn fill_bytes(&mut self, dest: &mut [u8]) {
            self.0 += 1;
            self.1.fill_bytes(dest);
        }
        fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
            self.0 += 1;
            self.1.try_fill_bytes(dest)
        }
    }

    impl rand::CryptoRng for Counting {}

    #[test]
    fn signs_blinded_with_a_random_generator() {
        let pair = SpKeyPair::from_pem(SP_KEY, SP_CERT).unwrap();
        let mut rng = Counting(0, rand::thread_rng());
        let signature = pair.sign_sha256_with_rng(&mut rng, b"data").unwrap();
        assert!(rng.0 > 0, "the blinding factor comes from the generator");
        // PKCS#1 v1.5 is deterministic: blinding changes the computation, not the signature.
        assert_eq!(signature, pair.sign_sha256(b"data").unwrap());
        let hashed = Sha256::digest(b"data");
        pair.public_key().verify(Pkcs1v15Sign::new::<Sha256>(), &hashed, &signature).unwrap();
    }

    #[test]
    fn reads_certificates_and_matching_key_pairs() {
        assert!(idp_key().size() * 8 >= MIN_RSA_BITS);
        let pair = SpKeyPair::from_pem(SP_KEY, SP_CERT).unwrap();
        let signature = pair.sign_sha256(b"data").unwrap();
        let hashed = Sha256::digest(b"data");
        pair.public_key().verify(Pkcs1v15Sign::new::<Sha256>(), &hashed, &signature).unwrap();
        assert!(format!("{pair:?}").contains("certificate_sha256"), "the key is never printed");
        assert!(matches!(SpKeyPair::from_pem(SP_KEY, IDP_CERT), Err(Error::Key(m)) if m.contains("does not hold")));
        assert!(SpKeyPair::from_pem("nothing", SP_CERT).is_err());
        assert!(SpKeyPair::from_pem(SP_KEY, "nothing").is_err());
        assert!(certificate_key(b"junk").is_err());
    }
}
