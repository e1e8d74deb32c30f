/*
 * extract.c - finding the JSON answer in an agent's text (expect=json).
 *
 * Order of preference: fenced ``` blocks (optionally tagged json), last
 * block first; then the whole text; then the last top-level object or
 * array embedded in prose. Only objects and arrays count. Used by the
 * agent.session kind for every backend.
 */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"

#define EXTRACT_MAX (1024u * 1024)

static int is_container(const cJSON *v)
{
	return v && (cJSON_IsObject(v) || cJSON_IsArray(v));
}

/* Parse [s, s+n) trimmed; the whole span must be one object/array. */
static cJSON *parse_exact(const char *s, size_t n)
{
	const char *end = NULL;
	cJSON *v;

	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (!n)
		return NULL;
	v = cJSON_ParseWithLengthOpts(s, n, &end, 0);
	if (!v || !is_container(v) || end != s + n) {
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}

struct span {
	const char *s;
	size_t n;
};

/*
 * A fence is ``` plus an optional "json" tag, optional blanks and a
 * newline; it closes at the next ```.
 */
static size_t find_fences(const char *text, struct span **out)
{
	const char *p = text;
	struct span *v = NULL;
	size_t n = 0, cap = 0;

	while ((p = strstr(p, "```")) != NULL) {
		const char *body = p + 3, *close;

		if (!strncmp(body, "json", 4))
			body += 4;
		while (*body == ' ' || *body == '\t' || *body == '\r')
			body++;
		if (*body != '\n') {
			p += 3;
			continue;
		}
		body++;
		close = strstr(body, "```");
		if (!close)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 4;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				abort();
		}
		v[n].s = body;
		v[n].n = (size_t)(close - body);
		n++;
		p = close + 3;
	}
	*out = v;
	return n;
}

/* ---- the prose scan ------------------------------------------------ */

/*
 * Trying cJSON at every '{' and '[' in turn costs O(n * depth) on
 * unclosed nesting (cJSON gives up only at its nesting limit), and a
 * 1 MB reply took 49 s. Instead one validator that follows cJSON's
 * grammar (strings and numbers it hands to cJSON itself, and like cJSON
 * it refuses more than CJSON_NESTING_LIMIT levels; the fuzz target
 * checks it against the old search) records for every container start
 * it passes whether the parse from there succeeds, where it ends and how
 * tall it is: a parse from inside another one fails or succeeds with it,
 * so each start is decided once and cJSON only runs on spans known to
 * parse, which are disjoint.
 * A scan meeting a start already decided jumps over it. A start inside
 * another scan's string has to be scanned again; should crafted text
 * make those rescans add up, the search stops after WORK_FACTOR passes
 * over the text with what it found so far.
 */
#define WORK_FACTOR 8
#define HEIGHT_MAX (CJSON_NESTING_LIMIT + 1)

/* memo[p] for a '{' or '[' at p: 0 unknown, FAILED, else end + 2 and
 * the height (capped at HEIGHT_MAX) above bit END_BITS */
#define FAILED 1u
#define END_BITS 21
#define END_MASK ((1u << END_BITS) - 1)

struct scan {
	const unsigned char *t;
	size_t len;
	uint32_t *memo;
	size_t work, budget;
};

static size_t last_work;

size_t wk_extract_last_work(void)
{
	return last_work;
}

enum { ST_FIRST, ST_KEY, ST_COLON, ST_VALUE, ST_NEXT };

struct frame {
	size_t start;
	int object;
	int state;
	unsigned height; /* tallest child so far */
};

static size_t skip_ws(struct scan *sc, size_t i)
{
	size_t from = i;

	while (i < sc->len && sc->t[i] <= 32)
		i++;
	sc->work += i - from;
	return i;
}

/*
 * A string or a number at i, as cJSON itself reads it (so the scan
 * follows whatever the installed cJSON accepts, escapes and long numbers
 * included): its end, or 0. Costs the length of the token.
 */
static size_t scan_token(struct scan *sc, size_t i)
{
	const char *s = (const char *)sc->t + i, *end = NULL;
	size_t n = sc->len - i;
	cJSON *v;

	if (*s == '"') {
		/* the closing quote as cJSON finds it: '\\' takes two */
		for (n = 1; n < sc->len - i && s[n] != '"'; n++)
			if (s[n] == '\\')
				n++;
		sc->work += n;
		if (n >= sc->len - i)
			return 0;
		n++;
	} else {
		/* a number ends where its characters do */
		n = 0;
		while (i + n < sc->len && strchr("0123456789+-eE.", s[n]))
			n++;
		sc->work += n;
	}
	v = cJSON_ParseWithLengthOpts(s, n, &end, 0);
	sc->work += n;
	if (!v || !end || end <= s) {
		cJSON_Delete(v);
		return 0;
	}
	cJSON_Delete(v);
	return i + (size_t)(end - s);
}

/* A scalar value at i (not a container): its end, or 0. */
static size_t scan_scalar(struct scan *sc, size_t i)
{
	const unsigned char *t = sc->t + i;
	size_t left = sc->len - i;

	if (left >= 4 && !memcmp(t, "null", 4))
		return i + 4;
	if (left >= 5 && !memcmp(t, "false", 5))
		return i + 5;
	if (left >= 4 && !memcmp(t, "true", 4))
		return i + 4;
	if (*t == '"' || *t == '-' || (*t >= '0' && *t <= '9'))
		return scan_token(sc, i);
	return 0;
}

static void memo_end(struct scan *sc, size_t start, size_t end, unsigned h)
{
	if (h > HEIGHT_MAX)
		h = HEIGHT_MAX;
	sc->memo[start] = (uint32_t)(end + 2) | (uint32_t)h << END_BITS;
}

