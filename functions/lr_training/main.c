/* lr_training: logistic regression by batch gradient descent on a seeded synthetic data set. */
#include "fnio.h"
#include "xmath.h"

#include <stdlib.h>

static double sigmoid(double z)
{
	return 1 / (1 + xexp(-z));
}

/* log(1 + e^z) without overflow */
static double softplus(double z)
{
	return (z > 0 ? z : 0) + xlog(1 + xexp(z > 0 ? -z : z));
}

/* Mean cross-entropy loss and accuracy of weights w (bias in w[d]) over x, y. */
static double evaluate(const double *x, const double *y, size_t n, size_t d, const double *w,
		       double *acc)
{
	double loss = 0;
	size_t hit = 0;
	for (size_t i = 0; i < n; i++) {
		double z = w[d];
		for (size_t j = 0; j < d; j++)
			z += w[j] * x[i * d + j];
		loss += y[i] > 0 ? softplus(-z) : softplus(z);
		hit += (z >= 0) == (y[i] > 0);
	}
	*acc = (double)hit / (double)n;
	return loss / (double)n;
}

int main(void)
{
	size_t len;
	char *req = (char *)fn_read_all(&len);
	uint64_t seed = (uint64_t)fn_param(req, 0, "seed", 1, 0, 0x7fffffff);
	size_t n = (size_t)fn_param(req, 0, "samples", 1000, 1, 1000000);
	size_t d = (size_t)fn_param(req, 0, "features", 8, 1, 1024);
	long iters = fn_param(req, 0, "iters", 100, 0, 100000);
	double lr = fn_paramf(req, 0, "lr", 0.5, 0, 100);
	if (n * d > 4000000)
		fn_die("samples * features must be at most 4000000");

	/* the data set: labels from a hidden linear model plus noise */
	double *x = malloc(n * d * sizeof(double)), *y = malloc(n * sizeof(double));
	double *truth = malloc((d + 1) * sizeof(double)), *w = calloc(d + 1, sizeof(double));
	double *grad = malloc((d + 1) * sizeof(double));
	if (!x || !y || !truth || !w || !grad)
		fn_die("out of memory");
	for (size_t j = 0; j <= d; j++)
		truth[j] = 2 * xunit(&seed) - 1;
	for (size_t i = 0; i < n; i++) {
		double z = truth[d] + 0.5 * (2 * xunit(&seed) - 1);
		for (size_t j = 0; j < d; j++) {
			x[i * d + j] = 2 * xunit(&seed) - 1;
			z += truth[j] * x[i * d + j];
		}
		y[i] = z > 0;
	}

	double acc0, loss0 = evaluate(x, y, n, d, w, &acc0);
	for (long it = 0; it < iters; it++) {
		for (size_t j = 0; j <= d; j++)
			grad[j] = 0;
		for (size_t i = 0; i < n; i++) {
			double z = w[d];
			for (size_t j = 0; j < d; j++)
				z += w[j] * x[i * d + j];
			double e = sigmoid(z) - y[i];
			for (size_t j = 0; j < d; j++)
				grad[j] += e * x[i * d + j];
			grad[d] += e;
		}
		for (size_t j = 0; j <= d; j++)
			w[j] -= lr * grad[j] / (double)n;
	}
	double acc, loss = evaluate(x, y, n, d, w, &acc);

	struct fnbuf out = {0};
	fnbuf_printf(&out, "samples=%zu features=%zu iters=%ld lr=%.6f\n", n, d, iters, lr);
	fnbuf_printf(&out, "initial loss=%.6f accuracy=%.4f\n", loss0, acc0);
	fnbuf_printf(&out, "final loss=%.6f accuracy=%.4f\n", loss, acc);
	fnbuf_printf(&out, "bias=%.6f\n", w[d]);
	for (size_t j = 0; j < d; j++)
		fnbuf_printf(&out, "w[%zu]=%.6f\n", j, w[j]);
	fnbuf_finish(&out);
}
