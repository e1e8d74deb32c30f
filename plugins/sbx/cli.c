/*
 * The `sbx` CLI wrapper of the sbx module: builds `sbx [--app-name X]
 * ARGS...`, runs it through the host's subprocess helper with a timeout,
 * tells an sbx failure from the inner command's own failure (UPSTREAM.md
 * 8.2) and parses `sbx ls` (8.1.1). Only the module's components call it.
 */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "sbx.h"

#define SLOW_CALL_S 60.0

char *sbxp_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

char *sbxp_shell_quote(const char *s)
{
	size_t n = 3, i;
	char *out, *o;

	for (i = 0; s[i]; i++)
		n += s[i] == '\'' ? 4 : 1;
	out = malloc(n);
	if (!out)
		return NULL;
	o = out;
	*o++ = '\'';
	for (i = 0; s[i]; i++) {
		if (s[i] == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = s[i];
		}
	}
	*o++ = '\'';
	*o = '\0';
	return out;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void sbxp_init(struct sbxp *s, const struct sbxloop_host *host)
{
	memset(s, 0, sizeof(*s));
	s->host = host;
	s->app_name = host->config_string(host, "app_name");
	s->timeout_s = (double)host->config_int(host, "sbx.call_timeout",
						(long long)SBXP_CALL_TIMEOUT);
	s->create_timeout_s = (double)host->config_int(
		host, "sbx.create_timeout", (long long)SBXP_CREATE_TIMEOUT);
	if (s->timeout_s <= 0)
		s->timeout_s = SBXP_CALL_TIMEOUT;
	if (s->create_timeout_s <= 0)
		s->create_timeout_s = SBXP_CREATE_TIMEOUT;
}

char *sbxp_argv_text(struct sbxp *s, const char *const *args)
{
	size_t n = 4, i;
	char *text, *red, *out;
	int hide = 0;

	for (i = 0; args[i]; i++)
		n += strlen(args[i]) + 4;
	text = malloc(n);
	if (!text)
		return NULL;
	strcpy(text, "sbx");
	for (i = 0; args[i]; i++) {
		strcat(text, " ");
		if (hide) {
			strcat(text, "***");
			hide = 0;
		} else if (!strncmp(args[i], "--value=", 8)) {
			strcat(text, "--value=***");
		} else {
			strcat(text, args[i]);
			hide = !strcmp(args[i], "--value");
		}
	}
	red = s->host->redact(s->host, text);
	free(text);
	if (!red)
		return NULL;
	out = strdup(red);
	s->host->free(red);
	return out;
}

static int contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; hay && *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return 1;
	return 0;
}

int sbxp_not_found(const char *err)
{
	static const char *const markers[] = {"not found", "no such sandbox",
					      "does not exist",
					      "unknown sandbox", NULL};
	size_t i;

	for (i = 0; markers[i]; i++)
		if (contains_ci(err, markers[i]))
			return 1;
	return 0;
}

int sbxp_exec_infra_failure(const char *err)
{
	static const char *const infra[] = {"is not running",
					    "cannot connect to the",
					    "error during connect",
					    "dial unix",
					    "no such sandbox",
					    "unknown sandbox",
					    NULL};
	size_t i;

	if (!err || !*err)
		return 0;
	for (i = 0; infra[i]; i++)
		if (contains_ci(err, infra[i]))
			return 1;
	/* "sh: foo: command not found" is the command's own failure */
	return contains_ci(err, "sandbox") && sbxp_not_found(err);
}

int sbxp_run(struct sbxp *s, const struct sbxp_call *call,
	     struct sbxloop_proc_result *res, struct sbxloop_error *err)
{
	const struct sbxloop_host *h = s->host;
	struct sbxloop_proc_spec spec;
	const char **argv;
	char *text = NULL;
	double t0, dt;
	size_t n = 0, i;
	int rc;

	for (i = 0; call->args[i]; i++)
		;
	argv = calloc(i + 4, sizeof(*argv));
	if (!argv)
		return h->error_set(h, err, SBXLOOP_ENOMEM, "out of memory");
	argv[n++] = "sbx";
	if (s->app_name && *s->app_name) {
		argv[n++] = "--app-name";
		argv[n++] = s->app_name;
	}
	for (i = 0; call->args[i]; i++)
		argv[n++] = call->args[i];
	argv[n] = NULL;

	memset(&spec, 0, sizeof(spec));
	spec.struct_size = sizeof(spec);
	spec.argv = argv;
	spec.stdin_data = call->stdin_data;
	spec.stdin_len = call->stdin_len;
	spec.timeout_s = call->timeout_s > 0   ? call->timeout_s
			 : call->timeout_s < 0 ? 0
					       : s->timeout_s;
	spec.on_stdout_line = call->on_stdout_line;
	spec.on_stderr_line = call->on_stderr_line;
	spec.user = call->user;
	memset(res, 0, sizeof(*res));
	res->struct_size = sizeof(*res);

