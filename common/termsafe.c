/*
 * Terminal-safe text (termsafe.h): the one place that knows which
 * characters may reach a terminal as they are. Compiled into the core
 * and into the sinks plugin, so it uses libc only.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/termsafe.h"

/*
 * Length of the valid UTF-8 sequence at s[0..n) (n >= 1) and its code
 * point, or 0 when s[0] does not start one (overlong forms, surrogates
 * and code points past U+10FFFF are invalid).
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;
	uint32_t v;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		v = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		v = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		v = c & 0x07;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	*cp = v;
	return len;
}

static int is_bidi_control(uint32_t cp)
{
	return (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

static int needs_escape(uint32_t cp, unsigned flags)
{
	if (cp == '\n' || cp == '\t')
		return !(flags & SL_TERM_KEEP_NL);
	if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
		return 1;
	return cp == 0x2028 || cp == 0x2029 || is_bidi_control(cp);
}

/* The escape of one character into buf (at least 7 bytes); its length. */
static size_t escape_cp(uint32_t cp, unsigned flags, char *buf)
{
	if (flags & SL_TERM_JSON)
		return (size_t)snprintf(buf, 7, "\\u%04x", (unsigned)cp);
	if (cp == '\n' || cp == '\r' || cp == '\t') {
		buf[0] = '\\';
		buf[1] = cp == '\n' ? 'n' : cp == '\r' ? 'r' : 't';
		return 2;
	}
	if (cp < 0x80)
		return (size_t)snprintf(buf, 7, "\\x%02x", (unsigned)cp);
	return (size_t)snprintf(buf, 7, "\\u%04x", (unsigned)cp);
}

static size_t escape_byte(unsigned char c, unsigned flags, char *buf)
{
	if (flags & SL_TERM_JSON) {
		memcpy(buf, "\\ufffd", 6);
		return 6;
	}
	return (size_t)snprintf(buf, 7, "\\x%02x", (unsigned)c);
}

/*
 * Walk text[0..len): the size of the safe form, written to out when
 * out is not NULL. *changed says whether anything was escaped.
 */
static size_t walk(const char *text, size_t len, unsigned flags, char *out,
		   int *changed)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0, o = 0;
	char esc[8];

	*changed = 0;
	while (i < len) {
		uint32_t cp = 0;
		size_t n = utf8_decode(s + i, len - i, &cp), e;

		if (n && !needs_escape(cp, flags)) {
			if (out)
				memcpy(out + o, s + i, n);
			o += n;
			i += n;
			continue;
		}
		e = n ? escape_cp(cp, flags, esc)
		      : escape_byte(s[i], flags, esc);
		if (out)
			memcpy(out + o, esc, e);
		o += e;
		i += n ? n : 1;
		*changed = 1;
	}
	return o;
}

int sl_term_is_safe(const char *text, size_t len, unsigned flags)
{
	int changed;

	walk(text, len, flags, NULL, &changed);
	return !changed;
}

char *sl_term_safe_n(const char *text, size_t len, unsigned flags)
{
	int changed;
	size_t size = walk(text, len, flags, NULL, &changed);
	char *out = malloc(size + 1);

	if (!out)
		return NULL;
	walk(text, len, flags, out, &changed);
	out[size] = '\0';
	return out;
}

char *sl_term_safe(const char *text, unsigned flags)
{
	if (!text)
		return NULL;
	return sl_term_safe_n(text, strlen(text), flags);
}
