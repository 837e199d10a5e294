-- GET /v0/devices/{id} over random ids read from $BENCH_IDS (one per line).
function setup(thread)
  thread:set("seed", math.random(1, 2 ^ 30))
end

function init(args)
  math.randomseed(seed)
  ids = {}
  for line in io.lines(os.getenv("BENCH_IDS")) do
    ids[#ids + 1] = line
  end
  wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
end

function request()
  return wrk.format("GET", "/v0/devices/" .. ids[math.random(1, #ids)])
end
