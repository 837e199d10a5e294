// Every page's weight in a real browser: loaded in a fresh context (nothing cached), each
// page makes at most 4 requests to render (the HTML, the stylesheet, the logo, at most one
// script) and weighs at most 150 KB with its assets, uncompressed. Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, signIn, adminEmail, adminPassword } from './harness.mjs';

const MAX_REQUESTS = 4;
const MAX_BYTES = 150 * 1024;

let base, browser, stop;

before(async () => {
  ({ base, browser, stop } = await start());
});

after(async () => {
  await stop?.();
});

/// Loads `path` in a fresh context signed in with `cookies`, or, without a path, runs
/// `prepare` (to reach a form) and weighs what `act` (posting it) loads; returns the
/// requests made and the bytes received (bodies, uncompressed).
async function weigh(cookies, path, prepare, act) {
  const context = await browser.newContext();
  await context.addCookies(cookies);
  const page = await context.newPage();
  if (prepare) {
    // Routing turns the HTTP cache off, so the answer's assets count as a first visit's.
    await context.route('**/*', (route) => route.continue());
    await prepare(page);
  }
  const requests = [];
  const sizes = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('response', (r) => sizes.push(r.body().then((b) => b.length, () => 0)));
  if (path) {
    const answer = await page.goto(`${base}${path}`, { waitUntil: 'networkidle' });
    assert.equal(answer.status(), 200, `${path} answers 200`);
  } else {
    const navigated = page.waitForEvent('framenavigated');
    await act(page);
    await navigated;
    await page.waitForLoadState('networkidle');
  }
  const bytes = (await Promise.all(sizes)).reduce((a, b) => a + b, 0);
  await context.close();
  return { requests, bytes };
}

test('every page renders with at most 4 requests and 150 KB', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, base, adminEmail, adminPassword);
  const cookies = await context.cookies();
  const csrf = await page.locator('meta[name="csrf-token"]').getAttribute('content');
  const me = await page.evaluate(async () => (await (await fetch('/v0/me')).json()).data);
  const made = await page.evaluate(async ([token, owner]) => {
    const res = await fetch('/v0/devices', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': token },
      body: JSON.stringify({ device: { name: 'weighed', user_id: owner } }),
    });
    return (await res.json()).data;
  }, [csrf, me.id]);
  await context.close();

  const paths = [
    '/', `/devices/${made.id}`, `/devices/${made.id}/delete`, '/devices/new', '/account',
    '/account/two_factor', '/admin/users', '/admin/users/new', `/admin/users/${me.id}`,
    '/admin/devices', '/admin/tokens', '/admin/settings',
  ];
  const pages = [['/sign_in', await weigh([], '/sign_in')]];
  for (const path of paths) pages.push([path, await weigh(cookies, path)]);
  // The configuration shown once: the answer to the add-device form.
  const form = async (page) => {
    await page.goto(`${base}/devices/new`, { waitUntil: 'networkidle' });
    await page.getByLabel(/Generate the key on the server/).check();
  };
  const submit = (page) => page.getByRole('button', { name: /Add/ }).click();
  pages.push(['POST /devices/new', await weigh(cookies, null, form, submit)]);

  for (const [path, { requests, bytes }] of pages) {
    console.log(`${path}: ${requests.length} requests, ${(bytes / 1024).toFixed(1)} KB`);
    assert.ok(requests.length >= 2, `${path}: the page and its stylesheet at least (${requests.join(', ')})`);
    assert.ok(requests.length <= MAX_REQUESTS, `${path}: ${requests.length} requests: ${requests.join(', ')}`);
    assert.ok(bytes <= MAX_BYTES, `${path}: ${bytes} bytes`);
  }
});
