-- mixed: 90% get, 5% create, 5% update (rename), each request drawn independently.
dofile(os.getenv("BENCH_LUA_DIR") .. "/lib.lua")

function init(args)
  bench.init()
  ids = bench.read_ids()
  owners = bench.split(os.getenv("BENCH_OWNERS"))
end

function request()
  local r = math.random()
  if r < 0.90 then
    return wrk.format("GET", "/v0/devices/" .. ids[math.random(1, #ids)])
  elseif r < 0.95 then
    return bench.create_request(owners)
  else
    return bench.rename_request(ids)
  end
end
