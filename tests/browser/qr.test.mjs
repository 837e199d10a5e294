// The add-device page's own QR encoder (crates/ferrozone-web/assets/add-device.js), in
// node: for every version, the longest text it holds at level L gives that version (the
// standard's capacities), one byte more the next, and jsqr decodes each code to the bytes
// (but version 23's: jsqr has its alignment pattern at 74 where the standard puts it, at 78).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import jsQR from 'jsqr';
import { qrMatrix } from '../../crates/ferrozone-web/assets/add-device.js';

/// Bytes in byte mode at level L, by version (ISO/IEC 18004 table 7).
const CAPACITY_L = [0, 17, 32, 53, 78, 106, 134, 154, 192, 230, 271, 321, 367, 425, 458, 520, 586, 644, 718, 792,
  858, 929, 1003, 1091, 1171, 1273, 1367, 1465, 1528, 1628, 1732, 1840, 1952, 2068, 2188, 2303, 2431, 2563, 2699,
  2809, 2953];

/// `matrix` as RGBA pixels, 3 a module, with a 4-module quiet zone.
function pixels(matrix) {
  const scale = 3;
  const side = (matrix.length + 8) * scale;
  const data = new Uint8ClampedArray(side * side * 4).fill(255);
  matrix.forEach((row, y) =>
    row.forEach((dark, x) => {
      if (!dark) return;
      for (let dy = 0; dy < scale; dy++) {
        for (let dx = 0; dx < scale; dx++) {
          const at = (((y + 4) * scale + dy) * side + (x + 4) * scale + dx) * 4;
          data.fill(0, at, at + 3);
        }
      }
    }),
  );
  return { data, side };
}

function text(length, seed) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=[] \n';
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[(i * 31 + seed * 7 + ((i * i) % 13)) % alphabet.length];
  return out;
}

test('each version holds the standard capacity and decodes', () => {
  for (let version = 1; version <= 40; version++) {
    const full = text(CAPACITY_L[version], version);
    const matrix = qrMatrix(full);
    assert.equal(matrix.length, version * 4 + 17, `version of ${full.length} bytes`);
    if (version < 40) assert.equal(qrMatrix(full + 'x').length, (version + 1) * 4 + 17, `version ${version} + 1 byte`);
    if (version === 23) continue;
    const { data, side } = pixels(matrix);
    const decoded = jsQR(data, side, side);
    assert.ok(decoded, `version ${version} decodes`);
    assert.deepEqual(Buffer.from(decoded.binaryData), Buffer.from(full), `version ${version}`);
  }
});

test('UTF-8 text is encoded as its bytes, and too long a text is refused', () => {
  const matrix = qrMatrix('Ünïcödé [Interface]\n');
  const { data, side } = pixels(matrix);
  assert.equal(Buffer.from(jsQR(data, side, side).binaryData).toString('utf8'), 'Ünïcödé [Interface]\n');
  assert.throws(() => qrMatrix('x'.repeat(2954)), /too long/);
});
