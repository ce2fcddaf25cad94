#!/bin/sh
# Runs a command against a real KVM (nested AMD SVM) in a Linux guest under QEMU TCG, with the host's / as its root.
# Usage: qemu-kvm.sh prepare [DIR]
#        qemu-kvm.sh run [--timeout SECS] [--mem 4G] [--smp N] [--env NAME[=VALUE]]... [--rw DIR]... -- CMD ARGS...
# The guest sees the host's / read-only, an empty ext4 disk on /tmp (the current directory stays visible, read-only,
# when it lies under /tmp) and each --rw DIR writable at the same path;
# CMD runs in the current directory with stdin from /dev/null, and its exit status is the script's.
# Exit statuses of our own: 124 timeout, 125 the guest or its KVM failed (see the message).
# QEMU_DIR (default build/qemu) holds the cache and the per-run directories; QEMU_CPU overrides -cpu max.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SELF=$ROOT/scripts/qemu-kvm.sh
SMOKE=$ROOT/tests/qemu/kvm_smoke.c
QEMU_DIR=${QEMU_DIR:-$ROOT/build/qemu}
# virtio_console carries CMD's stdout/stderr; crc32c_generic is ext4's and jbd2's softdep (not in depends=)
MODS="kvm_amd virtio_pci virtio_blk virtio_console 9pnet_virtio 9p ext4 crc32c_generic"
# variables CMD gets from the host when set there (besides --env)
PASS="PATH HOME B EMBER_BACKEND EMBER_SYSCALLS"

die() { echo "qemu-kvm: $*" >&2; exit 125; }

fresh() # the cached kernel and initramfs exist and are newer than their recipe
{
	[ -f "$QEMU_DIR/stamp" ] && [ -f "$QEMU_DIR/initrd" ] && [ -f "$QEMU_DIR/vmlinuz" ] &&
		[ "$QEMU_DIR/stamp" -nt "$SELF" ] && [ "$QEMU_DIR/stamp" -nt "$SMOKE" ]
}

# resolve MOD...: appends MOD and its dependencies, dependencies first, to $T/order and their .ko files to
# $T/ko/. A subshell so that recursion keeps each level's variables.
resolve()
(
	for m in "$@"; do
		m=$(echo "$m" | tr - _)
		grep -qx "$m" "$T/order" && continue
		tr - _ <"$KM/modules.builtin" | grep -q "/$m\.ko\$" && continue
		f=$(awk -v m="$m" '$1 == m { print $2; exit }' "$T/index")
		case $f in
		*.ko) cp "$f" "$T/ko/$m.ko" ;;
		*.ko.xz) xz -dc "$f" >"$T/ko/$m.ko" ;; # busybox insmod does not decompress
		*) die "module $m: not in linux-image-$KVER (${f:-no file})" ;;
		esac
		resolve $(objcopy --only-section=.modinfo -O binary "$T/ko/$m.ko" /dev/stdout |
			tr '\0' '\n' | sed -n 's/^depends=//p' | tr , ' ')
		echo "$m" >>"$T/order"
	done
)

