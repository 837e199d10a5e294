// The user portal's device pages in a real browser: "My devices" (its empty state, a device
// created through the API appearing in the open list without a reload), a device's page
// (renaming it), and deleting it after the confirmation page; axe-core on each page and
// screenshots at desktop and phone width. Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, watchedPage, signIn, checkAccessibility, screenshots } from './harness.mjs';

let base, browser, stop;

before(async () => {
  ({ base, browser, stop } = await start());
});

after(async () => {
  await stop?.();
});

/// Creates a device through `/v0/devices` from the page, as a script of the page would.
async function createThroughApi(page, name) {
  return page.evaluate(async (name) => {
    const token = document.querySelector('meta[name="csrf-token"]').content;
    const response = await fetch('/v0/devices', {
      method: 'POST',
      headers: { 'x-csrf-token': token, 'content-type': 'application/json' },
      body: JSON.stringify({ device: { name } }),
    });
    return { status: response.status, body: await response.json() };
  }, name);
}

test('a device created through the API appears live; its page renames it; deleting asks first', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  const scripts = [];
  page.on('request', (r) => r.resourceType() === 'script' && scripts.push(r.url()));
  // The page's timers run on a clock the test moves on to the list's next refresh, rather
  // than waiting up to its 10 s.
  await page.clock.install();
  await signIn(page, base);
  await page.getByRole('heading', { name: 'My devices' }).waitFor();
  assert.ok(await page.getByRole('heading', { name: 'No devices yet' }).isVisible(), 'the empty state');
  assert.ok(await page.getByRole('link', { name: 'Add a device' }).isVisible());
  assert.equal(scripts.length, 1, `one script: ${scripts}`);
  assert.match(scripts[0], /\/assets\/devices\.[0-9a-f]{10}\.js$/);
  await checkAccessibility(page, 'my devices, empty');

  // The list updates in place: the page is not loaded again.
  await page.evaluate(() => { window.sameDocument = true; });
  const created = await createThroughApi(page, 'travel-laptop');
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const link = page.getByRole('link', { name: 'travel-laptop' });
  await page.clock.fastForward(10_000);
  await link.waitFor({ timeout: 30_000 });
  assert.equal(await page.evaluate(() => window.sameDocument), true, 'no reload');
  assert.ok(await page.getByRole('heading', { name: 'No devices yet' }).isHidden(), 'the empty state went');
  const row = page.locator(`tr[data-id="${created.body.data.id}"]`);
  assert.match(await row.innerText(), /Offline/);
  assert.match(await row.innerText(), /never/);
  assert.match(await row.innerText(), new RegExp(created.body.data.ipv4.replaceAll('.', '\\.')));
  assert.equal(await page.locator('#devices-used').innerText(), '1');
  await checkAccessibility(page, 'my devices');
  await page.setViewportSize({ width: 360, height: 800 });
  await checkAccessibility(page, 'my devices at 360 px, the table scrolling');
  await page.setViewportSize({ width: 1280, height: 800 });
  await screenshots(page, 'my-devices');

  await link.click();
  await page.getByRole('heading', { name: 'travel-laptop', level: 1 }).waitFor();
  assert.match(await page.locator('pre').innerText(), /PrivateKey = <PRIVATE_KEY>/);
  await checkAccessibility(page, 'the device page');
  await screenshots(page, 'device');

  await page.getByLabel('Name', { exact: true }).fill('work-laptop');
  await page.getByLabel(/Description/).fill('the one on the desk');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').waitFor();
  assert.match(await page.getByRole('status').innerText(), /Changes saved/);
  await page.getByRole('heading', { name: 'work-laptop', level: 1 }).waitFor();
  assert.equal(await page.getByLabel(/Description/).inputValue(), 'the one on the desk');

  await page.getByRole('link', { name: /^Delete/ }).click();
  await page.getByRole('heading', { name: 'Delete work-laptop?' }).waitFor();
  assert.match(await page.locator('main').innerText(), /tunnel stops working/);
  await checkAccessibility(page, 'the delete confirmation');
  await screenshots(page, 'device-delete');
  await page.getByRole('button', { name: 'Delete work-laptop' }).click();
  await page.getByRole('heading', { name: 'My devices' }).waitFor();
  assert.equal(new URL(page.url()).pathname, '/');
  assert.equal(await page.getByRole('link', { name: 'work-laptop' }).count(), 0, 'the device is gone');
  assert.ok(await page.getByRole('heading', { name: 'No devices yet' }).isVisible());

  assert.deepEqual(problems, [], 'no console error, page error or CSP violation');
  await context.close();
});

test('a device deleted elsewhere leaves the open list without a reload', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await page.clock.install();
  await signIn(page, base);
  const created = await createThroughApi(page, 'spare-phone');
  assert.equal(created.status, 201);
  await page.goto(`${base}/`);
  const link = page.getByRole('link', { name: 'spare-phone' });
  await link.waitFor();
  await page.evaluate(() => { window.sameDocument = true; });
  const deleted = await page.evaluate(async (id) => {
    const token = document.querySelector('meta[name="csrf-token"]').content;
    return (await fetch(`/v0/devices/${id}`, { method: 'DELETE', headers: { 'x-csrf-token': token } })).status;
  }, created.body.data.id);
  assert.equal(deleted, 204);
  await page.clock.fastForward(10_000);
  await link.waitFor({ state: 'detached', timeout: 30_000 });
  assert.equal(await page.evaluate(() => window.sameDocument), true, 'no reload');
  await page.getByRole('heading', { name: 'No devices yet' }).waitFor();
  assert.deepEqual(problems, [], 'no console error, page error or CSP violation');
  await context.close();
});

test('traffic in the live list is from the device’s side: Downloaded is what the gateway sent', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base);
  const created = await createThroughApi(page, 'traffic-laptop');
  assert.equal(created.status, 201);
  // The data plane is off in these tests: the list's reads get the counters a gateway
  // reports, from its side: it received 1.5 KiB from the device and sent it 3 MiB.
  await page.route('**/v0/devices?*', async (route) => {
    const response = await route.fetch();
    const json = await response.json();
    const seen = { rx_bytes: 1536, tx_bytes: 3 * 1024 * 1024, latest_handshake: new Date().toISOString() };
    json.data.forEach((device) => Object.assign(device, seen));
    await route.fulfill({ response, json });
  });
  await page.goto(`${base}/`);
  const row = page.locator(`tr[data-id="${created.body.data.id}"]`);
  await row.waitFor();
  // Read the list now, as the page does when it becomes visible again.
  await page.evaluate(() => document.dispatchEvent(new Event('visibilitychange')));
  await row.locator('[data-field="downloaded"]', { hasText: '3.0 MiB' }).waitFor();
  assert.equal(await row.locator('[data-field="uploaded"]').innerText(), '1.5 KiB');
  const heads = await page.locator('#devices thead th').allInnerTexts();
  const cells = await row.locator('th, td').evaluateAll((all) => all.map((c) => c.dataset.field ?? c.firstElementChild?.dataset.field));
  assert.equal(heads[cells.indexOf('downloaded')], 'Downloaded');
  assert.equal(heads[cells.indexOf('uploaded')], 'Uploaded');
  assert.deepEqual(problems, [], 'no console error, page error or CSP violation');
  await context.close();
});
