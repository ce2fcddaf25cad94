# Guest test programs: static x86-64 programs the test-suite runs both in virtines and natively.
# Every NAME.c builds NAME.musl; hello, workout, args, counter, marker and procs also build
# .glibc, .musl-pie, .glibc-pie.
GUEST_SRC    := tests/guest
GUEST_OUT    := $(B)/guest
GUEST_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Iinclude -MMD -MP
# Debian's musl-gcc specs cannot link a static PIE (-static-pie keeps Scrt1.o and an INTERP), so
# the .musl-pie variant is linked by hand with musl's self-relocating rcrt1.o.
MUSL_LIBDIR  ?= /usr/lib/x86_64-linux-musl
MUSL_PIE_PRE  = $(MUSL_LIBDIR)/rcrt1.o $(MUSL_LIBDIR)/crti.o $(shell $(CC) -print-file-name=crtbeginS.o)
MUSL_PIE_POST = $(shell $(CC) -print-file-name=crtendS.o) $(MUSL_LIBDIR)/crtn.o

GUEST_PROGS := hello workout args exitcode crash_null crash_abort crash_stack crash_div crash_ud2 \
	crash_hlt crash_int3 crash_fpe loop membomb outbomb forbidden sleepy nap bad_int80 bad_sysenter
# snapshot, pool and metadata guests (tests/integration/test_snapshot.sh and test_server.sh,
# tests/unit/test_pool.c)
GUEST_PROGS += counter marker slowinit snapcall crashy echoreq reprotect rawsys meta redzone filemix clockrand \
	memcalls memfuzz
GUEST_PROGS += fpustate rodontneed isolation unaligned dirtier giveback badbuf crash_nullcall \
	crash_nullret tmpfs tmplinks fifo tmpexec
# threads and signals: what an invocation leaves must not reach the next, careless and hostile
# programs (tests/integration/test_threads.sh)
GUEST_PROGS += threadleak hostile_threads
# reservations larger than guest memory (tests/integration/test_guest.sh)
GUEST_PROGS += farmap
# stderr for the server's logs (tests/integration/test_logs.sh)
GUEST_PROGS += logger
# the bundle's file calls (tests/integration/test_files.sh)
GUEST_PROGS += files fileread filestat stdstat
# OpenFaaS's secrets at /var/openfaas/secrets (tests/integration/test_secrets.sh)
GUEST_PROGS += secretread
# readiness and event calls between threads (tests/integration/test_guest.sh)
GUEST_PROGS += events
# descriptors, pipes and /proc as Linux has them (tests/integration/test_fdmeta.sh)
GUEST_PROGS += fdmeta
# threads for `ember bench programs`: create+join timed inside, work split over two threads
GUEST_PROGS += threadbench parwork
# the cost of a first touch of a page (docs/benchmarks.md)
GUEST_PROGS += pagetouch
# processes for `ember bench programs`: fork + execve of itself + wait4, fork + _exit + wait4,
# timed inside
GUEST_PROGS += forkbench
# a machine a process left, emptied and given to the next (tests/integration/test_procs.sh)
GUEST_PROGS += reuse
# processes in an invocation (tests/integration/test_procs.sh): with glibc too, whose fork is
# clone(CLONE_CHILD_SETTID|CLONE_CHILD_CLEARTID|SIGCHLD) where musl's is SYS_fork
GUEST_PROGS += procs
# MAP_SHARED of /tmp files, /dev/zero and anonymous memory (tests/integration/test_shmap.sh)
GUEST_PROGS += shmap
# RLIMIT_DATA and RLIMIT_AS set by the program (tests/integration/test_guest.sh)
GUEST_PROGS += rlimits
# process and thread calls checked against Linux's answers (tests/integration/test_proccalls.sh),
# with glibc too, whose robust and PI mutexes lean on the kernel
GUEST_PROGS += proccalls
# nice values (getpriority, setpriority), the alternate signal stack (nested faults, a frame
# that runs off its bottom), setitimer's timers across fork and execve
# (tests/integration/test_proccalls.sh)
GUEST_PROGS += priority sigstack itimers
# a fork in a start from disk: the child sees the snapshot's pages the parent had not had yet
# (tests/integration/test_coldload.sh)
GUEST_PROGS += forkcold
GUEST_MULTI := hello workout args counter marker procs

GUEST_MUSL      := $(GUEST_PROGS:%=$(GUEST_OUT)/%.musl)
GUEST_GLIBC     := $(GUEST_MULTI:%=$(GUEST_OUT)/%.glibc) $(GUEST_OUT)/proccalls.glibc \
	$(GUEST_OUT)/fifo.glibc
