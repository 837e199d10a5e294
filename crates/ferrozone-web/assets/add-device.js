// The script of the pages adding a device and showing a configuration
// (templates/add_device.html, device_config_once.html and portal/device.html). One
// self-contained file, as a page loads one script.
//
// On the form: offers making the device's key pair in this browser when WebCrypto can make
// an X25519 key, and then, as the form is sent, makes the pair, keeps the private key in
// sessionStorage (keyed by the public key) and sends the public key only. Over plain HTTP
// (not a secure context) browsers cannot make keys: the form says so, and what to do.
// On a page showing a configuration: puts that private key into the configuration text and
// forgets it, draws the QR code, and offers copying (also over plain HTTP, where there is
// no Clipboard API) and downloading the text.
//
// The QR encoder at the end is written for this page: byte mode, error correction level
// L, versions 1 to 40.

/// sessionStorage entries holding a private key made here, by public key.
const KEY_PREFIX = 'ferrozone-device-key:';
const PLACEHOLDER = '<PRIVATE_KEY>';

// ---------------------------------------------------------------------------------------
// Keys

/// What the form says when the page is not a secure context (docs/web.md).
const NOT_SECURE =
  'Over plain HTTP the browser cannot make keys (this page is not a secure context). ' +
  'Open this page over HTTPS to make the key here, or choose "Generate the key on the server".';

/// Whether this browser can make an X25519 key pair (WebCrypto, in a secure context).
async function canMakeKeys() {
  try {
    if (!globalThis.crypto?.subtle) return false;
    await crypto.subtle.generateKey({ name: 'X25519' }, true, ['deriveBits']);
    return true;
  } catch {
    return false;
  }
}

/// A WireGuard key pair as base64 of 32 bytes each: `{ publicKey, privateKey }`.
async function makeKeyPair() {
  const pair = await crypto.subtle.generateKey({ name: 'X25519' }, true, ['deriveBits']);
  const publicKey = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
  // A private key exports as a JWK only; its `d` is the 32 bytes, in base64url.
  const { d } = await crypto.subtle.exportKey('jwk', pair.privateKey);
  return { publicKey: toBase64(publicKey), privateKey: base64urlToBase64(d) };
}

function toBase64(bytes) {
  return btoa(String.fromCharCode(...bytes));
}

function base64urlToBase64(text) {
  const plain = text.replace(/-/g, '+').replace(/_/g, '/');
  return plain + '='.repeat((4 - (plain.length % 4)) % 4);
}

/// Drops the private keys an earlier, unfinished visit of the form left behind.
function forgetStaleKeys() {
  for (let i = sessionStorage.length - 1; i >= 0; i--) {
    const name = sessionStorage.key(i);
    if (name?.startsWith(KEY_PREFIX)) sessionStorage.removeItem(name);
  }
}

// ---------------------------------------------------------------------------------------
// The form

async function setUpForm(form) {
  forgetStaleKeys();
  const browser = form.querySelector('#mode-browser');
  const ownKey = form.querySelectorAll('.own-key');
  const showOwnKey = () => ownKey.forEach((e) => (e.hidden = !form.querySelector('#mode-own').checked));
  form.addEventListener('change', showOwnKey);
  showOwnKey();
  if (await canMakeKeys()) {
    browser.disabled = false;
    form.querySelector('#browser-unavailable').hidden = true;
    // Recommended: chosen unless the person chose before (the form came back with errors).
    if (form.dataset.fresh === 'true') browser.checked = true;
    showOwnKey();
  } else if (!window.isSecureContext) {
    form.querySelector('#browser-unavailable').textContent = NOT_SECURE;
  }
  let keyMade = false;
  form.addEventListener('submit', async (event) => {
    if (!browser.checked || keyMade) return;
    event.preventDefault();
    const button = form.querySelector('button[type="submit"]');
    button.disabled = true;
    try {
      const { publicKey, privateKey } = await makeKeyPair();
      sessionStorage.setItem(KEY_PREFIX + publicKey, privateKey);
      form.querySelector('#browser-public-key').value = publicKey;
      keyMade = true;
      form.submit();
    } catch (e) {
      button.disabled = false;
      browser.disabled = true;
      form.querySelector('#mode-server').checked = true;
      const note = form.querySelector('#browser-unavailable');
      note.textContent = `This browser could not make the key (${e.message}). Choose another way.`;
      note.hidden = false;
    }
  });
}

