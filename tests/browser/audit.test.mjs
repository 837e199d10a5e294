// The audit log page of the admin console in a real browser: changes made through the API
// appear with who made them (a user by email, its id in the link's title; a deleted one by
// its id) and what changed (a secret only as changed, a long value wrapped), the kind filter
// narrows the list, an unprivileged user gets the 403 page; no console error or CSP
// violation, axe-core on the page, screenshots at 1280 px and 360 px. Run by
// scripts/browser-test.
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

/// `/v0` as the signed-in admin of `page`.
const api = (page, method, path, data) => sessionApi(page, base, method, path, data);

test('changes appear with their author and fields, and the filter narrows them', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base, adminEmail, adminPassword);

  const ada = (await api(page, 'GET', '/v0/users')).data.find((u) => u.email === adminEmail);
  const device = (await api(page, 'POST', '/v0/devices', { device: { user_id: ada.id, name: 'audit-laptop' } })).data;
  await api(page, 'PATCH', `/v0/devices/${device.id}`, { device: { name: 'audit-desktop' } });
  await api(page, 'POST', '/v0/tokens', { token: { name: 'audit-token' } });
  const kept = (await api(page, 'POST', '/v0/users', { user: { email: 'audit-kept@example.com', role: 'unprivileged' } })).data;
  const gone = (await api(page, 'POST', '/v0/users', { user: { email: 'audit-gone@example.com', role: 'unprivileged' } })).data;
  await api(page, 'DELETE', `/v0/users/${gone.id}`);

  await page.getByRole('link', { name: 'Audit log' }).click();
  await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
  const renamed = page.locator('tbody tr', { has: page.locator('th', { hasText: /^device\.updated$/ }) });
  assert.equal(await renamed.count(), 1);
  const text = await renamed.innerText();
  assert.match(text, /name: audit-laptop → audit-desktop/);
  assert.match(text, new RegExp(`session .* for ${adminEmail}`), 'the admin acted through a web session');
  const actedFor = renamed.getByRole('link', { name: adminEmail });
  assert.equal(await actedFor.getAttribute('title'), ada.id, 'the id stays at hand');
  assert.equal(await actedFor.getAttribute('href'), `/admin/users/${ada.id}`);
  const userRow = (action, id) => page.locator('tbody tr', {
    has: page.locator('th', { hasText: new RegExp(`^${action.replace('.', '\\.')}$`) }),
  }).filter({ has: page.locator(`a[href="/admin/users/${id}"]`) });
  const keptCreated = userRow('user.created', kept.id);
  assert.equal(await keptCreated.count(), 1);
  assert.equal(await keptCreated.getByRole('link', { name: 'audit-kept@example.com' }).getAttribute('title'), kept.id);
  const goneDeleted = userRow('user.deleted', gone.id);
  assert.equal(await goneDeleted.count(), 1);
  assert.equal(await goneDeleted.getByRole('link', { name: gone.id, exact: true }).count(), 1, 'a deleted user by its id');
  const created = page.locator('tbody tr', { has: page.locator('th', { hasText: /^device\.created$/ }) });
  assert.match(await created.innerText(), /preshared_key: changed \(secret\)/);
  assert.ok(!(await page.content()).includes(device.preshared_key ?? '\u0000'), 'no preshared key on the page');
  const [scrolled, shown] = await page.locator('.table-wrap').evaluate((wrap) => [wrap.scrollWidth, wrap.clientWidth]);
  assert.ok(scrolled <= shown, `a long value (a key, an id) wraps: the table is ${scrolled} px wide in ${shown} px`);
  await checkAccessibility(page, 'the audit log page');
  await screenshots(page, 'admin-audit');

  await page.getByLabel('Kind of action').selectOption('device');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/kind=device/);
  const actions = await page.locator('tbody th[scope="row"]').allTextContents();
  assert.deepEqual(actions, ['device.updated', 'device.created']);

  assert.deepEqual(problems, [], 'no console error, page error or CSP violation');

  const bad = await page.goto(`${base}/admin/audit?kind=nonsense`);
  assert.equal(bad.status(), 400);
  await page.getByText('This page link is not valid.').waitFor();
  await context.close();
});

test('an unprivileged user gets the 403 page', async () => {
  const context = await browser.newContext();
  const { page } = await watchedPage(context);
  await signIn(page, base);
  const res = await page.goto(`${base}/admin/audit`);
  assert.equal(res.status(), 403);
  await page.getByRole('heading', { name: 'Administrators only' }).waitFor();
  await context.close();
});
