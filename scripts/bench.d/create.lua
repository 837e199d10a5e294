-- create: POST /v0/devices with automatic address assignment, owners drawn from
-- $BENCH_OWNERS. Also the seeding path: with $BENCH_BUDGET set, the run makes exactly that
-- many create requests and then stops.
--
-- A budget, and not wrk's duration, ends the run because wrk has no request count: each
-- thread takes its share of the budget, reserves one request before sending it (delay()
-- runs just before request() on the same connection), parks connections that find the
-- budget spent (a one-hour delay), and when its last response is in, writes a marker file
-- in $BENCH_DONE_DIR and stops its event loop. scripts/bench waits for every thread's
-- marker and sends wrk SIGINT, which ends wrk's sleep: the reported time is the time the
-- budget took, and no request beyond the budget is ever sent.
dofile(os.getenv("BENCH_LUA_DIR") .. "/lib.lua")

local budget_total = tonumber(os.getenv("BENCH_BUDGET") or "")
local budget, reserved = nil, 0

local function mark_done()
  local f = assert(io.open(os.getenv("BENCH_DONE_DIR") .. "/" .. thread_id, "w"))
  f:close()
end

function init(args)
  bench.init()
  owners = bench.split(os.getenv("BENCH_OWNERS"))
  assert(#owners > 0, "BENCH_OWNERS is empty")
  if budget_total then
    -- Thread i of n takes floor(total / n), the first (total mod n) threads one more.
    local n = tonumber(os.getenv("BENCH_THREADS"))
    budget = math.floor(budget_total / n) + ((thread_id <= budget_total % n) and 1 or 0)
    if budget == 0 then
      mark_done()
    end
  end
end

if budget_total then
  function delay()
    if reserved < budget then
      reserved = reserved + 1
      return 0
    end
    return 3600 * 1000
  end

  function on_response(status, body)
    if responses == budget then
      mark_done()
      wrk.thread:stop()
    end
  end
end

function request()
  return bench.create_request(owners)
end
