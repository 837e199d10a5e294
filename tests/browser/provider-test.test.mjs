// Test sign-in of a SAML provider in a real browser, against the real test IdP
// (tests/idp/saml): from the provider's page, through the IdP's sign-in form, back to the
// test's page, which shows the proved email and what signing in would do, and signs nobody
// in (the server's external URL is its own address: the IdP posts the answer back to it).
// axe-core on the page, screenshots at 1280 px and 360 px. Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, samlIdp, adminEmail, adminPassword, watchedPage, signIn, checkAccessibility, screenshots, sessionApi } from './harness.mjs';

let base, browser, stop, idp;

before(async () => {
  idp = await samlIdp();
  ({ base, browser, stop } = await start({ externalUrl: true }));
});

after(async () => {
  await stop?.();
  idp?.stop();
});

test('a SAML provider tested from its page: the proved email, nobody signed in', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  const notFound = [];
  page.on('response', (response) => response.status() === 404 && notFound.push(response.url()));
  await signIn(page, base, adminEmail, adminPassword);
  const provider = {
    id: 'test-idp', label: 'Test IdP', metadata: idp.metadata, sign_requests: false,
    signed_assertion_in_resp: true, signed_envelopes_in_resp: false, auto_create_users: false,
  };
  await sessionApi(page, base, 'PATCH', '/v0/configuration', { configuration: { saml_identity_providers: [provider] } });
  const usersBefore = (await sessionApi(page, base, 'GET', '/v0/users')).data.length;

  await page.goto(`${base}/admin/providers/saml/test-idp`);
  await page.getByRole('link', { name: 'Test sign-in' }).click();
  await page.getByRole('heading', { name: 'Test IdP' }).waitFor();
  await page.getByLabel('Email').fill('someone.new@example.com');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Test sign-in: Test IdP', level: 1 }).waitFor();
  await page.getByText('Nobody was signed in by this test.').waitFor();
  await page.getByText('someone.new@example.com', { exact: true }).waitFor();
  await page.getByText('no user has the email someone.new@example.com, and this provider does not create users').waitFor();
  await checkAccessibility(page, 'the test sign-in page');
  await screenshots(page, 'admin-provider-test');
  await page.getByRole('link', { name: 'Back to the provider' }).click();
  await page.getByRole('heading', { name: 'Edit SAML provider', level: 1 }).waitFor();
  assert.equal((await sessionApi(page, base, 'GET', '/v0/users')).data.length, usersBefore, 'nobody was created');
  const me = await sessionApi(page, base, 'GET', '/v0/me');
  assert.equal(me.data.email, adminEmail, 'the admin is still the one signed in');
  // No page or resource answered 404; the console's one 404 is the browser's own request for
  // the test IdP's icon (/favicon.ico, which it does not serve), which pages do not see.
  assert.deepEqual(notFound, []);
  assert.deepEqual(problems, ['console: Failed to load resource: the server responded with a status of 404 (Not Found)']);
  await context.close();
});
