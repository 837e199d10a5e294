// An OpenID Connect provider for Ferrozone's integration tests, built on oidc-provider.
//
//   node idp.mjs <config.json>
//
// The configuration names the clients ({client_id, client_secret, redirect_uris}) and
// whether ID tokens carry the email claims themselves (`email_in_id_token`; otherwise
// only the userinfo endpoint has them). The provider listens on 127.0.0.1, on a free
// port, and prints one line `listening <issuer>` when it is ready.
//
// Sign-in pages a test drives with plain HTML forms: `GET /interaction/<uid>` shows a
// form whose `data-prompt` is `login` or `consent`; `POST /interaction/<uid>/login`
// with `email` signs that account in (any email is an account: `unverified+…` has
// `email_verified: false`, `unstated+…` has no `email_verified` claim, `noemail+…` has no
// email claim); `POST /interaction/<uid>/confirm` grants what the client asked for.
//
// Controls for the tests (plain HTTP, no authentication: a test IdP on loopback):
//   POST /admin/revoke?account=EMAIL   revokes every grant and token of that account
//   POST /admin/outage?on=1|0          every protocol endpoint answers 503 (or again works)
//   POST /admin/token-error?code=C&status=N   the token endpoint answers every request with
//        the OAuth error C and HTTP status N (default 400); no `code`: it works again
//   POST /admin/groups?account=EMAIL&groups=A,B   that account's `groups` claim (scope
//        `groups`) is the list A, B from now on (`groups=` an empty list); without the
//        control an account has no `groups` claim
//   POST /admin/tamper?mode=M          the next ID token from the token endpoint is altered:
//        audience  (re-signed, issued to the client `other`), nonce (re-signed, another
//        nonce), issuer (re-signed, another issuer), expired (re-signed, expired an hour
//        ago), signature (payload changed, signature kept), none (stop tampering)
//
// It runs until its stdin closes or it gets SIGTERM, so it never outlives the test.

import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';

import * as jose from 'jose';
import Provider from 'oidc-provider';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));

// Every stored model by name and id, so that an account's grants can be found and revoked.
const stored = new Map();

class MemoryAdapter {
  constructor(name) {
    this.name = name;
  }

  key(id) {
    return `${this.name}:${id}`;
  }

  async upsert(id, payload, expiresIn) {
    const expires = expiresIn ? Date.now() + expiresIn * 1000 : undefined;
    stored.set(this.key(id), { name: this.name, payload: { ...payload }, expires });
  }

  async find(id) {
    const entry = stored.get(this.key(id));
    if (!entry || (entry.expires && entry.expires < Date.now())) return undefined;
    return entry.payload;
  }

  async findByUserCode() {
    return undefined;
  }

  async findByUid(uid) {
    for (const entry of stored.values()) {
      if (entry.name === this.name && entry.payload.uid === uid) return entry.payload;
    }
    return undefined;
  }

  async consume(id) {
    const entry = stored.get(this.key(id));
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    stored.delete(this.key(id));
  }

  async revokeByGrantId(grantId) {
    for (const [key, entry] of stored) {
      if (entry.payload.grantId === grantId) stored.delete(key);
    }
  }
}

// A fixed test-only signing key, committed beside this script: generating an RSA key at
// start-up costs time on a busy machine and was seen to stall the start of some instances.
const signingJwk = JSON.parse(fs.readFileSync(new URL('./signing-key.json', import.meta.url), 'utf8'));

let outage = false;
let tokenError = null;
let tamper = 'none';
// Each account's `groups` claim, set by the tests (`POST /admin/groups`).
const groupsOf = new Map();

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  adapter: MemoryAdapter,
  clients: config.clients.map((client) => ({
    client_id: client.client_id,
    client_secret: client.client_secret,
    redirect_uris: client.redirect_uris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  })),
  jwks: { keys: [signingJwk] },
  cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
  conformIdTokenClaims: !config.email_in_id_token,
  findAccount: async (_ctx, sub) => ({
    accountId: sub,
    async claims() {
      const groups = groupsOf.has(sub) ? { groups: groupsOf.get(sub) } : {};
      if (sub.startsWith('noemail+')) return { sub, ...groups };
      if (sub.startsWith('unstated+')) return { sub, email: sub, ...groups };
      return { sub, email: sub, email_verified: !sub.startsWith('unverified+'), ...groups };
    },
  }),
  features: { devInteractions: { enabled: false }, revocation: { enabled: true } },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  pkce: { required: () => true },
  // As oidc-provider (and OpenID Connect Core, section 11) do by default, a refresh token
  // only for the `offline_access` scope, which counts only with `prompt=consent`. It
  // outlives the IdP session, and each use rotates it, as many providers do.
  issueRefreshToken: async (_ctx, client, code) =>
    client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
  expiresWithSession: async () => false,
  rotateRefreshToken: () => true,
  renderError: async (ctx, out) => {
    ctx.type = 'html';
    ctx.body = `<!DOCTYPE html><title>error</title><pre>${escape(JSON.stringify(out))}</pre>`;
  },
});

