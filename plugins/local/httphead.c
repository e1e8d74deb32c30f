/*
 * One proxy request head, parsed strictly (httphead.h): CRLF lines only,
 * token header names, no folding, a bounded method, HTTP/1.0 or 1.1.
 * Names are lowercased without one trailing dot; anything that is not a
 * DNS name the policy could allow is refused here, an IP literal with
 * 403 (never decided on the allowlist). Called by proxy.c only.
 */
#include "config.h"

#include "httphead.h"

#include "common/policy_patterns.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>

static int is_tchar(int c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* "127.0.0.1", "[::1]", "0x7f.1", "2130706433": an address, no name */
static int ip_literal(const char *h)
{
	struct in6_addr a6;
	struct in_addr a4;
	const char *last;

	if (h[0] == '[' || strchr(h, ':'))
		return 1;
	if (inet_pton(AF_INET, h, &a4) == 1 || inet_pton(AF_INET6, h, &a6))
		return 1;
	/* inet_aton's forms (0x7f.1, 2130706433): a numeric last label */
	last = strrchr(h, '.');
	last = last ? last + 1 : h;
	return *last &&
	       strspn(last, "0123456789xXabcdefABCDEF") == strlen(last) &&
	       isdigit((unsigned char)*last);
}

/*
 * `raw` (len bytes) into out as a lowercase name without one trailing
 * dot. 0, or a refusal: 403 for an IP literal (never decided on the
 * allowlist), 400 for anything that is no host name.
 */
static int take_host(const char *raw, size_t len, char *out,
		     struct lp_refusal *r)
{
	size_t i;

	if (len == 0 || len >= LP_HOST_MAX) {
		*r = (struct lp_refusal){400, "no valid host name"};
		return -1;
	}
	for (i = 0; i < len; i++)
		out[i] = (char)tolower((unsigned char)raw[i]);
	out[len] = '\0';
	if (len > 1 && out[len - 1] == '.')
		out[len - 1] = '\0';
	for (i = 0; out[i]; i++) {
		char c = out[i];

		if (!(islower((unsigned char)c) || isdigit((unsigned char)c) ||
		      c == '-' || c == '.')) {
			/* not a name: nothing worth recording either */
			out[0] = '\0';
			*r = (struct lp_refusal){400, "no valid host name"};
			return -1;
		}
	}
	if (ip_literal(out)) {
		*r = (struct lp_refusal){403,
					 "an IP literal is never allowed; "
					 "use a host name"};
		return -1;
	}
	if (!sl_pattern_valid(out, 0)) {
		*r = (struct lp_refusal){403, "not a host name the policy can "
					      "allow"};
		return -1;
	}
	return 0;
}

int lp_take_port(const char *s, size_t len, unsigned *port)
{
	unsigned v = 0;
	size_t i;

	if (len == 0 || len > 5)
		return -1;
	for (i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = v;
	return 0;
}

/* Split "host[:port]" (no brackets: an IPv6 literal has colons). */
static int take_authority(const char *a, size_t len, unsigned dflt, char *host,
			  unsigned *port, struct lp_refusal *r)
{
	const char *colon = memchr(a, ':', len);
	size_t hl = colon ? (size_t)(colon - a) : len;

	if (memchr(a, '@', len)) {
		*r = (struct lp_refusal){400, "userinfo in a URL is refused"};
		return -1;
	}
	if ((len && a[0] == '[') ||
	    (colon && memchr(colon + 1, ':', len - hl - 1))) {
		*r = (struct lp_refusal){403,
					 "an IP literal is never allowed; "
					 "use a host name"};
		return -1;
	}
	*port = dflt;
	if (colon && lp_take_port(colon + 1, len - hl - 1, port) < 0) {
		*r = (struct lp_refusal){400, "bad port"};
		return -1;
	}
	return take_host(a, hl, host, r);
}

/* The value of header `name` in the head (first one), or NULL. */
const char *lp_header(const struct lp_request *q, const char *name,
		      size_t *vlen)
{
	const char *line = q->headers, *end = q->headers + q->headers_len;
	size_t nl = strlen(name);

	while (line < end) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		const char *v;

		if (!eol || eol == line + 1)
			break;
		if ((size_t)(eol - line) > nl && line[nl] == ':' &&
		    strncasecmp(line, name, nl) == 0) {
			v = line + nl + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			*vlen = (size_t)(eol - 1 - v);
			while (*vlen &&
			       (v[*vlen - 1] == ' ' || v[*vlen - 1] == '\t'))
				(*vlen)--;
			return v;
		}
		line = eol + 1;
	}
	return NULL;
}

/*
 * Parse the head (`len` bytes ending with the blank line). Every line
 * must end in CRLF and every header be a `name: value` token line; an
 * absolute-URI request must name http://, no userinfo, and agree with
 * its Host header; CONNECT must name host:port and agree too.
 */
int lp_parse_head(const char *head, size_t len, struct lp_request *q,
		  struct lp_refusal *r)
{
	const char *sp1, *sp2, *eol, *target, *line, *end = head + len;
	const char *hv;
	size_t ml, tl, hvl;

	memset(q, 0, sizeof(*q));
	*r = (struct lp_refusal){400, "malformed request"};
	eol = memchr(head, '\n', len);
	if (!eol || eol == head || eol[-1] != '\r')
		return -1;
	sp1 = memchr(head, ' ', (size_t)(eol - head));
	if (!sp1)
		return -1;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
	if (!sp2)
		return -1;
	ml = (size_t)(sp1 - head);
	if (ml == 0 || ml >= sizeof(q->method))
		return -1;
	for (size_t i = 0; i < ml; i++)
		if (!is_tchar((unsigned char)head[i]))
			return -1;
	memcpy(q->method, head, ml);
	if ((size_t)(eol - 1 - sp2 - 1) != 8 ||
	    (strncmp(sp2 + 1, "HTTP/1.1", 8) != 0 &&
	     strncmp(sp2 + 1, "HTTP/1.0", 8) != 0))
		return -1;
	q->version = sp2 + 1;
	target = sp1 + 1;
	tl = (size_t)(sp2 - target);
	for (size_t i = 0; i < tl; i++)
		if ((unsigned char)target[i] <= 0x20 ||
		    (unsigned char)target[i] >= 0x7f)
			return -1;
	/* the headers: CRLF lines of `token: value`, no folding */
	q->headers = eol + 1;
	q->headers_len = (size_t)(end - q->headers);
	for (line = q->headers; line < end;) {
		const char *colon;

		eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol || eol == line || eol[-1] != '\r')
			return -1;
		if (eol == line + 1)
			break; /* the blank line */
		colon = memchr(line, ':', (size_t)(eol - line));
		if (!colon || colon == line)
			return -1;
		for (const char *c = line; c < colon; c++)
			if (!is_tchar((unsigned char)*c))
				return -1;
		for (const char *c = colon; c < eol - 1; c++)
			if ((unsigned char)*c < 0x20 && *c != '\t')
				return -1;
		line = eol + 1;
	}
	if (strcmp(q->method, "CONNECT") == 0) {
		q->connect = 1;
		if (take_authority(target, tl, 0, q->host, &q->port, r) < 0)
			return -1;
		if (!q->port) {
			*r = (struct lp_refusal){400,
						 "CONNECT needs host:port"};
			return -1;
		}
	} else {
		const char *a, *rest;
		size_t al;

		if (tl >= 8 && strncasecmp(target, "https://", 8) == 0) {
			*r = (struct lp_refusal){400,
						 "https:// URLs go through "
						 "CONNECT"};
			return -1;
		}
		if (tl < 7 || strncasecmp(target, "http://", 7) != 0) {
			*r = (struct lp_refusal){400,
						 "a proxy request needs an "
						 "absolute http:// URL"};
			return -1;
		}
		a = target + 7;
		al = strcspn(a, "/?#");
		if (al > tl - 7)
			al = tl - 7;
		if (take_authority(a, al, 80, q->host, &q->port, r) < 0)
			return -1;
		rest = a + al;
		q->path = rest < target + tl ? rest : "/";
		q->path_len =
			rest < target + tl ? (size_t)(target + tl - rest) : 1;
		if (*q->path != '/') {
			*r = (struct lp_refusal){400, "malformed request"};
			return -1;
		}
	}
	hv = lp_header(q, "Host", &hvl);
	if (hv) {
		char hh[LP_HOST_MAX];
		unsigned hp;
		struct lp_refusal hr;

		if (take_authority(hv, hvl, q->connect ? q->port : 80, hh, &hp,
				   &hr) < 0 ||
		    strcmp(hh, q->host) != 0 || hp != q->port) {
			*r = (struct lp_refusal){400,
						 "the Host header differs "
						 "from the request's host"};
			return -1;
		}
	}
	return 0;
}
