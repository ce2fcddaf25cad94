/* matmul: C = A x B for N x N doubles from a seeded generator; answers checksums of C. */
#include "fnio.h"
#include "xmath.h"

#include <stdlib.h>

int main(void)
{
	size_t len;
	char *req = (char *)fn_read_all(&len);
	long n = fn_param(req, 0, "n", -1, 1, 2048);
	uint64_t seed = (uint64_t)fn_param(req, 0, "seed", 42, 0, 0x7fffffff);
	if (n < 0)
		fn_die("the request must give n=N (1 <= N <= 2048)");
	size_t nn = (size_t)n;
	double *a = malloc(nn * nn * sizeof(double)), *b = malloc(nn * nn * sizeof(double));
	double *c = calloc(nn * nn, sizeof(double));
	if (!a || !b || !c)
		fn_die("out of memory");
	for (size_t i = 0; i < nn * nn; i++)
		a[i] = 2 * xunit(&seed) - 1;
	for (size_t i = 0; i < nn * nn; i++)
		b[i] = 2 * xunit(&seed) - 1;
	for (size_t i = 0; i < nn; i++)
		for (size_t k = 0; k < nn; k++) {
			double aik = a[i * nn + k];
			for (size_t j = 0; j < nn; j++)
				c[i * nn + j] += aik * b[k * nn + j];
		}
	double sum = 0, abs = 0, trace = 0;
	for (size_t i = 0; i < nn * nn; i++) {
		sum += c[i];
		abs += c[i] < 0 ? -c[i] : c[i];
	}
	for (size_t i = 0; i < nn; i++)
		trace += c[i * nn + i];
	struct fnbuf out = {0};
	fnbuf_printf(&out, "n=%ld sum=%.6f abssum=%.6f trace=%.6f c[0][0]=%.6f c[n-1][n-1]=%.6f\n",
		     n, sum, abs, trace, c[0], c[nn * nn - 1]);
	fnbuf_finish(&out);
}
