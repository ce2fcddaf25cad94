#!/bin/sh
# `ember bench programs`: runs (a few rounds, no timing checked: a benchmark, not a test) and
# prints valid JSON with every row per backend and its figures, or a skip with its reason (cpus 2
# on ptrace); hello stays at one exit per invocation in guest mode; a row whose program is
# missing fails the run (125) with its reason while the others are still measured; --help
# tells every row. fork_exec_wait and fork_wait: per round timed inside, an exit or more per
# round, the exec adding its own. node_hello, python_hello and numpy_matmul: Debian's Node.js and
# CPython loaded, their init time said. Run from the repository root; B is the build directory.
set -u
. "$(dirname "$0")/lib.sh"
pick_backend
ROWS="exit_floor hello_warm go_hello_warm thread_create_join parallel_cpus2 jq_warm sqlite3_warm
	fork_exec_wait fork_wait node_hello python_hello numpy_matmul"

"$E" bench programs --help >"$tmp/help" 2>&1
check "--help exits 0" test $? = 0
for w in --json --iterations --backend $ROWS; do
	has "$tmp/help" "$w" "--help names $w"
done
"$E" bench --help >"$tmp/help" 2>&1
has "$tmp/help" "^  programs " "ember bench --help lists programs"
"$E" bench programs --no-such-option >"$tmp/out" 2>"$tmp/err"
check "a bad option is refused" test $? = 125
"$E" bench programs --iterations 0 >"$tmp/out" 2>"$tmp/err"
check "--iterations 0 is refused" test $? = 125
"$E" bench programs --syscalls sometimes >"$tmp/out" 2>"$tmp/err"
check "a bad --syscalls is refused" test $? = 125

# py MSG FILE [ARGS]: the Python on stdin must pass with j = FILE's JSON, b = the backend
py()
{
	msg=$1
	shift
	if python3 - "$EMBER_BACKEND" "$@" >"$tmp/py" 2>&1; then
		ok "$msg"
	else
		cp "$tmp/py" "$tmp/err"
		bad "$msg"
	fi
}

"$E" bench programs --json --iterations 2 --backend "$EMBER_BACKEND" >"$tmp/json" 2>"$tmp/err"
rc=$?
check "bench programs --json --iterations 2 exits 0 (exit $rc)" test $rc = 0
has "$tmp/err" "bench programs: parallel_cpus2 on $EMBER_BACKEND" "progress on stderr"
py "every row once, its figures or a skip with the reason" "$tmp/json" "$ROWS" <<'PY'
import json, math, sys
b, path, rows = sys.argv[1], sys.argv[2], sys.argv[3].split()
j = json.load(open(path))
assert j["iterations"] == 2, j["iterations"]
res = j["results"]
assert [r["name"] for r in res] == rows, [r["name"] for r in res]
for r in res:
    assert r["backend"] == b, r
    for k in ("p50_us", "p99_us", "native_p50_us", "ratio", "exits", "goal", "goal_met"):
        assert k in r, (k, r)
    assert "failed" not in r, r
    if "skipped" in r:
        assert r["name"] == "parallel_cpus2" and b == "ptrace" and "cpus" in r["skipped"], r
        assert r["p50_us"] is None and r["ratio"] is None and r["goal_met"] is None, r
        continue
    assert r["p50_us"] > 0 and r["p50_us"] <= r["p99_us"], r
    if r["name"] != "exit_floor":
        assert r["native_p50_us"] > 0 and r["ratio"] > 0, r
    if r["name"] not in ("exit_floor", "fork_wait", "numpy_matmul"):
        assert r["goal"] and isinstance(r["goal_met"], bool), r
by = {r["name"]: r for r in res}
if b == "kvm":
    assert "skipped" not in by["parallel_cpus2"], by["parallel_cpus2"]
    assert by["parallel_cpus2"]["cpus1_p50_us"] > 0, by["parallel_cpus2"]
