// The pages' foundation in a real browser: the sign-in page and the signed-in home page load
// their hashed stylesheet with no console error and no CSP violation, the
// stylesheet applies (light and dark), nothing overflows 360 px, the skip link comes first;
// screenshots at 1280 px and 360 px wide; on a phone, an admin's header stays short and
// never breaks the email or Sign out inside a word. Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  start, shots, email, password, adminEmail, adminPassword, watchedPage, signIn, checkAccessibility, sessionApi,
} from './harness.mjs';

let base, browser, stop;

before(async () => {
  ({ base, browser, stop } = await start());
});

after(async () => {
  await stop?.();
});

/// Checks the page now shown: its assets loaded, styled, no overflow at `width`.
async function checkStyled(page, width, scheme) {
  const look = await page.evaluate(() => {
    const body = getComputedStyle(document.body);
    const logo = document.querySelector('.brand svg');
    return {
      font: body.fontFamily,
      background: body.backgroundColor,
      display: body.display,
      logo: logo?.getBoundingClientRect().width === 28,
      overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    };
  });
  assert.match(look.font, /system-ui/, 'the stylesheet set the system font');
  assert.equal(look.display, 'flex', 'the stylesheet laid out the body');
  assert.equal(look.background, scheme === 'dark' ? 'rgb(22, 23, 27)' : 'rgb(247, 247, 248)', `${scheme} colours`);
  assert.ok(look.logo, 'the logo is drawn');
  assert.ok(look.overflow <= 0, `nothing wider than ${width} px (overflow ${look.overflow})`);
}

for (const width of [1280, 360]) {
  for (const scheme of ['light', 'dark']) {
    test(`sign-in and home at ${width} px, ${scheme}: styled, no console error or CSP violation`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 800 }, colorScheme: scheme });
      const { page, problems } = await watchedPage(context);
      const stylesheet = page.waitForResponse((r) => /\/assets\/app\.[0-9a-f]{10}\.css$/.test(r.url()));
      await page.goto(`${base}/sign_in`);
      const css = await stylesheet;
      assert.equal(css.status(), 200);
      assert.match(css.headers()['cache-control'], /immutable/);
      await checkStyled(page, width, scheme);
      await checkAccessibility(page, 'the sign-in page');
      await page.screenshot({ path: join(shots, `sign-in-${width}-${scheme}.png`), fullPage: true });
      const first = await page.evaluate(() => document.querySelector('a, button, input:not([type=hidden])').className);
      assert.equal(first, 'skip-link', 'the skip link comes first');
      const skip = page.locator('.skip-link');
      await skip.focus();
      assert.ok((await skip.boundingBox()).y >= 0, 'the focused skip link is on screen');
      await skip.press('Enter');
      assert.equal(await page.evaluate(() => document.activeElement.id), 'main', 'the skip link moves focus to main');

      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      assert.equal(new URL(page.url()).pathname, '/');
      await checkStyled(page, width, scheme);
      await checkAccessibility(page, 'the home page');
      await page.screenshot({ path: join(shots, `home-${width}-${scheme}.png`), fullPage: true });
      assert.deepEqual(problems, [], 'no console error, page error or CSP violation');
      await context.close();
    });
  }
}

/// How the header's parts are laid out: its height, and for the email and the Sign out
/// button whether their text takes more than one line.
function headerLayout() {
  const oneLine = (element) => {
    const range = document.createRange();
    range.selectNodeContents(element);
    const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
    return lines.size === 1;
  };
  const who = document.querySelector('.sign-out .who');
  const button = document.querySelector('.sign-out button');
  return {
    header: document.querySelector('.site-header').getBoundingClientRect().height,
    whoOneLine: oneLine(who),
    whoTitle: who.title,
    buttonOneLine: oneLine(button),
    links: document.querySelectorAll('.site-nav a').length,
  };
}

test('an admin with a long email on a 360 px phone: a short header, no word broken', async () => {
  const long = 'alexandra.longname-administrator@example.com';
  const setup = await browser.newContext();
  const { page: adminPage } = await watchedPage(setup);
  await signIn(adminPage, base, adminEmail, adminPassword);
  await sessionApi(adminPage, base, 'POST', '/v0/users',
    { user: { email: long, role: 'admin', password: adminPassword, password_confirmation: adminPassword } });
  await setup.close();

  const context = await browser.newContext({ viewport: { width: 360, height: 800 } });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base, long, adminPassword);
  for (const path of ['/', '/account', '/admin/users']) {
    await page.goto(`${base}${path}`);
    const layout = await page.evaluate(headerLayout);
    assert.equal(layout.links, 11, 'the whole admin navigation is there');
    assert.ok(layout.whoOneLine, `${path}: the email is on one line`);
    assert.equal(layout.whoTitle, long, 'the whole email is in its title');
    assert.ok(layout.buttonOneLine, `${path}: Sign out is on one line`);
    assert.ok(layout.header <= 800 / 4, `${path}: the header takes at most a quarter of the screen (${layout.header} px)`);
    await checkStyled(page, 360, 'light');
    await checkAccessibility(page, `${path} at 360 px`);
  }
  await page.goto(`${base}/admin/users`);
  await page.screenshot({ path: join(shots, 'admin-users-header-phone.png') });
  assert.deepEqual(problems, [], 'no console error, page error or CSP violation');
  await context.close();
});
