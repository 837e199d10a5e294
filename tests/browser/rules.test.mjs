// The Rules pages in a real browser: a rule added through the form (and an overlapping one
// refused at its field), the list filtered, the default action changed, a rule edited and
// deleted, Check access answering from a user's page; axe-core on each page, screenshots
// at 1280 px and 360 px, no console error or CSP violation. Run by scripts/browser-test.
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

const api = (page, method, path, data) => sessionApi(page, base, method, path, data);

/// What chromium logs for a page answered 422 (a refused form shown again).
const REFUSED = 'console: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)';

/// Fills the rule form and submits it.
async function submitRule(page, { destination, action = 'Drop', user = '', protocol = 'All protocols', ports = '' }) {
  await page.getByLabel('Destination').fill(destination);
  await page.getByLabel('Action').selectOption({ label: action });
  await page.getByLabel("User's email").fill(user);
  await page.getByLabel('Protocol').selectOption({ label: protocol });
  await page.getByLabel('Ports').fill(ports);
  await page.getByRole('button', { name: /^(Add|Save) rule$/ }).click();
}

test('rules: added, refused at the field, filtered, edited, deleted; the default action', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base, adminEmail, adminPassword);

  await page.getByRole('link', { name: 'Rules', exact: true }).click();
  await page.getByRole('heading', { name: 'Egress rules', level: 1 }).waitFor();
  await page.getByText('No rules yet').waitFor();
  await page.getByRole('link', { name: 'Add a rule' }).click();
  await page.getByRole('heading', { name: 'Add a rule', level: 1 }).waitFor();
  await checkAccessibility(page, 'the rule form');
  await submitRule(page, { destination: '10.0.0.0/8', user: email, protocol: 'TCP', ports: '22' });
  await page.getByText('The rule was added.').waitFor();
  await page.getByRole('link', { name: 'Add a rule' }).click();
  await submitRule(page, { destination: '10.1.0.0/16', user: email, protocol: 'TCP', ports: '20-30' });
  const destination = page.getByLabel('Destination');
  assert.equal(await destination.getAttribute('aria-invalid'), 'true');
  await page.locator('#rule-destination-error').getByText('Destination overlaps with an existing rule').waitFor();
  await screenshots(page, 'admin-rule-form-error');
  await submitRule(page, { destination: '0.0.0.0/0' });
  await page.getByText('The rule was added.').waitFor();
  await page.getByRole('link', { name: 'Add a rule' }).click();
  await submitRule(page, { destination: '192.0.2.0/24', action: 'Accept', protocol: 'UDP', ports: '53' });
  await page.getByText('The rule was added.').waitFor();

  const rows = () => page.locator('table.rules tbody th[scope="row"]').allTextContents();
  assert.deepEqual(await rows(), ['192.0.2.0/24', '0.0.0.0/0', '10.0.0.0/8'], 'everyone first, then the user; each in lookup order');
  await checkAccessibility(page, 'the rules page');
  await screenshots(page, 'admin-rules');

  await page.getByLabel('User', { exact: true }).fill('everyone');
  await page.getByLabel('Destination').fill('192.0.2.7');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/user=everyone/);
  assert.deepEqual(await rows(), ['192.0.2.0/24', '0.0.0.0/0']);

  await page.getByLabel('Default action').selectOption('drop');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByText('The default action was saved.').waitFor();
  const config = await api(page, 'GET', '/v0/configuration');
  assert.equal(config.data.egress_default_action, 'drop');

  await page.getByRole('link', { name: `Edit drop 10.0.0.0/8 (${email})` }).click();
  await page.getByRole('heading', { name: 'Edit rule', level: 1 }).waitFor();
  assert.equal(await page.getByLabel("User's email").inputValue(), email);
  await submitRule(page, { destination: '10.0.0.0/8', user: email, protocol: 'TCP', ports: '22-23' });
  await page.getByText('The rule was saved.').waitFor();
  const stored = (await api(page, 'GET', '/v0/rules')).data.find((r) => r.destination === '10.0.0.0/8');
  assert.equal(stored.port_range, '22-23');
  await page.getByRole('link', { name: `Edit accept 192.0.2.0/24 (everyone)` }).click();
  await page.getByRole('button', { name: 'Delete rule' }).click();
  await page.getByText('The rule was deleted.').waitFor();
  assert.equal((await api(page, 'GET', '/v0/rules')).data.length, 2);

  assert.deepEqual(problems, [REFUSED], 'only the refused rule');
  await context.close();
});

test("check access from a user's page names the deciding rule", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base, adminEmail, adminPassword);
  const pat = (await api(page, 'GET', `/v0/users/${encodeURIComponent(email)}`)).data;
  await api(page, 'POST', '/v0/rules', { rule: { destination: '198.51.100.0/24', action: 'accept', user_id: pat.id, port_type: 'tcp', port_range: '443' } });

  await page.goto(`${base}/admin/users/${pat.id}`);
  await page.getByRole('heading', { name: /^Rules that apply/ }).waitFor();
  await checkAccessibility(page, "a user's page with rules");
  await page.getByRole('link', { name: 'Check access' }).click();
  await page.getByRole('heading', { name: 'Check access', level: 1 }).waitFor();
  assert.equal(await page.getByLabel("User's email").inputValue(), email);
  await page.getByLabel('Destination address').fill('198.51.100.9');
  await page.getByLabel('Protocol').selectOption('tcp');
  await page.getByLabel('Port', { exact: true }).fill('443');
  await page.getByRole('button', { name: 'Check' }).click();
  const answer = page.locator('.access-answer');
  await answer.getByText('Allowed', { exact: true }).waitFor();
  await answer.getByText("Allowed by the user's rule accept 198.51.100.0/24, TCP 443.").waitFor();
  await checkAccessibility(page, 'an answer of Check access');
  await screenshots(page, 'admin-check-access');

  await page.getByLabel('Port', { exact: true }).fill('80');
  await page.getByRole('button', { name: 'Check' }).click();
  await answer.getByText(/^(Dropped|Allowed) by the (global rule|default action)/).waitFor();
  await page.getByLabel('Destination address').fill('198.51.100.0/24');
  await page.getByRole('button', { name: 'Check' }).click();
  await page.locator('#check-destination-error').getByText('Destination must be an IP address').waitFor();
  assert.equal(await page.locator('.access-answer').count(), 0);

  assert.deepEqual(problems, [REFUSED], 'only the refused question');
  await context.close();
});
