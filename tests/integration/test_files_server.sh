#!/bin/sh
# A deployment with files over HTTP: "files" is a tar or zip archive in base64; the function reads the
# tree as natively, after a restart too (the deployment keeps it); the status shows its size, not
# the archive; a damaged or forbidden tree is refused at deploy (400, kind config) with the reason.
# The same 1 MiB file in two different trees of one sharing domain is held once by its page
# store (KVM, upm), and by each domain that has it.
set -u
. "$(dirname "$0")/lib.sh"
pick_backend
. "$(dirname "$0")/srv_lib.sh"
. "$(dirname "$0")/files_lib.sh"

# deploy_body NAME TARFILE: the deployment of files.musl with that archive, in $tmp/deploy.json
deploy_body()
{
	printf '{"service":"%s","image":"files","files":"%s"}' "$1" "$(base64 -w0 "$2")" \
		>"$tmp/deploy.json"
}

start
expect "upload files.musl" 201 "$(http PUT /system/images/files --data-binary @"$P")"
tar -C "$T" -czf "$tmp/tree.tgz" .
deploy_body fs "$tmp/tree.tgz"
expect "deploy with files" 202 "$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
code=$(NOAUTH=1 http POST /function/fs --data-binary request)
expect "invoke" 200 "$code"
check "the function reads its files as natively" cmp -s "$tmp/body" "$tmp/native"
code=$(NOAUTH=1 http POST /function/fs --data-binary request)
check "again, warm: as natively" cmp -s "$tmp/body" "$tmp/native"
code=$(http GET /system/function/fs)
expect "the status of fs" 200 "$code"
contains "the status has the archive's size and digest" \
	'"files":{"bytes":'"$(wc -c <"$tmp/tree.tgz")"',"sha256":"'"$(sha256sum <"$tmp/tree.tgz" | cut -c1-64)"'"}' \
	"$tmp/body"
if grep -q "$(base64 -w0 "$tmp/tree.tgz" | head -c 40)" "$tmp/body"; then
	bad "the status shows the archive itself"
else
	ok "the status does not show the archive"
fi

# a zip archive in the same field, told apart by its content
(cd "$T" && zip -qry "$tmp/tree.zip" .)
deploy_body fszip "$tmp/tree.zip"
expect "deploy with a zip" 202 "$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
code=$(NOAUTH=1 http POST /function/fszip --data-binary request)
expect "invoke fszip" 200 "$code"
check "from a zip: as natively" cmp -s "$tmp/body" "$tmp/native"

# after a restart, the stored deployment still has its files
stop
start
code=$(NOAUTH=1 http POST /function/fs --data-binary request)
expect "invoke after a restart" 200 "$code"
check "after a restart: as natively" cmp -s "$tmp/body" "$tmp/native"
code=$(NOAUTH=1 http POST /function/fszip --data-binary request)
check "the zip's after a restart: as natively" cmp -s "$tmp/body" "$tmp/native"

# Debian's dynamic jq, uploaded as it is: deployed with a root filesystem of its ld.so and
# libraries (as the host's ldd names them), and without files (the server's closure for it)
mkdir -p "$tmp/jqroot"
for f in $(ldd /usr/bin/jq | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }'); do
	mkdir -p "$tmp/jqroot$(dirname "$f")"
	cp -L "$f" "$tmp/jqroot$f"
done
tar -C "$tmp/jqroot" -czf "$tmp/jqroot.tgz" .
printf '{"name":"Ember","n":[1,2,3]}' >"$tmp/jqreq"
/usr/bin/jq <"$tmp/jqreq" >"$tmp/jqnative"
expect "upload Debian's jq (dynamic)" 201 "$(http PUT /system/images/jq --data-binary @/usr/bin/jq)"
printf '{"service":"jqroot","image":"jq","files":"%s"}' "$(base64 -w0 "$tmp/jqroot.tgz")" \
	>"$tmp/deploy.json"
expect "deploy jq with a root filesystem" 202 \
	"$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
for i in 1 2; do
	code=$(NOAUTH=1 http POST /function/jqroot --data-binary @"$tmp/jqreq")
	expect "invoke jqroot ($i)" 200 "$code"
	check "jqroot ($i): as natively" cmp -s "$tmp/body" "$tmp/jqnative"
done
expect "deploy jq without files" 202 \
	"$(http POST /system/functions -d '{"service":"jqclosure","image":"jq"}')"
code=$(NOAUTH=1 http POST /function/jqclosure --data-binary @"$tmp/jqreq")
expect "invoke jqclosure" 200 "$code"
check "jqclosure: as natively" cmp -s "$tmp/body" "$tmp/jqnative"

# refused at deploy
mkdir -p "$tmp/badtree" && mkfifo "$tmp/badtree/pipe"
python3 -c 'import tarfile, sys
t = tarfile.open(sys.argv[1], "w"); i = tarfile.TarInfo("../evil"); t.addfile(i); t.close()' \
	"$tmp/evil.tar"
