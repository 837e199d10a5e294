// The account page in a real browser, as its user would use it: a personal API token made
// on the page works against /v0/devices until it is revoked there; the password changes and
// the new one signs in (another browser of the same user is signed out); signing out
// everywhere signs out every browser of the user. axe-core on each page, screenshots.
// Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, email, password, adminEmail, adminPassword, watchedPage, signIn, checkAccessibility, screenshots } from './harness.mjs';

const newPassword = 'a fresh and longer passphrase';
let base, browser, stop;

before(async () => {
  ({ base, browser, stop } = await start());
});

after(async () => {
  await stop?.();
});

/// A new browser context signed in as `who` with `secret` (the harness's unprivileged user
/// by default), on its account page.
async function onAccount(secret = password, options = {}, who = email) {
  const context = await browser.newContext(options);
  const { page, problems } = await watchedPage(context);
  await signIn(page, base, who, secret);
  await page.goto(`${base}/account`);
  return { context, page, problems };
}

/// `GET /v0/devices` with a bearer token (no cookie): its status.
async function devicesStatus(token) {
  const res = await fetch(`${base}/v0/devices`, { headers: { authorization: `Bearer ${token}` } });
  return res.status;
}

/// Whether the page, sent to the account page, is still signed in.
async function stillSignedIn(page) {
  await page.goto(`${base}/account`);
  return new URL(page.url()).pathname === '/account';
}

test('the account page says who the user is', async () => {
  const { context, page, problems } = await onAccount();
  await page.getByRole('heading', { level: 1, name: 'Account' }).waitFor();
  const facts = await page.locator('dl.facts').innerText();
  assert.match(facts, new RegExp(email.replace('.', '\\.')));
  assert.match(facts, /with a password/);
  assert.equal(await page.getByRole('link', { name: 'Two-factor sign-in' }).getAttribute('href'), '/account/two_factor');
  assert.equal(await page.locator('script').count(), 0, 'the page needs no script');
  await checkAccessibility(page, 'the account page');
  await screenshots(page, 'account');
  assert.deepEqual(problems, []);
  await context.close();
});

test('a token made on the page works with fetch, is copied, and stops working when revoked', async () => {
  const { context, page, problems } = await onAccount(password, { permissions: ['clipboard-read', 'clipboard-write'] });
  await page.getByLabel('Name').fill('browser test');
  await page.getByLabel('Expires in days').fill('3');
  await page.getByRole('button', { name: 'Create token' }).click();
  await page.getByRole('heading', { name: 'Token created' }).waitFor();
  const secret = await page.getByLabel('Token', { exact: true }).inputValue();
  assert.match(secret, /^fz_/);
  const copy = page.getByRole('button', { name: 'Copy' });
  await copy.click();
  await page.locator('#copy-status', { hasText: 'Copied' }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
  await checkAccessibility(page, 'the new token page');
  await screenshots(page, 'account-token-created');
  assert.equal(await devicesStatus(secret), 200, 'the new token works');

  await page.getByRole('link', { name: 'Back to your account' }).click();
  const row = page.getByRole('row', { name: /browser test/ });
  await row.waitFor();
  assert.ok(!(await page.content()).includes(secret), 'the secret is shown once');
  await page.getByRole('button', { name: 'Revoke token browser test' }).click();
  await page.getByRole('status').filter({ hasText: 'Token revoked' }).waitFor();
  assert.equal(await row.count(), 0);
  assert.equal(await devicesStatus(secret), 401, 'the revoked token is refused');
  assert.deepEqual(problems, []);
  await context.close();
});

test('a new password signs in and signs the other browsers out', async () => {
  const { context, page, problems } = await onAccount();
  const other = await onAccount();

  await page.getByLabel('Current password', { exact: true }).fill('not the password');
  await page.getByLabel('New password', { exact: true }).fill(newPassword);
  await page.getByLabel('Confirm new password').fill(newPassword);
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByText('Current password is not correct.').waitFor();
  await checkAccessibility(page, 'the account page with a refused password');

  await page.getByLabel('Current password', { exact: true }).fill(password);
  await page.getByLabel('New password', { exact: true }).fill(newPassword);
  await page.getByLabel('Confirm new password').fill(newPassword);
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByRole('status').filter({ hasText: 'Password changed' }).waitFor();
  assert.ok(await stillSignedIn(page), 'this browser stays signed in');
  assert.ok(!(await stillSignedIn(other.page)), 'the other browser is signed out');

  await other.page.goto(`${base}/sign_in`);
  await other.page.getByLabel('Email').fill(email);
  await other.page.getByLabel('Password').fill(password);
  await other.page.getByRole('button', { name: 'Sign in' }).click();
  await other.page.getByRole('alert').filter({ hasText: 'incorrect' }).waitFor();
  await signIn(other.page, base, email, newPassword);

  // The refused forms answer 422 and 401, which the browser logs as failed loads.
  assert.deepEqual(problems.filter((p) => !p.includes('status of 422')), [], 'only the refused change');
  assert.deepEqual(other.problems.filter((p) => !p.includes('status of 401')), [], 'only the refused sign-in');
  await context.close();
  await other.context.close();
});

test('signing out everywhere signs out every browser of the user', async () => {
  const { context, page, problems } = await onAccount(adminPassword, {}, adminEmail);
  const other = await onAccount(adminPassword, {}, adminEmail);
  await page.getByRole('button', { name: 'Sign out everywhere' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  assert.equal(new URL(page.url()).pathname, '/sign_in');
  assert.ok(!(await stillSignedIn(other.page)), 'the other browser is signed out too');
  assert.ok(!(await stillSignedIn(page)));
  assert.deepEqual(problems, []);
  assert.deepEqual(other.problems, []);
  await context.close();
  await other.context.close();
});