provider.use(async (ctx, next) => {
  if (outage) {
    ctx.status = 503;
    ctx.type = 'html';
    ctx.body = '<!DOCTYPE html><title>Service Unavailable</title>';
    return;
  }
  if (tokenError && ctx.path === '/token') {
    ctx.status = tokenError.status;
    ctx.body = { error: tokenError.code };
    return;
  }
  await next();
  if (ctx.path === '/token' && ctx.status === 200 && ctx.body?.id_token && tamper !== 'none') {
    ctx.body = { ...ctx.body, id_token: await tampered(ctx.body.id_token, tamper) };
    tamper = 'none';
  }
});

async function tampered(idToken, mode) {
  const claims = jose.decodeJwt(idToken);
  if (mode === 'signature') {
    const [header, , signature] = idToken.split('.');
    const body = Buffer.from(JSON.stringify({ ...claims, email: 'mallory@example.com' })).toString('base64url');
    return `${header}.${body}.${signature}`;
  }
  if (mode === 'audience') {
    claims.aud = 'other';
    claims.azp = 'other';
  } else if (mode === 'nonce') {
    claims.nonce = crypto.randomBytes(16).toString('base64url');
  } else if (mode === 'issuer') {
    claims.iss = 'https://impostor.example';
  } else if (mode === 'expired') {
    claims.iat -= 7200;
    claims.exp = claims.iat + 3600;
  }
  const key = await jose.importJWK(signingJwk, 'RS256');
  return new jose.SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: signingJwk.kid, typ: 'JWT' }).sign(key);
}

function escape(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function form(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

function send(res, status, html) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  res.end(html);
}

async function interaction(req, res, url) {
  const [, , uid, action] = url.pathname.split('/');
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) return send(res, 400, 'wrong interaction');
  const prompt = details.prompt.name;
  if (req.method === 'GET') {
    const fields = prompt === 'login' ? '<input name="email">' : '';
    const action = prompt === 'login' ? 'login' : 'confirm';
    return send(
      res,
      200,
      `<!DOCTYPE html><title>${prompt}</title><form data-prompt="${prompt}" method="post" ` +
        `action="/interaction/${uid}/${action}">${fields}<button>Continue</button></form>`,
    );
  }
  const params = await form(req);
  if (action === 'login' && prompt === 'login') {
    const accountId = params.get('email') ?? '';
    if (!accountId) return send(res, 400, 'an email is needed');
    return provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
  }
  if (action === 'confirm' && prompt === 'consent') {
    const { accountId } = details.session;
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId, clientId: details.params.client_id });
    const missing = details.prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    const consent = details.grantId ? {} : { grantId };
    return provider.interactionFinished(req, res, { consent }, { mergeWithLastSubmission: true });
  }
  return send(res, 400, `unexpected ${action} at the ${prompt} prompt`);
}

function admin(req, res, url) {
  if (req.method !== 'POST') return send(res, 405, 'POST only');
  const what = url.pathname.slice('/admin/'.length);
  if (what === 'revoke') {
    const account = url.searchParams.get('account');
    let revoked = 0;
    for (const [key, entry] of stored) {
      if (entry.payload.accountId === account) {
        stored.delete(key);
        revoked += 1;
      }
    }
    return send(res, 200, `revoked ${revoked}`);
  }
  if (what === 'outage') {
    outage = url.searchParams.get('on') === '1';
    return send(res, 200, `outage ${outage}`);
  }
  if (what === 'token-error') {
    const code = url.searchParams.get('code');
    tokenError = code ? { code, status: Number(url.searchParams.get('status') ?? 400) } : null;
    return send(res, 200, `token-error ${code}`);
  }
  if (what === 'groups') {
    const names = url.searchParams.get('groups') ?? '';
    groupsOf.set(url.searchParams.get('account'), names ? names.split(',') : []);
    return send(res, 200, `groups ${names}`);
  }
  if (what === 'tamper') {
    tamper = url.searchParams.get('mode') ?? 'none';
    return send(res, 200, `tamper ${tamper}`);
  }
  return send(res, 404, 'unknown control');
}

const callback = provider.callback();
server.on('request', (req, res) => {
  const url = new URL(req.url, issuer);
  let handled;
  if (url.pathname.startsWith('/admin/')) {
    handled = Promise.resolve(admin(req, res, url));
  } else if (url.pathname.startsWith('/interaction/') && !outage) {
    handled = interaction(req, res, url);
  } else {
    return callback(req, res);
  }
  handled.catch((err) => {
    if (!res.headersSent) send(res, 500, escape(err.message));
    else res.end();
  });
});

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
console.log(`listening ${issuer}`);
