// "My devices", live: while the page is visible, re-reads this page of the user's devices
// from /v0/devices (the session cookie authenticates a read) every 10 seconds and updates
// the rows in place: status, last handshake, traffic, remote address; new devices appear,
// deleted ones go. Relative times are recomputed on every tick. The words match the
// server's (src/format.rs and src/portal/row.rs): change both together.

const EVERY_MS = 10_000;
// The domain's ONLINE_WINDOW_SECS (ferrozone-domain model.rs): online means a handshake
// at most this old.
const ONLINE_SECS = 180;
const NONE = '—';

const wrap = document.getElementById('devices');
const empty = document.getElementById('devices-empty');
const used = document.getElementById('devices-used');
const blank = document.getElementById('device-row');
let timer = null;

/** "never", "just now", "2 minutes ago", "3 months ago", ... as the server says it. */
function relative(iso, now) {
  if (!iso) return 'never';
  const secs = Math.floor((now - Date.parse(iso)) / 1000);
  if (secs < 60) return 'just now';
  const days = (n) => n * 86400;
  const [count, unit] = secs < 3600 ? [Math.floor(secs / 60), 'minute']
    : secs < days(1) ? [Math.floor(secs / 3600), 'hour']
    : secs < days(60) ? [Math.floor(secs / days(1)), 'day']
    : secs < days(730) ? [Math.floor(secs / days(30)), 'month']
    : [Math.floor(secs / days(365)), 'year'];
  return `${count} ${unit}${count === 1 ? '' : 's'} ago`;
}

function online(iso, now) {
  return Boolean(iso) && now - Date.parse(iso) <= ONLINE_SECS * 1000;
}

/** "512 B", "1.5 KiB", "3.2 GiB". */
function bytes(count) {
  let value = Math.max(count ?? 0, 0);
  if (value < 1024) return `${value} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let unit = 0;
  value /= 1024;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

function field(row, name) {
  return row.querySelector(`[data-field="${name}"]`);
}

function setTime(element, iso, text) {
  if (iso) element.setAttribute('datetime', iso);
  else element.removeAttribute('datetime');
  element.textContent = text;
}

/** Writes `device` (as /v0 gives it) into `row`. */
function fill(row, device, now) {
  row.dataset.id = device.id;
  const name = field(row, 'name');
  name.textContent = device.name;
  name.href = `/devices/${encodeURIComponent(device.id)}`;
  field(row, 'ipv4').textContent = device.ipv4 ?? NONE;
  field(row, 'ipv6').textContent = device.ipv6 ?? NONE;
  // From the device's side: WireGuard counts from the gateway's, so what the gateway sent
  // (tx_bytes) is what the device downloaded.
  field(row, 'downloaded').textContent = bytes(device.tx_bytes);
  field(row, 'uploaded').textContent = bytes(device.rx_bytes);
  field(row, 'remote').textContent = device.remote_ip ?? NONE;
  setTime(field(row, 'handshake'), device.latest_handshake, relative(device.latest_handshake, now));
  setTime(field(row, 'created'), device.inserted_at, device.inserted_at.slice(0, 10));
  // `paused_at` is in a device's JSON only while it is paused.
  if (device.paused_at) row.dataset.paused = 'true';
  else delete row.dataset.paused;
  showStatus(row, online(device.latest_handshake, now));
}

/** Online or Offline by the handshake; Paused (off the VPN) whatever it says. */
function showStatus(row, isOnline) {
  const status = field(row, 'status');
  const paused = row.dataset.paused === 'true';
  status.textContent = paused ? 'Paused' : isOnline ? 'Online' : 'Offline';
  status.classList.toggle('ok', isOnline && !paused);
}

/** Makes the table hold exactly `devices`, in their order, reusing the rows there are. */
function render(devices, now) {
  const body = wrap.querySelector('tbody');
  const rows = new Map([...body.rows].map((row) => [row.dataset.id, row]));
  devices.forEach((device, index) => {
    const row = rows.get(device.id) ?? blank.content.firstElementChild.cloneNode(true);
    rows.delete(device.id);
    fill(row, device, now);
    if (body.rows[index] !== row) body.insertBefore(row, body.rows[index] ?? null);
  });
  rows.forEach((row) => row.remove());
  const first = wrap.dataset.after === '';
  wrap.hidden = devices.length === 0;
  empty.hidden = devices.length > 0 || !first;
}

/** Recomputes the relative times and statuses of the rows from their `datetime`. */
function tickTimes(now) {
  for (const row of wrap.querySelectorAll('tbody tr')) {
    const time = field(row, 'handshake');
    const iso = time.getAttribute('datetime');
    time.textContent = relative(iso, now);
    showStatus(row, online(iso, now));
  }
}

async function refresh() {
  const query = new URLSearchParams({ user_id: wrap.dataset.userId, limit: wrap.dataset.pageSize });
  if (wrap.dataset.after) query.set('page_cursor', wrap.dataset.after);
  try {
    const response = await fetch(`/v0/devices?${query}`, { headers: { accept: 'application/json' } });
    if (!response.ok) return tickTimes(Date.now());
    const { data, metadata } = await response.json();
    render(data, Date.now());
    // The count is the list's length only when this page is the whole list.
    if (wrap.dataset.after === '' && !metadata?.next_page_cursor) used.textContent = String(data.length);
  } catch {
    // Offline for a moment: keep the rows, age their times.
    tickTimes(Date.now());
  }
}

function schedule() {
  clearTimeout(timer);
  timer = null;
  if (document.hidden) return;
  timer = setTimeout(async () => {
    await refresh();
    schedule();
  }, EVERY_MS);
}

document.addEventListener('visibilitychange', async () => {
  if (document.hidden) {
    clearTimeout(timer);
    timer = null;
  } else {
    await refresh();
    schedule();
  }
});

if (wrap && empty && blank) schedule();
