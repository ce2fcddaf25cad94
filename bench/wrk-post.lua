-- wrk script for bench/http.sh: POSTs $BODY to every request and prints one machine-readable line.
wrk.method = "POST"
wrk.body = os.getenv("BODY") or "Ember"
wrk.headers["Content-Type"] = "text/plain"

done = function(summary, latency, requests)
	local e = summary.errors
	io.write(string.format(
		"WRK requests=%d duration_us=%d status=%d connect=%d read=%d write=%d timeout=%d " ..
		"p50_us=%d p99_us=%d max_us=%d\n",
		summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
		latency:percentile(50), latency:percentile(99), latency.max))
end
