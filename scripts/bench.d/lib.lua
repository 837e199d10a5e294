-- Shared by every workload script (loaded with dofile): per-thread counters, the status
-- check, request bodies, and one machine-readable summary line printed by done().
--
-- wrk runs one Lua state per thread plus a main state that runs setup() and done(); the
-- states share nothing, so each thread keeps its own counters in globals and done() reads
-- them back with thread:get().
--
-- Environment (set by scripts/bench):
--   BENCH_TOKEN     admin API token
--   BENCH_IDS       file with one device id per line (get, update, mixed)
--   BENCH_OWNERS    comma-separated user ids that own new devices (create, mixed)
--   BENCH_TAG       unique per wrk run; makes generated names unique across runs
--   BENCH_THREADS   wrk's -t, to split a request budget between threads
--   BENCH_BUDGET    create only: stop after exactly this many creates (see create.lua)
--   BENCH_DONE_DIR  create only: where each thread marks that its budget is spent

bench = {}

local thread_states = {}

-- Main state: give each thread an id and a random seed. The main state's own generator
-- is seeded from /dev/urandom; LuaJIT's default seed is fixed, so without this every run
-- would draw the same public keys and the second run's creates would all be 422.
local function urandom_seed()
  local f = assert(io.open("/dev/urandom", "rb"))
  local bytes = f:read(4)
  f:close()
  local n = 0
  for i = 1, 4 do
    n = n * 256 + bytes:byte(i)
  end
  return n
end
math.randomseed(urandom_seed())

function setup(thread)
  thread_states[#thread_states + 1] = thread
  thread:set("thread_id", #thread_states)
  thread:set("seed", math.random(1, 2 ^ 31))
end

-- Thread state: counters read back by done().
responses, non2xx, created, first_error = 0, 0, 0, ""

function bench.init()
  math.randomseed(seed)
  wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
  wrk.headers["Content-Type"] = "application/json"
  bench.tag = os.getenv("BENCH_TAG") or "t"
  bench.counter = 0
end

-- Every response: count it, and keep the first non-2xx with its body for the report.
function response(status, headers, body)
  responses = responses + 1
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    if first_error == "" then
      first_error = status .. " " .. body:sub(1, 300):gsub("%s+", " ")
    end
  elseif status == 201 then
    created = created + 1
  end
  if on_response then
    on_response(status, body)
  end
end

-- For workloads that need nothing from the bodies (livez, get): no Lua callback per
-- response, so the load generator's cost does not grow with the body. wrk still counts
-- every status >= 400 (summary.errors.status), which done() reports as non-2xx.
function bench.count_in_wrk()
  response = nil
  bench.counted_by_wrk = true
end

-- Reads a file of ids (one per line) into a list.
function bench.read_ids()
  local ids = {}
  local path = assert(os.getenv("BENCH_IDS"), "BENCH_IDS is not set")
  for line in io.lines(path) do
    if line ~= "" then
      ids[#ids + 1] = line
    end
  end
  assert(#ids > 0, "no device ids in " .. path)
  return ids
end

function bench.split(text)
  local out = {}
  for item in (text or ""):gmatch("[^,]+") do
    out[#out + 1] = item
  end
  return out
end

-- A name no other request of any run uses: tag (per run), thread id, counter.
function bench.unique_name(prefix)
  bench.counter = bench.counter + 1
  return prefix .. "-" .. bench.tag .. "-" .. thread_id .. "-" .. bench.counter
end

local b64chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

-- 32 random bytes in strict base64: 42 characters, one whose 2 low bits are zero, "=".
function bench.random_key()
  local out = {}
  for i = 1, 42 do
    local n = math.random(0, 63)
    out[i] = b64chars:sub(n + 1, n + 1)
  end
  local n = math.random(0, 15) * 4
  out[43] = b64chars:sub(n + 1, n + 1)
  return table.concat(out) .. "="
end

-- A create with automatic addresses. The name is given, not generated: generated names
-- (adjective-noun) run out at 1,840 per user and are then drawn again with a suffix,
-- which would make this a benchmark of name collisions.
function bench.create_request(owners)
  local owner = owners[math.random(1, #owners)]
  local body = '{"device":{"user_id":"' .. owner .. '","public_key":"' .. bench.random_key() ..
    '","name":"' .. bench.unique_name("d") .. '"}}'
  return wrk.format("POST", "/v0/devices", nil, body)
end

function bench.rename_request(ids)
  local id = ids[math.random(1, #ids)]
  local body = '{"device":{"name":"' .. bench.unique_name("r") .. '"}}'
  return wrk.format("PATCH", "/v0/devices/" .. id, nil, body)
end

-- One line scripts/bench parses. Latencies are wrk's own histogram, in microseconds.
function done(summary, latency, requests)
  local totals = { responses = 0, non2xx = 0, created = 0 }
  local first = ""
  for _, t in ipairs(thread_states) do
    for key in pairs(totals) do
      totals[key] = totals[key] + (t:get(key) or 0)
    end
    local e = t:get("first_error") or ""
    if first == "" then
      first = e
    end
  end
  local e = summary.errors
  if bench.counted_by_wrk then
    totals.non2xx = e.status
    if e.status > 0 then
      first = "status >= 400 (" .. e.status .. " responses; bodies are not kept for this workload)"
    end
  end
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "bench-result rps=%.1f p50_us=%d p99_us=%d requests=%d non2xx=%d created=%d " ..
    "created_per_s=%.1f socket_errors=%d seconds=%.2f\n",
    summary.requests / seconds, latency:percentile(50), latency:percentile(99), summary.requests,
    totals.non2xx, totals.created, totals.created / seconds,
    e.connect + e.read + e.write + e.timeout, seconds))
  if first ~= "" then
    io.write("bench-first-error " .. first .. "\n")
  end
end
