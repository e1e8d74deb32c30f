/*
 * util.c - the small helpers of the fake GitHub server
 * (tests/fakes/github-server): growing buffers, base64, SHA-1 (git
 * object ids), and GitHub's JSON response and error shapes. Any file of
 * tests/fakes/github/ may call them.
 */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "github.h"
#include "common/base64.h"
#include "common/base64.h"

void gh_die(const char *fmt, ...)
{
	va_list ap;

	fputs("github-server: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

void *gh_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		gh_die("out of memory");
	return p;
}

char *gh_xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		gh_die("out of memory");
	return p;
}

char *gh_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0)
		gh_die("out of memory");
	return p;
}

void buf_add(struct buf *b, const void *s, size_t n)
{
	char *p;

	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		p = realloc(b->p, b->cap);
		if (!p)
			gh_die("out of memory");
		b->p = p;
	}
	if (n)
		memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

void buf_puts(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0)
		gh_die("out of memory");
	buf_add(b, p, (size_t)n);
	free(p);
}

void buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- base64 (common/base64.c) ----------------------------------------- */

char *gh_b64_encode(const unsigned char *p, size_t n, int wrap)
{
	char *out = sl_b64_encode(p, n, wrap);

	if (!out)
		abort();
	return out;
}

int gh_b64_decode(const char *s, unsigned char **out, size_t *n)
{
	*out = sl_b64_decode(s, n);
	return *out ? 0 : -1;
}

/* ---- SHA-1 (FIPS 180-4), for git object ids ---------------------------- */

struct sha1 {
	uint32_t h[5];
	unsigned char block[64];
	size_t used;
	uint64_t total;
};

static uint32_t rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

static void sha1_block(struct sha1 *c, const unsigned char *p)
{
	uint32_t w[80], a, b, d, e, f, k, t, cc;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 |
		       (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = c->h[0];
	b = c->h[1];
	cc = c->h[2];
	d = c->h[3];
	e = c->h[4];
	for (i = 0; i < 80; i++) {
		if (i < 20) {
			f = (b & cc) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ cc ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & cc) | (b & d) | (cc & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ cc ^ d;
			k = 0xca62c1d6;
		}
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = cc;
		cc = rol(b, 30);
		b = a;
		a = t;
	}
	c->h[0] += a;
	c->h[1] += b;
	c->h[2] += cc;
	c->h[3] += d;
	c->h[4] += e;
}

static void sha1_update(struct sha1 *c, const unsigned char *p, size_t n)
{
	size_t take;

	c->total += n;
	while (n) {
		take = 64 - c->used < n ? 64 - c->used : n;
		memcpy(c->block + c->used, p, take);
		c->used += take;
		p += take;
		n -= take;
		if (c->used == 64) {
			sha1_block(c, c->block);
			c->used = 0;
		}
	}
}

void gh_sha1_hex(const unsigned char *p, size_t n, char hex[41])
{
	struct sha1 c = {
		{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0},
		{0},
		0,
		0};
	unsigned char len[8], zero = 0, one = 0x80;
	uint64_t bits;
	int i;

	sha1_update(&c, p, n);
	bits = c.total * 8;
	for (i = 0; i < 8; i++)
		len[i] = (unsigned char)(bits >> (56 - 8 * i));
	sha1_update(&c, &one, 1);
	while (c.used != 56)
		sha1_update(&c, &zero, 1);
	sha1_update(&c, len, 8);
	for (i = 0; i < 5; i++)
		snprintf(hex + 8 * i, 9, "%08x", (unsigned)c.h[i]);
}

int gh_is_sha(const char *s)
{
	size_t i;

	if (!s || strlen(s) != 40)
		return 0;
	for (i = 0; i < 40; i++)
		if (!strchr("0123456789abcdef", s[i]))
			return 0;
	return 1;
}

const char *gh_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- responses --------------------------------------------------------- */

void gh_json(struct response *r, int status, const cJSON *body)
{
	char *s = body ? cJSON_PrintUnformatted(body) : NULL;

	if (body && !s)
		gh_die("out of memory");
	r->status = status;
	r->body.n = 0;
	if (s)
		buf_puts(&r->body, s);
	free(s);
}

static void error_body(struct response *r, int status, const char *message,
		       cJSON *errors)
{
	cJSON *o = cJSON_CreateObject();
	char code[8];

	snprintf(code, sizeof(code), "%d", status);
	cJSON_AddStringToObject(o, "message", message);
	if (errors)
		cJSON_AddItemToObject(o, "errors", errors);
	cJSON_AddStringToObject(o, "documentation_url",
				"https://docs.github.com/rest");
	cJSON_AddStringToObject(o, "status", code);
	gh_json(r, status, o);
	cJSON_Delete(o);
}

void gh_error(struct response *r, int status, const char *message)
{
	error_body(r, status, message, NULL);
}

void gh_invalid(struct response *r, const char *resource, const char *field,
		const char *code, const char *message)
{
	cJSON *errors = cJSON_CreateArray(), *e = cJSON_CreateObject();

	cJSON_AddStringToObject(e, "resource", resource);
	if (field)
		cJSON_AddStringToObject(e, "field", field);
	cJSON_AddStringToObject(e, "code", code);
	if (message)
		cJSON_AddStringToObject(e, "message", message);
	cJSON_AddItemToArray(errors, e);
	error_body(r, 422, "Validation Failed", errors);
}

void gh_not_found(struct response *r)
{
	gh_error(r, 404, "Not Found");
}
