#!/bin/sh
# The console (GET /ui/) end to end: its files built into the binary, behind the management
# credentials (401 and no data without them), with a policy that keeps the page on this server;
# a function's history ring (/system/function/NAME/history) bounded under 10,000 invocations;
# requests that another site's page would send refused; then a real browser (Debian's chromium,
# headless, through chromedriver and Selenium: console_browser.py) deploys a JavaScript function
# from the page, invokes it, sees its row, its log line and its charts, and takes screenshots
# kept in $LOGS/console-BACKEND/. The page is the same on every backend but for the host panel,
# which names it (and says plainly that ptrace has no hardware isolation).
# Run from the repository root; B is the build directory (default build); EMBER_BACKEND is
# kvm, ptrace or auto (the default). Every wait polls, bounded by AWAIT_POLLS polls 0.1 s apart.
set -u
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/lib.sh"
pick_backend
# shellcheck source=tests/integration/srv_lib.sh
. "$(dirname "$0")/srv_lib.sh"
CHART_JS=/usr/share/javascript/chart.js/chart.min.js
SHOTS=${LOGS:-$B/tests}/console-$EMBER_BACKEND
mkdir -p "$SHOTS"

start

# --- the page and its files, over HTTP
expect "the console without credentials: 401" 401 "$(NOAUTH=1 http GET /ui/)"
contains "401 asks for basic authentication" 'WWW-Authenticate: Basic realm="Ember"' "$tmp/headers"
expect "401's body is the error alone" 401 "$(NOAUTH=1 http GET /ui/console.js)" \
	'{"error":"authentication required"}'
code=$(curl -s -u "tester:wrong" -o "$tmp/body" -w '%{http_code}' "$U/ui/")
expect "the console with a wrong password: 401" 401 "$code" '{"error":"authentication required"}'
expect "the console" 200 "$(http GET /ui/)"
contains "it is the page" "<title>Ember console</title>" "$tmp/body"
contains "served as HTML" "Content-Type: text/html; charset=utf-8" "$tmp/headers"
contains "its policy keeps every request on this server" \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'" \
	"$tmp/headers"
expect "/ui is the page too" 200 "$(http GET /ui)"
contains "/ui: the page" "<title>Ember console</title>" "$tmp/body"
sed -n 's/.*\(src\|href\)="\/ui\/\([^"]*\)".*/\2/p' "$tmp/body" >"$tmp/files"
same "the page names its five files" 5 "$(wc -l <"$tmp/files" | tr -d ' ')"
while read -r f; do
	expect "its file $f" 200 "$(http GET "/ui/$f")"
done <"$tmp/files"
http GET /ui/chart.min.js >/dev/null
check "chart.min.js is Debian's Chart.js, as built in" cmp -s "$tmp/body" "$CHART_JS"
contains "Chart.js 3.9" "Chart.js v3.9" "$tmp/body"
expect "a file the console lacks: 404" 404 "$(http GET /ui/nope.js)"
expect "a path past a file: 400" 400 "$(http GET /ui/a/b)"

# --- another site's page, with the credentials a browser holds: refused, nothing deployed
expect "a deployment from another site's page: 403" 403 "$(http POST /system/functions \
	-H 'Sec-Fetch-Site: cross-site' -H 'Origin: http://elsewhere.example' \
	-H 'Content-Type: text/plain' -d '{"service":"csrf","runtime":"duktape","code":"x"}')"
expect "an Origin of another host, without Sec-Fetch-Site: 403" 403 "$(http POST /system/functions \
	-H 'Origin: http://elsewhere.example' -d '{"service":"csrf","runtime":"duktape","code":"x"}')"
expect "nothing was deployed" 404 "$(http GET /system/function/csrf)"

