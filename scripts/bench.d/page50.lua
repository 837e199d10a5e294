-- page50: GET /v0/devices?limit=50, the first page of the collection, again and again: the
-- reference the web pages' targets compare with (html.lua).
dofile(os.getenv("BENCH_LUA_DIR") .. "/lib.lua")

function init(args)
  bench.init()
end

function request()
  return wrk.format("GET", "/v0/devices?limit=50")
end
