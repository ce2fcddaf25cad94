#!/bin/sh
# Builds one Go package's test binary (go test -c, static) and the root filesystem it runs in:
#   go-build.sh OUT PKG [SRCDIR]
# OUT/NAME.test, OUT/NAME.root (a root filesystem: the package's tree at its own path, or at
# /conformance/src/NAME for one of ours, the time zones, /etc/passwd, /etc/group and /etc/hosts,
# busybox as /bin/sh and a few commands, nohup, the test program as /conformance/NAME.test),
# OUT/NAME.wd (the package's folder in the root: the working folder there) and OUT/NAME.dir
# (its folder here), NAME being PKG with / as _. PKG is a package of Debian's golang-1.19-src,
# or, with SRCDIR, a package folder of ours.
set -eu
out=$1 pkg=$2 src=${3:-}
name=$(echo "$pkg" | tr / _)
go=${GO:-go}
goroot=$($go env GOROOT)
if [ -n "$src" ]; then
	dir=$(cd "$src" && pwd)
	target=.
	# in the root, never under /tmp (a virtine's own scratch /tmp): a place of its own
	wd=/conformance/src/$name
else
	dir=$goroot/src/$pkg
	target=$pkg
	wd=$dir
fi
[ -d "$dir" ] || { echo "go-build.sh: no package folder $dir" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Debian's Go ships no lib/time/zoneinfo.zip, where time's tests load their zone from: the
# build embeds the zone database instead, as Go's own message says to
tags=""
[ "$pkg" = time ] && tags=-tags=timetzdata
# offline, the standard library only, the cache in the build tree, the caller's settings ignored
(cd "$dir" && GO111MODULE=off GOENV=off GOFLAGS= GOPROXY=off CGO_ENABLED=0 \
	GOCACHE="$out/go-cache" GOPATH="$out/gopath" $go test -c $tags -o "$out/$name.test" "$target") \
	>"$out/$name.log" 2>&1 || { cat "$out/$name.log" >&2; exit 1; }
root=$out/$name.root
rm -rf "$root"
mkdir -p "$root$wd" "$root/usr/share" "$root/etc" "$root/bin" "$root/usr/bin" "$root/conformance"
# the package's tree (tests read their sources, their testdata and their subpackages' names),
# the source tree's shared testdata, the time zones
cp -rL "$dir/." "$root$wd/"
[ -d "$goroot/src/testdata" ] && mkdir -p "$root$goroot/src" && cp -rL "$goroot/src/testdata" "$root$goroot/src/"
cp -rL /usr/share/zoneinfo "$root/usr/share/"
# what a Debian root holds that tests look at: users, groups and hosts (the guest runs as
# 1000), a shell and the commands they start (Debian's busybox-static), the test program itself
printf 'root:x:0:0:root:/root:/bin/sh\nember:x:1000:1000:ember:/tmp:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nember:x:1000:\n' >"$root/etc/group"
cp /bin/busybox "$root/bin/busybox"
for c in sh echo pwd cat true false ls hostname env sleep; do
	ln -s busybox "$root/bin/$c"
	ln -s ../../bin/busybox "$root/usr/bin/$c"
done
# busybox has no nohup: Debian's, dynamic, with its libraries
cp /usr/bin/nohup "$root/usr/bin/nohup"
sh "$(dirname "$0")/../../runtimes/closure.sh" "$root" /usr/bin/nohup
printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost\n' >"$root/etc/hosts"
cp "$out/$name.test" "$root/conformance/$name.test"
[ -n "$src" ] && : >"$root$wd/ember-marker"
echo "$wd" >"$out/$name.wd"
echo "$dir" >"$out/$name.dir"