# --- the history ring under 10,000 invocations
expect "upload hello" 201 "$(http PUT /system/images/hello --data-binary @"$B/functions/hello")"
expect "deploy hello" 202 "$(http POST /system/functions -d '{"service":"hello","image":"hello"}')"
expect "history without credentials: 401" 401 "$(NOAUTH=1 http GET /system/function/hello/history)"
expect "history of an unknown function: 404" 404 "$(http GET /system/function/nope/history)"
expect "history with a bad window: 400" 400 "$(http GET '/system/function/hello/history?seconds=301')"
expect "hello's history before any call" 200 "$(http GET /system/function/hello/history)"
cp "$tmp/body" "$tmp/before"
# 10,000 invocations over one kept-alive connection
python3 - "$port" >"$tmp/calls" <<'EOF'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
codes = {}
for i in range(10000):
    c.request("POST", "/function/hello", body=b"x")
    r = c.getresponse()
    r.read()
    codes[r.status] = codes.get(r.status, 0) + 1
print(codes)
EOF
same "10,000 invocations answered 200" "{200: 10000}" "$(cat "$tmp/calls")"
expect "hello's history after them" 200 "$(http GET /system/function/hello/history)"
cp "$tmp/body" "$tmp/after"
# hist PYEXPR WHAT: PYEXPR over b and a, the history before and after the calls
hist() {
	if python3 -c '
import json, sys
b, a = (json.load(open(f)) for f in sys.argv[2:4])
sys.exit(0 if eval(sys.argv[1]) else 1)' "$1" "$tmp/before" "$tmp/after" 2>"$tmp/pyerr"; then
		ok "$2"
	else
		bad "$2: $(head -c 300 "$tmp/after") $(tail -n 1 "$tmp/pyerr")"
	fi
}
hist 'all(len(a["series"][k]) == a["kept"] == 300 for k in a["series"])' \
	"every column keeps 300 seconds, no more"
hist 'len(json.dumps(a)) < 131072' "the history's reply stays bounded (under 128 KiB)"
hist 'sum(a["series"]["invocations"]) == 10000 == a["window"]["invocations"]' \
	"the seconds count the 10,000 invocations"
hist 'a["total"]["ran"] == 10000 and 0 < a["total"]["p50"] <= a["total"]["p99"] < 10' \
	"the totals count them, with p50 <= p99"
hist 'sum(a["series"]["warm"]) + sum(a["series"]["restore"]) + sum(a["series"]["init"]) == 10000' \
	"each was counted by its start"
hist 'sum(a["series"]["exits"]) >= 10000 and a["series"]["t"][-1] - a["series"]["t"][0] == 299' \
	"exits counted, one entry a second"

# --- docs/grafana-dashboard.json: JSON, over metrics the server exports
code=$(curl -s -o "$tmp/metrics" -w '%{http_code}' "$U/metrics")
same "the metrics" 200 "$code"
if python3 - docs/grafana-dashboard.json "$tmp/metrics" >"$tmp/dash" 2>&1 <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
exported = set(re.findall(r"^# TYPE (\S+)", open(sys.argv[2]).read(), re.M))
exprs = [t["expr"] for p in d["panels"] for t in p["targets"]]
used = {re.sub(r"_(bucket|sum|count)$", "", n) for e in exprs
        for n in re.findall(r"\b((?:ember|gateway|http|process)_[a-z_]+)", e)}
missing = sorted(n for n in used if n not in exported)
print(len(d["panels"]), "panels,", len(used), "metrics used; not exported:", missing)
sys.exit(1 if missing or len(used) < 20 else 0)
EOF
then
	ok "the dashboard uses only metrics /metrics exports: $(cat "$tmp/dash")"
else
	bad "the dashboard: $(cat "$tmp/dash")"
fi

# --- a real browser
if timeout -k 5 180 /usr/bin/python3 "$(dirname "$0")/console_browser.py" "$U" tester \
	"${AUTH#tester:}" "$EMBER_BACKEND" "$SHOTS" "$(cd "$B/functions" && pwd)/hello" >"$tmp/browser" \
	2>"$tmp/err"; then
	ok "the browser's run ended"
else
	bad "the browser's run failed: $(tail -n 5 "$tmp/err")"
fi
while read -r verdict what; do
	case $verdict in
	ok) ok "browser: $what" ;;
	FAIL) bad "browser: $what" ;;
	esac
done <"$tmp/browser"
check "a screenshot was taken" test -s "$SHOTS/console.png"
finish