GUEST_MUSL_PIE  := $(GUEST_MULTI:%=$(GUEST_OUT)/%.musl-pie)
GUEST_GLIBC_PIE := $(GUEST_MULTI:%=$(GUEST_OUT)/%.glibc-pie)
GUEST_BINS      := $(GUEST_MUSL) $(GUEST_GLIBC) $(GUEST_MUSL_PIE) $(GUEST_GLIBC_PIE) \
	$(GUEST_OUT)/exitfloor.musl $(GUEST_OUT)/hello.dyn $(GUEST_OUT)/vdsoclock.dyn \
	$(GUEST_OUT)/libsites.dyn

.PHONY: guests
guests: $(GUEST_BINS)

# each binary's dependency file is BIN.d (-MF/-MT), so a header or source change rebuilds it
GUEST_DEP = -MF $@.d -MT $@

$(GUEST_MUSL): $(GUEST_OUT)/%.musl: $(GUEST_SRC)/%.c $(GUEST_SRC)/guest.mk
	@mkdir -p $(dir $@)
	$(MUSLCC) $(GUEST_CFLAGS) $(GUEST_DEP) -static -o $@ $(GUEST_BASE) $<

# programs that write with the base layer's write-all loop (src/base/base_write.c, libc only)
GUEST_WRITERS := echoreq logger
$(GUEST_WRITERS:%=$(GUEST_OUT)/%.musl): GUEST_BASE := -Isrc src/base/base_write.c
$(GUEST_WRITERS:%=$(GUEST_OUT)/%.musl): src/base/base_write.c

$(GUEST_GLIBC): $(GUEST_OUT)/%.glibc: $(GUEST_SRC)/%.c $(GUEST_SRC)/guest.mk
	@mkdir -p $(dir $@)
	$(CC) $(GUEST_CFLAGS) $(GUEST_DEP) -static -o $@ $<

$(GUEST_MUSL_PIE): $(GUEST_OUT)/%.musl-pie: $(GUEST_SRC)/%.c $(GUEST_SRC)/guest.mk
	@mkdir -p $(dir $@)
	$(MUSLCC) $(GUEST_CFLAGS) $(GUEST_DEP) -fPIE -static -nostartfiles \
		-Wl,-pie,--no-dynamic-linker,-z,text -o $@ $(MUSL_PIE_PRE) $< $(MUSL_PIE_POST)

$(GUEST_GLIBC_PIE): $(GUEST_OUT)/%.glibc-pie: $(GUEST_SRC)/%.c $(GUEST_SRC)/guest.mk
	@mkdir -p $(dir $@)
	$(CC) $(GUEST_CFLAGS) $(GUEST_DEP) -fPIE -static-pie -o $@ $<

# dynamic, with glibc: its interpreter named by the path its libc's DT_NEEDED resolves to too
# (the closure holds it once: tests/integration/test_corpus.sh)
$(GUEST_OUT)/hello.dyn: $(GUEST_SRC)/hello.c $(GUEST_SRC)/guest.mk
	@mkdir -p $(dir $@)
	$(CC) $(GUEST_CFLAGS) $(GUEST_DEP) \
		-Wl,--dynamic-linker=/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 -o $@ $<

# dynamic, with glibc: its clock through the vDSO (tests/integration/test_corpus.sh)
$(GUEST_OUT)/vdsoclock.dyn: $(GUEST_SRC)/vdsoclock.c $(GUEST_SRC)/guest.mk
	@mkdir -p $(dir $@)
	$(CC) $(GUEST_CFLAGS) $(GUEST_DEP) -o $@ $<

# dynamic, with glibc: its clock through libc.so.6's own syscall, rewritten where ld.so maps it
# (tests/integration/test_corpus.sh)
$(GUEST_OUT)/libsites.dyn: $(GUEST_SRC)/libsites.c $(GUEST_SRC)/guest.mk
	@mkdir -p $(dir $@)
	$(CC) $(GUEST_CFLAGS) $(GUEST_DEP) -o $@ $<

# no libc at all: its own _start spins on the EMBER_HC_NOP hypercall
$(GUEST_OUT)/exitfloor.musl: $(GUEST_SRC)/exitfloor.c $(GUEST_SRC)/guest.mk
	@mkdir -p $(dir $@)
	$(MUSLCC) $(GUEST_CFLAGS) $(GUEST_DEP) -static -nostdlib -o $@ $<

-include $(GUEST_BINS:=.d)
