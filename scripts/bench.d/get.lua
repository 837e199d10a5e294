-- get: GET /v0/devices/{id} over ids drawn uniformly from $BENCH_IDS.
dofile(os.getenv("BENCH_LUA_DIR") .. "/lib.lua")

function init(args)
  bench.init()
  ids = bench.read_ids()
end

function request()
  return wrk.format("GET", "/v0/devices/" .. ids[math.random(1, #ids)])
end
