/* exitcode: exits with the status given as argv[1] (default 0), announcing it on stderr. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int status = argc > 1 ? (int)strtol(argv[1], NULL, 0) : 0;

	fprintf(stderr, "exiting %d\n", status);
	return status;
}
