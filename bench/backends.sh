# Sourced by the benchmark scripts: BACKENDS, both where /dev/kvm works; EMBER_BACKEND=kvm|ptrace
# picks one.
if [ -n "${EMBER_BACKEND:-}" ] && [ "$EMBER_BACKEND" != auto ] && [ "$EMBER_BACKEND" != both ]; then
	BACKENDS=$EMBER_BACKEND
elif [ -c /dev/kvm ] && (exec 3<>/dev/kvm) 2>/dev/null; then
	BACKENDS="kvm ptrace"
else
	BACKENDS=ptrace
	echo "kvm: /dev/kvm does not work here: only ptrace measured"
fi