// ---------------------------------------------------------------------------------------
// The configuration page

function setUpConfig(pre) {
  let text = pre.textContent;
  const publicKey = pre.dataset.browserKey;
  if (publicKey) {
    const name = KEY_PREFIX + publicKey;
    const privateKey = sessionStorage.getItem(name);
    sessionStorage.removeItem(name);
    if (privateKey && text.includes(PLACEHOLDER)) {
      text = text.replace(PLACEHOLDER, privateKey);
      pre.textContent = text;
      const canvas = document.getElementById('qr');
      drawQr(canvas, text);
      document.getElementById('qr-section').hidden = false;
    } else {
      document.getElementById('key-missing').hidden = false;
    }
  }
  // The page showing the configuration once downloads the filled-in text; a device's page
  // links to the server's file.
  const download = document.getElementById('download-config');
  if (download) download.href = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
  const copy = document.getElementById('copy-config');
  const status = document.getElementById('copy-status');
  copy.hidden = false;
  copy.addEventListener('click', async () => {
    status.textContent = (await copied(pre, text))
      ? 'Copied.'
      : 'Copying is not allowed here: the text is selected, press Ctrl+C (⌘C on a Mac) to copy it.';
  });
}

/// Copies `text`, shown in `pre`: with the Clipboard API where there is one (a secure
/// context), else by selecting `pre` and copying the selection, which browsers allow over
/// plain HTTP too. Whether it was copied; the text is left selected when it was not.
async function copied(pre, text) {
  if (navigator.clipboard) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // Refused (a permission): copy the selection instead.
    }
  }
  const range = document.createRange();
  range.selectNodeContents(pre);
  const selection = getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  try {
    return document.execCommand('copy');
  } catch {
    return false;
  }
}

/// Draws the QR code of `text` on `canvas`: black on white, with the 4-module quiet zone
/// the standard asks for, at least 4 pixels a module.
function drawQr(canvas, text) {
  const matrix = qrMatrix(text);
  const size = matrix.length;
  const quiet = 4;
  const scale = Math.max(4, Math.floor(640 / (size + 2 * quiet)));
  canvas.width = canvas.height = (size + 2 * quiet) * scale;
  const context = canvas.getContext('2d');
  context.fillStyle = '#fff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.fillStyle = '#000';
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      if (matrix[y][x]) context.fillRect((x + quiet) * scale, (y + quiet) * scale, scale, scale);
    }
  }
}

// ---------------------------------------------------------------------------------------
// QR code encoder (ISO/IEC 18004): byte mode, error correction level L, versions 1 to 40.
//
// The steps: pick the smallest version that holds the text; build the bit stream (mode,
// length, bytes, terminator, padding); split it into blocks and add each block's
// Reed-Solomon error correction; interleave the blocks; draw the function patterns
// (finders, timing, alignment, format and version information) and the data in the
// zigzag order; then try all 8 masks and keep the one with the lowest penalty.

/// Error correction codewords per block, for level L, by version (index 0 unused).
const EC_PER_BLOCK_L = [0,
  7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28,
  28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30];
/// Number of error correction blocks, for level L, by version (index 0 unused).
const BLOCKS_L = [0,
  1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8,
  8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25];
/// The format information's two bits for level L.
const LEVEL_L_BITS = 0b01;

/// The QR code of `text` (UTF-8 bytes) as rows of booleans, `true` for dark.
export function qrMatrix(text) {
  const bytes = new TextEncoder().encode(text);
  const version = smallestVersion(bytes.length);
  const codewords = withErrorCorrection(dataCodewords(bytes, version), version);
  let best = null;
  for (let mask = 0; mask < 8; mask++) {
    const code = new QrMatrix(version);
    code.drawFunctionPatterns();
    code.drawCodewords(codewords);
    code.applyMask(mask);
    code.drawFormatBits(mask);
    const penalty = code.penalty();
    if (best === null || penalty < best.penalty) best = { code, penalty };
  }
  return best.code.modules;
}

