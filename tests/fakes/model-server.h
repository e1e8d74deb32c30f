/*
 * model-server.h - what the scripted model server's two halves share:
 * model-server.c owns the HTTP side (sockets, requests, the log, the
 * scenario's step queue), model-dialects.c owns the three APIs' wire
 * formats (replies, errors, tool mapping). See model-server.c's header
 * for the protocol documents and CLI versions this imitates.
 */
#ifndef MODEL_SERVER_H
#define MODEL_SERVER_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* A growable byte buffer; allocation failure ends the program. */
struct buf {
	char *p;
	size_t n, cap;
};

void buf_add(struct buf *b, const char *s, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void buf_free(struct buf *b);

/* The API a request speaks, decided by its path. */
enum api { API_NONE, API_ANTHROPIC, API_OPENAI, API_GEMINI };

enum intent { TOOL_NONE, TOOL_WRITE, TOOL_SHELL };

/* One scripted assistant reply (see model-server.c for the JSON). */
struct step {
	char *text;
	enum intent tool;
	char *path, *content, *command;
	int fault;        /* HTTP status of an http fault, else 0 */
	char *fault_body; /* its message, or a whole JSON body */
	int retry_after;  /* seconds, for a 429 */
	int cut;          /* close the stream mid-reply */
	int times;        /* requests it answers; 0 for all of them */
};

/* What the HTTP side needs to know to answer one model request. */
struct call {
	enum api api;
	const cJSON *req;    /* the parsed request body */
	const char *raw;     /* the body as sent, for sniffing the cwd */
	const char *model;   /* from the body or the path */
	int stream;          /* SSE wanted */
	const char *workdir; /* --workdir, or NULL */
	unsigned long seq;   /* request number, for ids */
	int force_tools;     /* call undeclared tools by the CLI's name */
};

/* A reply the HTTP side writes: SSE bodies go out chunked, and a cut
 * reply stops after `cut` bytes of the body and drops the connection. */
struct reply {
	int status;
	int sse;
	int retry_after;
	struct buf body;
	size_t cut; /* 0: send it all */
};

/* model-dialects.c */
int call_has_tools(const struct call *c);
int call_continues(const struct call *c);
void dialect_turn(const struct call *c, const struct step *s, int cut,
		  struct reply *r);
void dialect_error(enum api api, int status, const char *msg, struct reply *r);
void dialect_side(const struct call *c, struct reply *r);
void dialect_count_tokens(const struct call *c, struct reply *r);

#endif
