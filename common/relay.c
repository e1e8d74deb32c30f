/*
 * The one bidirectional socket relay (relay.h). Each direction moves
 * through a pipe with splice(2), so bytes never cross into user space;
 * one poll loop drives both directions without blocking on either, so
 * two peers that both write before they read cannot deadlock it.
 */
#include "config.h"

#include "common/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

/* 1 MiB per direction in flight: the pipe's capacity, when allowed */
#define RELAY_PIPE_SIZE (1 << 20)
#define RELAY_CHUNK (1 << 20)

struct leg {
	int from, to;
	int pipe[2];
	size_t queued; /* in the pipe, not yet written to `to` */
	int eof;       /* `from` ended */
	int done;      /* eof passed on (or failed) */
	unsigned long long moved;
};

static int write_all(int fd, const char *p, size_t len)
{
	struct pollfd pf = {fd, POLLOUT, 0};

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (poll(&pf, 1, 30000) <= 0)
				return -1;
		} else {
			return -1;
		}
	}
	return 0;
}

/* Move what can move now; -1 on a failure of either side. */
static int leg_step(struct leg *l)
{
	ssize_t n;

	if (!l->eof && l->queued < RELAY_CHUNK) {
		n = splice(l->from, NULL, l->pipe[1], NULL, RELAY_CHUNK,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0)
			l->queued += (size_t)n;
		else if (n == 0)
			l->eof = 1;
		else if (errno != EAGAIN && errno != EINTR)
			return -1;
	}
	while (l->queued) {
		n = splice(l->pipe[0], NULL, l->to, NULL, l->queued,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			l->queued -= (size_t)n;
			l->moved += (unsigned long long)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			break;
		} else {
			return -1;
		}
	}
	if (l->eof && !l->queued && !l->done) {
		shutdown(l->to, SHUT_WR);
		l->done = 1;
	}
	return 0;
}

static void nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int sl_relay(int a, int b, const char *a_head, size_t a_head_len,
	     unsigned long long bytes[2])
{
	struct leg leg[2] = {{a, b, {-1, -1}, 0, 0, 0, 0},
			     {b, a, {-1, -1}, 0, 0, 0, 0}};
	int i, rc = -1;

	if (a_head_len && write_all(b, a_head, a_head_len) < 0)
		goto out;
	leg[0].moved = a_head_len;
	for (i = 0; i < 2; i++) {
		if (pipe2(leg[i].pipe, O_CLOEXEC | O_NONBLOCK) < 0)
			goto out;
		fcntl(leg[i].pipe[1], F_SETPIPE_SZ, RELAY_PIPE_SIZE);
	}
	nonblock(a);
	nonblock(b);
	while (!leg[0].done || !leg[1].done) {
		struct pollfd pf[2] = {{a, 0, 0}, {b, 0, 0}};

		for (i = 0; i < 2; i++) {
			struct leg *l = &leg[i];

			if (l->done)
				continue;
			if (!l->eof)
				pf[i].events |= POLLIN;
			if (l->queued)
				pf[1 - i].events |= POLLOUT;
		}
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			goto out;
		}
		for (i = 0; i < 2; i++)
			if (pf[i].revents & POLLNVAL)
				goto out;
		for (i = 0; i < 2; i++)
			if (!leg[i].done && leg_step(&leg[i]) < 0)
				goto out;
		/*
		 * A peer gone both ways (POLLHUP) after its end of stream
		 * can take nothing more; without this poll would spin.
		 */
		for (i = 0; i < 2; i++)
			if ((pf[i].revents & (POLLHUP | POLLERR)) &&
			    leg[i].done) {
				rc = leg[1 - i].queued ? -1 : 0;
				goto out;
			}
	}
	rc = 0;
out:
	for (i = 0; i < 2; i++) {
		if (leg[i].pipe[0] >= 0)
			close(leg[i].pipe[0]);
		if (leg[i].pipe[1] >= 0)
			close(leg[i].pipe[1]);
	}
	if (bytes) {
		bytes[0] = leg[0].moved;
		bytes[1] = leg[1].moved;
	}
	return rc;
}
