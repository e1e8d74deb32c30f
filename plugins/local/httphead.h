/*
 * Parsing one proxy request head (httphead.c): the request line, the
 * header lines and the host the request names, with every refusal the
 * proxy answers (400, 403) and why. Private to the local module's proxy.
 */
#ifndef SBXLOOP_LOCAL_HTTPHEAD_H
#define SBXLOOP_LOCAL_HTTPHEAD_H

#include <stddef.h>

#define LP_HOST_MAX 256

struct lp_request {
	char method[16];
	char host[LP_HOST_MAX]; /* lowercase, no trailing dot */
	unsigned port;
	const char *path; /* origin-form target (absolute-URI requests) */
	size_t path_len;
	const char *version; /* "HTTP/1.x" */
	int connect;
	const char *headers; /* after the request line */
	size_t headers_len;  /* up to and including the blank line */
};

/* Refusal: the status line and why, for the client and the record. */
struct lp_refusal {
	int status;
	const char *why;
};

/*
 * Parse the head (`len` bytes ending with the blank line) into *q, which
 * borrows from it. 0, or -1 with *r filled; q->host is set when a host
 * was named, even on a refusal, so the attempt can be recorded.
 */
int lp_parse_head(const char *head, size_t len, struct lp_request *q,
		  struct lp_refusal *r);

/* The value of header `name` (first one, trimmed) and its length. */
const char *lp_header(const struct lp_request *q, const char *name,
		      size_t *vlen);

/* A decimal port 1..65535 of `len` bytes: 0, or -1. */
int lp_take_port(const char *s, size_t len, unsigned *port);

#endif
