// Identity providers in a real browser: an OpenID Connect provider refused at its field for
// a bad ID, then added through the form (the list shows the redirect URI to paste into the
// provider), offered on the sign-in page at once, edited without its secret being shown,
// and removed. axe-core on each page, screenshots at 1280 px and 360 px.
// Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, adminEmail, adminPassword, watchedPage, signIn, checkAccessibility, screenshots, sessionApi } from './harness.mjs';

let base, browser, stop;

before(async () => {
  ({ base, browser, stop } = await start());
});

after(async () => {
  await stop?.();
});

const REFUSED = 'console: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)';

test('an OpenID Connect provider is added, offered, edited and removed', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base, adminEmail, adminPassword);

  await page.getByRole('link', { name: 'Identity providers' }).click();
  await page.getByRole('heading', { name: 'Identity providers', level: 1 }).waitFor();
  await page.getByRole('link', { name: 'Add OpenID Connect provider' }).click();
  await page.getByRole('heading', { name: 'Add OpenID Connect provider', level: 1 }).waitFor();
  await page.getByLabel('ID', { exact: true }).fill('corp sso');
  await page.getByLabel('Label').fill('Corp SSO');
  await page.getByLabel('Discovery document URL').fill('https://idp.example/.well-known/openid-configuration');
  await page.getByLabel('Client ID').fill('ferrozone');
  await page.getByLabel('Client secret').fill('S3CRET-4711');
  await page.getByRole('button', { name: 'Save provider' }).click();
  await page.locator('#provider-error').waitFor();
  assert.equal(await page.getByLabel('ID', { exact: true }).getAttribute('aria-invalid'), 'true');
  assert.equal(await page.getByLabel('Client secret').inputValue(), '', 'the secret is not sent back');
  await checkAccessibility(page, 'the provider form, refused');
  await screenshots(page, 'admin-provider-form');

  await page.getByLabel('ID', { exact: true }).fill('corp');
  await page.getByLabel('Client secret').fill('S3CRET-4711');
  await page.getByRole('button', { name: 'Save provider' }).click();
  await page.getByText('The provider was saved').waitFor();
  // The harness's server keeps the default external URL.
  await page.getByText('http://localhost:13000/auth/oidc/corp/callback/').waitFor();
  await checkAccessibility(page, 'the providers page');
  await screenshots(page, 'admin-providers');

  const other = await browser.newContext();
  const visitor = await other.newPage();
  await visitor.goto(`${base}/sign_in`);
  await visitor.getByRole('link', { name: /Corp SSO/ }).waitFor();
  await other.close();

  await page.getByRole('link', { name: 'Edit Corp SSO' }).click();
  assert.equal(await page.getByLabel('Client secret').inputValue(), '', 'never shown');
  assert.equal(await page.getByLabel('Client secret').getAttribute('placeholder'), 'stored');
  await page.getByLabel('Label').fill('Corp');
  await page.getByRole('button', { name: 'Save provider' }).click();
  await page.getByText('The provider was saved').waitFor();
  const config = (await sessionApi(page, base, 'GET', '/v0/configuration')).data;
  assert.deepEqual([config.openid_connect_providers[0].label, config.openid_connect_providers[0].client_secret], ['Corp', 'S3CRET-4711']);

  await page.getByRole('link', { name: 'Edit Corp' }).click();
  await page.getByRole('button', { name: 'Remove provider' }).click();
  await page.getByText('The provider was removed.').waitFor();
  await page.getByText('None yet').waitFor();

  assert.deepEqual(problems, [REFUSED], 'only the refused form');
  await context.close();
});
