/* A fork after the snapshot point (the first read): the child must see the parent's memory as
 * it is, the snapshot's pages and what the parent wrote since, also in a start from disk whose
 * pages are not all in yet (tests/integration/test_coldload.sh); the parent must not see the
 * child's writes. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char big[1 << 20];

/* the sum of one byte a page */
static unsigned sum_pages(void)
{
	unsigned sum = 0;
	for (size_t i = 0; i < sizeof(big); i += 4096)
		sum += (unsigned char)((volatile char *)big)[i];
	return sum;
}

/* with an argument the parent reads every page first: a start from disk's working set is then the
 * whole snapshot, which KVM's REAP reads whole before the run */
int main(int argc, char **argv)
{
	(void)argv;
	memset(big, 7, sizeof(big));
	char c;
	if (read(0, &c, 1) < 0) /* the snapshot is taken here */
		return 2;
	unsigned mine = argc > 1 ? sum_pages() : 0;
	big[8 << 12] = 8; /* a page written after the snapshot: the child has it as it is now */
	pid_t p = fork();
	if (p < 0)
		return 3;
	if (p == 0) {
		printf("child %u\n", sum_pages());
		big[9 << 12] = 9; /* the parent's stays 7 */
		fflush(stdout);
		_exit(0);
	}
	int st;
	if (waitpid(p, &st, 0) != p)
		return 4;
	printf("parent %u %u status %d\n", (unsigned)big[9 << 12], mine, st);
	return 0;
}
