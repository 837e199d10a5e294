-- update: PATCH /v0/devices/{id} renaming a random device to a name no request used before.
dofile(os.getenv("BENCH_LUA_DIR") .. "/lib.lua")

function init(args)
  bench.init()
  ids = bench.read_ids()
end

function request()
  return bench.rename_request(ids)
end
