/*
 * Steering from outside the dashboard: `sbxloop steer RUN "message"`
 * queues a message in the store's inbox for a run driven by another
 * process (or by none: it waits for `resume`), and the plain
 * transcript's chat, a thread that posts each line typed on a terminal
 * stdin through host->chat_post while `run --no-tui` drives the run.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sbxloop/states.h>
#include <sbxloop/store.h>

#include "cli/cli.h"
#include "engine/ids.h"
#include "host/runs.h"
#include "common/util.h"

#define STEER_TEXT_MAX 4000
#define LINE_MAX_BYTES 4096

/* ------------------------------------------------------- sbxloop steer */

int sl_cmd_steer(struct sl_cli *cli, int argc, char **argv)
{
	const struct sbxloop_store_ops *ops = cli->store.ops;
	struct sbxloop_error err = {0, ""};
	struct sl_run r;
	int64_t id = 0;
	const char *run_id, *text;
	int rc;

	memset(&r, 0, sizeof(r));
	if (argc != 3 || argv[1][0] == '-')
		return sl_cli_usage(sl_cli_command("steer"), 1);
	run_id = argv[1];
	text = argv[2];
	if (!sl_run_id_valid(run_id)) {
		sl_cli_error("unknown run %s", run_id);
		return SL_EXIT_USAGE;
	}
	if (!*text || strspn(text, " \t\r\n") == strlen(text)) {
		sl_cli_error("the message is empty");
		return SL_EXIT_USAGE;
	}
	if (strlen(text) > STEER_TEXT_MAX) {
		sl_cli_error("the message is %zu bytes; keep it under %d",
			     strlen(text), STEER_TEXT_MAX);
		return SL_EXIT_USAGE;
	}
	rc = sl_run_fetch_ops(ops, cli->store.ctx, run_id, &r, &err);
	if (rc) {
		rc = sl_cli_store_failed(run_id, &err, rc);
		goto out;
	}
	if (!strcmp(r.state, SBXLOOP_RUN_COMPLETED)) {
		sl_cli_error("run %s is already completed; nothing to steer",
			     run_id);
		rc = SL_EXIT_USAGE;
		goto out;
	}
	rc = ops->inbox_push(cli->store.ctx, run_id, text, &id, &err);
	if (rc) {
		rc = sl_cli_store_failed(run_id, &err, rc);
		goto out;
	}
	if (sbxloop_run_state_is_terminal(r.state))
		printf("message %lld queued for run %s, which is %s: it is "
		       "answered when you `sbxloop resume %s`\n",
		       (long long)id, run_id, r.state, run_id);
	else
		printf("message %lld queued for run %s: it is answered at "
		       "the run's next phase boundary, or on `sbxloop resume "
		       "%s` if no process drives it now (see `sbxloop logs "
		       "%s --type chat.`)\n",
		       (long long)id, run_id, run_id, run_id);
out:
	sl_run_release(&r);
	return rc;
}

/* ------------------------------------------------ chat on plain stdin */

struct sl_chat_stdin {
	const struct sbxloop_host *host;
	pthread_t thread;
	int wake[2]; /* stop writes one byte: the reader leaves at once */
};

static void post_line(struct sl_chat_stdin *c, char *line)
{
	struct sbxloop_error err = {0, ""};
	size_t n = strlen(line);
	int64_t id = 0;

	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' ||
		     line[n - 1] == ' ' || line[n - 1] == '\t'))
		line[--n] = '\0';
	line += strspn(line, " \t");
	if (!*line)
		return;
	if (c->host->chat_post(c->host, line, &id, &err) < 0)
		fprintf(stderr, "sbxloop: steering message not queued: %s\n",
			err.message);
	else
		fprintf(stderr,
			"sbxloop: message %lld queued; it is answered at the "
			"next phase boundary\n",
			(long long)id);
}

static void *stdin_main(void *arg)
{
	struct sl_chat_stdin *c = arg;
	char buf[LINE_MAX_BYTES];
	size_t len = 0;

	for (;;) {
		struct pollfd p[2] = {{STDIN_FILENO, POLLIN, 0},
				      {c->wake[0], POLLIN, 0}};
		ssize_t n;
		char *nl;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break; /* stopped */
		if (!p[0].revents)
			continue;
		n = read(STDIN_FILENO, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* end of input: no more chat */
		len += (size_t)n;
		buf[len] = '\0';
		while ((nl = memchr(buf, '\n', len)) != NULL) {
			size_t used = (size_t)(nl - buf) + 1;

			*nl = '\0';
			post_line(c, buf);
			memmove(buf, buf + used, len - used);
			len -= used;
		}
		if (len == sizeof(buf) - 1) {
			fprintf(stderr, "sbxloop: a steering line longer "
					"than 4 KiB was dropped\n");
			len = 0;
		}
	}
	return NULL;
}

struct sl_chat_stdin *sl_chat_stdin_start(const struct sbxloop_host *host)
{
	struct sl_chat_stdin *c;

	if (!SBXLOOP_HAS_SLOT(host, struct sbxloop_host, chat_post) ||
	    !isatty(STDIN_FILENO))
		return NULL;
	c = sl_xcalloc(1, sizeof(*c));
	c->host = host;
	if (pipe2(c->wake, O_CLOEXEC) < 0) {
		free(c);
		return NULL;
	}
	if (pthread_create(&c->thread, NULL, stdin_main, c) != 0) {
		close(c->wake[0]);
		close(c->wake[1]);
		free(c);
		return NULL;
	}
	return c;
}

void sl_chat_stdin_stop(struct sl_chat_stdin *c)
{
	if (!c)
		return;
	while (write(c->wake[1], "", 1) < 0 && errno == EINTR)
		;
	pthread_join(c->thread, NULL);
	close(c->wake[0]);
	close(c->wake[1]);
	free(c);
}
