// Checks an enveloped XML signature with xml-crypto, independently of Ferrozone's own
// verifier: `node verify.js CERT.pem < signed.xml` exits 0 when the document's first
// ds:Signature verifies with that certificate and covers the document element.
'use strict';

const fs = require('fs');
const { SignedXml, xpath } = require('xml-crypto');
const { DOMParser } = require('@xmldom/xmldom');

const cert = fs.readFileSync(process.argv[2]).toString();
const xml = fs.readFileSync(0).toString();
const doc = new DOMParser().parseFromString(xml);
const signature = xpath(doc, "//*[local-name(.)='Signature' and namespace-uri(.)='http://www.w3.org/2000/09/xmldsig#']")[0];
if (!signature) {
  console.error('no signature');
  process.exit(1);
}
const sig = new SignedXml();
sig.keyInfoProvider = { getKey: () => Buffer.from(cert), getKeyInfo: () => '' };
sig.loadSignature(signature);
const id = doc.documentElement.getAttribute('ID');
const covers = sig.references.length === 1 && sig.references[0].uri === `#${id}`;
if (!sig.checkSignature(xml) || !covers) {
  console.error(`invalid: ${sig.validationErrors}`);
  process.exit(1);
}
console.log('valid');
