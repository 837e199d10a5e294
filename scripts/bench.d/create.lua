-- POST /v0/devices with a fresh random public key per request.
local b64chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

local function random_key()
  -- 32 random bytes → 43 base64 characters + "=" (the last character carries 4 bits).
  local out = {}
  for i = 1, 42 do
    local n = math.random(0, 63)
    out[i] = b64chars:sub(n + 1, n + 1)
  end
  local n = math.random(0, 15) * 4
  out[43] = b64chars:sub(n + 1, n + 1)
  return table.concat(out) .. "="
end

function setup(thread)
  thread:set("seed", math.random(1, 2 ^ 30))
end

function init(args)
  math.randomseed(seed)
  user_id = os.getenv("BENCH_USER_ID")
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
end

function request()
  local body = '{"device":{"user_id":"' .. user_id .. '","public_key":"' .. random_key() .. '"}}'
  return wrk.format(nil, "/v0/devices", nil, body)
end

function response(status, headers, body)
  if status ~= 201 then
    print("unexpected status " .. status .. ": " .. body)
  end
end