prepare()
{
	if fresh; then
		echo "qemu-kvm: prepare: up to date in $QEMU_DIR ($(cat "$QEMU_DIR/stamp"))" >&2
		return
	fi
	for t in apt-get dpkg-deb objcopy xz gzip cc readelf; do
		command -v $t >/dev/null || die "prepare needs $t"
	done
	# the initramfs has no libc: Debian's plain `busybox` package is dynamically linked
	if [ ! -x /bin/busybox ] || readelf -l /bin/busybox | grep -q INTERP; then
		die "prepare needs a static /bin/busybox (Debian busybox-static)"
	fi
	mkdir -p "$QEMU_DIR"
	KVER=${KVER:-$(apt-cache depends linux-image-amd64 | sed -n 's/.*Depends: linux-image-\(.*-amd64\)$/\1/p' | head -n 1)}
	[ -n "$KVER" ] || die "cannot tell the kernel version from 'apt-cache depends linux-image-amd64'"
	T=$(mktemp -d "$QEMU_DIR/prepare.XXXXXX")
	trap 'rm -rf "$T"' EXIT
	deb=$QEMU_DIR/linux-image-$KVER.deb
	if [ ! -f "$deb" ]; then
		# apt-get download, not install: installing drags in initramfs-tools, udev and systemd
		(cd "$T" && apt-get download -q "linux-image-$KVER" >apt.log 2>&1) ||
			{ cat "$T/apt.log" >&2; die "apt-get download linux-image-$KVER failed"; }
		mv "$T"/linux-image-*.deb "$deb"
	fi
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$T" "./boot/vmlinuz-$KVER" "./lib/modules/$KVER"
	KM=$T/lib/modules/$KVER
	# "NAME PATH" per module, NAME spelt with _ as in depends=
	find "$KM/kernel" -name '*.ko*' |
		awk '{ n = $0; sub(/.*\//, "", n); sub(/\.ko.*/, "", n); gsub(/-/, "_", n); print n, $0 }' >"$T/index"
	mkdir -p "$T/ko" && : >"$T/order"
	resolve $MODS

	I=$T/initrd.d
	mkdir -p "$I/bin" "$I/dev" "$I/proc" "$I/sys" "$I/newroot" "$I/lib/modules"
	cp /bin/busybox "$I/bin/busybox"
	cc -static -O2 -o "$I/bin/kvm_smoke" "$SMOKE" || die "cannot build $SMOKE"
	for m in $(cat "$T/order"); do cp "$T/ko/$m.ko" "$I/lib/modules/"; done
	cp "$T/order" "$I/lib/modules/order"
	init_script >"$I/init"
	chmod +x "$I/init"
	# busybox's cpio: the cpio package may be absent; gzip boots as fast as uncompressed, at a third of the size
	(cd "$I" && find . | /bin/busybox cpio -o -H newc 2>/dev/null) | gzip -9 >"$T/initrd"

	cp "$T/boot/vmlinuz-$KVER" "$T/vmlinuz"
	# The uncompressed ELF kernel boots through PVH in about half the time (no emulated XZ decompression).
	# bzImage carries it as one XZ stream; readelf checks for the PVH entry note (a "Xen" note).
	off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$T/vmlinuz" | head -n 1 | cut -d: -f1)
	if [ -n "$off" ] && tail -c +$((off + 1)) "$T/vmlinuz" | xz -dc --single-stream >"$T/vmlinux" 2>/dev/null &&
		readelf -n "$T/vmlinux" 2>/dev/null | grep -q Xen; then
		mv "$T/vmlinux" "$QEMU_DIR/vmlinux"
	else
		rm -f "$T/vmlinux" "$QEMU_DIR/vmlinux"
		echo "qemu-kvm: prepare: no PVH vmlinux in vmlinuz-$KVER, booting the bzImage (slower)" >&2
	fi
	mv "$T/vmlinuz" "$T/initrd" "$QEMU_DIR/"
	echo "linux-image-$KVER; modules: $(paste -sd ' ' "$T/order")" >"$QEMU_DIR/stamp"
	rm -rf "$T"
	trap - EXIT
	echo "qemu-kvm: prepare: built $QEMU_DIR from $(cat "$QEMU_DIR/stamp")" >&2
}