t = by["thread_create_join"]
assert t["exits_per_create_join"] > 0 and t["outside_p50_us"] > 0, t
assert t["first_p50_us"] > 0 and t["native_first_p50_us"] > 0, t
# Node.js and CPython: loaded (their time to the snapshot said), warm against a process start
for n in ("node_hello", "python_hello", "numpy_matmul"):
    assert by[n]["init_ms"] > 0 and by[n]["exits"] >= 1, by[n]
PY
py "hello_warm: 1 exit per invocation in guest mode, its goal met" "$tmp/json" <<'PY'
import json, sys
r = [r for r in json.load(open(sys.argv[2]))["results"] if r["name"] == "hello_warm"][0]
assert r["syscalls"] == "guest" and r["exits"] == 1 and r["goal_met"] is True, r
PY
# Debian's dynamic jq and sqlite3, warm: their output checked every round (else the row fails),
# an exit or more per invocation (the calls of their libraries take the stray path)
py "jq_warm and sqlite3_warm: measured, warm, against a native start" "$tmp/json" <<'PY'
import json, sys
by = {r["name"]: r for r in json.load(open(sys.argv[2]))["results"]}
for n in ("jq_warm", "sqlite3_warm"):
    r = by[n]
    assert "failed" not in r and r["exits"] >= 1 and r["native_p50_us"] > 0, r
    assert r["run_p50_us"] > 0, r
PY
# processes: fork (+ execve of itself) + wait4 per round, K rounds per invocation
py "fork_exec_wait and fork_wait: measured inside, exits per round, the exec's share" \
	"$tmp/json" <<'PY'
import json, sys
j = json.load(open(sys.argv[2]))
by = {r["name"]: r for r in j["results"]}
k = j["procs_k"]
assert k >= 1, j
fe, fw = by["fork_exec_wait"], by["fork_wait"]
for r in (fe, fw):
    assert "failed" not in r and r["native_p50_us"] > 0 and r["p99_us"] >= r["p50_us"] > 0, r
    # the outside figures are differences of two invocations' wall times: reported, and any
    # sign, as a busy machine makes them (a native one read -94 us during a make test)
    assert all(isinstance(r[f], (int, float)) for f in ("outside_p50_us", "native_outside_p50_us")), r
    assert r["exits_per_round"] >= 1 and r["exits"] >= k * r["exits_per_round"], r
assert fe["goal"] == "ratio <= 1" and fw["goal"] is None and fw["goal_met"] is None, (fe, fw)
assert fe["exits_per_round"] > fw["exits_per_round"], (fe, fw)
PY

"$E" bench programs --iterations 1 --backend "$EMBER_BACKEND" >"$tmp/out" 2>"$tmp/err"
check "the table exits 0" test $? = 0
has "$tmp/out" "^hello_warm +$EMBER_BACKEND +guest " "the table: hello_warm's row, in guest mode"
has "$tmp/out" "^fork_exec_wait +$EMBER_BACKEND " "the table: fork_exec_wait's row"
has "$tmp/out" "^fork_exec_wait $EMBER_BACKEND: exits_per_round " "the table: its own figures"
has "$tmp/out" "^goals met: [0-9]+ of [0-9]+ judged" "the table: the goals' tally"

# a build folder without the corpus: go_hello_warm fails with its reason, the rest is measured
mkdir -p "$tmp/b"
cp "$E" "$tmp/b/ember"
ln -s "$(cd "$G" && pwd)" "$tmp/b/guest"
"$tmp/b/ember" bench programs --json --iterations 1 --backend "$EMBER_BACKEND" \
	>"$tmp/json2" 2>"$tmp/err"
check "a row that cannot run fails the run (125)" test $? = 125
py "it says why, and the other rows are measured" "$tmp/json2" <<'PY'
import json, sys
by = {r["name"]: r for r in json.load(open(sys.argv[2]))["results"]}
assert "not built" in by["go_hello_warm"]["failed"], by["go_hello_warm"]
assert by["go_hello_warm"]["p50_us"] is None, by["go_hello_warm"]
assert by["hello_warm"]["p50_us"] > 0 and "failed" not in by["hello_warm"], by["hello_warm"]
PY

finish