/*
 * Decide the container at s and every container start the scan passes
 * at a token boundary. Iterative: the stack grows on the heap.
 */
static void scan_from(struct scan *sc, size_t s)
{
	struct frame *st = NULL;
	size_t depth = 0, cap = 0, i = s, k;

	for (;;) {
		struct frame *f;
		unsigned char c;

		if (sc->work > sc->budget)
			goto fail;
		if (depth == 0 || st[depth - 1].state == ST_VALUE ||
		    (st[depth - 1].state == ST_FIRST &&
		     !st[depth - 1].object)) {
			/* a value is due (or, first in an array, a ']') */
			if (depth && st[depth - 1].state == ST_FIRST) {
				i = skip_ws(sc, i);
				if (i < sc->len && sc->t[i] == ']')
					goto close;
			}
			i = skip_ws(sc, i);
			if (i >= sc->len)
				goto fail;
			c = sc->t[i];
			if (c == '{' || c == '[') {
				uint32_t m = sc->memo[i];

				if (m == FAILED)
					goto fail;
				if (m && depth) {
					/* decided before: jump over it */
					unsigned h = m >> END_BITS;

					f = &st[depth - 1];
					if (h > f->height)
						f->height = h;
					i = (m & END_MASK) - 2;
					f->state = ST_NEXT;
					continue;
				}
				if (depth == cap) {
					cap = cap ? cap * 2 : 64;
					st = realloc(st, cap * sizeof(*st));
					if (!st)
						abort();
				}
				if (depth)
					st[depth - 1].state = ST_NEXT;
				st[depth].start = i;
				st[depth].object = c == '{';
				st[depth].state = ST_FIRST;
				st[depth].height = 0;
				depth++;
				i++;
				sc->work++;
				continue;
			}
			if (!depth)
				goto fail;
			k = scan_scalar(sc, i);
			if (!k)
				goto fail;
			sc->work += k - i;
			i = k;
			st[depth - 1].state = ST_NEXT;
			continue;
		}
		f = &st[depth - 1];
		i = skip_ws(sc, i);
		if (i >= sc->len)
			goto fail;
		c = sc->t[i];
		sc->work++;
		switch (f->state) {
		case ST_FIRST: /* object: '}' or a key */
			if (c == '}')
				goto close;
			/* fall through */
		case ST_KEY:
			if (c != '"')
				goto fail;
			k = scan_token(sc, i);
			if (!k)
				goto fail;
			i = k;
			f->state = ST_COLON;
			continue;
		case ST_COLON:
			if (c != ':')
				goto fail;
			i++;
			f->state = ST_VALUE;
			continue;
		case ST_NEXT:
			if (c == ',') {
				i++;
				f->state = f->object ? ST_KEY : ST_VALUE;
				continue;
			}
			if (c == (f->object ? '}' : ']'))
				goto close;
			goto fail;
		}
		goto fail;
close:
		/* the container on top closes at i */
		f = &st[depth - 1];
		memo_end(sc, f->start, i + 1, f->height + 1);
		depth--;
		i++;
		if (!depth)
			break;
		if (f->height + 1 > st[depth - 1].height)
			st[depth - 1].height = f->height + 1;
		continue;
	}
	free(st);
	return;
fail:
	/* every container still open fails with the scan */
	for (k = 0; k < depth; k++)
		sc->memo[st[k].start] = FAILED;
	if (!sc->memo[s])
		sc->memo[s] = FAILED;
	free(st);
}

/* The last top-level object or array embedded in the prose, or NULL. */
static cJSON *scan_prose(const char *text, size_t len)
{
	struct scan sc;
	cJSON *found = NULL;
	size_t i;

	sc.t = (const unsigned char *)text;
	sc.len = len;
	sc.memo = calloc(len ? len : 1, sizeof(*sc.memo));
	if (!sc.memo)
		abort();
	sc.work = 0;
	sc.budget = WORK_FACTOR * len + 65536;
	for (i = 0; i < len && sc.work <= sc.budget;) {
		const char *end = NULL;
		uint32_t m;
		size_t e;
		cJSON *v;

		if (text[i] != '{' && text[i] != '[') {
			i++;
			continue;
		}
		sc.work++;
		if (!sc.memo[i])
			scan_from(&sc, i);
		m = sc.memo[i];
		if (m == FAILED || !m ||
		    (m >> END_BITS) > CJSON_NESTING_LIMIT) {
			i++;
			continue;
		}
		e = (m & END_MASK) - 2;
		v = cJSON_ParseWithLengthOpts(text + i, e - i, &end, 0);
		sc.work += e - i;
		if (v && is_container(v) && end == text + e) {
			cJSON_Delete(found);
			found = v;
			i = e;
		} else {
			/* cannot happen while the scanner mirrors cJSON */
			cJSON_Delete(v);
			i++;
		}
	}
	last_work += sc.work;
	free(sc.memo);
	return found;
}

/* Returns the extracted value (caller frees) or NULL when there is none. */
cJSON *wk_extract_json(const char *text)
{
	struct span *fences = NULL;
	size_t nf, i, len;
	cJSON *found = NULL;

	last_work = 0;
	if (!text)
		return NULL;
	len = strlen(text);
	if (len > EXTRACT_MAX)
		text = wk_utf8_tail(text, len, EXTRACT_MAX);
	len = strlen(text);
	nf = find_fences(text, &fences);
	for (i = nf; i-- > 0 && !found;) {
		found = parse_exact(fences[i].s, fences[i].n);
		last_work += fences[i].n;
	}
	free(fences);
	if (found)
		return found;
	found = parse_exact(text, len);
	last_work += len;
	if (found)
		return found;
	return scan_prose(text, len);
}
