// Invitations and sign-in links in a real browser, with a real SMTP server (aiosmtpd): an
// admin invites someone from the Users page and the link arrives by email; the invitee sets
// a password (a mismatch refused at its field) and lands on "Add a device"; the console
// shows the invitation accepted and its email sent; an invitation made without email is
// revoked and its link refused; a magic link asked for on the sign-in page signs in once.
// axe-core on each page, screenshots at 1280 px and 360 px. Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, smtpSink, email, adminEmail, adminPassword, watchedPage, signIn, checkAccessibility, screenshots } from './harness.mjs';

let base, browser, stop, sink;

before(async () => {
  sink = await smtpSink();
  const env = { FERROZONE_SMTP_HOST: '127.0.0.1', FERROZONE_SMTP_PORT: String(sink.port), FERROZONE_SMTP_TLS: 'none', FERROZONE_SMTP_FROM: 'VPN <vpn@example.com>' };
  ({ base, browser, stop } = await start({ env, externalUrl: true }));
});

after(async () => {
  await stop?.();
  sink?.stop();
});

/// What chromium logs for a page answered with `status` (a refused form, a dead link).
const loaded = (status, text) => `console: Failed to load resource: the server responded with a status of ${status} (${text})`;

/// The link in a message's text.
const linkIn = (message) => /http:\/\/\S+\/sign_in\/link\/\S+/.exec(message)?.[0];

test('an invitation by email: accepted with a new password, landing on Add a device', async () => {
  const admin = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(admin);
  await signIn(page, base, adminEmail, adminPassword);
  await page.getByRole('link', { name: 'Users', exact: true }).click();
  await page.getByRole('link', { name: 'Invite someone' }).click();
  await page.getByRole('heading', { name: 'Invitations', level: 1 }).waitFor();
  await page.getByText('No invitations yet.').waitFor();
  assert.ok(await page.getByLabel('Email the link').isChecked(), 'emailing is the default with an SMTP server');
  await checkAccessibility(page, 'the invitations page');
  await page.getByLabel('Email', { exact: true }).fill('newcomer@example.com');
  await page.getByRole('button', { name: 'Invite' }).click();
  await page.getByRole('heading', { name: 'Invitation created', level: 1 }).waitFor();
  await page.getByText('The link is on its way to newcomer@example.com.').waitFor();
  const shown = await page.getByLabel('Sign-in link').inputValue();
  assert.match(shown, /^http:\/\/127\.0\.0\.1:\d+\/sign_in\/link\/[A-Za-z0-9_-]{43}$/);
  await checkAccessibility(page, 'the new invitation');
  await screenshots(page, 'admin-invitation-created');

  const message = await sink.waitFor((m) => m.includes('To: newcomer@example.com'));
  assert.match(message, /Subject: You are invited to the VPN/);
  assert.match(message, /From: VPN <vpn@example\.com>/);
  assert.equal(linkIn(message), shown, 'the emailed link is the one shown');

  const invitee = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page: newcomer, problems: theirs } = await watchedPage(invitee);
  await newcomer.goto(shown);
  await newcomer.getByRole('heading', { name: 'Welcome', level: 1 }).waitFor();
  await newcomer.getByText('You are invited to this VPN as newcomer@example.com.').waitFor();
  await checkAccessibility(newcomer, 'the invitation page');
  await screenshots(newcomer, 'invitation-welcome');
  await newcomer.getByLabel('Password', { exact: true }).fill('a new long password');
  await newcomer.getByLabel('Confirm the password').fill('something else entirely');
  await newcomer.getByRole('button', { name: 'Set password and continue' }).click();
  await newcomer.locator('#link-confirmation-error').getByText('Password confirmation does not match password').waitFor();
  assert.equal(await newcomer.getByLabel('Confirm the password').getAttribute('aria-invalid'), 'true');
  await newcomer.getByLabel('Password', { exact: true }).fill('a new long password');
  await newcomer.getByLabel('Confirm the password').fill('a new long password');
  await newcomer.getByRole('button', { name: 'Set password and continue' }).click();
  await newcomer.getByRole('heading', { name: 'Add a device', level: 1 }).waitFor();
  assert.equal(new URL(newcomer.url()).pathname, '/devices/new');
  await newcomer.goto(shown);
  await newcomer.getByRole('heading', { name: 'This link no longer works', level: 1 }).waitFor();
  assert.deepEqual(theirs, [loaded(422, 'Unprocessable Entity'), loaded(410, 'Gone')]);

  await page.getByRole('link', { name: 'Back to invitations' }).click();
  const row = page.getByRole('row', { name: /newcomer@example\.com/ });
  await row.getByText('Accepted').waitFor();
  await row.getByText('Sent').waitFor();
  await screenshots(page, 'admin-invitations');
  assert.deepEqual(problems, []);
  await admin.close();
  await invitee.close();
});

