/* rnn: samples text from a character RNN whose weights are generated from a fixed seed. */
#include "fnio.h"
#include "xmath.h"

#include <string.h>

#define V 96  /* the characters 32..126 and '\n' (index 95) */
#define H 256 /* hidden units */

static double wxh[V][H], whh[H][H], why[V][H], bh[H], by[V];

static int char_index(unsigned char c)
{
	return c == '\n' ? V - 1 : (c >= 32 && c < 127 ? c - 32 : 0);
}

static char index_char(int i)
{
	return i == V - 1 ? '\n' : (char)(i + 32);
}

/* The "model": deterministic weights, and output biases that favour frequent English letters. */
static void load_model(void)
{
	uint64_t s = 0x454d424552ULL; /* "EMBER" */
	for (int i = 0; i < V; i++)
		for (int j = 0; j < H; j++)
			wxh[i][j] = 2 * xunit(&s) - 1;
	for (int i = 0; i < H; i++)
		for (int j = 0; j < H; j++)
			whh[i][j] = (2 * xunit(&s) - 1) * 1.5 / 16; /* 16 = sqrt(H) */
	for (int i = 0; i < V; i++)
		for (int j = 0; j < H; j++)
			why[i][j] = (2 * xunit(&s) - 1) * 2.0 / 16;
	for (int j = 0; j < H; j++)
		bh[j] = 0.2 * (2 * xunit(&s) - 1);
	static const char freq[] = "etaoinshrdlcumwfgypbvkjxqz";
	for (int i = 0; i < V; i++)
		by[i] = -4;
	for (int r = 0; freq[r]; r++)
		by[char_index((unsigned char)freq[r])] = 1.5 - 0.15 * r;
	by[char_index(' ')] = 2;
	by[char_index('.')] = by[char_index(',')] = -1;
	by[char_index('\n')] = -2.5;
}

/* One step: feeds character x into hidden state h and leaves the output logits in y. */
static void step(double h[H], int x, double y[V])
{
	double t[H];
	for (int i = 0; i < H; i++) {
		double a = bh[i] + wxh[x][i];
		for (int j = 0; j < H; j++)
			a += whh[i][j] * h[j];
		t[i] = xtanh(a);
	}
	memcpy(h, t, sizeof(t));
	for (int k = 0; k < V; k++) {
		double a = by[k];
		for (int j = 0; j < H; j++)
			a += why[k][j] * h[j];
		y[k] = a;
	}
}

/* Samples an index from softmax(y / temp) with the generator state s. */
static int sample(const double y[V], double temp, uint64_t *s)
{
	double p[V], max = y[0], sum = 0;
	for (int k = 1; k < V; k++)
		max = y[k] > max ? y[k] : max;
	for (int k = 0; k < V; k++)
		sum += p[k] = xexp((y[k] - max) / temp);
	double u = xunit(s) * sum;
	for (int k = 0; k < V - 1; k++)
		if ((u -= p[k]) < 0)
			return k;
	return V - 1;
}

int main(void)
{
	load_model();
	size_t n;
	char *req = (char *)fn_read_all(&n);
	long len = fn_param(req, 1, "length", 200, 0, 100000);
	double temp = fn_paramf(req, 1, "temperature", 0.8, 0.05, 10);
	char *nl = memchr(req, '\n', n);
	const unsigned char *prime = nl ? (unsigned char *)nl + 1 : (unsigned char *)req + n;
	size_t plen = (size_t)((unsigned char *)req + n - prime);

	/* the sampling generator is seeded with the FNV-1a hash of the prime text */
	uint64_t seed = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < plen; i++)
		seed = (seed ^ prime[i]) * 0x100000001b3ULL;
	double h[H] = {0}, y[V];
	step(h, V - 1, y);
	for (size_t i = 0; i < plen; i++)
		step(h, char_index(prime[i]), y);
	struct fnbuf out = {0};
	for (long i = 0; i < len; i++) {
		int c = sample(y, temp, &seed);
		char ch = index_char(c);
		fnbuf_put(&out, &ch, 1);
		step(h, c, y);
	}
	fnbuf_put(&out, "\n", 1);
	fnbuf_finish(&out);
}