deploy_body bad1 "$tmp/evil.tar"
expect "a tar with '..': 400" 400 "$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
contains "a tar with '..': the reason" "'..' component" "$tmp/body"
contains "a tar with '..': kind config" '"kind":"config"' "$tmp/body"
python3 -c 'import zipfile, sys
z = zipfile.ZipFile(sys.argv[1], "w"); i = zipfile.ZipInfo("dev/null"); i.create_system = 3
i.external_attr = 0o020666 << 16; z.writestr(i, b""); z.close()' "$tmp/dev.zip"
deploy_body badzip "$tmp/dev.zip"
expect "a zip with a device: 400" 400 \
	"$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
contains "a zip with a device: the entry named" "dev/null: not a file, folder or link" "$tmp/body"
printf 'just text' >"$tmp/junk"
deploy_body bad2 "$tmp/junk"
expect "not an archive: 400" 400 "$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
contains "not an archive: the reason" "neither a tar nor a zip archive" "$tmp/body"
printf '{"service":"bad3","image":"files","files":"@@@@"}' >"$tmp/deploy.json"
expect "not base64: 400" 400 "$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
contains "not base64: the reason" "base64" "$tmp/body"
expect "the refused ones are not deployed" 404 "$(http GET /system/function/bad1)"
expect "the refused zip is not deployed" 404 "$(http GET /system/function/badzip)"

# shared_body NAME DOMAIN TREE: a deployment of files.musl with TREE's files in DOMAIN
shared_body()
{
	tar -C "$3" -czf "$tmp/t.tgz" .
	printf '{"service":"%s","image":"files","files":"%s","ember":{"sharingDomain":"%s"}}' \
		"$1" "$(base64 -w0 "$tmp/t.tgz")" "$2" >"$tmp/deploy.json"
}
# domain_bytes NAME: the bytes its domain's page store holds, once a call loaded it
domain_bytes()
{
	NOAUTH=1 http POST "/function/$1" --data-binary request >/dev/null
	http GET "/system/function/$1" >/dev/null
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ember"]["memory"]["domainBytes"])' \
		"$tmp/body"
}
mkdir -p "$tmp/sa" "$tmp/sb" "$tmp/sz"
head -c 1048576 /dev/urandom >"$tmp/sa/big.bin"
cp "$tmp/sa/big.bin" "$tmp/sb/big.bin"
echo a >"$tmp/sa/a.txt"
echo b >"$tmp/sb/b.txt"
echo z >"$tmp/sz/a.txt"
# deploy_in NAME DOMAIN TREE
deploy_in()
{
	shared_body "$1" "$2" "$tmp/$3"
	expect "deploy $1 in $2" 202 "$(http POST /system/functions --data-binary @"$tmp/deploy.json")"
}
deploy_in z0 fz sz
deploy_in s1 fa sa
deploy_in s2 fa sb
deploy_in s3 fb sb
dz=$(domain_bytes z0)
da=$(domain_bytes s1)
da2=$(domain_bytes s2)
db=$(domain_bytes s3)
check "s2 with a different tree in s1's domain adds less than the file ($da -> $da2)" \
	[ $((da2 - da)) -lt 524288 ]
if [ "$EMBER_BACKEND" = kvm ]; then
	check "s3's domain holds the file besides the snapshot ($db >= $dz + 1 MiB - 64 KiB)" \
		[ "$db" -ge $((dz + 1048576 - 65536)) ]
	check "so does s1's ($da)" [ "$da" -ge $((dz + 1048576 - 65536)) ]
else # ptrace maps no files: nothing of them goes into the store
	check "ptrace: s3's domain holds the snapshot only ($db, $dz)" [ $((db - dz)) -lt 524288 ]
fi

# fd 4 over HTTP, where the metadata is the request's headers (tests/guest/stdstat.c): its
# size is what it holds, and a bad buffer for its bytes gets none, answered by the in-guest
# runtime (guest) and by the host (trap)
expect "upload stdstat.musl" 201 "$(http PUT /system/images/stdstat --data-binary @"$G/stdstat.musl")"
for mode in guest trap; do
	expect "deploy stdstat, $mode" 202 "$(http POST /system/functions \
		-d '{"service":"std'$mode'","image":"stdstat","ember":{"syscalls":"'$mode'"}}')"
	code=$(NOAUTH=1 http POST "/function/std$mode?q=1" -H 'X-Some: header' --data-binary x)
	expect "invoke stdstat, $mode" 200 "$code"
	has "$tmp/body" "^fd 4's size, its bytes: fstat yes, statx yes$" \
		"$mode: fstat and statx of fd 4 give the metadata's length"
	has "$tmp/body" "^read straddling buffer 4: -14, bytes before the read-only page kept$" \
		"$mode: a read of fd 4 into a buffer that ends on a read-only page writes nothing"
done
stop
finish
