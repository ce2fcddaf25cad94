/* The peers' commands: bubblewrap, runc with a one-binary OCI bundle, gVisor's runsc on each
 * platform, a QEMU microvm booting the Debian kernel with the binary as init, a plain spawn. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_peer.h"
#include "cli/cli.h"

/* argv from a NULL-terminated list of strings, each strdup'ed (they live as long as the run) */
static void set_argv(struct peer_cmd *cmd, const char *const *words)
{
	size_t i = 0;
	for (; words[i] && i < sizeof(cmd->argv) / sizeof(cmd->argv[0]) - 1; i++)
		cmd->argv[i] = strdup(words[i]);
	cmd->argv[i] = NULL;
}

/* the installed tool name, into path; -1 with the reason when it is missing */
static int need(const char *name, char *path, size_t len, char *err, size_t errlen)
{
	if (!peer_which(name, path, len))
		return 0;
	snprintf(err, errlen, "%s is not installed (scripts/setup.sh --bench installs it)", name);
	return -1;
}

/* runs a shell command line (printf-style), quietly; 0 when it exits 0 */
__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
	char buf[24000];
	va_list ap;
	va_start(ap, fmt);
	buf[0] = '(';
	int n = vsnprintf(buf + 1, sizeof(buf) - 24, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf) - 24)
		return -1;
	strcat(buf, ") >/dev/null 2>&1"); /* the whole line's output, not its last command's */
	return system(buf) == 0 ? 0 : -1;
}

static int p_spawn(const struct peer_env *e, const char *tag, const char *prog, const void *req,
		   size_t len, struct peer_cmd *cmd, char *err, size_t errlen)
{
	(void)e, (void)tag, (void)req, (void)len, (void)err, (void)errlen;
	set_argv(cmd, (const char *const[]){prog, NULL});
	return 0;
}

static int p_bwrap(const struct peer_env *e, const char *tag, const char *prog, const void *req,
		   size_t len, struct peer_cmd *cmd, char *err, size_t errlen)
{
	(void)e, (void)tag, (void)req, (void)len;
	char bw[4096];
	if (need("bwrap", bw, sizeof(bw), err, errlen))
		return -1;
	set_argv(cmd, (const char *const[]){bw, "--unshare-all", "--die-with-parent", "--ro-bind",
					    prog, "/fn", "/fn", NULL});
	return 0;
}

/* `runc spec`'s config.json with the binary as the process and a read-only root */
static int runc_config(const char *bundle, char *err, size_t errlen)
{
	char path[4400];
	snprintf(path, sizeof(path), "%s/config.json", bundle);
	json_error_t je;
	json_t *c = sh("cd '%s' && runc spec", bundle) ? NULL : json_load_file(path, 0, &je);
	json_t *proc = c ? json_object_get(c, "process") : NULL;
	if (!proc) {
		json_decref(c);
		return snprintf(err, errlen, "runc spec failed in %s", bundle), -1;
	}
	json_object_set_new(proc, "args", json_pack("[s]", "/fn"));
	json_object_set_new(proc, "terminal", json_false());
	json_object_set_new(c, "root", json_pack("{s:s,s:b}", "path", "rootfs", "readonly", 1));
	int rc = json_dump_file(c, path, JSON_INDENT(1));
	json_decref(c);
	if (rc)
		snprintf(err, errlen, "cannot write %s", path);
	return rc ? -1 : 0;
}

static int p_runc(const struct peer_env *e, const char *tag, const char *prog, const void *req,
		  size_t len, struct peer_cmd *cmd, char *err, size_t errlen)
{
	(void)req, (void)len;
	char rc_path[4096], bundle[4200], id[80];
	if (need("runc", rc_path, sizeof(rc_path), err, errlen))
		return -1;
	snprintf(bundle, sizeof(bundle), "%s/runc-%s", e->tmp, tag);
	snprintf(id, sizeof(id), "ember-bench-%d-%s", (int)getpid(), tag);
	if (sh("mkdir -p '%s/rootfs' && cp '%s' '%s/rootfs/fn'", bundle, prog, bundle))
		return snprintf(err, errlen, "cannot make the bundle %s", bundle), -1;
	if (runc_config(bundle, err, errlen))
		return -1;
	set_argv(cmd, (const char *const[]){rc_path, "run", "--bundle", bundle, id, NULL});
	return 0;
}

static int runsc_on(const char *platform, const char *prog, struct peer_cmd *cmd, char *err,
		    size_t errlen)
{
	char r[4096], flag[64];
	if (need("runsc", r, sizeof(r), err, errlen))
		return -1;
	snprintf(flag, sizeof(flag), "--platform=%s", platform);
	set_argv(cmd, (const char *const[]){r, flag, "--network=none", "do", prog, NULL});
	return 0;
}