	text = sbxp_argv_text(s, call->args);
	h->log(h, SBXLOOP_LOG_DEBUG, "running %s", text ? text : "sbx");
	t0 = now_s();
	rc = h->proc_run(h, &spec, res, err);
	dt = now_s() - t0;
	if (rc == SBXLOOP_ENOTFOUND) {
		rc = h->error_set(h, err, SBXLOOP_ENOTFOUND,
				  "sbx binary 'sbx' not found on PATH: "
				  "install Docker Sandboxes and run "
				  "`sbx login`");
		goto out;
	}
	if (rc < 0)
		goto out;
	if (res->timed_out) {
		rc = h->error_set(h, err, SBXLOOP_ETIMEDOUT,
				  "'%s' timed out after %gs",
				  text ? text : "sbx", spec.timeout_s);
		goto out;
	}
	if (dt > SLOW_CALL_S)
		h->log(h, SBXLOOP_LOG_INFO, "'%s' took %.1fs",
		       text ? text : "sbx", dt);
out:
	free(text);
	free(argv);
	return rc;
}

/* The last line of `s` (a stderr tail), trimmed, into buf. */
static void last_lines(const char *s, char *buf, size_t size)
{
	size_t n = s ? strlen(s) : 0;

	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= size)
		s += n - (size - 1), n = size - 1;
	if (n)
		memcpy(buf, s, n);
	buf[n] = '\0';
}

int sbxp_check(struct sbxp *s, const struct sbxp_call *call,
	       struct sbxloop_proc_result *res, struct sbxloop_error *err)
{
	struct sbxloop_proc_result local;
	struct sbxloop_proc_result *r = res ? res : &local;
	char tail[512], *text;
	int rc;

	rc = sbxp_run(s, call, r, err);
	if (rc == 0 && r->exit_code != 0) {
		last_lines(r->err_len ? r->err : r->out, tail, sizeof(tail));
		text = sbxp_argv_text(s, call->args);
		rc = s->host->error_set(
			s->host, err,
			sbxp_not_found(r->err) ? SBXLOOP_ENOTFOUND
					       : SBXLOOP_EINFRA,
			"'%s' failed (exit %d)%s%s", text ? text : "sbx",
			r->exit_code, *tail ? ": " : "", tail);
		free(text);
	}
	if (!res)
		s->host->proc_result_clear(&local);
	return rc;
}

int sbxp_checkv(struct sbxp *s, const char *const *args,
		struct sbxloop_error *err)
{
	struct sbxp_call call;

	memset(&call, 0, sizeof(call));
	call.args = args;
	return sbxp_check(s, &call, NULL, err);
}

int sbxp_allow_network(struct sbxp *s, const char *sandbox,
		       const char *const *domains, struct sbxloop_error *err)
{
	size_t n = 1, i;
	char *list;
	int rc;

	if (!domains || !domains[0])
		return 0;
	for (i = 0; domains[i]; i++)
		n += strlen(domains[i]) + 1;
	list = malloc(n);
	if (!list)
		return s->host->error_set(s->host, err, SBXLOOP_ENOMEM,
					  "sbx: out of memory");
	list[0] = '\0';
	for (i = 0; domains[i]; i++) {
		if (i)
			strcat(list, ",");
		strcat(list, domains[i]);
	}
	{
		const char *args[] = {"policy", "allow", "network",
				      sandbox,  list,    NULL};

		rc = sbxp_checkv(s, args, err);
	}
	free(list);
	return rc;
}

/* ---- `sbx ls` ------------------------------------------------------- */

#define LS_MAX_COLS 16

struct ls_col {
	size_t start;
	char name[32];
};

static size_t parse_header(const char *line, size_t len, struct ls_col *cols)
{
	size_t i = 0, n = 0, start, k;

	while (i < len && n < LS_MAX_COLS) {
		while (i < len && line[i] == ' ')
			i++;
		if (i >= len)
			break;
		start = i;
		/* a cell ends at two spaces (one space may sit inside) */
		while (i < len && !(line[i] == ' ' &&
				    (i + 1 >= len || line[i + 1] == ' ')))
			i++;
		k = i - start < sizeof(cols[n].name) - 1
			    ? i - start
			    : sizeof(cols[n].name) - 1;
		cols[n].start = start;
		memcpy(cols[n].name, line + start, k);
		cols[n].name[k] = '\0';
		n++;
	}
	return n;
}

static int col_index(const struct ls_col *cols, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(cols[i].name, name))
			return (int)i;
	return -1;
}

static const char *cell(char *const *cells, int i)
{
	return i >= 0 && cells[i] ? cells[i] : "";
}

