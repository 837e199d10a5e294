// A device's tunnel settings in a real browser: its owner clears "Use the server's default"
// for the MTU, types one, is refused at the field for a value out of range, then saves;
// the device's page and configuration carry it. axe-core, screenshots at 1280 px and
// 360 px. Run by scripts/browser-test.
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

const REFUSED = 'console: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)';

test("a device's own MTU replaces the server's default, checked at its field", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base);
  const me = (await sessionApi(page, base, 'GET', '/v0/me')).data;
  const made = await sessionApi(page, base, 'POST', '/v0/devices', { device: { user_id: me.id, name: 'desk' } });
  const id = made.data.id;

  await page.goto(`${base}/devices/${id}`);
  await page.getByRole('link', { name: 'Change the tunnel settings' }).click();
  await page.getByRole('heading', { name: 'Tunnel settings of desk', level: 1 }).waitFor();
  const mtu = page.getByRole('group', { name: 'MTU' });
  await mtu.getByRole('checkbox').uncheck();
  await mtu.getByLabel("This device's MTU").fill('9000');
  await page.getByRole('button', { name: 'Save tunnel settings' }).click();
  await page.locator('#tunnel-mtu-error').getByText('MTU must be less than or equal to 1500').waitFor();
  assert.equal(await mtu.getByLabel("This device's MTU").getAttribute('aria-invalid'), 'true');
  await checkAccessibility(page, 'the tunnel settings, refused');
  await screenshots(page, 'device-tunnel');

  await mtu.getByLabel("This device's MTU").fill('1400');
  await page.getByRole('button', { name: 'Save tunnel settings' }).click();
  await page.getByText('Changes saved.').waitFor();
  const stored = (await sessionApi(page, base, 'GET', `/v0/devices/${id}`)).data;
  assert.equal(stored.use_default_mtu, false);
  assert.equal(stored.mtu, 1400);
  assert.match(await page.locator('pre').innerText(), /MTU = 1400/);

  assert.deepEqual(problems, [REFUSED], 'only the refused form');
  await context.close();
});
