-- list: GET /v0/devices, the whole collection in one response.
dofile(os.getenv("BENCH_LUA_DIR") .. "/lib.lua")

function init(args)
  bench.init()
end

function request()
  return wrk.format("GET", "/v0/devices")
end
