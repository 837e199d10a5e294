// Two-factor sign-in in a real browser: setting an authenticator up on the account page
// (the key read from the page, codes computed here with node's HMAC-SHA-1 as an app
// would), then signing out and in again with the password and a code; a wrong code is
// refused with a message; a recovery code signs in. axe-core on every page, screenshots.
// Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { start, email, password, watchedPage, signIn, checkAccessibility, screenshots } from './harness.mjs';

let base, browser, stop;

before(async () => {
  ({ base, browser, stop } = await start());
});

after(async () => {
  await stop?.();
});

/// RFC 4648 base32 to bytes.
function fromBase32(text) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  const out = [];
  for (const c of text.replace(/[\s=]/g, '').toUpperCase()) {
    value = (value << 5) | alphabet.indexOf(c);
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((value >>> bits) & 0xff);
    }
  }
  return Buffer.from(out);
}

/// The RFC 6238 code of `secret` for 30-second `step`.
function code(secret, step) {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const digest = createHmac('sha1', secret).update(counter).digest();
  const offset = digest[19] & 0x0f;
  const value = digest.readUInt32BE(offset) & 0x7fffffff;
  return String(value % 1_000_000).padStart(6, '0');
}

const stepNow = () => Math.floor(Date.now() / 1000 / 30);

/// Signs out, then in with the password: the page then asks for a code.
async function passwordStep(page) {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/sign_in$/);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/sign_in\/code$/);
  await page.getByRole('heading', { name: 'Enter your code' }).waitFor();
}

async function sendCode(page, value) {
  await page.getByLabel('Code').fill(value);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

test('set up an authenticator, sign in with a code, a wrong code, a recovery code', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base);

  await page.goto(`${base}/account/two_factor`);
  await checkAccessibility(page, 'two-factor sign-in, off');
  await page.getByRole('button', { name: 'Set up' }).click();
  const key = (await page.locator('#totp-secret').textContent()).trim();
  assert.match(key, /^[A-Z2-7]{32}$/, 'a 160-bit key in base32');
  assert.ok(await page.locator('.totp-qr img').evaluate((img) => img.complete && img.naturalWidth > 0), 'the QR code shows');
  await checkAccessibility(page, 'two-factor set-up');
  await screenshots(page, 'two-factor-setup');

  const secret = fromBase32(key);
  const confirmedStep = stepNow();
  await page.getByLabel('Code').fill(code(secret, confirmedStep));
  await page.getByRole('button', { name: 'Confirm' }).click();
  await page.getByRole('heading', { name: 'Your recovery codes' }).waitFor();
  const recovery = await page.locator('.recovery-codes code').allTextContents();
  assert.equal(recovery.length, 10);
  await checkAccessibility(page, 'recovery codes');
  await screenshots(page, 'two-factor-recovery-codes');
  await page.getByRole('link', { name: 'Done' }).click();
  await page.getByText('Recovery codes left').waitFor();

  await passwordStep(page);
  await checkAccessibility(page, 'the code step');
  await screenshots(page, 'sign-in-code');
  await sendCode(page, '000000');
  const alert = page.getByRole('alert');
  await alert.waitFor();
  assert.match(await alert.textContent(), /incorrect or was already used/);
  assert.equal(await page.getByRole('button', { name: 'Sign out' }).count(), 0, 'not signed in');
  await checkAccessibility(page, 'the code step with an error');

  // The confirming step's code is used; the next step's is within the accepted window for
  // the next 60 seconds, so no waiting for the clock.
  await sendCode(page, code(secret, confirmedStep + 1));
  await page.getByRole('button', { name: 'Sign out' }).waitFor();

  await passwordStep(page);
  await sendCode(page, recovery[0]);
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  await page.goto(`${base}/account/two_factor`);
  assert.match(await page.locator('dl.facts').textContent(), /Recovery codes left\s*9/);

  // The refused code's page comes with 401, as a refused password's does; chromium logs
  // that status as a console error. Anything else is a problem.
  const refused = 'console: Failed to load resource: the server responded with a status of 401 (Unauthorized)';
  assert.deepEqual(problems, [refused]);
  await context.close();
});
