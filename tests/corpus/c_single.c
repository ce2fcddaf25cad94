/* c_single: the control: single-threaded C, which Ember runs today, shows a pass is possible. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "req.h"

static int calls; /* 1 in every invocation: each starts from the snapshot */

int main(void)
{
	char req[256];
	uint64_t x, sum = 0;
	char *heap;

	/* the initialisation: a heap block the invocations read and write */
	heap = malloc(1 << 20);
	if (!heap)
		return 1;
	memset(heap, 'a', 1 << 20);
	if (read_req(req, sizeof(req)) < 0)
		return 1;
	calls++;
	x = req_seed(req);
	for (int k = 0; k < 1 << 20; k++) {
		x = mix(x);
		heap[k] = (char)(heap[k] + (x & 7));
		sum += (unsigned char)heap[k];
	}
	printf("c_single: request \"%s\"\n", req);
	printf("sum over the heap block: %llu\n", (unsigned long long)sum);
	printf("invocations this state has seen: %d\n", calls);
	return 0;
}
