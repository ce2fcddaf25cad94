# faas-cli's recorded requests (tests/integration/faas-cli/README.md), replayed with curl against
# the test's server, and a check of a JSON answer (sourced after srv_lib.sh, not run). POSIX sh.
# FC: the recordings' folder.
FC=tests/integration/faas-cli

# replay FILE: the recorded request sent with curl; its status printed, its body in $tmp/body
replay() {
	f=$FC/$1
	line=$(head -n 1 "$f")
	method=${line%% *}
	target=${line#* }
	target=${target%% *}
	len=$(sed -n 's/^Content-Length: //p' "$f")
	set --
	while IFS= read -r h; do
		case $h in
		'') break ;;
		Host:* | Content-Length:*) ;;
		Authorization:*) [ -z "${NOAUTH:-}" ] && set -- "$@" -u "$AUTH" ;;
		*) set -- "$@" -H "$h" ;;
		esac
	done <<EOF
$(sed -n '2,$p' "$f")
EOF
	if [ -n "$len" ]; then
		sed '1,/^$/d' "$f" | head -c "$len" >"$tmp/replay"
		set -- "$@" --data-binary @"$tmp/replay"
	fi
	curl -s -o "$tmp/body" -w '%{http_code}' -X "$method" "$@" "$U$target"
}
# decodes TYPE MSG: the body decodes into faas-cli's Go type
decodes() {
	if python3 "$FC/gotypes.py" "$1" "$tmp/body" 2>"$tmp/pyerr"; then
		ok "$2"
	else
		bad "$2: $(cat "$tmp/pyerr")"
	fi
}

# json PYEXPR MSG: PYEXPR true of j, the JSON in $tmp/body
json() {
	if python3 -c 'import json, sys
j = json.load(open(sys.argv[2]))
sys.exit(0 if eval(sys.argv[1]) else 1)' "$1" "$tmp/body" 2>"$tmp/pyerr"; then
		ok "$2"
	else
		bad "$2: $(head -c 300 "$tmp/body") $(tail -n 1 "$tmp/pyerr")"
	fi
}
