/* The in-guest runtime's internals: hypercalls, the control block, small freestanding helpers. */
#ifndef EMBER_RT_H
#define EMBER_RT_H

#include <stddef.h>
#include <stdint.h>

#include "ember/abi.h"

#define RT_CTL ((volatile struct ember_rt_ctl *)EMBER_RT_CTL)

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

/* the bundle's files with a window (rt_fs.c); the others forwarded */
long rt_file_read(long fd, long buf, long n, long a3, long a4, long a5);
long rt_file_pread(long fd, long buf, long n, long off, long a4, long a5);
long rt_file_readv(long fd, long iov, long cnt, long a3, long a4, long a5);
long rt_file_lseek(long fd, long off, long whence, long a3, long a4, long a5);

/* the memory calls (rt_mem.c), served from the pool at EMBER_RT_MAP */
long rt_brk(long want, long a1, long a2, long a3, long a4, long a5);
long rt_mmap(long addr, long len, long prot, long flags, long fd, long off);
long rt_munmap(long addr, long len, long a2, long a3, long a4, long a5);
long rt_mprotect(long addr, long len, long prot, long a3, long a4, long a5);
long rt_mremap(long old, long old_len, long new_len, long flags, long new_addr, long a5);
long rt_madvise(long addr, long len, long advice, long a3, long a4, long a5);

#endif
