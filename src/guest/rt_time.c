/* Clocks inside the guest: the TSC, scaled with the calibration and base the host writes. */
#include "rt.h"

#define EINVAL 22

struct ts {
	int64_t sec, nsec;
};

/* nanoseconds since the host's base for this invocation */
static uint64_t since_base(void)
{
	volatile struct ember_rt_ctl *c = RT_CTL;
	uint64_t d = rt_rdtsc() - c->tsc0;
	return (uint64_t)(((unsigned __int128)d * c->mult) >> c->shift);
}

static int now(long clk, uint64_t *ns)
{
	volatile struct ember_rt_ctl *c = RT_CTL;
	switch (clk) {
	case 0: /* REALTIME */
	case 5: /* REALTIME_COARSE */
		*ns = c->real0 + since_base();
		return 0;
	case 1: /* MONOTONIC */
	case 4: /* MONOTONIC_RAW */
	case 6: /* MONOTONIC_COARSE */
	case 7: /* BOOTTIME */
		*ns = c->mono0 + since_base();
		return 0;
	default: /* the CPU-time clocks too: the host counts the threads' time */
		return -EINVAL;
	}
}

long rt_clock_gettime(long clk, long tp)
{
	uint64_t ns;
	if (now(clk, &ns))
		return -EINVAL;
	struct ts *t = (struct ts *)tp;
	t->sec = (int64_t)(ns / 1000000000ULL);
	t->nsec = (int64_t)(ns % 1000000000ULL);
	return 0;
}

long rt_clock_getres(long clk, long res)
{
	uint64_t ns;
	if (now(clk, &ns))
		return -EINVAL;
	if (res) {
		struct ts *t = (struct ts *)res;
		t->sec = 0;
		t->nsec = 1;
	}
	return 0;
}

long rt_gettimeofday(long tv, long tz)
{
	uint64_t ns;
	now(0, &ns);
	if (tv) {
		int64_t *t = (int64_t *)tv;
		t[0] = (int64_t)(ns / 1000000000ULL);
		t[1] = (int64_t)(ns % 1000000000ULL / 1000);
	}
	if (tz) {
		int32_t *z = (int32_t *)tz;
		z[0] = z[1] = 0;
	}
	return 0;
}

long rt_time(long t)
{
	uint64_t ns;
	now(0, &ns);
	long s = (long)(ns / 1000000000ULL);
	if (t)
		*(long *)t = s;
	return s;
}
