// The console's Gateways page in a real browser: a gateway added through the form (a blank
// name refused at its field), its enrolment token shown once, the gateway enrolling with it
// (as `ferrozone gateway` does), the list saying so; its process polling, saying its peers
// (some over wireguard-go's limit), the list showing it connected with the limit's alert;
// and Revoke. axe-core on each page,
// screenshots at 1280 px and 360 px. Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, adminEmail, adminPassword, watchedPage, signIn, checkAccessibility, screenshots } from './harness.mjs';

let base, browser, stop;

before(async () => {
  ({ base, browser, stop } = await start());
});

after(async () => {
  await stop?.();
});

const REFUSED = 'console: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)';

test('a gateway is added, shows its token once, enrols and is revoked', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base, adminEmail, adminPassword);
  await page.getByRole('link', { name: 'Gateways' }).click();
  await page.getByRole('heading', { name: 'Gateways', level: 1 }).waitFor();
  await page.getByText('No gateways on other hosts yet.').waitFor();
  await checkAccessibility(page, 'the gateways page');
  await page.getByRole('button', { name: 'Add gateway' }).click();
  await page.locator('#gateway-name-error').getByText("Name can't be blank").waitFor();
  await page.getByLabel('Name').fill('office');
  await page.getByRole('button', { name: 'Add gateway' }).click();
  await page.getByRole('heading', { name: 'Gateway added', level: 1 }).waitFor();
  const token = await page.getByLabel('Enrolment token').inputValue();
  assert.match(token, /^fzge_[A-Za-z0-9_-]{43}$/);
  await checkAccessibility(page, 'the new gateway');
  await screenshots(page, 'admin-gateway-added');

  const enrolled = await fetch(`${base}/gateway/v1/enrol`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ enrolment_token: token, version: '0.1.0' }),
  });
  assert.equal(enrolled.status, 201);
  const { credential } = (await enrolled.json()).data;
  await page.getByText('ferrozone gateway', { exact: false }).first().waitFor();
  await page.getByRole('link', { name: 'Back to gateways' }).click();
  const row = page.getByRole('row', { name: /office/ });
  await row.getByText('Enrolled', { exact: true }).waitFor();
  await row.getByText('0.1.0').waitFor();

  // Its process polls, as `ferrozone gateway` does, saying how its data plane is.
  const report = 'wait=25&backend=userspace&applied=65536&refused=12&failing=false&version=0.2.0';
  const polled = await fetch(`${base}/gateway/v1/state?${report}`, {
    headers: { authorization: `Bearer ${credential}`, 'ferrozone-gateway-session': crypto.randomUUID() },
  });
  assert.equal(polled.status, 200);
  await page.reload();
  await row.getByText('Connected', { exact: true }).waitFor();
  await row.getByText('65536 peers (userspace)').waitFor();
  await row.getByText('12 refused').waitFor();
  await page.getByRole('alert').getByText('wireguard-go holds at most 65,536 peers').waitFor();
  await checkAccessibility(page, 'the gateways page with a connected gateway');
  await screenshots(page, 'admin-gateways');
  await row.getByRole('button', { name: 'Revoke office' }).click();
  await page.getByText('The gateway was revoked: its credential no longer works.').waitFor();
  await page.getByRole('row', { name: /office/ }).getByText('Revoked', { exact: true }).waitFor();
  assert.deepEqual(problems, [REFUSED]);
  await context.close();
});
