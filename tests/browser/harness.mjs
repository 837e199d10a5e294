// A `ferrozone serve` of its own (a fresh data directory, or a fresh PostgreSQL database when
// BROWSER_TEST_POSTGRES=1; an unprivileged user and an admin, both with passwords) and
// Debian's chromium, for the browser tests; and what the tests share: a page that collects
// console errors and CSP violations, signing in, the axe-core check, screenshots at desktop
// and phone width. FERROZONE_BIN names the binary, SCREENSHOT_DIR where screenshots go
// (scripts/browser-test sets both).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const shots = process.env.SCREENSHOT_DIR ?? tmpdir();
export const email = 'pat@example.com';
export const password = 'a long enough password';
/// An administrator, also with a password.
export const adminEmail = 'ada@example.com';
export const adminPassword = 'the admin password';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
let databases = 0;

/// A fresh PostgreSQL database's URL (scripts/pg-test-db), or null for SQLite.
function database() {
  if (process.env.BROWSER_TEST_POSTGRES !== '1') return null;
  const name = `ferrozone_browser_${process.pid}_${databases++}`;
  const made = spawnSync('bash', [join(root, 'scripts', 'pg-test-db'), '--url', name], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  return made.stdout.trim();
}

const freePort = () =>
  new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });

async function waitReady(base) {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('ferrozone serve did not become ready');
}

/// Starts the server and the browser: `{ base, browser, stop }`. `env` adds variables of
/// the server's; `externalUrl`: FERROZONE_EXTERNAL_URL is the server's own address (for
/// links the server sends, which the browser then follows).
export async function start({ env: extra = {}, externalUrl = false } = {}) {
  const bin = process.env.FERROZONE_BIN;
  assert.ok(bin, 'FERROZONE_BIN names the ferrozone binary');
  const dataDir = mkdtempSync(join(tmpdir(), 'ferrozone-browser-'));
  const { FERROZONE_BIN: _, ...inherited } = process.env;
  const env = { ...inherited, ...extra, FERROZONE_DATA_DIR: dataDir, FERROZONE_WIREGUARD_BACKEND: 'none', RUST_LOG: 'warn' };
  const url = database();
  if (url) env.FERROZONE_DATABASE_URL = url;
  for (const [who, secret, role] of [[email, password, 'unprivileged'], [adminEmail, adminPassword, 'admin']]) {
    const args = ['user', 'create', '--email', who, '--role', role, '--password-stdin'];
    const created = spawnSync(bin, args, { env, input: `${secret}\n` });
    assert.equal(created.status, 0, created.stderr.toString());
  }
  const base = `http://127.0.0.1:${await freePort()}`;
  if (externalUrl) env.FERROZONE_EXTERNAL_URL = base;
  const server = spawn(bin, ['serve'], { env: { ...env, FERROZONE_LISTEN: base.slice(7) }, stdio: ['ignore', 'ignore', 'inherit'] });
  let browser;
  const stop = async () => {
    await browser?.close();
    server.kill('SIGTERM');
    await new Promise((r) => (server.exitCode === null ? server.once('exit', r) : r()));
    rmSync(dataDir, { recursive: true, force: true });
    if (url) {
      const name = new URL(url).pathname.slice(1);
      const admin = url.replace(/\/[^/]*$/, '/postgres');
      spawnSync('psql', ['-X', '-q', admin, '-c', `drop database if exists ${name}`]);
    }
  };
  try {
    await waitReady(base);
    browser = await launch();
  } catch (e) {
    await stop();
    throw e;
  }
  return { base, browser, stop };
}

