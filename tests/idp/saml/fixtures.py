#!/usr/bin/env python3
"""Makes the signed responses that crates/ferrozone-saml's unit tests verify, with the test
IdP (idp.js) itself: `python3 fixtures.py`, after `npm ci` here. Each fixture answers the
AuthnRequest `_fz0123` from SP `urn:firezone.dev:firezone-app` whose ACS is
`https://vpn.example/auth/saml/sp/consume/test`; the unit tests pin their clock to the
moment the fixtures were made (see NOW in crates/ferrozone-saml/src/response/tests.rs).
"""
import base64, html, json, os, re, subprocess, sys, urllib.parse, urllib.request, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, '..', '..', '..', 'crates', 'ferrozone-saml', 'testdata')


def make(cfg, out):
    cfg.setdefault('issuer','https://idp.example/metadata')
    p=subprocess.Popen(['node','idp.js',json.dumps(cfg)],stdin=subprocess.PIPE,stdout=subprocess.PIPE,text=True)
    port=p.stdout.readline().strip().rsplit(':',1)[1]
    req='<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_fz0123" Version="2.0" IssueInstant="2026-01-01T00:00:00Z" AssertionConsumerServiceURL="https://vpn.example/auth/saml/sp/consume/test"><saml:Issuer>urn:firezone.dev:firezone-app</saml:Issuer></samlp:AuthnRequest>'
    c=zlib.compressobj(9, zlib.DEFLATED, -15); d=c.compress(req.encode())+c.flush()
    q=urllib.parse.urlencode({'SAMLRequest':base64.b64encode(d).decode(),'RelayState':'rs1'})
    page=urllib.request.urlopen(f'http://127.0.0.1:{port}/sso?{q}').read().decode()
    sr=re.search(r'name="SAMLRequest" value="([^"]*)"',page).group(1)
    body=urllib.parse.urlencode({'SAMLRequest':html.unescape(sr),'RelayState':'rs1','email':'alice@example.com'}).encode()
    form=urllib.request.urlopen(f'http://127.0.0.1:{port}/sso',body).read().decode()
    tok=re.search(r'name="SAMLResponse"\s*value="([^"]*)"',form).group(1)
    open(os.path.join(OUT, out),'w').write(base64.b64decode(tok).decode())
    p.stdin.close(); p.wait()


if __name__ == '__main__':
    os.chdir(HERE)
    make({}, 'assertion-signed.xml')
    make({'signResponse': True}, 'both-signed.xml')
    make({'signResponse': True, 'signAssertion': False}, 'response-signed.xml')
    make({'keyFile': 'keys/other.key', 'certFile': 'keys/other.crt'}, 'forged.xml')
