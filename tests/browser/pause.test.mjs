// Pausing a device in a real browser: its owner pauses it from its page, which then says
// Paused with its diagnosis and offers Resume; My devices says Paused, also after the
// list's live update (which reads `paused_at` from /v0); resuming brings it back. axe-core,
// screenshots at 1280 px and 360 px, no console error. Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, watchedPage, signIn, checkAccessibility, screenshots, sessionApi } from './harness.mjs';

let base, browser, stop;

before(async () => {
  ({ base, browser, stop } = await start());
});

after(async () => {
  await stop?.();
});

test('a device is paused and resumed by its owner; the list keeps saying so', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await page.clock.install();
  await signIn(page, base);
  const me = (await sessionApi(page, base, 'GET', '/v0/me')).data;
  const made = await sessionApi(page, base, 'POST', '/v0/devices', { device: { user_id: me.id, name: 'work-laptop' } });
  const id = made.data.id;

  await page.goto(`${base}/devices/${id}`);
  await page.getByRole('heading', { name: 'work-laptop', level: 1 }).waitFor();
  await page.getByText('Never connected: no handshake yet.').waitFor();
  await page.getByRole('button', { name: 'Pause' }).click();
  await page.getByRole('button', { name: 'Resume' }).waitFor();
  await page.getByText('Paused: off the VPN until it is resumed').waitFor();
  const device = await sessionApi(page, base, 'GET', `/v0/devices/${id}`);
  assert.ok(device.data.paused_at, 'paused_at in the JSON while paused');
  await checkAccessibility(page, 'a paused device');
  await screenshots(page, 'device-paused');

  await page.goto(`${base}/`);
  const row = page.locator(`tr[data-id="${id}"]`);
  await row.getByText('Paused', { exact: true }).waitFor();
  const refreshed = page.waitForResponse((r) => r.url().includes('/v0/devices?'));
  await page.clock.fastForward(10_000);
  await refreshed;
  assert.equal(await row.locator('[data-field="status"]').innerText(), 'Paused', 'the live update keeps it');

  await page.goto(`${base}/devices/${id}`);
  await page.getByRole('button', { name: 'Resume' }).click();
  await page.getByRole('button', { name: 'Pause' }).waitFor();
  const resumed = await sessionApi(page, base, 'GET', `/v0/devices/${id}`);
  assert.equal(resumed.data.paused_at, undefined, 'no paused_at once active');
  await page.goto(`${base}/`);
  await row.getByText('Offline', { exact: true }).waitFor();

  assert.deepEqual(problems, [], 'no console error, page error or CSP violation');
  await context.close();
});