/// Bits of the character count field in byte mode.
const countBits = (version) => (version <= 9 ? 8 : 16);

/// Modules left for data and error correction once the function patterns are drawn.
function rawDataModules(version) {
  let modules = (16 * version + 128) * version + 64;
  if (version >= 2) {
    const align = Math.floor(version / 7) + 2;
    modules -= (25 * align - 10) * align - 55;
    if (version >= 7) modules -= 36;
  }
  return modules;
}

const totalCodewords = (version) => Math.floor(rawDataModules(version) / 8);
const dataCapacity = (version) => totalCodewords(version) - EC_PER_BLOCK_L[version] * BLOCKS_L[version];

function smallestVersion(length) {
  for (let version = 1; version <= 40; version++) {
    const bits = 4 + countBits(version) + 8 * length;
    if (bits <= dataCapacity(version) * 8) return version;
  }
  throw new Error('the text is too long for a QR code');
}

/// The data codewords: mode 0100 (byte), the length, the bytes, then the terminator and
/// padding up to the version's capacity.
function dataCodewords(bytes, version) {
  const bits = [];
  const push = (value, count) => {
    for (let i = count - 1; i >= 0; i--) bits.push((value >>> i) & 1);
  };
  push(0b0100, 4);
  push(bytes.length, countBits(version));
  bytes.forEach((b) => push(b, 8));
  const capacity = dataCapacity(version) * 8;
  push(0, Math.min(4, capacity - bits.length));
  push(0, (8 - (bits.length % 8)) % 8);
  for (let pad = 0xec; bits.length < capacity; pad ^= 0xec ^ 0x11) push(pad, 8);
  const out = [];
  for (let i = 0; i < bits.length; i += 8) out.push(bits.slice(i, i + 8).reduce((acc, bit) => (acc << 1) | bit, 0));
  return out;
}

/// The data split into the version's blocks (the short ones first, the others one
/// codeword longer), each followed by its error correction, interleaved codeword by
/// codeword: first the data of every block, then the error correction of every block.
function withErrorCorrection(data, version) {
  const blockCount = BLOCKS_L[version];
  const ecLength = EC_PER_BLOCK_L[version];
  const shortLength = Math.floor(data.length / blockCount);
  const longBlocks = data.length % blockCount;
  const divisor = rsGenerator(ecLength);
  const blocks = [];
  for (let b = 0, start = 0; b < blockCount; b++) {
    const length = shortLength + (b >= blockCount - longBlocks ? 1 : 0);
    const block = data.slice(start, start + length);
    start += length;
    blocks.push({ data: block, ec: rsRemainder(block, divisor) });
  }
  const out = [];
  for (let i = 0; i <= shortLength; i++) blocks.forEach((b) => i < b.data.length && out.push(b.data[i]));
  for (let i = 0; i < ecLength; i++) blocks.forEach((b) => out.push(b.ec[i]));
  return out;
}

// Reed-Solomon over GF(2^8) with the QR code's polynomial x^8 + x^4 + x^3 + x^2 + 1.

function gfMultiply(a, b) {
  let product = 0;
  for (let i = 7; i >= 0; i--) {
    product = (product << 1) ^ ((product >>> 7) * 0x11d);
    product ^= ((b >>> i) & 1) * a;
  }
  return product;
}

/// The coefficients (highest degree first, the leading 1 left out) of the generator
/// polynomial (x - a^0)(x - a^1)...(x - a^(degree-1)), a = 2.
function rsGenerator(degree) {
  const coefficients = new Array(degree).fill(0);
  coefficients[degree - 1] = 1;
  let root = 1;
  for (let i = 0; i < degree; i++) {
    for (let j = 0; j < degree; j++) {
      coefficients[j] = gfMultiply(coefficients[j], root);
      if (j + 1 < degree) coefficients[j] ^= coefficients[j + 1];
    }
    root = gfMultiply(root, 0x02);
  }
  return coefficients;
}

/// The remainder of `data` (times x^degree) divided by the generator: the error
/// correction codewords.
function rsRemainder(data, divisor) {
  const remainder = new Array(divisor.length).fill(0);
  for (const byte of data) {
    const factor = byte ^ remainder.shift();
    remainder.push(0);
    divisor.forEach((coefficient, i) => (remainder[i] ^= gfMultiply(coefficient, factor)));
  }
  return remainder;
}

