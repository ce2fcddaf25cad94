-- wrk script for bench/lb.sh: as wrk-post.lua (its body, its WRK line), each request to the next
-- of /function/f01 ... /function/fNN in turn (FNS, default 12).
dofile("bench/wrk-post.lua")
local n = tonumber(os.getenv("FNS") or "12")
local i = 0

request = function()
	i = i % n + 1
	return wrk.format(nil, string.format("/function/f%02d", i))
end
