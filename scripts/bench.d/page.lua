-- page: GET /v0/devices?limit=100, following metadata.next_page_cursor to the end of the
-- collection and starting again at the first page.
--
-- wrk does not tell the script which connection a response came from, so the walk is kept
-- as a queue of cursors: every response queues its next cursor and every request takes one
-- (or starts a new walk at the first page when there is none). Each connection thus walks
-- its own sequence of pages, and the walks cover the whole collection, deep pages included.
dofile(os.getenv("BENCH_LUA_DIR") .. "/lib.lua")

local cursors = {}

function init(args)
  bench.init()
end

function request()
  local cursor = table.remove(cursors)
  local path = "/v0/devices?limit=100"
  if cursor then
    path = path .. "&page_cursor=" .. cursor -- URL-safe base64: no escaping needed
  end
  return wrk.format("GET", path)
end

function on_response(status, body)
  local cursor = status == 200 and body:match('"next_page_cursor"%s*:%s*"([^"]+)"')
  if cursor then
    cursors[#cursors + 1] = cursor
  end
end
