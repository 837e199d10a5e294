-- livez: GET /livez, answered without touching the database: the ceiling of this machine's
-- HTTP stack (server, loopback and wrk sharing the cores). The token is sent anyway, so the
-- request is the same size as the API workloads' requests.
dofile(os.getenv("BENCH_LUA_DIR") .. "/lib.lua")

function init(args)
  bench.init()
end

function request()
  return wrk.format("GET", "/livez")
end