/// A real SMTP server (tests/smtp/sink, aiosmtpd) on a free port: `{ port, messages, stop }`;
/// `messages()` is what it accepted so far, oldest first, each as its headers and decoded
/// text; `waitFor(test)` waits (up to 30 s) for a message that passes `test` and returns it.
export async function smtpSink() {
  const dir = mkdtempSync(join(tmpdir(), 'ferrozone-smtp-'));
  const sink = spawn('bash', [join(root, 'tests', 'smtp', 'sink'), '--dir', dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    sink.stdout.on('data', (chunk) => {
      out += chunk;
      const found = /port (\d+)/.exec(out);
      if (found) resolve(Number(found[1]));
    });
    sink.once('exit', (code) => reject(new Error(`the SMTP sink exited (${code})`)));
  });
  const messages = () =>
    readdirSync(dir).filter((f) => f.endsWith('.eml')).sort().map((f) => readFileSync(join(dir, f.replace(/\.eml$/, '.txt')), 'utf8'));
  const waitFor = async (test) => {
    for (let i = 0; i < 300; i++) {
      const found = messages().find(test);
      if (found) return found;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no such message; received: ${messages().join('\n---\n')}`);
  };
  const stop = () => {
    sink.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };
  return { port, messages, waitFor, stop };
}

/// The SAML test IdP of the sign-in tests (tests/idp/saml/idp.js, on Node.js) with
/// `config`: `{ base, metadata, stop }`. Its packages are installed by `.ci/run` (or `npm ci`
/// in tests/idp/saml).
export async function samlIdp(config = {}) {
  // Its stdin stays open while it is needed: the IdP exits when stdin ends.
  const idp = spawn('node', ['idp.js', JSON.stringify(config)], { cwd: join(root, 'tests', 'idp', 'saml'), stdio: ['pipe', 'pipe', 'inherit'] });
  const idpBase = await new Promise((resolve, reject) => {
    let out = '';
    idp.stdout.on('data', (chunk) => {
      out += chunk;
      const found = /listening (\S+)/.exec(out);
      if (found) resolve(found[1]);
    });
    idp.once('exit', (code) => reject(new Error(`the SAML IdP exited (${code})`)));
  });
  const metadata = await (await fetch(`${idpBase}/metadata`)).text();
  return { base: idpBase, metadata, stop: () => idp.stdin.end() };
}

/// The OpenID Connect test provider of the sign-in tests (tests/idp/oidc/idp.mjs, oidc-provider
/// on Node.js) with `clients` ({client_id, client_secret, redirect_uris}): `{ issuer, stop }`.
export async function oidcIdp(clients) {
  const dir = mkdtempSync(join(tmpdir(), 'ferrozone-oidc-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ clients, email_in_id_token: false }));
  // Its stdin stays open while it is needed: the provider exits when stdin ends.
  const idp = spawn('node', ['idp.mjs', config], { cwd: join(root, 'tests', 'idp', 'oidc'), stdio: ['pipe', 'pipe', 'inherit'] });
  const issuer = await new Promise((resolve, reject) => {
    let out = '';
    idp.stdout.on('data', (chunk) => {
      out += chunk;
      const found = /listening (\S+)/.exec(out);
      if (found) resolve(found[1]);
    });
    idp.once('exit', (code) => reject(new Error(`the OpenID Connect provider exited (${code})`)));
  });
  const stop = () => {
    idp.stdin.end();
    rmSync(dir, { recursive: true, force: true });
  };
  return { issuer, stop };
}

/// Debian's chromium, with `args` besides the harness's own (the caller closes it).
export function launch(args = []) {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', ...args],
  });
}

/// A browser that reaches the server `base` (http://127.0.0.1:port) by the name
/// `ferrozone.test` instead: a page there is not a secure context, as over plain HTTP on
/// a network (127.0.0.1 and localhost are secure contexts, even over HTTP). Returns
/// `{ browser, base }` with that base; the caller closes the browser.
export async function plainHttp(base) {
  const browser = await launch(['--host-resolver-rules=MAP ferrozone.test 127.0.0.1']);
  return { browser, base: base.replace('127.0.0.1', 'ferrozone.test') };
}

/// A page in `context` whose console errors, page errors and CSP violations are collected
/// in `problems`.
export async function watchedPage(context) {
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  return { page, problems };
}

/// Signs `page` in through the password form (default: the unprivileged user); waits for the
/// signed-in page.
export async function signIn(page, base, who = email, secret = password) {
  await page.goto(`${base}/sign_in`);
  await page.getByLabel('Email').fill(who);
  await page.getByLabel('Password').fill(secret);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/// Runs axe-core on the page now shown (evaluated through the DevTools protocol, so the
/// page's CSP is untouched) and fails on any serious or critical violation.
export async function checkAccessibility(page, label) {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  });
  assert.deepEqual(violations, [], `axe-core on ${label ?? page.url()}`);
}

/// Screenshots of the page now shown at desktop (1280 px) and phone (360 px) width, as
/// `<name>-desktop.png` and `<name>-phone.png` in SCREENSHOT_DIR; the viewport is put back.
export async function screenshots(page, name) {
  const viewport = page.viewportSize();
  for (const [suffix, width] of [['desktop', 1280], ['phone', 360]]) {
    await page.setViewportSize({ width, height: 800 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `${name}: nothing wider than ${width} px (overflow ${overflow})`);
    await page.screenshot({ path: join(shots, `${name}-${suffix}.png`), fullPage: true });
  }
  if (viewport) await page.setViewportSize(viewport);
}

/// `/v0` as the signed-in user of `page` (its session cookie and CSRF token); the JSON
/// answer, or `null` for a 204. A non-2xx answer fails the test.
export async function sessionApi(page, base, method, path, data) {
  const csrf = await page.locator('meta[name="csrf-token"]').getAttribute('content');
  const res = await page.request.fetch(`${base}${path}`, { method, data, headers: { 'x-csrf-token': csrf } });
  assert.ok(res.ok(), `${method} ${path}: ${res.status()} ${await res.text()}`);
  return res.status() === 204 ? null : res.json();
}
