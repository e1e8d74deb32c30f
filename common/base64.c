/*
 * Base64 (base64.h).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"

static const char tab[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *sl_b64_encode(const unsigned char *p, size_t n, int wrap)
{
	size_t len = (n + 2) / 3 * 4, i, o = 0, col = 0;
	char *out = malloc(len + (wrap > 0 ? len / (size_t)wrap + 1 : 0) + 1);
	int k;

	if (!out)
		return NULL;
	for (i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		char quad[4];

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		quad[0] = tab[(v >> 18) & 63];
		quad[1] = tab[(v >> 12) & 63];
		quad[2] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		quad[3] = i + 2 < n ? tab[v & 63] : '=';
		for (k = 0; k < 4; k++) {
			out[o++] = quad[k];
			if (wrap > 0 && ++col == (size_t)wrap) {
				out[o++] = '\n';
				col = 0;
			}
		}
	}
	if (wrap > 0 && col)
		out[o++] = '\n';
	out[o] = '\0';
	return out;
}

static int value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

unsigned char *sl_b64_decode(const char *s, size_t *n)
{
	unsigned char *out = malloc(strlen(s) / 4 * 3 + 4);
	uint32_t acc = 0;
	size_t o = 0;
	int bits = 0, pad = 0;

	if (!out)
		return NULL;
	for (; *s; s++) {
		int v;

		if (*s == '\n' || *s == '\r' || *s == ' ' || *s == '\t')
			continue;
		if (*s == '=') {
			pad++;
			continue;
		}
		v = value((unsigned char)*s);
		if (v < 0 || pad) {
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)((acc >> bits) & 0xff);
		}
	}
	out[o] = '\0';
	*n = o;
	return out;
}
