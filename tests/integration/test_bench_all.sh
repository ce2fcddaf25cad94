#!/bin/sh
# `ember bench all --quick`: every part (latency, suite, cold, http, memory; BENCH_ALL_MEMORY=0
# leaves memory out, should its KSM scans take minutes again) writes its JSON with raw samples, the plots and
# summary.md exist, progress goes to stderr, and a peer that is missing or cannot run here is a
# row with its reason, not a failure. Run from the repository root; B is the build directory.
set -u
. "$(dirname "$0")/lib.sh"
pick_backend
O=$tmp/results

"$E" bench all --help >"$tmp/help" 2>&1
check "--help exits 0" test $? = 0
check "--help names --quick and every part" sh -c "grep -q -- --quick '$tmp/help' &&
	grep -q latency '$tmp/help' && grep -q http '$tmp/help'"
"$E" bench all --no-such-option >"$tmp/out" 2>"$tmp/err"
check "a bad option is refused" test $? != 0
"$E" bench all --parts nothing-at-all --out "$O.none" >"$tmp/out" 2>"$tmp/err"
check "an unknown part is refused" test $? != 0

parts=latency,suite,cold,http
[ "${BENCH_ALL_MEMORY:-1}" = 1 ] && parts=$parts,memory
"$E" bench all --quick --iterations 3 --peer-timeout 5 --parts $parts --backend "$EMBER_BACKEND" \
	--out "$O" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "bench all --quick exits 0 (exit $rc)" test $rc = 0
check "progress on stderr, part by part" sh -c "grep -q 'bench all: latency: round' '$tmp/err' &&
	grep -q 'bench all: http: ' '$tmp/err' && grep -q 'bench all: done: ' '$tmp/err'"

# py CHECK-MESSAGE PYTHON: the Python (with json loaded as j from $O/FILE via load) must pass
py()
{
	msg=$1
	shift
	if python3 - "$O" "$@" >"$tmp/py" 2>&1; then ok "$msg"; else cp "$tmp/py" "$tmp/err"; bad "$msg"; fi
}

py "latency.json: every row has raw samples matching n, or a reason" <<'PY'
import json, sys
j = json.load(open(sys.argv[1] + "/latency.json"))
rows = j["rows"] + j["exit_floors"]
assert len(rows) > 10, len(rows)
for r in rows:
    if r["n"] == 0:
        assert r["reason"], r
    else:
        assert len(r["samples_us"]) == r["n"] and r["p50_us"] > 0, r
        assert r["p50_us"] <= r["p99_us"], r
names = {r["name"]: r for r in rows}
for need in ("ember_warm_trap_hello", "ember_warm_guest_hello", "ember_cold_reap_hello",
             "ember_shell_sha256", "posix_spawn_hello", "exit_floor"):
    assert names[need]["n"] > 0, names[need]
PY

# a peer that is not installed: a row that says so (here: a PATH without bwrap, runc and runsc)
mkdir -p "$tmp/bin"
for t in sh cp mkdir find cat; do ln -s "$(command -v $t)" "$tmp/bin/$t"; done
PATH=$tmp/bin "$E" bench all --parts latency --iterations 1 --peers bwrap,runc,runsc_ptrace \
	--backend "$EMBER_BACKEND" --out "$O.nopeers" >"$tmp/out" 2>"$tmp/err"
check "missing peers do not fail the run" test $? = 0
py "each missing peer is a row saying it is not installed" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1] + ".nopeers/latency.json"))["rows"]
for name in ("bwrap", "runc", "runsc_ptrace"):
    for prog in ("hello", "sha256"):
        r = [r for r in rows if r["name"] == name + "_" + prog][0]
        assert r["n"] == 0 and "not installed" in r["reason"], r
assert not [r for r in rows if r["name"].startswith("microvm")], "--peers ignored"
PY
for p in bwrap:bwrap runc:runc runsc:runsc_ptrace qemu-system-x86_64:microvm_tcg; do
	tool=${p%%:*}
	row=${p#*:}
	command -v "$tool" >/dev/null 2>&1 && continue
	py "$row (no $tool here) is a row with its reason" "$row" <<'PY'
import json, sys
r = [r for r in json.load(open(sys.argv[1] + "/latency.json"))["rows"] if r["name"] == sys.argv[2] + "_hello"][0]
assert r["n"] == 0 and "not installed" in r["reason"], r
PY
done

py "suite.json and cold.json: raw samples per function and mode" <<'PY'
import json, sys
for part, n in (("suite", 2), ("cold", 1)):
    j = json.load(open(sys.argv[1] + "/" + part + ".json"))
    s = j["samples_us"]
    assert len(s) >= 13, (part, len(s))
    for k, v in s.items():
        assert len(v) == n and all(x > 0 for x in v), (part, k, v)
    assert "report" in j
PY

py "http.json: Ember and both forkservers at each concurrency, with every latency" <<'PY'
import json, sys
pts = json.load(open(sys.argv[1] + "/http.json"))["points"]
targets = {p["name"] for p in pts}
assert any(t.startswith("ember_") for t in targets), targets
assert {"forkserver_spawn", "forkserver_fork"} <= targets, targets
assert {p["connections"] for p in pts} == {1, 4}, pts
for p in pts:
    assert p["n"] > 0 and len(p["samples_us"]) == p["n"] and p["requests_per_s"] > 0, p
PY

[ $parts = latency,suite,cold,http ] ||
	py "memory.json: PSS per virtine for each function, mode and N" <<'PY'
import json, sys
res = json.load(open(sys.argv[1] + "/memory.json"))["report"]["results"]
assert {(r["mode"], r["n"]) for r in res} >= {(m, n) for m in ("off", "ksm", "upm") for n in (1, 8)}, res
assert all(isinstance(r["pss_per_instance_kib"], (int, float)) for r in res), res
PY

if command -v gnuplot >/dev/null 2>&1; then
	pngs="latency_cdf_hello latency_cdf_sha256 exits cold_starts cold_bandwidth http"
	[ $parts = latency,suite,cold,http ] || pngs="$pngs density"
	for png in $pngs; do
		check "$png.png is a PNG" sh -c "head -c 8 '$O/$png.png' | od -c | grep -q 'P   N   G'"
	done
else
	echo "skip the PNGs: gnuplot is missing (scripts/setup.sh installs gnuplot-nox)"
fi
check "summary.md has the tables and the goals" sh -c "grep -q '^## Latency' '$O/summary.md' &&
	grep -q '^## Cold' '$O/summary.md' && grep -q '^## HTTP' '$O/summary.md' &&
	grep -q '^## Goals' '$O/summary.md'"
finish