init_script()
{
	cat <<'EOF'
#!/bin/busybox sh
# /init of scripts/qemu-kvm.sh's guest: loads KVM and the virtio drivers, builds the host's root, runs the job.
/bin/busybox --install -s /bin
export PATH=/bin
R=$qkvm_run # the run directory, shared with the host at the same path
N=/newroot
fail()
{
	echo "qemu-kvm guest: $*"
	[ -d "$N$R" ] && echo "$*" >>"$N$R/error"
	poweroff -f
}
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
ip link set lo up
for m in $(cat /lib/modules/order); do
	insmod /lib/modules/$m.ko || fail "insmod $m failed: $(dmesg | grep -i -e svm -e kvm | tail -n 3)"
done
# msize: the largest the 6.1 virtio transport takes; cache=loose: the host root is read-only to us
o=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o $o,ro,cache=loose hostroot $N || fail "cannot mount the host's root over 9p"
mount -t proc proc $N/proc
mount -t sysfs sys $N/sys
mount -t devtmpfs dev $N/dev
mkdir -p $N/dev/shm && mount -t tmpfs shm $N/dev/shm
# ext4, not tmpfs: tmpfs refuses O_DIRECT on this kernel
mount -t ext4 /dev/vda $N/tmp || fail "cannot mount the scratch disk on /tmp"
chmod 1777 $N/tmp
# a command run from under the host's /tmp (a checkout there) would lose its directory: put it back
if [ -n "$qkvm_cwd" ]; then
	mkdir -p $N$qkvm_cwd
	mount -t 9p -o $o,ro,cache=loose cwd $N$qkvm_cwd || fail "cannot mount $qkvm_cwd"
fi
mkdir -p $N$R 2>/dev/null
mount -t 9p -o $o results $N$R || fail "cannot mount the results share on $R"
while read -r tag dir; do
	mkdir -p $N$dir 2>/dev/null
	mount -t 9p -o $o $tag $N$dir || fail "cannot mount --rw $dir"
done <$N$R/rw
for p in /sys/class/virtio-ports/*; do
	eval "$(cat $p/name)=/dev/${p##*/}"
done
[ -n "$out" ] && [ -n "$err" ] || fail "no virtio ports for the command's stdout and stderr"
[ -c /dev/kvm ] || fail "no /dev/kvm: $(dmesg | grep -i -e svm -e kvm | tail -n 3)"
kvm_smoke >/dev/null 2>/smoke.err || fail "KVM does not work: $(cat /smoke.err)"
chroot $N /bin/sh $R/job.sh </dev/null >$out 2>$err
echo $? >$N$R/rc
poweroff -f
EOF
}

# quote WORD: WORD as one single-quoted shell word
quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# env_word NAME[=VALUE]: the quoted NAME=VALUE for env(1); a bare NAME takes the host's value
env_word()
{
	case ${1%%=*} in '' | [0-9]* | *[!A-Za-z0-9_]*) die "--env $1: not a variable name" ;; esac
	case $1 in
	*=*) quote "$1" ;;
	*) eval "quote \"$1=\${$1-}\"" ;;
	esac
}

# plain PATH: PATH can go on the kernel command line and in QEMU's options (they split on spaces and commas)
plain() { case $1 in *[[:space:],]*) die "paths with spaces or commas are not supported: '$1'" ;; esac; }