void sbxp_parse_ls(const char *text,
		   void (*cb)(void *user, const char *name, const char *agent,
			      const char *status, const char *workspace),
		   void *user)
{
	struct ls_col cols[LS_MAX_COLS];
	char *cells[LS_MAX_COLS];
	const char *line = text, *nl;
	size_t ncols = 0, len, i;
	int name_i = -1, agent_i, status_i, ws_i;

	while (line && *line) {
		nl = strchr(line, '\n');
		len = nl ? (size_t)(nl - line) : strlen(line);
		if (len && line[len - 1] == '\r')
			len--;
		if (!ncols) {
			struct ls_col tmp[LS_MAX_COLS];
			size_t n = parse_header(line, len, tmp);

			if (col_index(tmp, n, "SANDBOX") >= 0 ||
			    col_index(tmp, n, "NAME") >= 0) {
				memcpy(cols, tmp, sizeof(tmp));
				ncols = n;
				name_i = col_index(cols, n, "SANDBOX");
				if (name_i < 0)
					name_i = col_index(cols, n, "NAME");
			}
			goto next;
		}
		memset(cells, 0, sizeof(cells));
		for (i = 0; i < len;) {
			size_t start, end;
			int c = 0;

			while (i < len && line[i] == ' ')
				i++;
			if (i >= len)
				break;
			start = i;
			while (i < len &&
			       !(line[i] == ' ' &&
				 (i + 1 >= len || line[i + 1] == ' ')))
				i++;
			end = i;
			/* the column with the greatest start <= the cell's */
			for (size_t k = 0; k < ncols; k++)
				if (cols[k].start <= start)
					c = (int)k;
			while (c < (int)ncols && cells[c])
				c++;
			if (c >= (int)ncols)
				continue;
			cells[c] = strndup(line + start, end - start);
		}
		agent_i = col_index(cols, ncols, "AGENT");
		status_i = col_index(cols, ncols, "STATUS");
		ws_i = col_index(cols, ncols, "WORKSPACE");
		if (cells[name_i] && *cells[name_i])
			cb(user, cells[name_i], cell(cells, agent_i),
			   cell(cells, status_i), cell(cells, ws_i));
		for (i = 0; i < ncols; i++)
			free(cells[i]);
next:
		line = nl ? nl + 1 : NULL;
	}
}

/* ---- `sbx secret ls` and other whitespace tables ---------------------- */

#define TABLE_MAX_COLS 16

/* Split [p, p+len) at blanks: up to `max` cells with their offsets. */
static size_t split_words(const char *p, size_t len, size_t *starts,
			  size_t *lens, size_t max)
{
	size_t i = 0, n = 0;

	while (i < len && n < max) {
		while (i < len && (p[i] == ' ' || p[i] == '\t'))
			i++;
		if (i >= len)
			break;
		starts[n] = i;
		while (i < len && p[i] != ' ' && p[i] != '\t')
			i++;
		lens[n] = i - starts[n];
		n++;
	}
	return n;
}

static int word_is(const char *p, size_t len, const char *name)
{
	return strlen(name) == len && !strncmp(p, name, len);
}

int sbxp_parse_table(const char *text, const char *const *const *want,
		     size_t n_want,
		     void (*cb)(void *user, const char *const *cells),
		     void *user)
{
	size_t hs[TABLE_MAX_COLS], hl[TABLE_MAX_COLS], ncols = 0;
	int map[TABLE_MAX_COLS]; /* header column -> wanted index or -1 */
	const char *line = text, *nl;
	int found = 0;

	while (line && *line) {
		size_t len, ws[TABLE_MAX_COLS], wl[TABLE_MAX_COLS], nw, i, k;
		char *cells[TABLE_MAX_COLS];

		nl = strchr(line, '\n');
		len = nl ? (size_t)(nl - line) : strlen(line);
		if (len && line[len - 1] == '\r')
			len--;
		nw = split_words(line, len, ws, wl, TABLE_MAX_COLS);
		if (!found) {
			/* the header: a line naming the first wanted column */
			for (i = 0; i < nw && !found; i++)
				for (k = 0; want[0][k]; k++)
					if (word_is(line + ws[i], wl[i],
						    want[0][k]))
						found = 1;
			if (found) {
				ncols = nw;
				for (i = 0; i < nw; i++) {
					size_t w, a;

					hs[i] = ws[i];
					hl[i] = wl[i];
					map[i] = -1;
					for (w = 0; w < n_want && map[i] < 0;
					     w++)
						for (a = 0; want[w][a]; a++)
							if (word_is(line + hs[i],
								    hl[i],
								    want[w]
									[a]))
								map[i] =
									(int)w;
				}
			}
			goto next;
		}
		if (!nw || n_want > TABLE_MAX_COLS)
			goto next;
		for (i = 0; i < n_want; i++)
			cells[i] = NULL;
		for (i = 0; i < nw; i++) {
			size_t c = i;

			/* a row with empty cells: place words by offset */
			if (nw != ncols) {
				c = 0;
				for (k = 0; k < ncols; k++)
					if (hs[k] <= ws[i])
						c = k;
			}
			if (c >= ncols || map[c] < 0 || cells[map[c]])
				continue;
			cells[map[c]] = strndup(line + ws[i], wl[i]);
		}
		for (i = 0; i < n_want; i++)
			if (!cells[i])
				cells[i] = strdup("");
		for (i = 0; i < n_want && cells[i]; i++)
			;
		if (i == n_want)
			cb(user, (const char *const *)cells);
		for (i = 0; i < n_want; i++)
			free(cells[i]);
next:
		line = nl ? nl + 1 : NULL;
	}
	return found ? 0 : -1;
}
