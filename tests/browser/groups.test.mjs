// The Groups pages in a real browser (issue 37): a group added through the form (a blank
// name refused at its field), a member added by email (an unknown one refused), a rule
// added from the group's page with the group already named, the rules list and the member's
// page showing the group, the member removed and the group deleted with its rule; axe-core
// on each page, screenshots at 1280 px and 360 px. A group and a deactivated user from the
// directory (SCIM) say where they come from and who disabled the user. Run by
// scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  start, email, adminEmail, adminPassword, watchedPage, signIn, checkAccessibility, screenshots, sessionApi,
} from './harness.mjs';

let base, browser, stop;

before(async () => {
  ({ base, browser, stop } = await start());
});

after(async () => {
  await stop?.();
});

/// What chromium logs for a page answered 422 (a refused form shown again).
const REFUSED = 'console: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)';

test('a group gets a member and a rule, shows on the rules and the member, and is deleted', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base, adminEmail, adminPassword);

  await page.getByRole('link', { name: 'Groups', exact: true }).click();
  await page.getByRole('heading', { name: 'Groups', level: 1 }).waitFor();
  await page.getByText('No groups yet.').waitFor();
  await checkAccessibility(page, 'the groups page');
  await page.getByRole('button', { name: 'Add group' }).click();
  await page.locator('#group-name-error').getByText("Name can't be blank").waitFor();
  assert.equal(await page.getByLabel('Name').getAttribute('aria-invalid'), 'true');
  await page.getByLabel('Name').fill('Staff');
  await page.getByLabel('Description').fill('Everyone on the payroll');
  await page.getByRole('button', { name: 'Add group' }).click();
  await page.getByRole('heading', { name: 'Staff', level: 1 }).waitFor();
  await page.getByText('The group was created.').waitFor();
  await page.getByText('No members yet').waitFor();

  await page.getByLabel('Add a member by email').fill('nobody@example.com');
  await page.getByRole('button', { name: 'Add member' }).click();
  await page.locator('#member-email-error').getByText('No user has this email.').waitFor();
  await page.getByLabel('Add a member by email').fill(email);
  await page.getByRole('button', { name: 'Add member' }).click();
  await page.getByText('The member was added.').waitFor();
  await page.getByRole('heading', { name: 'Members (1)' }).waitFor();
  await page.getByRole('row', { name: new RegExp(email) }).getByText('Added here').waitFor();

  await page.getByRole('link', { name: 'Add a rule' }).click();
  await page.getByRole('heading', { name: 'Add a rule', level: 1 }).waitFor();
  assert.equal(await page.getByLabel('Group', { exact: true }).inputValue(), 'Staff', 'the group is named already');
  await page.getByLabel('Destination').fill('10.0.0.0/8');
  await page.getByLabel('Action').selectOption({ label: 'Accept' });
  await page.getByRole('button', { name: 'Add rule' }).click();
  await page.getByText('The rule was added.').waitFor();
  const ruleRow = page.getByRole('row', { name: /10\.0\.0\.0\/8/ });
  await ruleRow.getByText('Group').waitFor();
  await ruleRow.getByRole('link', { name: 'Staff', exact: true }).click();

  await page.getByRole('heading', { name: 'Rules for this group (1)' }).waitFor();
  await page.getByRole('link', { name: '10.0.0.0/8' }).waitFor();
  await checkAccessibility(page, "a group's page");
  await screenshots(page, 'admin-group');

  await page.getByRole('link', { name: email }).click();
  await page.getByRole('heading', { name: 'Groups (1)' }).waitFor();
  const rulesThatApply = page.locator('table.rules tbody tr');
  await rulesThatApply.filter({ hasText: '10.0.0.0/8' }).getByText('Group').waitFor();
  await page.getByRole('link', { name: 'Staff', exact: true }).first().click();

  await page.getByRole('button', { name: `Remove ${email}` }).click();
  await page.getByText('The member was removed.').waitFor();
  await page.getByRole('heading', { name: 'Members (0)' }).waitFor();
  await page.getByRole('button', { name: 'Delete group' }).click();
  await page.getByText('The group was deleted.').waitFor();
  await page.getByText('No groups yet.').waitFor();
  await page.getByRole('link', { name: 'Rules', exact: true }).click();
  await page.getByText('No rules yet').waitFor();
  assert.deepEqual(problems, [REFUSED, REFUSED]);
  await context.close();
});

test('the groups page on a phone', async () => {
  const context = await browser.newContext({ viewport: { width: 360, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base, adminEmail, adminPassword);
  await page.goto(`${base}/admin/groups`);
  await page.getByLabel('Name').fill('Contractors');
  await page.getByRole('button', { name: 'Add group' }).click();
  await page.getByRole('heading', { name: 'Contractors', level: 1 }).waitFor();
  await checkAccessibility(page, "a group's page at 360 px");
  await page.goto(`${base}/admin/groups`);
  await page.getByRole('link', { name: 'Contractors' }).waitFor();
  await checkAccessibility(page, 'the groups page at 360 px');
  await screenshots(page, 'admin-groups');
  assert.deepEqual(problems, []);
  await context.close();
});

test('a group and a deactivated user from the directory say so', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base, adminEmail, adminPassword);
  const { data } = await sessionApi(page, base, 'POST', '/v0/scim_tokens', { scim_token: { name: 'Entra' } });
  const scim = async (path, body) => {
    const res = await page.request.post(`${base}/scim/v2${path}`, {
      data: body,
      headers: { authorization: `Bearer ${data.token}`, 'content-type': 'application/scim+json' },
    });
    assert.equal(res.status(), 201, await res.text());
    return res.json();
  };
  const user = await scim('/Users', { userName: 'lee@example.com', active: false });
  await scim('/Groups', { displayName: 'Directory staff', members: [{ value: user.id }] });

  await page.goto(`${base}/admin/groups`);
  await page.getByRole('link', { name: 'Directory staff' }).click();
  await page.getByRole('heading', { name: 'Directory staff', level: 1 }).waitFor();
  assert.equal(await page.locator('.page-head .badge').textContent(), 'From the directory (SCIM)');
  await page.getByRole('row', { name: /lee@example\.com/ }).getByText('From the directory (SCIM)').waitFor();
  await checkAccessibility(page, "a directory group's page");
  await screenshots(page, 'admin-group-scim');

  await page.getByRole('link', { name: 'lee@example.com' }).click();
  assert.match(await page.locator('dl.facts').textContent(), /Disabled since .+Disabled by the directory \(SCIM\)/);
  await page.getByRole('listitem').filter({ hasText: 'Directory staff — From the directory (SCIM)' }).waitFor();
  await screenshots(page, 'admin-user-scim-disabled');
  assert.deepEqual(problems, []);
  await context.close();
});