/// The centres of the alignment patterns along each axis.
function alignmentPositions(version) {
  if (version === 1) return [];
  const count = Math.floor(version / 7) + 2;
  const size = version * 4 + 17;
  const step = version === 32 ? 26 : Math.ceil((version * 4 + 4) / (count * 2 - 2)) * 2;
  const positions = [6];
  for (let position = size - 7; positions.length < count; position -= step) positions.splice(1, 0, position);
  return positions;
}

/// The masks, by number: whether the module at column `x`, row `y` is flipped.
const MASKS = [
  (x, y) => (x + y) % 2 === 0,
  (x, y) => y % 2 === 0,
  (x) => x % 3 === 0,
  (x, y) => (x + y) % 3 === 0,
  (x, y) => (Math.floor(x / 3) + Math.floor(y / 2)) % 2 === 0,
  (x, y) => ((x * y) % 2) + ((x * y) % 3) === 0,
  (x, y) => (((x * y) % 2) + ((x * y) % 3)) % 2 === 0,
  (x, y) => (((x + y) % 2) + ((x * y) % 3)) % 2 === 0,
];

class QrMatrix {
  constructor(version) {
    this.version = version;
    this.size = version * 4 + 17;
    this.modules = Array.from({ length: this.size }, () => new Array(this.size).fill(false));
    /// Modules of the function patterns, which data and masks leave alone.
    this.reserved = Array.from({ length: this.size }, () => new Array(this.size).fill(false));
  }

  set(x, y, dark) {
    this.modules[y][x] = dark;
    this.reserved[y][x] = true;
  }

  drawFunctionPatterns() {
    const size = this.size;
    for (let i = 0; i < size; i++) {
      this.set(6, i, i % 2 === 0);
      this.set(i, 6, i % 2 === 0);
    }
    for (const [x, y] of [[3, 3], [size - 4, 3], [3, size - 4]]) this.drawFinder(x, y);
    const positions = alignmentPositions(this.version);
    const last = positions.length - 1;
    positions.forEach((x, i) =>
      positions.forEach((y, j) => {
        const underFinder = (i === 0 && j === 0) || (i === 0 && j === last) || (i === last && j === 0);
        if (!underFinder) this.drawAlignment(x, y);
      }),
    );
    // Reserve the format areas now (drawn with the mask), and draw the version's.
    this.drawFormatBits(0);
    this.drawVersionBits();
  }

  /// A finder pattern centred on (x, y) with its light separator, clipped to the code.
  drawFinder(cx, cy) {
    for (let dy = -4; dy <= 4; dy++) {
      for (let dx = -4; dx <= 4; dx++) {
        const [x, y] = [cx + dx, cy + dy];
        const distance = Math.max(Math.abs(dx), Math.abs(dy));
        if (x >= 0 && x < this.size && y >= 0 && y < this.size) this.set(x, y, distance !== 2 && distance !== 4);
      }
    }
  }

  drawAlignment(cx, cy) {
    for (let dy = -2; dy <= 2; dy++) {
      for (let dx = -2; dx <= 2; dx++) this.set(cx + dx, cy + dy, Math.max(Math.abs(dx), Math.abs(dy)) !== 1);
    }
  }

  /// The level and the mask, with their BCH code, masked with 101010000010010, twice.
  drawFormatBits(mask) {
    const data = (LEVEL_L_BITS << 3) | mask;
    let remainder = data;
    for (let i = 0; i < 10; i++) remainder = (remainder << 1) ^ ((remainder >>> 9) * 0x537);
    const bits = ((data << 10) | remainder) ^ 0x5412;
    const bit = (i) => ((bits >>> i) & 1) === 1;
    const size = this.size;
    for (let i = 0; i <= 5; i++) this.set(8, i, bit(i));
    this.set(8, 7, bit(6));
    this.set(8, 8, bit(7));
    this.set(7, 8, bit(8));
    for (let i = 9; i < 15; i++) this.set(14 - i, 8, bit(i));
    for (let i = 0; i < 8; i++) this.set(size - 1 - i, 8, bit(i));
    for (let i = 8; i < 15; i++) this.set(8, size - 15 + i, bit(i));
    this.set(8, size - 8, true);
  }