test('an invitation without email is revoked, and its link refused', async () => {
  const admin = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(admin);
  await signIn(page, base, adminEmail, adminPassword);
  await page.goto(`${base}/admin/invitations`);
  await page.getByLabel('Email', { exact: true }).fill('not an email');
  await page.getByRole('button', { name: 'Invite' }).click();
  await page.locator('#invite-email-error').getByText('Email is invalid email address').waitFor();
  await page.getByLabel('Email', { exact: true }).fill('quiet@example.com');
  await page.getByLabel('Email the link').uncheck();
  await page.getByLabel('The link works for').selectOption({ label: '1 day' });
  await page.getByRole('button', { name: 'Invite' }).click();
  await page.getByText('Copy this link now').waitFor();
  const link = await page.getByLabel('Sign-in link').inputValue();
  await page.getByRole('link', { name: 'Back to invitations' }).click();
  const row = page.getByRole('row', { name: /quiet@example\.com/ });
  await row.getByText('Not emailed').waitFor();
  await row.getByRole('button', { name: 'Revoke the invitation of quiet@example.com' }).click();
  await page.getByText('The invitation was revoked: its link no longer works.').waitFor();
  await page.getByRole('row', { name: /quiet@example\.com/ }).getByText('Revoked').waitFor();
  assert.deepEqual(problems, [loaded(422, 'Unprocessable Entity')]);

  const other = await browser.newContext();
  const { page: stranger, problems: theirs } = await watchedPage(other);
  await stranger.goto(link);
  await stranger.getByRole('heading', { name: 'This link no longer works', level: 1 }).waitFor();
  await checkAccessibility(stranger, 'a dead link');
  assert.deepEqual(theirs, [loaded(410, 'Gone')]);
  assert.ok(!sink.messages().some((m) => m.includes('quiet@example.com')), 'nothing was emailed');
  await admin.close();
  await other.close();
});

test('a magic link from the sign-in page signs in once', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await page.goto(`${base}/sign_in`);
  await page.getByRole('link', { name: 'Email me a sign-in link instead' }).click();
  await page.getByRole('heading', { name: 'Email me a sign-in link', level: 1 }).waitFor();
  await checkAccessibility(page, 'the magic-link form');
  await page.getByLabel('Email').fill(email);
  await page.getByRole('button', { name: 'Send the link' }).click();
  await page.getByText('If an account can sign in with this email, a sign-in link is on its way.').waitFor();
  await screenshots(page, 'sign-in-email');
  const message = await sink.waitFor((m) => m.includes(`To: ${email}`));
  assert.match(message, /Subject: Your sign-in link/);
  await page.goto(linkIn(message));
  await page.getByText(`Sign in as ${email} with this link.`).waitFor();
  await checkAccessibility(page, 'the magic link page');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  await page.getByRole('heading', { name: 'My devices', level: 1 }).waitFor();
  assert.deepEqual(problems, []);
  await context.close();
});
