// The console's users in a real browser: an admin creates a user with a password, that
// user signs in elsewhere; disabling them sends their next page load to the sign-in page,
// and their status says an administrator did it; enabling lets them back; deleting goes
// through its confirmation. An unprivileged user gets no console page, and a form posted
// without the CSRF token changes nothing. axe-core on each page, screenshots at 1280 and
// 360 px. Run by scripts/browser-test.
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

const newEmail = 'casey@example.com';
const newPassword = 'casey has a long password';

test('an admin creates, disables, enables and deletes a user who signs in elsewhere', async () => {
  const adminContext = await browser.newContext();
  const { page: admin, problems } = await watchedPage(adminContext);
  await signIn(admin, base, adminEmail, adminPassword);
  await admin.getByRole('link', { name: 'Users', exact: true }).click();
  await admin.getByRole('heading', { name: 'Users' }).waitFor();
  await checkAccessibility(admin, 'the user list');
  await screenshots(admin, 'admin-users');

  // Create, first with a password too short: the message stands next to the field.
  await admin.getByRole('link', { name: 'Create user' }).click();
  await admin.getByLabel('Email').fill(newEmail);
  await admin.getByLabel('Password (optional)').fill('short');
  await admin.getByLabel('Confirm the password').fill('short');
  await admin.getByRole('button', { name: 'Create user' }).click();
  await admin.locator('#new-password-error').waitFor();
  assert.match(await admin.locator('#new-password-error').textContent(), /at least 12/);
  assert.equal(await admin.getByLabel('Email').inputValue(), newEmail, 'the email is kept');
  await checkAccessibility(admin, 'the create form with errors');
  await screenshots(admin, 'admin-user-new');
  await admin.getByLabel('Password (optional)').fill(newPassword);
  await admin.getByLabel('Confirm the password').fill(newPassword);
  await admin.getByRole('button', { name: 'Create user' }).click();
  await admin.getByText('The user was created.').waitFor();
  const userPath = new URL(admin.url()).pathname;
  assert.match(userPath, /^\/admin\/users\/[0-9a-f-]{36}$/);

  // The new user signs in, in a browser of their own.
  const theirContext = await browser.newContext();
  const { page: theirs, problems: theirProblems } = await watchedPage(theirContext);
  await signIn(theirs, base, newEmail, newPassword);

  await admin.reload();
  await admin.getByRole('heading', { name: 'Sessions (1)' }).waitFor();
  await checkAccessibility(admin, "a user's page");
  await screenshots(admin, 'admin-user');

  await admin.getByRole('button', { name: 'Disable' }).click();
  await admin.getByText('The user was disabled').waitFor();
  await theirs.reload();
  assert.equal(new URL(theirs.url()).pathname, '/sign_in', 'a disabled user is sent to sign in');
  // The status says who disabled the user, on the user's page and in the list.
  assert.match(await admin.locator('dl.facts').textContent(), /Disabled since .+Disabled by an administrator/);
  await admin.goto(`${base}/admin/users`);
  const row = admin.getByRole('row').filter({ has: admin.getByRole('link', { name: newEmail }) });
  assert.match(await row.textContent(), /Disabled\s+since .+Disabled by an administrator/);
  await checkAccessibility(admin, 'the user list with a disabled user');
  await admin.goto(`${base}${userPath}`);

  await admin.getByRole('button', { name: 'Enable' }).click();
  await admin.getByText('The user was enabled').waitFor();
  await signIn(theirs, base, newEmail, newPassword);

  await admin.getByRole('link', { name: 'Delete…' }).click();
  await admin.getByRole('heading', { name: `Delete ${newEmail}?` }).waitFor();
  assert.match(await admin.locator('main').textContent(), /0 devices/);
  await checkAccessibility(admin, 'the delete confirmation');
  await admin.getByRole('button', { name: 'Delete user' }).click();
  await admin.getByText('The user was deleted').waitFor();
  assert.equal(await admin.getByRole('link', { name: newEmail }).count(), 0);
  await theirs.reload();
  assert.equal(new URL(theirs.url()).pathname, '/sign_in', 'a deleted user is signed out');

  // The refused form answered 422, which chromium reports as a failed load.
  const unexpected = problems.filter((p) => !/status of 422/.test(p));
  assert.deepEqual(unexpected, [], 'no console error, page error or CSP violation (admin)');
  assert.deepEqual(theirProblems, [], 'no console error, page error or CSP violation (user)');
  await adminContext.close();
  await theirContext.close();
});

test('an unprivileged user gets no console page, and a form without the CSRF token changes nothing', async () => {
  const adminContext = await browser.newContext();
  const { page: admin } = await watchedPage(adminContext);
  await signIn(admin, base, adminEmail, adminPassword);
  await admin.goto(`${base}/admin/users?q=pat@`);
  await admin.getByRole('link', { name: 'pat@example.com' }).click();
  await admin.getByRole('heading', { name: 'pat@example.com' }).waitFor();
  const patPath = new URL(admin.url()).pathname;

  // A form posted without the token: 403, and the user keeps their role.
  const refused = await admin.request.post(`${base}${patPath}/role`, { form: { role: 'admin' }, maxRedirects: 0 });
  assert.equal(refused.status(), 403);
  assert.match(await refused.text(), /nothing was changed/);
  await admin.reload();
  assert.match(await admin.locator('dl.facts').textContent(), /RoleUser/);

  const context = await browser.newContext();
  const { page, problems } = await watchedPage(context);
  await signIn(page, base);
  for (const path of ['/admin/users', '/admin/users/new', patPath]) {
    const res = await page.goto(`${base}${path}`);
    assert.equal(res.status(), 403, path);
    await page.getByRole('heading', { name: 'Administrators only' }).waitFor();
    await checkAccessibility(page, `403 on ${path}`);
  }
  for (const path of ['/admin/devices', '/admin/tokens', '/admin/settings']) {
    const res = await page.goto(`${base}${path}`);
    assert.notEqual(res.status(), 200, path);
    assert.equal(await page.locator('table, form[action^="/admin"]').count(), 0, `no console content on ${path}`);
  }
  const res = await page.request.post(`${base}${patPath}/disable`, { form: {}, maxRedirects: 0 });
  assert.equal(res.status(), 403);
  assert.deepEqual(problems.filter((p) => !/403|404/.test(p)), [], 'no console error other than the refusals');
  await context.close();
  await adminContext.close();
});
