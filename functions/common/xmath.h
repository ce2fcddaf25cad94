/* Deterministic exp/log/tanh and a seeded generator for the C functions. */
#ifndef FN_XMATH_H
#define FN_XMATH_H

/*
 * Plain arithmetic (errors within about 1 ulp), so musl and glibc builds compute bit-identical
 * results where their libm implementations may differ in the last bit.
 */

#include <math.h>
#include <stdint.h>

#define XLN2_HI 6.93147180369123816490e-01
#define XLN2_LO 1.90821492927058770002e-10

static inline double xexp(double x)
{
	if (x > 709.0)
		return HUGE_VAL;
	if (x < -745.0)
		return 0.0;
	double k = (double)(long)(x * 1.4426950408889634 + (x >= 0 ? 0.5 : -0.5));
	double r = (x - k * XLN2_HI) - k * XLN2_LO, p = 1.0;
	for (int i = 14; i > 0; i--)
		p = 1.0 + p * r / i;
	return ldexp(p, (int)k);
}

static inline double xlog(double x)
{
	if (!(x > 0))
		return x == 0 ? -HUGE_VAL : NAN;
	int e;
	double m = frexp(x, &e);
	if (m < 0.70710678118654752440) {
		m *= 2;
		e--;
	}
	double s = (m - 1) / (m + 1), s2 = s * s, p = 0;
	for (int i = 23; i >= 3; i -= 2)
		p = (p + 1.0 / i) * s2;
	return e * XLN2_HI + (2 * s * (1 + p) + e * XLN2_LO);
}

static inline double xtanh(double x)
{
	if (x > 20)
		return 1;
	if (x < -20)
		return -1;
	double e = xexp(2 * x);
	return (e - 1) / (e + 1);
}

/* splitmix64: a seeded 64-bit generator */
static inline uint64_t xrand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in [0, 1) with 53 random bits */
static inline double xunit(uint64_t *s)
{
	return (double)(xrand(s) >> 11) * 0x1p-53;
}

#endif
