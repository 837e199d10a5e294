-- get: GET /v0/devices/{id} over ids drawn uniformly from $BENCH_IDS. Every request is
-- built once, at start-up; each request then costs one random draw, and responses are
-- counted by wrk itself (as for livez), so the load generator's share stays that of livez.
dofile(os.getenv("BENCH_LUA_DIR") .. "/lib.lua")

bench.count_in_wrk()

function init(args)
  bench.init()
  requests = {}
  for i, id in ipairs(bench.read_ids()) do
    requests[i] = wrk.format("GET", "/v0/devices/" .. id)
  end
end

function request()
  return requests[math.random(1, #requests)]
end
