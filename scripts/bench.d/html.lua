-- html: GET one web page as a signed-in browser would, with its session cookie and no
-- Authorization header. BENCH_PATH is the page (e.g. /admin/devices), BENCH_COOKIE the
-- `Cookie` header (ferrozone_session=...). Used for the pages' targets: a page must answer
-- within twice the time of GET /v0/devices?limit=50 (page50.lua) in the same run.
dofile(os.getenv("BENCH_LUA_DIR") .. "/lib.lua")

local path = os.getenv("BENCH_PATH")

function init(args)
  bench.init()
  wrk.headers["Authorization"] = nil
  wrk.headers["Content-Type"] = nil
  wrk.headers["Cookie"] = os.getenv("BENCH_COOKIE")
end

function request()
  return wrk.format("GET", path)
end
