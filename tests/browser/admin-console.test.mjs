// The admin console in a real browser: the devices page filters by owner and presence, a
// token is revoked from the tokens page (and refused afterwards), the settings page shows
// where values came from and saves the runtime configuration; no console error or CSP violation, axe-core on each page,
// screenshots at 1280 px and 360 px. Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, email, adminEmail, adminPassword, watchedPage, signIn, checkAccessibility, screenshots, sessionApi } from './harness.mjs';

let base, browser, stop;

before(async () => {
  ({ base, browser, stop } = await start());
});

after(async () => {
  await stop?.();
});

/// `/v0` as the signed-in admin of `page`.
const api = (page, method, path, data) => sessionApi(page, base, method, path, data);

test('the console: devices filtered, a token revoked, settings with their sources', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base, adminEmail, adminPassword);

  const users = (await api(page, 'GET', '/v0/users')).data;
  const pat = users.find((u) => u.email === email);
  const ada = users.find((u) => u.email === adminEmail);
  for (const name of ['pat-laptop', 'pat-phone']) {
    await api(page, 'POST', '/v0/devices', { device: { user_id: pat.id, name } });
  }
  await api(page, 'POST', '/v0/devices', { device: { user_id: ada.id, name: 'ada-desktop' } });

  await page.goto(`${base}/admin/devices`);
  await page.getByRole('heading', { name: 'All devices', level: 1 }).waitFor();
  assert.equal(await page.locator('tbody tr').count(), 3);
  await page.getByText('Set the external URL').waitFor();
  await checkAccessibility(page, 'the devices page');
  await screenshots(page, 'admin-devices');

  await page.getByLabel("Owner's email").fill(email);
  await page.getByLabel('Status').selectOption('offline');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/status=offline/);
  const names = await page.locator('tbody th[scope="row"]').allTextContents();
  assert.deepEqual(names, ['pat-laptop', 'pat-phone']);
  const add = page.getByRole('link', { name: 'Add a device for this user' });
  assert.equal(await add.getAttribute('href'), `/devices/new?user_id=${pat.id}`);
  await page.getByLabel('Status').selectOption('online');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/status=online/);
  await page.getByText('No devices.').waitFor();
  assert.equal(await page.getByLabel("Owner's email").inputValue(), email, 'the filter is kept');

  const created = await api(page, 'POST', '/v0/tokens', { token: { name: 'ci-token' } });
  const bearer = { authorization: `Bearer ${created.data.secret}` };
  assert.equal((await fetch(`${base}/v0/users`, { headers: bearer })).status, 200);
  await page.goto(`${base}/admin/tokens`);
  await page.getByRole('heading', { name: 'API tokens', level: 1 }).waitFor();
  await checkAccessibility(page, 'the tokens page');
  await screenshots(page, 'admin-tokens');
  await page.getByRole('button', { name: `Revoke ci-token of ${adminEmail}` }).click();
  await page.getByText('The token was revoked.').waitFor();
  assert.equal(await page.getByRole('button', { name: `Revoke ci-token of ${adminEmail}` }).count(), 0);
  assert.equal((await fetch(`${base}/v0/users`, { headers: bearer })).status, 401, 'the revoked token is refused');

  await page.goto(`${base}/admin/settings`);
  await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
  const backend = page.locator('tr', { has: page.locator('code', { hasText: /^FERROZONE_WIREGUARD_BACKEND$/ }) });
  assert.match(await backend.innerText(), /none\s+environment/);
  const port = page.locator('tr', { has: page.locator('code', { hasText: /^FERROZONE_WIREGUARD_PORT$/ }) });
  assert.match(await port.innerText(), /51820\s+default/);
  await page.getByText('WireGuard is not running').waitFor();
  await checkAccessibility(page, 'the settings page');
  await screenshots(page, 'admin-settings');

  // The runtime configuration is a form: a bad value is refused at its field, then saved.
  await page.getByLabel('Default DNS servers').fill('9.9.9.9, 149.112.112.112');
  await page.getByLabel('VPN session length').selectOption({ label: 'Every week' });
  await page.getByLabel('Default MTU').fill('9000');
  await page.getByRole('button', { name: 'Save configuration' }).click();
  await page.locator('#setting-default_client_mtu-error').getByText('Default MTU must be less than or equal to 1500').waitFor();
  await checkAccessibility(page, 'the settings form, refused');
  await page.getByLabel('Default MTU').fill('1400');
  await page.getByRole('button', { name: 'Save configuration' }).click();
  await page.getByText('The configuration was saved.').waitFor();
  const config = (await api(page, 'GET', '/v0/configuration')).data;
  assert.deepEqual([config.default_client_dns, config.vpn_session_duration, config.default_client_mtu], [['9.9.9.9', '149.112.112.112'], 604800, 1400]);

  assert.deepEqual(problems, ['console: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)'], 'no console error but the refused form');
  await context.close();
});

test('an unprivileged user gets the 403 page', async () => {
  const context = await browser.newContext();
  const { page } = await watchedPage(context);
  await signIn(page, base);
  for (const path of ['/admin/devices', '/admin/tokens', '/admin/settings', '/admin/rules', '/admin/rules/check', '/admin/rules/new']) {
    const res = await page.goto(`${base}${path}`);
    assert.equal(res.status(), 403, path);
    await page.getByRole('heading', { name: 'Administrators only' }).waitFor();
  }
  await context.close();
});
