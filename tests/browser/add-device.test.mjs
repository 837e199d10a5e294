// Adding a device in a real browser (/devices/new): with a key made in the browser, the
// configuration shown once holds a private key whose public key is the stored one, its QR
// code decodes to exactly the text, the download and the copy are the same text, and the
// key is gone from the browser and never on the server; then with a key made on the server
// and with a pasted public key; then over plain HTTP (no secure context), where the form
// says why the browser cannot make keys and Copy still copies on every page showing a
// configuration. Run by scripts/browser-test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { start, watchedPage, signIn, checkAccessibility, screenshots, plainHttp } from './harness.mjs';

let base, browser, stop;

before(async () => {
  ({ base, browser, stop } = await start());
});

after(async () => {
  await stop?.();
});

const jsqrSource = readFileSync(createRequire(import.meta.url).resolve('jsqr'), 'utf8');

/// The public key (base64) of a WireGuard private key (base64): X25519 in node's crypto.
function publicKeyOf(privateKey) {
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b656e04220420', 'hex'), Buffer.from(privateKey, 'base64')]);
  const key = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  return Buffer.from(createPublicKey(key).export({ format: 'jwk' }).x, 'base64url').toString('base64');
}

/// A signed-in page with clipboard access and downloads.
async function signedInPage() {
  const context = await browser.newContext({ acceptDownloads: true });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  const { page, problems } = await watchedPage(context);
  await signIn(page, base);
  return { context, page, problems };
}

/// The configuration page now shown: its text, the device's id, what the download holds.
async function shownConfig(page) {
  const text = await page.locator('#config').textContent();
  const href = await page.getByRole('link', { name: 'Go to the device' }).getAttribute('href');
  const id = href.replace('/devices/', '');
  const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#download-config').click()]);
  const downloaded = readFileSync(await download.path(), 'utf8');
  return { text, id, downloaded, fileName: download.suggestedFilename() };
}

/// The text of the QR code drawn on the page (a canvas, or an image drawn onto one).
async function qrText(page) {
  await page.evaluate(jsqrSource);
  return page.evaluate(() => {
    let canvas = document.getElementById('qr');
    if (canvas instanceof HTMLImageElement) {
      const image = canvas;
      canvas = document.createElement('canvas');
      [canvas.width, canvas.height] = [image.naturalWidth, image.naturalHeight];
      canvas.getContext('2d').drawImage(image, 0, 0);
    }
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    return window.jsQR(pixels.data, pixels.width, pixels.height)?.data ?? null;
  });
}

/// `GET`, then `DELETE /v0/devices/{id}` with the page's session; returns the device.
async function storedThenDeleted(page, id) {
  const shown = await page.request.get(`${base}/v0/devices/${id}`);
  assert.equal(shown.status(), 200);
  const device = (await shown.json()).data;
  const config = await (await page.request.get(`${base}/v0/devices/${id}/config`)).text();
  const csrf = await page.locator('meta[name="csrf-token"]').getAttribute('content');
  const deleted = await page.request.delete(`${base}/v0/devices/${id}`, { headers: { 'x-csrf-token': csrf } });
  assert.equal(deleted.status(), 204);
  return { device, config };
}

const line = (text, key) => text.split('\n').find((l) => l.startsWith(`${key} = `))?.slice(key.length + 3);

test('a key made in the browser: shown once, in the QR code and the download, never on the server', async () => {
  const { context, page, problems } = await signedInPage();
  await page.goto(`${base}/devices/new`);
  const browserKey = page.locator('#mode-browser');
  await page.waitForFunction(() => !document.getElementById('mode-browser').disabled);
  assert.ok(await browserKey.isChecked(), 'the browser key is chosen when this browser can make one');
  assert.ok(await page.locator('#public-key').isHidden(), 'no key to paste');
  await checkAccessibility(page, 'the add-device form');
  await screenshots(page, 'add-device');

  await page.getByLabel('Name').fill('browser-laptop');
  await page.getByRole('button', { name: 'Add the device' }).click();
  await page.locator('#qr-section').waitFor();
  const { text, id, downloaded, fileName } = await shownConfig(page);
  assert.ok(!text.includes('<PRIVATE_KEY>'), text);
  const privateKey = line(text, 'PrivateKey');
  assert.equal(downloaded, text, 'the download is the text');
  assert.equal(fileName, 'browser-laptop.conf');
  assert.equal(await qrText(page), text, 'the QR code is the text');
  await page.getByRole('button', { name: 'Copy' }).click();
  await page.getByText('Copied.').waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), text, 'the copy is the text');
  const kept = await page.evaluate(() => Object.keys(sessionStorage).filter((k) => k.startsWith('ferrozone-')));
  assert.deepEqual(kept, [], 'the browser forgot the private key');
  await checkAccessibility(page, 'the configuration page');
  await screenshots(page, 'device-config-once');

  const { device, config } = await storedThenDeleted(page, id);
  assert.equal(device.public_key, publicKeyOf(privateKey), 'the stored public key is the private key’s');
  assert.equal(device.name, 'browser-laptop');
  assert.ok(config.includes('PrivateKey = <PRIVATE_KEY>') && !config.includes(privateKey), config);
  assert.deepEqual(problems, [], 'no console error, page error or CSP violation');
  await context.close();
});