static int p_runsc_ptrace(const struct peer_env *e, const char *tag, const char *prog,
			  const void *req, size_t len, struct peer_cmd *cmd, char *err,
			  size_t errlen)
{
	(void)e, (void)tag, (void)req, (void)len;
	return runsc_on("ptrace", prog, cmd, err, errlen);
}

static int p_runsc_kvm(const struct peer_env *e, const char *tag, const char *prog, const void *req,
		       size_t len, struct peer_cmd *cmd, char *err, size_t errlen)
{
	(void)e, (void)tag, (void)req, (void)len;
	if (access("/dev/kvm", R_OK | W_OK))
		return snprintf(err, errlen, "no /dev/kvm"), -1;
	return runsc_on("kvm", prog, cmd, err, errlen);
}

/* DIR/vm-TAG.cpio: /init (bench/vminit: the request file on stdin, then exec), /fn, /req */
static int initramfs(const struct peer_env *e, const char *tag, const char *prog, const void *req,
		     size_t len, char *out, size_t outlen, char *err, size_t errlen)
{
	char dir[4200], init[4200], line[4400], bb[4096];
	if (need("busybox", bb, sizeof(bb), err, errlen))
		return -1;
	snprintf(init, sizeof(init), "%s/bench/vminit", e->build);
	if (access(init, X_OK))
		return snprintf(err, errlen, "%s is missing (make all builds it)", init), -1;
	snprintf(dir, sizeof(dir), "%s/vm-%s", e->tmp, tag);
	snprintf(out, outlen, "%s.cpio", dir);
	if (sh("mkdir -p '%s' && cp '%s' '%s/init' && cp '%s' '%s/fn'", dir, init, dir, prog, dir))
		return snprintf(err, errlen, "cannot stage %s", dir), -1;
	snprintf(line, sizeof(line), "%s/req", dir);
	FILE *f = fopen(line, "w");
	int ok = f && fwrite(req, 1, len, f) == len;
	if (f)
		ok = !fclose(f) && ok;
	if (!ok || sh("cd '%s' && find . | '%s' cpio -o -H newc >'%s'", dir, bb, out))
		return snprintf(err, errlen, "cannot build the initramfs %s", out), -1;
	return 0;
}

/* QEMU's microvm booting the kernel with the binary as init; with kvm, KVM, else TCG */
static int microvm(const struct peer_env *e, const char *tag, const char *prog, const void *req,
		   size_t len, int kvm, struct peer_cmd *cmd, char *err, size_t errlen)
{
	char q[4096], cpio[4300];
	if (need("qemu-system-x86_64", q, sizeof(q), err, errlen))
		return -1;
	if (!e->vmlinux)
		return snprintf(err, errlen,
				"no guest kernel (scripts/qemu-kvm.sh prepare makes "
				"build/qemu/vmlinux; scripts/setup.sh --bench runs it)"),
		       -1;
	if (kvm && access("/dev/kvm", R_OK | W_OK))
		return snprintf(err, errlen, "no /dev/kvm"), -1;
	if (initramfs(e, tag, prog, req, len, cpio, sizeof(cpio), err, errlen))
		return -1;
	/* tsc_early_khz: microvm has no PIT/HPET to calibrate the TSC against (else it hangs) */
	set_argv(cmd, (const char *const[]){q, "-M", "microvm,isa-serial=on,rtc=on", "-accel",
					    kvm ? "kvm" : "tcg", "-cpu",
					    kvm ? "host,-arch-capabilities" : "max", "-m", "256M",
					    "-no-user-config", "-nographic", "-no-reboot",
					    "-kernel", e->vmlinux, "-initrd", cpio, "-append",
					    "console=ttyS0 panic=-1 quiet loglevel=3 rdinit=/init "
					    "tsc_early_khz=2000000",
					    NULL});
	cmd->stdin_null = 1;
	cmd->stop_at_want = 1;
	return 0;
}

static int p_vm_kvm(const struct peer_env *e, const char *tag, const char *prog, const void *req,
		    size_t len, struct peer_cmd *cmd, char *err, size_t errlen)
{
	return microvm(e, tag, prog, req, len, 1, cmd, err, errlen);
}

static int p_vm_tcg(const struct peer_env *e, const char *tag, const char *prog, const void *req,
		    size_t len, struct peer_cmd *cmd, char *err, size_t errlen)
{
	return microvm(e, tag, prog, req, len, 0, cmd, err, errlen);
}

const struct peer bench_peers[] = {
    {"posix_spawn", p_spawn, 0},   {"bwrap", p_bwrap, 0},
    {"runc", p_runc, 0},	   {"runsc_ptrace", p_runsc_ptrace, 1},
    {"runsc_kvm", p_runsc_kvm, 1}, {"microvm_kvm", p_vm_kvm, 2},
    {"microvm_tcg", p_vm_tcg, 2},
};
const size_t bench_npeers = sizeof(bench_peers) / sizeof(bench_peers[0]);
