-- path: GET BENCH_PATH with the admin token (an API read of one path, e.g. /v0/rules).
dofile(os.getenv("BENCH_LUA_DIR") .. "/lib.lua")

local path = os.getenv("BENCH_PATH")

function init(args)
  bench.init()
end

function request()
  return wrk.format("GET", path)
end
