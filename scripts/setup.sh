#!/bin/sh
# Installs the Debian packages Ember builds and tests with; does nothing when they are all present.
# --bench also installs the peers `ember bench all` compares Ember with (gVisor's runsc,
# bubblewrap, runc) and extracts the microVM peer's guest kernel (scripts/qemu-kvm.sh prepare);
# make test needs none of them.
set -eu
BENCH=0
[ "${1:-}" = --bench ] && BENCH=1
PKGS="build-essential musl-tools libcapstone-dev libseccomp-dev libcmocka-dev zlib1g-dev \
duktape-dev liblua5.4-dev libjansson-dev libmicrohttpd-dev libxxhash-dev libcurl4-openssl-dev \
libyaml-dev curl pkg-config clang-format wrk qemu-system-x86 busybox-static e2fsprogs \
clang libclang-rt-dev llvm iproute2 haproxy libarchive-dev libacl1-dev libzstd-dev liblz4-dev \
libssl-dev libpython3.11-dev python3.11 gnuplot-nox uuid-dev golang-go sash gpgv-static jq sqlite3 bash-static nodejs \
python3-numpy umoci golang-1.19-src libpython3.11-testsuite libjs-chart.js chromium \
chromium-driver python3-selenium etcd-server strace"
# to build gVisor's system-call tests from a checkout (tests/conformance/gvisor-build.sh); one
# machine lacked libabsl-dev, which the build needs
PKGS="$PKGS libgtest-dev libgmock-dev libabsl-dev"
# the peers of `ember bench all`, for benchmarks only
BENCH_PKGS="runsc bubblewrap runc"
[ $BENCH = 1 ] && PKGS="$PKGS $BENCH_PKGS"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# the microVM peer boots the kernel the QEMU route extracts (cached: quick when up to date)
bench_kernel() { [ $BENCH = 0 ] || "$(dirname "$0")/qemu-kvm.sh" prepare; }
if [ -z "$missing" ]; then
	bench_kernel
	exit 0
fi
echo "setup: installing$missing"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
bench_kernel
