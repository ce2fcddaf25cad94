/* The workers' Prometheus texts summed into one: a series in several is added up (a few gauges
 * that every worker reports alike take the largest), and each family stays in one group with
 * its HELP and TYPE lines, as the text format wants. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_workers.h"

/* the same in every worker, not a share of the whole */
static const char *const not_summed[] = {"ember_functions", "ember_function_costly"};

struct item {
	char *text; /* a comment line, or a sample's name and labels */
	double v;
	int sample;
	long next; /* the family's next item, -1 */
};
struct fam {
	char *name;
	long first, last;
	int max; /* not_summed */
};
/* open addressing of indices + 1 into items (samples) or fams, by their text */
struct tab {
	size_t *slot, cap, n;
	int keys; /* of samples (else of families) */
};
struct merge {
	struct item *it;
	size_t nit, capit;
	struct fam *fa;
	size_t nfa, capfa;
	struct tab keys, fams;
};

static uint64_t hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

static const char *tab_text(struct merge *m, struct tab *t, size_t i)
{
	return t->keys ? m->it[i].text : m->fa[i].name;
}

/* the index of s[0..n) in t, or -1; *at: its slot, or the empty slot where it goes */
static long tab_find(struct merge *m, struct tab *t, const char *s, size_t n, size_t *at)
{
	for (size_t i = hash(s, n) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		*at = i;
		if (!t->slot[i])
			return -1;
		const char *x = tab_text(m, t, t->slot[i] - 1);
		if (!strncmp(x, s, n) && !x[n])
			return (long)t->slot[i] - 1;
	}
}

static int tab_add(struct merge *m, struct tab *t, size_t idx)
{
	size_t at;
	if (2 * (t->n + 1) > t->cap) {
		struct tab g = {calloc(t->cap ? t->cap * 2 : 256, sizeof(size_t)),
				t->cap ? t->cap * 2 : 256, 0, t->keys};
		if (!g.slot)
			return -1;
		for (size_t i = 0; i < t->cap; i++)
			if (t->slot[i]) {
				const char *x = tab_text(m, t, t->slot[i] - 1);
				tab_find(m, &g, x, strlen(x), &at);
				g.slot[at] = t->slot[i], g.n++;
			}
		free(t->slot);
		*t = g;
	}
	const char *x = tab_text(m, t, idx);
	tab_find(m, t, x, strlen(x), &at);
	t->slot[at] = idx + 1;
	t->n++;
	return 0;
}

/* the family of a line: a comment's third word, a sample's name without a histogram's suffix */
static void family(const char *line, size_t len, const char **f, size_t *fl)
{
	static const char *const sfx[] = {"_bucket", "_sum", "_count"};
	if (line[0] == '#') {
		const char *p = line + 1 + strspn(line + 1, " ");
		p += strcspn(p, " ");
		p += strspn(p, " ");
		*f = p, *fl = strcspn(p, " \n");
		return;
	}
	*f = line, *fl = strcspn(line, "{ ");
	(void)len;
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		size_t n = strlen(sfx[i]);
		if (*fl > n && !strncmp(line + *fl - n, sfx[i], n)) {
			*fl -= n;
			return;
		}
	}
}

/* an array of n elements of size bytes with room for one more (grown, *cap): 0, or -1 */
static int room(void **v, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 64;
	void *p = realloc(*v, c * size);
	if (!p)
		return -1;
	*v = p, *cap = c;
	return 0;
}

/* one line into the merge: 0, or -1 out of memory */
static int add_line(struct merge *m, const char *line, size_t len)
{
	const char *f;
	size_t fl, at, key = len;
	int sample = line[0] != '#';
	if (sample) {
		while (key && line[key - 1] != ' ')
			key--;
		if (!key)
			return 0; /* not a sample */
		key--;
	}
	long k = -1;
	if (sample && m->keys.cap && (k = tab_find(m, &m->keys, line, key, &at)) >= 0) {
		double v = strtod(line + key + 1, NULL);
		struct fam *fa = NULL;
		family(line, len, &f, &fl);
		long fi = tab_find(m, &m->fams, f, fl, &at);
		fa = fi >= 0 ? &m->fa[fi] : NULL;
		m->it[k].v = !(fa && fa->max) ? m->it[k].v + v : v > m->it[k].v ? v : m->it[k].v;
		return 0;
	}
	family(line, len, &f, &fl);
	long fi = m->fams.cap ? tab_find(m, &m->fams, f, fl, &at) : -1;
	if (fi < 0) {
		if (room((void **)&m->fa, m->nfa, &m->capfa, sizeof(*m->fa)))
			return -1;
		struct fam *fa = &m->fa[m->nfa];
		if (!(fa->name = strndup(f, fl)))
			return -1;
		fa->first = fa->last = -1;
		fa->max = 0;
		for (size_t i = 0; i < sizeof(not_summed) / sizeof(not_summed[0]); i++)
			fa->max |= !strcmp(fa->name, not_summed[i]);
		fi = (long)m->nfa++;
		if (tab_add(m, &m->fams, (size_t)fi))
			return -1;
	}
	if (room((void **)&m->it, m->nit, &m->capit, sizeof(*m->it)))
		return -1;
	struct item *it = &m->it[m->nit];
	if (!(it->text = strndup(line, sample ? key : len)))
		return -1;
	it->sample = sample;
	it->v = sample ? strtod(line + key + 1, NULL) : 0;
	it->next = -1;
	struct fam *fa = &m->fa[fi];
	if (!sample) /* a HELP or TYPE line a family already has */
		for (long i = fa->first; i >= 0; i = m->it[i].next)
			if (!strcmp(m->it[i].text, it->text)) {
				free(it->text);
				return 0;
			}
	long idx = (long)m->nit++;
	if (fa->last >= 0)
		m->it[fa->last].next = idx;
	else
		fa->first = idx;
	fa->last = idx;
	return sample ? tab_add(m, &m->keys, (size_t)idx) : 0;
}

static char *render(struct merge *m, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *out = malloc(cap);
	for (size_t f = 0; out && f < m->nfa; f++)
		for (long i = m->fa[f].first; out && i >= 0; i = m->it[i].next) {
			struct item *it = &m->it[i];
			size_t need = strlen(it->text) + 40;
			if (n + need > cap) {
				char *o = realloc(out, cap = 2 * cap + need);
				if (!o)
					free(out);
				out = o;
				if (!out)
					break;
			}
			double v = it->v;
			if (!it->sample)
				n += (size_t)sprintf(out + n, "%s\n", it->text);
			else if (v > -1e15 && v < 1e15 && v == (double)(long long)v)
				n += (size_t)sprintf(out + n, "%s %.0f\n", it->text, v);
			else
				n += (size_t)sprintf(out + n, "%s %.9g\n", it->text, v);
		}
	*len = n;
	return out;
}

char *wk_merge_metrics(char **texts, size_t n, size_t *len)
{
	struct merge m = {.keys.keys = 1};
	int bad = 0;
	for (size_t t = 0; t < n && !bad; t++)
		for (const char *p = texts[t]; p && *p && !bad;) {
			size_t l = strcspn(p, "\n");
			if (l)
				bad = add_line(&m, p, l);
			p += l + (p[l] == '\n');
		}
	char *out = bad ? NULL : render(&m, len);
	for (size_t i = 0; i < m.nit; i++)
		free(m.it[i].text);
	for (size_t i = 0; i < m.nfa; i++)
		free(m.fa[i].name);
	free(m.it), free(m.fa), free(m.keys.slot), free(m.fams.slot);
	return out;
}
