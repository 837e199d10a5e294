// A `ferrozone serve` of its own (a fresh data directory, one password user) and Debian's
// chromium, for the browser tests. FERROZONE_BIN names the binary, SCREENSHOT_DIR where
// screenshots go (scripts/browser-test sets both).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const shots = process.env.SCREENSHOT_DIR ?? tmpdir();
export const email = 'pat@example.com';
export const password = 'a long enough password';

const freePort = () =>
  new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });

async function waitReady(base) {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('ferrozone serve did not become ready');
}

/// Starts the server and the browser: `{ base, browser, stop }`.
export async function start() {
  const bin = process.env.FERROZONE_BIN;
  assert.ok(bin, 'FERROZONE_BIN names the ferrozone binary');
  const dataDir = mkdtempSync(join(tmpdir(), 'ferrozone-browser-'));
  const { FERROZONE_BIN: _, ...inherited } = process.env;
  const env = { ...inherited, FERROZONE_DATA_DIR: dataDir, FERROZONE_WIREGUARD_BACKEND: 'none', RUST_LOG: 'warn' };
  const created = spawnSync(bin, ['user', 'create', '--email', email, '--password-stdin'], { env, input: `${password}\n` });
  assert.equal(created.status, 0, created.stderr.toString());
  const base = `http://127.0.0.1:${await freePort()}`;
  const server = spawn(bin, ['serve'], { env: { ...env, FERROZONE_LISTEN: base.slice(7) }, stdio: ['ignore', 'ignore', 'inherit'] });
  let browser;
  const stop = async () => {
    await browser?.close();
    server.kill('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitReady(base);
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    });
  } catch (e) {
    await stop();
    throw e;
  }
  return { base, browser, stop };
}
