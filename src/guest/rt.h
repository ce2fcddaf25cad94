/* The in-guest runtime's internals: hypercalls, the control block, small freestanding helpers. */
#ifndef EMBER_RT_H
#define EMBER_RT_H

#include <stddef.h>
#include <stdint.h>

#include "ember/abi.h"

#define RT_CTL ((volatile struct ember_rt_ctl *)EMBER_RT_CTL)

/* what a handler returns to hand the program's call to the host unchanged: the runtime leaves
 * first and the call exits from EMBER_RT_FORWARD_OUT as if made at its site, so that it may
 * wait, or be interrupted by a signal, outside the runtime (never a value Linux returns) */
#define RT_FORWARD (-100000L)

#ifdef EMBER_RT_HOSTED
struct ember_rt_cpu *rt_hosted_cpu(void);
static inline volatile struct ember_rt_cpu *rt_cpu(void)
{
	return rt_hosted_cpu();
}
#else
/* this vCPU's area (GS base: abi.h) */
static inline volatile struct ember_rt_cpu *rt_cpu(void)
{
	uint64_t a;
	__asm__ volatile("mov %%gs:0, %0" : "=r"(a));
	return (volatile struct ember_rt_cpu *)a;
}
#endif

/* the runtime's shared state, one vCPU at a time (struct ember_rt_ctl's lock) */
static inline uint64_t rt_lock_id(volatile struct ember_rt_cpu *me)
{
	return (me->self - EMBER_RT_CPUS) / EMBER_RT_CPU_SIZE + 1;
}

static inline void rt_lock(volatile struct ember_rt_cpu *me)
{
	uint64_t id = rt_lock_id(me), free = 0;
	while (!__atomic_compare_exchange_n(&RT_CTL->lock, &free, id, 0, __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED)) {
		free = 0;
		__asm__ volatile("pause");
	}
}

static inline void rt_unlock(volatile struct ember_rt_cpu *me)
{
	uint64_t id = rt_lock_id(me);
	__atomic_compare_exchange_n(&RT_CTL->lock, &id, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

#ifdef EMBER_RT_HOSTED
/* built into a host program (tests/fuzz/fuzz_rt.c, its memory calls), which plays the host */
long rt_hc_syscall(long nr, long a0, long a1, long a2, long a3, long a4, long a5);
#else
/* a syscall served by the host emulation: the one generic hypercall */
static inline long rt_hc_syscall(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
	register long r10 __asm__("r10") = a3;
	register long r8 __asm__("r8") = a4;
	register long r9 __asm__("r9") = a5;
	__asm__ volatile("out %%al, %[port]"
			 : "+a"(nr)
			 : [port] "i"(EMBER_HC_SYSCALL), "D"(a0), "S"(a1), "d"(a2), "r"(r10),
			   "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return nr;
}
#endif

/* forwards the program's syscall to the host emulation, which counts it as served there */
static inline long rt_forward(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
	RT_CTL->forwarded++;
	return rt_hc_syscall(nr, a0, a1, a2, a3, a4, a5);
}

static inline void rt_hypercall(int port)
{
	if (port == EMBER_HC_INPUT)
		__asm__ volatile("out %%al, %[p]"
				 :
				 : [p] "i"(EMBER_HC_INPUT), "a"(0)
				 : "rcx", "r11", "memory");
	else
		__asm__ volatile("out %%al, %[p]"
				 :
				 : [p] "i"(EMBER_HC_FLUSH), "a"(0)
				 : "rcx", "r11", "memory");
}

static inline uint64_t rt_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* the dispatcher, called by rt_serve (rt_entry.S) */
long rt_syscall(long nr, long a0, long a1, long a2, long a3, long a4, long a5);
/* called by rt_efault: the call in progress faulted on the program's memory */
void rt_efaulted(void);

void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);

long rt_clock_gettime(long clk, long tp);
long rt_gettimeofday(long tv, long tz);
long rt_time(long t);
long rt_clock_getres(long clk, long res);
long rt_getrandom(long buf, long len, long flags);

/* the request, its metadata, stdout and stderr (rt_io.c); the other descriptors forwarded */
long rt_read(long fd, long buf, long n, long a3, long a4, long a5);
long rt_write(long fd, long buf, long n, long a3, long a4, long a5);
long rt_readv(long fd, long iov, long cnt, long a3, long a4, long a5);
long rt_writev(long fd, long iov, long cnt, long a3, long a4, long a5);
long rt_ioctl(long fd, long req, long arg, long a3, long a4, long a5);

/* 1: [p, p+n) is program memory as far as the runtime can tell (not page 0, not the runtime's
 * own area); rt_usable: 0 when it is and every page of it can be read (and written, if write),
 * probed without changing a byte, else -EFAULT (rt_io.c) */
int rt_program_range(uint64_t p, uint64_t n);
long rt_usable(uint64_t p, uint64_t n, int write);

/* the bundle's files with a window (rt_fs.c); the others forwarded */
long rt_file_read(long fd, long buf, long n, long a3, long a4, long a5);
long rt_file_pread(long fd, long buf, long n, long off, long a4, long a5);
long rt_file_readv(long fd, long iov, long cnt, long a3, long a4, long a5);
long rt_file_lseek(long fd, long off, long whence, long a3, long a4, long a5);
long rt_file_fstat(long fd, long buf, long a2, long a3, long a4, long a5);
long rt_file_fstatat(long fd, long path, long buf, long flags, long a4, long a5);
long rt_file_close(long fd, long a1, long a2, long a3, long a4, long a5);
/* 1: fd is a bundle's file the runtime serves (its window published) */
int rt_file_is(long fd);
long rt_file_statx(long dirfd, long path, long flags, long mask, long buf, long a5);
/* fds 0 to 4 as Ember opened them (not fd 3, the source): 1 and their stat's mode and size, as
 * the host gives them (fd_std.c), or 0 */
int rt_std_stat(long fd, uint32_t *mode, uint64_t *size);

/* the memory calls (rt_mem.c), served from the arena at EMBER_RT_MAP */
long rt_brk(long want, long a1, long a2, long a3, long a4, long a5);
long rt_mmap(long addr, long len, long prot, long flags, long fd, long off);
long rt_munmap(long addr, long len, long a2, long a3, long a4, long a5);
long rt_mprotect(long addr, long len, long prot, long a3, long a4, long a5);
long rt_mremap(long old, long old_len, long new_len, long flags, long new_addr, long a5);
long rt_madvise(long addr, long len, long advice, long a3, long a4, long a5);
long rt_msync(long addr, long len, long flags, long a3, long a4, long a5);
long rt_mincore(long addr, long len, long vec, long a3, long a4, long a5);

#endif
