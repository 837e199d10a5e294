// The password sign-in pages in a real browser (Debian's chromium, driven by playwright-core):
// the sign-in form, a refused password, the signed-in page and signing out. Run by
// scripts/browser-test, which names the ferrozone binary in FERROZONE_BIN and where
// screenshots go in SCREENSHOT_DIR.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const bin = process.env.FERROZONE_BIN;
const shots = process.env.SCREENSHOT_DIR ?? tmpdir();
const email = 'pat@example.com';
const password = 'a long enough password';
let dataDir, server, base, browser;

const freePort = () =>
  new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });

async function waitReady() {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('ferrozone serve did not become ready');
}

before(async () => {
  assert.ok(bin, 'FERROZONE_BIN names the ferrozone binary');
  dataDir = mkdtempSync(join(tmpdir(), 'ferrozone-browser-'));
  const { FERROZONE_BIN: _, ...inherited } = process.env;
  const env = { ...inherited, FERROZONE_DATA_DIR: dataDir, FERROZONE_WIREGUARD_BACKEND: 'none', RUST_LOG: 'warn' };
  const created = spawnSync(bin, ['user', 'create', '--email', email, '--password-stdin'], { env, input: `${password}\n` });
  assert.equal(created.status, 0, created.stderr.toString());
  base = `http://127.0.0.1:${await freePort()}`;
  server = spawn(bin, ['serve'], { env: { ...env, FERROZONE_LISTEN: base.slice(7) }, stdio: ['ignore', 'ignore', 'inherit'] });
  await waitReady();
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  server?.kill('SIGTERM');
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

test('a wrong password is refused on the page, the right one signs in, and sign-out signs out', async () => {
  const page = await browser.newPage();
  await page.goto(`${base}/`);
  assert.equal(new URL(page.url()).pathname, '/sign_in', 'an anonymous visit goes to the sign-in page');
  await page.screenshot({ path: join(shots, 'sign-in.png') });

  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').waitFor();
  assert.match(await page.getByRole('alert').innerText(), /email or password is incorrect/);
  assert.equal(await page.getByLabel('Email').inputValue(), email, 'the email is kept');
  await page.screenshot({ path: join(shots, 'sign-in-refused.png') });

  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Ferrozone' }).waitFor();
  assert.equal(new URL(page.url()).pathname, '/');
  assert.match(await page.locator('body').innerText(), new RegExp(`Signed in as ${email}`));
  await page.screenshot({ path: join(shots, 'signed-in.png') });

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await page.goto(`${base}/`);
  assert.equal(new URL(page.url()).pathname, '/sign_in', 'the session is gone');
});

test('markup in the email field comes back as text, not as markup', async () => {
  const page = await browser.newPage();
  await page.goto(`${base}/sign_in`);
  const hostile = '"><img src=x onerror="window.pwned=1">@example.com';
  // The field is type=email: set it directly, as a script posting the form would.
  await page.getByLabel('Email').evaluate((input, value) => { input.type = 'text'; input.value = value; }, hostile);
  await page.getByLabel('Password').fill('whatever it is');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').waitFor();
  assert.equal(await page.getByLabel('Email').inputValue(), hostile);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  assert.equal(await page.locator('img').count(), 0);
});
