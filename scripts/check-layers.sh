#!/bin/sh
# Checks the layering of src/ (docs/architecture.md, "Layers"): every folder has a rank, and an
# include of "F/..." from a file in folder G needs rank(F) <= rank(G). Folders of one rank are
# one layer in several folders and may include each other (sys, fd and fs; server, async and
# metrics). The top floor (cli, client) reaches the library through its public API only
# (include/ember/), beside the server's own interface and the base layer, but for the few
# process-wide settings listed in TOP_EXCEPTIONS; bench may reach anywhere below it. Also checks
# that every folder of src/ has a rank and that every file opens with its purpose line.
# Usage: scripts/check-layers.sh [ROOT]   (exit 0: clean; 1: the lines printed are wrong)
cd "${1:-.}" || exit 1

RANKS="base:0 guest:0 vm:1 proc:2 image:3 bundle:3 sys:4 fd:4 fs:4 snap:5 cold:6 family:6
share:6 pool:7 func:8 server:9 async:9 metrics:9 cli:10 client:11 bench:12 main:13"

# the top floor's reaches below the public API, each with its reason (file: header)
TOP_EXCEPTIONS="
src/cli/run.c: pool/pool.h      no shells made ahead for one program (pool_shell_target)
src/cli/run.c: cold/cold_land.h no landing made ahead for one program (cold_land_keep)
src/cli/run.c: vm/vm.h          /dev/kvm opened before the sandbox (vm_dev_prepare)
src/cli/serve.c: vm/vm.h        /dev/kvm opened before root is dropped (vm_dev_open)
src/cli/serve_workers.c: vm/vm.h /dev/kvm opened once before the workers are forked (vm_dev_open)
src/cli/snapshot.c: pool/pool.h no shells made ahead when nothing is invoked
src/cli/util.c: image/img.h     where the language runtimes are installed (img_runtime_dir)
src/client/deploy_files.c: bundle/bnd.h a function's files checked as the server will
"
# what the top floor may include besides its own folders
TOP_OK="ember base cli client server"

rank() {
	for r in $RANKS; do
		[ "${r%%:*}" = "$1" ] && { echo "${r#*:}"; return; }
	done
	echo none
}

bad=0
for d in src/*/; do
	d=${d#src/}
	d=${d%/}
	if [ "$(rank "$d")" = none ]; then
		echo "src/$d: a folder with no rank in scripts/check-layers.sh (and the layer table)"
		bad=1
	fi
done

files=$(find src -name '*.[chS]' | sort)
for f in $files; do
	case "$f" in
	src/main.c) g=main ;;
	*) g=$(echo "$f" | cut -d/ -f2) ;;
	esac
	head -1 "$f" | grep -q '^/\*' || { echo "$f: no purpose line"; bad=1; }
	gr=$(rank "$g")
	for inc in $(sed -n 's/^#include "\([a-z_]*\)\/\([a-z_0-9]*\.h\)".*/\1\/\2/p' "$f"); do
		t=${inc%%/*}
		[ "$t" = "$g" ] && continue
		[ "$t" = ember ] && continue
		tr=$(rank "$t")
		if [ "$tr" = none ] || [ "$tr" -gt "$gr" ]; then
			echo "$f: includes $inc, a layer above its own ($g)"
			bad=1
			continue
		fi
		case "$g" in
		cli | client)
			case " $TOP_OK " in *" $t "*) continue ;; esac
			if ! echo "$TOP_EXCEPTIONS" | grep -q "^$f: $inc "; then
				echo "$f: includes $inc, below the public API (only src/bench may)"
				bad=1
			fi
			;;
		esac
	done
done
[ "$bad" = 0 ] && echo "layers: $(echo "$files" | wc -l) files, every include downward"
exit "$bad"
