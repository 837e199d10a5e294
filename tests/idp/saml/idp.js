// A SAML 2.0 identity provider for Ferrozone's sign-in tests, on `samlp` (a SAML IdP
// middleware library) and its `saml` and `xml-crypto` signing.
//
//   node idp.js '<json configuration>'
//
// It listens on 127.0.0.1 on a free port and prints one line, `listening http://127.0.0.1:PORT`.
// Its entity id is `http://127.0.0.1:PORT/metadata`, where its metadata is served.
//
// The browser flow, as a person would go through it:
//   GET  /sso?SAMLRequest=…&RelayState=…   (HTTP-Redirect binding) a sign-in page: a form
//                                          with an email field and the request carried along
//   POST /sso with SAMLRequest, RelayState  (HTTP-POST binding) the same sign-in page
//   POST /sso with email too                the IdP's HTML form that posts the signed
//                                          SAMLResponse and the RelayState to the SP's ACS;
//                                          a `groups` field (names separated by commas)
//                                          becomes a `groups` attribute, one value a name
//
// keys/ holds throwaway test keys (idp: the IdP; other: a forger; sp: the SP), made with
// `openssl req -x509 -newkey rsa:2048 -nodes -days 36500`; they protect nothing.
//
// Configuration (every key optional):
//   keyFile, certFile    the key that signs, and its certificate (default keys/idp.*)
//   metadataCertFile     the certificate published in the metadata (default certFile); another
//                        one makes every response a forgery in the SP's eyes
//   signAssertion        sign the Assertion (default true)
//   signResponse         sign the whole Response as well (default false)
//   lifetimeSeconds      assertion lifetime (default 300); negative makes it expired at once
//   audience             the Audience to assert (default: the request's Issuer)
//   postOnly             the metadata offers only the HTTP-POST binding for requests
//   issuer               the entity id (default `http://127.0.0.1:PORT/metadata`)
//   spCertFile           when set, AuthnRequests must carry a valid signature by this
//                        certificate (HTTP-Redirect: SigAlg/Signature; HTTP-POST: enveloped
//                        in the XML), or the IdP answers 400
'use strict';

const fs = require('fs');
const http = require('http');
const path = require('path');
const querystring = require('querystring');
const samlp = require('samlp');
const templates = require('samlp/lib/templates');

const config = JSON.parse(process.argv[2] || '{}');
const here = (file) => path.resolve(__dirname, file);
const read = (file) => fs.readFileSync(here(file)).toString();
const key = read(config.keyFile || 'keys/idp.key');
const cert = read(config.certFile || 'keys/idp.crt');
const metadataCert = read(config.metadataCertFile || config.certFile || 'keys/idp.crt');
const spCert = config.spCertFile ? read(config.spCertFile) : undefined;
const pem = (text) => text.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');

const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';

// The user, as samlp maps it: the NameID is the email (emailAddress format), an `email`
// attribute carries it too, and a `groups` attribute the user's groups when it has some.
function EmailProfile(user) {
  if (!(this instanceof EmailProfile)) return new EmailProfile(user);
  this.user = user;
}
EmailProfile.prototype.getClaims = function () {
  return this.user.groups ? { email: this.user.email, groups: this.user.groups } : { email: this.user.email };
};
EmailProfile.prototype.getNameIdentifier = function () {
  return { nameIdentifier: this.user.email, nameIdentifierFormat: EMAIL_FORMAT };
};
EmailProfile.prototype.metadata = [];

const escape = (text) =>
  String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

function send(res, status, type, body) {
  res.writeHead(status, { 'Content-Type': type });
  res.end(body);
}

function signInPage(query) {
  return `<!doctype html><html><body><h1>Test IdP</h1>
<form method="post" action="/sso">
<input type="hidden" name="SAMLRequest" value="${escape(query.SAMLRequest || '')}">
<input type="hidden" name="RelayState" value="${escape(query.RelayState || '')}">
<label>Email <input type="email" name="email"></label>
<button type="submit">Sign in</button>
</form></body></html>`;
}

// samlp reads `req.query` (and the HTTP-Redirect signature from it) and `req.body` (where
// an HTTP-POST request carries its signature inside the XML).
function parse(req, fields, callback) {
  const post = req.method === 'POST';
  const shim = { query: post ? {} : fields, body: post ? fields : {}, method: req.method, originalUrl: req.url };
  const options = {};
  if (spCert) {
    if (!post && !fields.Signature) return callback(new Error('the AuthnRequest is not signed'));
    options.signingCert = spCert;
    options.relayState = fields.RelayState;
  }
  samlp.parseRequest(shim, options, callback);
}

function respond(base, fields, res) {
  const email = fields.email;
  if (!email) return send(res, 400, 'text/plain', 'email is required');
  samlp.parseRequest({ query: {}, body: fields }, (err, request) => {
    if (err || !request) return send(res, 400, 'text/plain', `bad SAMLRequest: ${err}`);
    const acs = request.assertionConsumerServiceURL;
    const options = {
      issuer: config.issuer || `${base}/metadata`,
      key,
      cert,
      profileMapper: EmailProfile,
      signatureAlgorithm: 'rsa-sha256',
      digestAlgorithm: 'sha256',
      signAssertion: config.signAssertion !== false,
      signResponse: config.signResponse === true,
      lifetimeInSeconds: config.lifetimeSeconds || 300,
      audience: config.audience || request.issuer,
      recipient: acs,
      destination: acs,
      inResponseTo: request.id,
    };
    const names = (fields.groups ?? '').split(',').filter((name) => name);
    const groups = names.length ? names : undefined;
    samlp.getSamlResponse(options, { email, groups }, (err, xml) => {
      if (err) return send(res, 500, 'text/plain', String(err));
      const form = templates.form({
        type: 'SAMLResponse',
        callback: acs,
        RelayState: fields.RelayState || '',
        token: Buffer.from(xml).toString('base64'),
      });
      send(res, 200, 'text/html', form);
    });
  });
}

const server = http.createServer((req, res) => {
  const base = `http://${req.headers.host}`;
  const url = new URL(req.url, base);
  if (req.method === 'GET' && url.pathname === '/metadata') {
    const metadata = templates.metadata({
      claimTypes: [],
      pem: pem(metadataCert),
      issuer: config.issuer || `${base}/metadata`,
      redirectEndpoint: `${base}/sso`,
      postEndpoint: `${base}/sso`,
      logoutEndpoints: {},
    });
    const offered = config.postOnly ? metadata.replace(/<SingleSignOnService [^>]*HTTP-Redirect[^>]*>/, '') : metadata;
    return send(res, 200, 'application/xml', offered);
  }
  if (req.method === 'GET' && url.pathname === '/sso') {
    const query = Object.fromEntries(url.searchParams);
    return parse(req, query, (err, request) => {
      if (err || !request) return send(res, 400, 'text/plain', `bad AuthnRequest: ${err}`);
      send(res, 200, 'text/html', signInPage(query));
    });
  }
  if (req.method === 'POST' && url.pathname === '/sso') {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const fields = querystring.parse(body);
      if (fields.email) return respond(base, fields, res);
      parse(req, fields, (err, request) => {
        if (err || !request) return send(res, 400, 'text/plain', `bad AuthnRequest: ${err}`);
        send(res, 200, 'text/html', signInPage(fields));
      });
    });
    return;
  }
  send(res, 404, 'text/plain', 'not found');
});

server.listen(0, '127.0.0.1', () => {
  console.log(`listening http://127.0.0.1:${server.address().port}`);
});
// The tests close stdin (or die) when they are done: then this IdP goes too.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
process.stdin.resume();
