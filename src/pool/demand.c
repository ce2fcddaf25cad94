/* The warm-capacity policy: pure arithmetic on peaks and windows (the refiller applies it). */
#include "pool/demand.h"

void demand_init(struct demand *d, unsigned floor, unsigned cap, uint64_t window_ns,
		 uint64_t now_ns)
{
	d->cap = cap ? cap : 1;
	d->floor = floor > d->cap ? d->cap : floor;
	d->window_ns = window_ns;
	d->window_start = now_ns;
	d->peak = d->prev_peak = 0;
}

unsigned demand_headroom(unsigned peak)
{
	return 1 + peak / 4; /* a quarter more, and at least one spare */
}

unsigned demand_target(const struct demand *d, unsigned in_use)
{
	unsigned peak = d->peak > d->prev_peak ? d->peak : d->prev_peak;
	if (peak < in_use)
		peak = in_use;
	unsigned t = peak ? peak + demand_headroom(peak) : 0;
	if (t < in_use + 1)
		t = in_use + 1;
	if (t < d->floor)
		t = d->floor;
	return t > d->cap ? d->cap : t;
}

void demand_seen(struct demand *d, unsigned in_use)
{
	if (in_use > d->peak)
		d->peak = in_use;
}

int demand_tick(struct demand *d, unsigned in_use, uint64_t now_ns, uint64_t *next_ns)
{
	*next_ns = 0;
	if (!d->window_ns)
		return 0;
	int rotated = 0;
	if (now_ns - d->window_start >= d->window_ns) {
		/* a window with no request at all leaves nothing of the one before it */
		d->prev_peak = now_ns - d->window_start >= 2 * d->window_ns ? in_use : d->peak;
		d->peak = in_use;
		d->window_start = now_ns;
		rotated = 1;
	}
	*next_ns = d->window_start + d->window_ns;
	return rotated;
}
