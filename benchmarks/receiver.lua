-- wrk script for benchmarks/receiver.py: cycles through pre-signed webhook deliveries.
--
--   WRK_REQUESTS=requests.tsv WRK_THREADS=1 wrk -t1 -c64 -d10s -s benchmarks/receiver.lua \
--       http://127.0.0.1:8787/webhooks
--
-- requests.tsv has one delivery per line: webhook-id <TAB> webhook-timestamp <TAB> webhook-signature
-- <TAB> body. Each wrk thread takes every WRK_THREADS-th line (so ids stay unique across threads)
-- and formats its requests once in init(), so request() only hands out a prepared string: the load
-- generator does no per-request work beyond wrk's own.
--
-- WRK_LIMIT=N makes each thread stop after N answers (the memory check sends a fixed number).
-- done() prints one line starting with WRKJSON that benchmarks/receiver.py parses.

local counter = 1

function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
end

local reqs = {}
local n = 0
local i = 0
local answered = 0
local limit = tonumber(os.getenv("WRK_LIMIT") or "0")

function init(args)
  local file = os.getenv("WRK_REQUESTS")
  local nthreads = tonumber(os.getenv("WRK_THREADS") or "1")
  local k = 0
  for line in io.lines(file) do
    if k % nthreads == (tid - 1) then
      local id, ts, sig, body = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
      n = n + 1
      reqs[n] = wrk.format("POST", nil, {
        ["webhook-id"] = id,
        ["webhook-timestamp"] = ts,
        ["webhook-signature"] = sig,
        ["Content-Type"] = "application/json",
      }, body)
    end
    k = k + 1
  end
end

function request()
  i = i + 1
  if i > n then
    i = 1 -- past the end: ids repeat (redeliveries); the driver sizes the file to avoid it
  end
  return reqs[i]
end

if limit > 0 then
  function response(status, headers, body)
    answered = answered + 1
    if answered >= limit then
      wrk.thread:stop()
    end
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests": %d, "duration_us": %d, "status_errors": %d, "connect_errors": %d, '
      .. '"read_errors": %d, "write_errors": %d, "timeouts": %d, "p50_us": %d, "p99_us": %d, '
      .. '"max_us": %d}\n',
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