run()
{
	timeout=1800 mem=4G smp=1 envs="" rws=""
	for v in $PASS; do
		eval "[ -z \"\${$v+set}\" ]" || envs="$envs $(env_word "$v")"
	done
	while [ $# -gt 0 ]; do
		case $1 in
		--timeout) timeout=$2 ;;
		--mem) mem=$2 ;;
		--smp) smp=$2 ;;
		--env) envs="$envs $(env_word "$2")" ;;
		--rw) d=$(cd "$2" && pwd) || die "--rw $2: no such directory"; plain "$d"; rws="$rws $d" ;;
		--) shift; break ;;
		*) die "unknown option $1 (usage: see the top of $SELF)" ;;
		esac
		shift 2
	done
	[ $# -gt 0 ] || die "run: no command given"
	command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing (Debian qemu-system-x86)"
	command -v mkfs.ext4 >/dev/null || die "mkfs.ext4 is missing (Debian e2fsprogs)"
	fresh || prepare
	kernel=$QEMU_DIR/vmlinux
	[ -f "$kernel" ] || kernel=$QEMU_DIR/vmlinuz
	run=$(mktemp -d "$QEMU_DIR/run.XXXXXX")
	trap 'rm -rf "$run"' EXIT
	trap 'exit 130' INT TERM
	plain "$run"

	# env -i: CMD gets exactly the variables passed, not whatever the guest's init had
	{
		echo "cd $(quote "$PWD") || exit 125"
		printf 'exec env -i%s' "$envs"
		for a in "$@"; do printf ' %s' "$(quote "$a")"; done
		echo
	} >"$run/job.sh"

	set --
	n=0
	for d in $rws; do
		n=$((n + 1))
		echo "rw$n $d"
		set -- "$@" -virtfs "local,path=$d,mount_tag=rw$n,security_model=none,multidevs=remap"
	done >"$run/rw"
	cwd=""
	case $PWD in /tmp/*)
		cwd=$PWD
		plain "$cwd"
		set -- "$@" -virtfs "local,path=$cwd,mount_tag=cwd,security_model=none,readonly=on,multidevs=remap"
		;;
	esac
	# a fresh sparse disk per run: nothing leaks from one run's /tmp into the next
	truncate -s 16G "$run/scratch.img"
	mkfs.ext4 -q -F -O ^has_journal -m 0 "$run/scratch.img"

	# acpi=noirq: setting up the ACPI PCI interrupt links takes ~1 s of emulated AML; the BIOS's $PIR table
	# routes the interrupts as well.
	# -display none, not -nographic: nothing on stdio. The kernel's console goes to a file, CMD's output
	# to two virtio ports read through FIFOs by cat: cat writes to our own stdout and stderr, so their file
	# offsets stay shared with the caller (QEMU reopening /proc/self/fd/1 would get offsets of its own).
	# A reader that goes away (`| head`) must not stall the guest's writes: a second cat drains the rest.
	mkfifo "$run/out" "$run/err"
	{ cat || cat >/dev/null; } <"$run/out" &
	{ cat >&2 || cat >/dev/null; } <"$run/err" &
	timeout "$timeout" qemu-system-x86_64 -accel tcg -cpu "${QEMU_CPU:-max}" -m "$mem" -smp "$smp" -display none \
		-no-reboot -nic none -monitor none -serial "file:$run/console.log" \
		-kernel "$kernel" -initrd "$QEMU_DIR/initrd" \
		-append "console=ttyS0 panic=-1 quiet loglevel=3 acpi=noirq qkvm_run=$run${cwd:+ qkvm_cwd=$cwd}" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$run,mount_tag=results,security_model=none,multidevs=remap" "$@" \
		-drive "file=$run/scratch.img,if=virtio,format=raw,cache=unsafe" \
		-device virtio-serial-pci \
		-chardev "file,id=out,path=$run/out" -device virtserialport,chardev=out,name=out \
		-chardev "file,id=err,path=$run/err" -device virtserialport,chardev=err,name=err &
	qpid=$!
	# in the background so that our INT/TERM can stop it (an async command ignores SIGINT)
	trap 'kill $qpid 2>/dev/null; wait $qpid; : <>"$run/out" 2<>"$run/err"; exit 130' INT TERM
	q=0
	wait $qpid || q=$?
	trap - INT TERM
	# wakes a cat still waiting in open() when QEMU never opened its FIFO; never blocks itself
	: <>"$run/out" 2<>"$run/err"
	wait
	if [ $q = 124 ]; then
		echo "qemu-kvm: TIMEOUT: killed QEMU after $timeout s" >&2
		exit 124
	fi
	[ -f "$run/rc" ] && exit "$(cat "$run/rc")"
	[ $q = 0 ] || die "QEMU failed (exit status $q; its message is above)"
	[ -s "$run/error" ] && echo "qemu-kvm: guest: $(cat "$run/error")" >&2
	echo "qemu-kvm: the guest ended without running the command; the end of its console:" >&2
	if [ -s "$run/console.log" ]; then
		tail -n 20 "$run/console.log" >&2
	else
		echo "(nothing: is $kernel a bootable kernel? try 'prepare' after removing $QEMU_DIR/stamp)" >&2
	fi
	exit 125
}

case ${1:-} in
prepare) shift; [ $# = 0 ] || QEMU_DIR=$1; mkdir -p "$QEMU_DIR"; QEMU_DIR=$(cd "$QEMU_DIR" && pwd); prepare ;;
run) shift; mkdir -p "$QEMU_DIR"; QEMU_DIR=$(cd "$QEMU_DIR" && pwd); run "$@" ;;
*) die "usage: $0 prepare [DIR] | run [OPTIONS] -- CMD ARGS... (the options: see the top of $SELF)" ;;
esac