test('a key made on the server: shown once, in the QR code and the download', async () => {
  const { context, page, problems } = await signedInPage();
  await page.goto(`${base}/devices/new`);
  await page.locator('#mode-server').check();
  await page.getByLabel('Name').fill('server-laptop');
  await page.getByRole('button', { name: 'Add the device' }).click();
  await page.locator('#config').waitFor();
  const { text, id, downloaded } = await shownConfig(page);
  const privateKey = line(text, 'PrivateKey');
  assert.notEqual(privateKey, '<PRIVATE_KEY>');
  assert.equal(downloaded, text);
  assert.equal(await qrText(page), text, 'the QR code is the text');
  await checkAccessibility(page, 'the configuration page of a server key');
  const { device } = await storedThenDeleted(page, id);
  assert.equal(device.public_key, publicKeyOf(privateKey));
  assert.deepEqual(problems, []);
  await context.close();
});

test('a pasted public key: stored as given, the configuration waits for its private key', async () => {
  const { context, page, problems } = await signedInPage();
  const { publicKey } = generateKeyPairSync('x25519');
  const pasted = Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url').toString('base64');
  await page.goto(`${base}/devices/new`);
  await page.locator('#mode-own').check();
  await page.getByLabel('Public key', { exact: true }).fill(pasted);
  await page.getByRole('button', { name: 'Add the device' }).click();
  await page.locator('#config').waitFor();
  const { text, id, downloaded } = await shownConfig(page);
  assert.equal(line(text, 'PrivateKey'), '<PRIVATE_KEY>');
  assert.equal(downloaded, text);
  assert.equal(await page.locator('#qr').count(), 0, 'no QR code of a file without its key');
  const { device } = await storedThenDeleted(page, id);
  assert.equal(device.public_key, pasted);
  assert.deepEqual(problems, []);
  await context.close();
});

/// Clicks Copy on the page now shown and returns what was copied: over plain HTTP there is
/// no Clipboard API to read back, so the page's `copy` event tells the selection copied.
async function copyWithoutClipboardApi(page) {
  await page.evaluate(() => {
    window.copiedText = null;
    document.addEventListener('copy', () => { window.copiedText = getSelection().toString(); }, { once: true });
  });
  await page.getByRole('button', { name: 'Copy' }).click();
  await page.getByText('Copied.').waitFor();
  return page.evaluate(() => window.copiedText);
}

test('over plain HTTP: the form says the browser cannot make keys, and why; Copy works on every page', async () => {
  const insecure = await plainHttp(base);
  try {
    const context = await insecure.browser.newContext({ acceptDownloads: true });
    const { page, problems } = await watchedPage(context);
    await signIn(page, insecure.base);
    assert.equal(await page.evaluate(() => window.isSecureContext), false, 'not a secure context');
    await page.goto(`${insecure.base}/devices/new`);
    const note = page.locator('#browser-unavailable');
    await page.getByText('Over plain HTTP the browser cannot make keys').waitFor();
    assert.match(await note.innerText(), /not a secure context/);
    assert.match(await note.innerText(), /over HTTPS/);
    assert.match(await note.innerText(), /Generate the key on the server/);
    assert.ok(await note.isVisible());
    assert.ok(await page.locator('#mode-browser').isDisabled(), 'no browser key offered');
    assert.ok(await page.locator('#mode-server').isChecked(), 'the server makes the key');
    await checkAccessibility(page, 'the add-device form over plain HTTP');
    await screenshots(page, 'add-device-plain-http');

    // A key made on the server: Copy copies the configuration shown once.
    await page.getByLabel('Name').fill('http-laptop');
    await page.getByRole('button', { name: 'Add the device' }).click();
    await page.locator('#config').waitFor();
    const text = await page.locator('#config').textContent();
    assert.notEqual(line(text, 'PrivateKey'), '<PRIVATE_KEY>');
    assert.equal((await copyWithoutClipboardApi(page)).trimEnd(), text.trimEnd(), 'the copy is the text');
    const href = await page.getByRole('link', { name: 'Go to the device' }).getAttribute('href');

    // A device's page shows its configuration too, with Copy.
    await page.goto(`${insecure.base}${href}`);
    const shown = await page.locator('#config').textContent();
    assert.match(shown, /PrivateKey = <PRIVATE_KEY>/);
    assert.equal((await copyWithoutClipboardApi(page)).trimEnd(), shown.trimEnd(), 'the copy is the device page’s text');

    // A pasted public key: the configuration waiting for its private key, with Copy.
    const { publicKey } = generateKeyPairSync('x25519');
    await page.goto(`${insecure.base}/devices/new`);
    await page.locator('#mode-own').check();
    await page.getByLabel('Public key', { exact: true }).fill(Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url').toString('base64'));
    await page.getByRole('button', { name: 'Add the device' }).click();
    await page.locator('#config').waitFor();
    const pasted = await page.locator('#config').textContent();
    assert.equal((await copyWithoutClipboardApi(page)).trimEnd(), pasted.trimEnd());
    assert.deepEqual(problems, [], 'no console error, page error or CSP violation');
    await context.close();
  } finally {
    await insecure.browser.close();
  }
});

test('a device’s page offers Copy of its configuration', async () => {
  const { context, page, problems } = await signedInPage();
  await page.goto(`${base}/devices/new`);
  await page.locator('#mode-server').check();
  await page.getByLabel('Name').fill('copied-laptop');
  await page.getByRole('button', { name: 'Add the device' }).click();
  const href = await page.getByRole('link', { name: 'Go to the device' }).getAttribute('href');
  await page.goto(`${base}${href}`);
  const shown = await page.locator('#config').textContent();
  await page.getByRole('button', { name: 'Copy' }).click();
  await page.getByText('Copied.').waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), shown, 'the copy is the text');
  await checkAccessibility(page, 'the device page with Copy');
  assert.deepEqual(problems, []);
  await context.close();
});
