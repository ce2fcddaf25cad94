/* What the fuzzing harnesses share: a reader of the fuzzer's bytes, a failed invariant, the one
 * machine a harness makes per process, guest programs and a private temporary folder. */
#ifndef EMBER_FUZZ_COMMON_H
#define EMBER_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "sys/sys.h"
#include "vm/vm.h"

/* for the harnesses' own checks: not coverage the fuzzer should steer by, and costly when
 * instrumented */
#define FZ_UNTRACED __attribute__((no_sanitize("coverage")))

/* the libFuzzer entry points every harness defines */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input, consumed from the front; reads past its end give zeros, so that every input,
 * however short, decodes to something. */
struct fz {
	const uint8_t *p;
	size_t n;
};
uint8_t fz_u8(struct fz *f);
uint16_t fz_u16(struct fz *f);
uint32_t fz_u32(struct fz *f);
uint64_t fz_u64(struct fz *f);
/* up to n bytes from the input, *got of them (the pointer stays valid for the input's call) */
const uint8_t *fz_bytes(struct fz *f, size_t n, size_t *got);

/* A broken invariant: says which, where, and aborts (libFuzzer keeps the input as a crash). */
#define FZ_CHECK(cond, ...)                                                                        \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                           \
	} while (0)
void fz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));

/* the backend of every machine: $EMBER_BACKEND, else "auto" (KVM when it works, else ptrace) */
const char *fz_backend(void);
/* A machine of mem bytes, made at the first call and kept for the process. */
struct vm *fz_vm(uint64_t mem);
/* the path of guest program name: $EMBER_GUEST_DIR (default build/guest)/name */
const char *fz_guest(const char *name);
/* KVM: the page tables grant the program exactly the map v (n sorted ranges) and none of the
 * host's structures: a page outside it is not the program's (no user bit); other backends: no-op */
void fz_check_ptes(struct vm *vm, const struct sys_vma *v, size_t n);
/* a folder of the process's own, made at the first call, removed with all it holds at exit */
const char *fz_tmpdir(void);
/* writes len bytes to dir/name (replacing it); aborts when it cannot */
void fz_write(const char *dir, const char *name, const void *buf, size_t len);

#endif
