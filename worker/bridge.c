/*
 * `sbxloop-worker bridge --port P --socket PATH -- CMD...`: the egress
 * bridge of a `local.network: proxy` sandbox. It runs CMD as its child
 * and, for as long as CMD lives, listens on 127.0.0.1:P (the sandbox's
 * own network namespace, where loopback is all there is) and carries
 * each TCP connection to the unix socket PATH, the host's egress proxy
 * bound into the sandbox. It exits as CMD does (its status, or by its
 * signal). Nothing is decided here: the proxy decides every request.
 * Each connection is relayed on a thread (common/relay.c).
 * Called only by main.c's dispatch.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker.h"
#include "common/relay.h"

static int usage(void)
{
	fputs("usage: sbxloop-worker bridge --port PORT --socket PATH -- "
	      "COMMAND [ARG...]\n",
	      stderr);
	return WK_EXIT_USAGE;
}

static int listen_loopback(unsigned port)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 128) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

struct bridged {
	int tcp;
	const char *sock_path;
};

/*
 * One connection, on a thread of its own (a fork per connection cost
 * ~0.3 ms more per request): relay it to the proxy.
 */
static void *serve(void *arg)
{
	struct bridged *b = arg;
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", b->sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		static const char down[] =
			"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n"
			"Connection: close\r\n\r\n";

		/* the proxy is gone (its sandbox was removed): no egress */
		if (send(b->tcp, down, sizeof(down) - 1, MSG_NOSIGNAL) < 0) {
			/* the client left first: nothing to tell */
		}
	} else {
		sl_relay(b->tcp, fd, NULL, 0, NULL);
	}
	if (fd >= 0)
		close(fd);
	close(b->tcp);
	free(b);
	return NULL;
}

int wk_bridge(int argc, char **argv)
{
	const char *sock_path = NULL;
	unsigned long port = 0;
	sigset_t chld, old;
	pid_t job, pid;
	pthread_attr_t attr;
	int i, lfd, sfd, devnull, status = 0;

	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--") && i + 1 < argc)
			break;
		if (i + 1 >= argc)
			return usage();
		if (!strcmp(argv[i], "--port"))
			port = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--socket"))
			sock_path = argv[++i];
		else
			return usage();
	}
	if (i >= argc || !sock_path || port == 0 || port > 65535 ||
	    strlen(sock_path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return usage();
	lfd = listen_loopback((unsigned)port);
	if (lfd < 0) {
		fprintf(stderr,
			"sbxloop-worker bridge: cannot listen on "
			"127.0.0.1:%lu: %s\n",
			port, strerror(errno));
		return WK_EXIT_SOFTWARE;
	}
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	sfd = signalfd(-1, &chld, SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "sbxloop-worker bridge: signalfd: %s\n",
			strerror(errno));
		return WK_EXIT_SOFTWARE;
	}
	job = fork();
	if (job < 0) {
		fprintf(stderr, "sbxloop-worker bridge: fork: %s\n",
			strerror(errno));
		return WK_EXIT_SOFTWARE;
	}
	if (job == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(argv[i + 1], argv + i + 1);
		fprintf(stderr, "sbxloop-worker bridge: cannot run '%s': %s\n",
			argv[i + 1], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	/* the job's streams are its own: the bridge holds none open */
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, STDIN_FILENO);
		dup2(devnull, STDOUT_FILENO);
		close(devnull);
	}
	/* threads only after the fork: the job starts from a clean copy */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	for (;;) {
		struct pollfd pf[2] = {{lfd, POLLIN, 0}, {sfd, POLLIN, 0}};

		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents) {
			struct signalfd_siginfo si;
			int st, done = 0;

			if (read(sfd, &si, sizeof(si)) < 0) {
				/* drained below by waitpid all the same */
			}
			while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
				if (pid == job) {
					status = st;
					done = 1;
				}
			if (done)
				break;
		}
		if (pf[0].revents) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			struct bridged *b;
			pthread_t t;

			if (c < 0)
				continue;
			b = malloc(sizeof(*b));
			if (b) {
				b->tcp = c;
				b->sock_path = sock_path;
			}
			if (!b || pthread_create(&t, &attr, serve, b) != 0) {
				free(b);
				close(c);
			}
		}
	}
	close(lfd);
	pthread_attr_destroy(&attr);
	/* open relays end with the process: the job is done */
	if (WIFSIGNALED(status)) {
		signal(WTERMSIG(status), SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		raise(WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : WK_EXIT_SOFTWARE;
}
