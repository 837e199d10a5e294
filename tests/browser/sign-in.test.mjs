// The password sign-in pages in a real browser (Debian's chromium, driven by playwright-core):
// the sign-in form, a refused password, the signed-in page and signing out. Run by
// scripts/browser-test (the server and browser: harness.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { start, shots, email, password } from './harness.mjs';

let base, browser, stop;

before(async () => {
  ({ base, browser, stop } = await start());
});

after(async () => {
  await stop?.();
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
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  assert.equal(new URL(page.url()).pathname, '/');
  await page.getByRole('heading', { name: 'My devices' }).waitFor();
  assert.match(await page.locator('header').innerText(), new RegExp(email.replace('.', '\\.')));
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
  assert.equal(await page.locator('img[src="x"]').count(), 0, 'the markup made no element');
});
