-- livez: GET /livez, answered without touching the database: the ceiling of this machine's
-- HTTP stack (server, loopback and wrk sharing the cores). The token is sent anyway, so the
-- request is the same size as the API workloads' requests. Like get, it is sent from a
-- request built once and counted by wrk itself: no Lua runs per request or response.
dofile(os.getenv("BENCH_LUA_DIR") .. "/lib.lua")

bench.count_in_wrk()

function init(args)
  bench.init()
  request_text = wrk.format("GET", "/livez")
end

function request()
  return request_text
end
