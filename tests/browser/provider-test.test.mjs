// Test sign-in of a SAML provider and of an OpenID Connect provider in a real browser,
// against the real test providers (tests/idp/saml, tests/idp/oidc): from the provider's
// page, through the provider's sign-in form, back to the test's page, which shows the
// proved email and what signing in would do, and signs nobody in (the server's external URL
// is its own address: the providers send the browser back to it).
// axe-core on the page, screenshots at 1280 px and 360 px. Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, samlIdp, oidcIdp, adminEmail, adminPassword, watchedPage, signIn, checkAccessibility, screenshots, sessionApi } from './harness.mjs';

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

test('an OpenID Connect provider tested from its page: the proved email, nobody signed in', async () => {
  const secret = 'a-long-client-secret-for-the-browser-test';
  const oidc = await oidcIdp([{ client_id: 'ferrozone', client_secret: secret, redirect_uris: [`${base}/auth/oidc/idp/callback/`] }]);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const { page, problems } = await watchedPage(context);
    await signIn(page, base, adminEmail, adminPassword);
    const provider = {
      id: 'idp', label: 'Test OIDC', client_id: 'ferrozone', client_secret: secret,
      discovery_document_uri: `${oidc.issuer}/.well-known/openid-configuration`, scope: 'openid email profile',
      auto_create_users: false,
    };
    await sessionApi(page, base, 'PATCH', '/v0/configuration', { configuration: { openid_connect_providers: [provider] } });
    await page.goto(`${base}/admin/providers/oidc/idp`);
    await page.getByRole('link', { name: 'Test sign-in' }).click();
    await page.locator('form[data-prompt="login"] input[name="email"]').fill('newcomer@example.com');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.locator('form[data-prompt="consent"]').waitFor();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Test sign-in: Test OIDC', level: 1 }).waitFor();
    // The email, and the subject, which this provider makes the email too.
    assert.equal(await page.locator('dl.facts code').first().textContent(), 'newcomer@example.com');
    await page.getByText('no user has the email newcomer@example.com, and this provider does not create users').waitFor();
    await checkAccessibility(page, 'the OpenID Connect test page');
    await page.goto(`${base}/`);
    const me = await sessionApi(page, base, 'GET', '/v0/me');
    assert.equal(me.data.email, adminEmail, 'the admin is still the one signed in');
    // The test provider's pages have no icon: the browser's own request for one may 404.
    assert.deepEqual(problems.filter((p) => !p.includes('404 (Not Found)')), []);
  } finally {
    await context.close();
    oidc.stop();
  }
});
