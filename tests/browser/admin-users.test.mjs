// The console's users in a real browser: an admin creates a user with a password, that
// user signs in elsewhere; disabling them sends their next page load to the sign-in page,
// and their status says an administrator did it; enabling lets them back; deleting goes
// through its confirmation. An unprivileged user gets no console page, and a form posted
// without the CSRF token changes nothing. axe-core on each page, screenshots at 1280 and
// 360 px. A disabled user's devices read "Off the VPN: user disabled" wherever the console
// lists them, not Online or Offline. Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  start, adminEmail, adminPassword, watchedPage, signIn, checkAccessibility, screenshots, sessionApi,
} from './harness.mjs';

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

test("a disabled user's devices read off the VPN on the user's page, All devices and the device's page", async () => {
  const context = await browser.newContext();
  const { page: admin, problems } = await watchedPage(context);
  await signIn(admin, base, adminEmail, adminPassword);
  const { data: user } = await sessionApi(admin, base, 'POST', '/v0/users', { user: { email: 'robin@example.com' } });
  const { data: device } = await sessionApi(admin, base, 'POST', '/v0/devices', { device: { user_id: user.id, name: 'robin-laptop' } });
  const offVpn = 'Off the VPN: user disabled';
  // The status cell of the device's row on a console page, and the Status fact on its own page.
  const statuses = async () => {
    const shown = [];
    for (const path of [`/admin/users/${user.id}`, '/admin/devices']) {
      await admin.goto(`${base}${path}`);
      const row = admin.getByRole('row').filter({ has: admin.getByRole('link', { name: device.name, exact: true }) });
      shown.push((await row.locator('.badge').first().textContent()).trim());
    }
    await admin.goto(`${base}/devices/${device.id}`);
    shown.push((await admin.locator('dt:text-is("Status") + dd .badge').textContent()).trim());
    return shown;
  };
  assert.deepEqual(await statuses(), ['Offline', 'Offline', 'Offline'], 'never connected');

  await admin.goto(`${base}/admin/users/${user.id}`);
  await admin.getByRole('button', { name: 'Disable' }).click();
  await admin.getByText('The user was disabled').waitFor();
  assert.deepEqual(await statuses(), [offVpn, offVpn, offVpn]);
  await admin.goto(`${base}/admin/users/${user.id}`);
  await checkAccessibility(admin, "a disabled user's page with a device");
  await screenshots(admin, 'admin-user-disabled');
  await admin.goto(`${base}/admin/devices`);
  await screenshots(admin, 'admin-devices-owner-disabled');

  await admin.goto(`${base}/admin/users/${user.id}`);
  await admin.getByRole('button', { name: 'Enable' }).click();
  await admin.getByText('The user was enabled').waitFor();
  assert.deepEqual(await statuses(), ['Offline', 'Offline', 'Offline'], 'back on the VPN');
  assert.deepEqual(problems, [], 'no console error, page error or CSP violation');
  await context.close();
});
