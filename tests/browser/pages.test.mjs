// The pages' foundation in a real browser: the sign-in page and the signed-in home page load
// their hashed stylesheet with no console error and no CSP violation, the
// stylesheet applies (light and dark), nothing overflows 360 px, the skip link comes first;
// screenshots at 1280 px and 360 px wide. Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { start, shots, email, password, watchedPage, checkAccessibility } from './harness.mjs';

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
