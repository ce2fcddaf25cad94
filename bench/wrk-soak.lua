-- wrk script for bench/soak.sh: bursts and pauses over several functions, every answer checked.
-- SOAK_PATHS: the paths, one request to each in turn; SOAK_WANT_1, SOAK_WANT_2, ...: the bodies
-- a 200 may carry (the paths' answers; wrk does not tell which request an answer is for, so an
-- answer must be one of them); BODY: what is POSTed (default Ember). Every connection sends as
-- fast as it is answered for BURST_S seconds, then waits PAUSE_S seconds (phases by the wall
-- clock, so all connections pause together). Prints one line: requests, errors by kind, wrong
-- bodies, latency percentiles.
local body = os.getenv("BODY") or "Ember"
local burst = tonumber(os.getenv("BURST_S") or "3")
local pause = tonumber(os.getenv("PAUSE_S") or "2")
local threads = {}

function setup(thread)
	table.insert(threads, thread)
end

function init(args)
	paths, wants, n, bad = {}, {}, 0, 0
	for p in string.gmatch(os.getenv("SOAK_PATHS") or "/", "%S+") do
		table.insert(paths, p)
	end
	for i = 1, 64 do
		local w = os.getenv("SOAK_WANT_" .. i)
		if w then
			wants[w] = true
		end
	end
end

function request()
	n = n % #paths + 1
	return wrk.format("POST", paths[n], {["Content-Type"] = "text/plain"}, body)
end

function response(status, headers, resp)
	if status == 200 and not wants[resp] then
		bad = bad + 1
	end
end

function delay()
	local t = os.time() % (burst + pause)
	if t < burst then
		return 0
	end
	return (burst + pause - t) * 1000
end

function done(summary, latency, requests)
	local wrong = 0
	for _, t in ipairs(threads) do
		wrong = wrong + t:get("bad")
	end
	local e = summary.errors
	io.write(string.format(
		"WRK requests=%d duration_us=%d status=%d connect=%d read=%d write=%d timeout=%d " ..
		"wrong=%d p50_us=%d p99_us=%d max_us=%d\n",
		summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
		wrong, latency:percentile(50), latency:percentile(99), latency.max))
end