  /// Versions 7 and up: the version number with its Golay code, in two 6 x 3 blocks.
  drawVersionBits() {
    if (this.version < 7) return;
    let remainder = this.version;
    for (let i = 0; i < 12; i++) remainder = (remainder << 1) ^ ((remainder >>> 11) * 0x1f25);
    const bits = (this.version << 12) | remainder;
    for (let i = 0; i < 18; i++) {
      const dark = ((bits >>> i) & 1) === 1;
      const [a, b] = [this.size - 11 + (i % 3), Math.floor(i / 3)];
      this.set(a, b, dark);
      this.set(b, a, dark);
    }
  }

  /// The codewords' bits, most significant first, in pairs of columns from the right,
  /// going up and down in turn, skipping the vertical timing pattern and reserved modules.
  drawCodewords(codewords) {
    const size = this.size;
    let i = 0;
    for (let right = size - 1; right >= 1; right -= 2) {
      if (right === 6) right = 5;
      const upward = ((right + 1) & 2) === 0;
      for (let step = 0; step < size; step++) {
        const y = upward ? size - 1 - step : step;
        for (const x of [right, right - 1]) {
          if (this.reserved[y][x] || i >= codewords.length * 8) continue;
          this.modules[y][x] = ((codewords[i >>> 3] >>> (7 - (i & 7))) & 1) === 1;
          i++;
        }
      }
    }
  }

  applyMask(mask) {
    const flip = MASKS[mask];
    for (let y = 0; y < this.size; y++) {
      for (let x = 0; x < this.size; x++) {
        if (!this.reserved[y][x] && flip(x, y)) this.modules[y][x] = !this.modules[y][x];
      }
    }
  }

  /// The standard's penalty: runs of 5 or more of a colour, 2 x 2 blocks of a colour,
  /// finder-like 1:1:3:1:1 patterns beside 4 light modules, and the share of dark
  /// modules away from half.
  penalty() {
    const size = this.size;
    const m = this.modules;
    let total = 0;
    const rows = m;
    const columns = m.map((_, x) => m.map((row) => row[x]));
    for (const line of [...rows, ...columns]) total += runPenalty(line) + finderPenalty(line);
    let dark = 0;
    for (let y = 0; y < size; y++) {
      for (let x = 0; x < size; x++) {
        if (m[y][x]) dark++;
        if (x + 1 < size && y + 1 < size) {
          const c = m[y][x];
          if (m[y][x + 1] === c && m[y + 1][x] === c && m[y + 1][x + 1] === c) total += 3;
        }
      }
    }
    const percent = (dark * 100) / (size * size);
    total += 10 * Math.floor(Math.abs(percent - 50) / 5);
    return total;
  }
}

/// 3 for each run of 5 modules of one colour, and 1 more for each module beyond 5.
function runPenalty(line) {
  let total = 0;
  let run = 1;
  for (let i = 1; i <= line.length; i++) {
    if (i < line.length && line[i] === line[i - 1]) {
      run++;
    } else {
      if (run >= 5) total += run - 2;
      run = 1;
    }
  }
  return total;
}

/// 40 for each dark-light-dark-dark-dark-light-dark with 4 light modules before or after
/// it (beyond the edge is the light quiet zone).
function finderPenalty(line) {
  const pattern = [true, false, true, true, true, false, true];
  const at = (i) => i >= 0 && i < line.length && line[i];
  let total = 0;
  for (let start = 0; start + 7 <= line.length; start++) {
    if (!pattern.every((dark, k) => line[start + k] === dark)) continue;
    const lightBefore = [1, 2, 3, 4].every((k) => !at(start - k));
    const lightAfter = [0, 1, 2, 3].every((k) => !at(start + 7 + k));
    if (lightBefore || lightAfter) total += 40;
  }
  return total;
}

// ---------------------------------------------------------------------------------------
// Start, once everything above is defined (node imports this file for its tests: no page).

if (typeof document !== 'undefined') {
  const form = document.getElementById('add-device');
  if (form) setUpForm(form);
  const config = document.getElementById('config');
  if (config) setUpConfig(config);
}
