/*
 * github-support.c - the test side of tests/fakes/github-server: fork
 * and exec it in a temp dir, wait for its port file, talk to its
 * /_fake/ endpoints over a plain socket, read its request log, put a
 * socat TLS front with a throwaway openssl CA before it, and stop and
 * reap everything. Suites include github-support.h; this file uses
 * testutil for temp dirs and running the openssl CLI.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#include "github-support.h"

/* How long a start may take: valgrind runs the server too. */
#define START_SECONDS 60

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Fork and exec ARGV with stdin from /dev/null and stderr to ERR (when
 * not NULL), in its own process group when GROUP; the pid or -1. */
static pid_t spawn(const char *const *argv, int group, const char *err)
{
	pid_t pid = fork();
	int fd;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* a test that dies takes its servers along */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (group)
			setpgid(0, 0);
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0)
			dup2(fd, 0);
		fd = err ? open(err, O_WRONLY | O_CREAT | O_APPEND, 0600) : -1;
		if (fd >= 0)
			dup2(fd, 2);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "cannot run '%s': %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	return pid;
}

static int reap(pid_t pid, int wait_ms)
{
	int status, waited = 0;
	pid_t got;

	for (;;) {
		got = waitpid(pid, &status, WNOHANG);
		if (got == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status)
						 : 128 + WTERMSIG(status);
		if (got < 0)
			return -1;
		if (waited >= wait_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return 128 + SIGKILL;
		}
		sleep_ms(20);
		waited += 20;
	}
}

int gh_fake_start(struct gh_fake *f, const char *token,
		  const char *const *repos)
{
	const char *build = getenv("SBXLOOP_BUILDDIR");
	const char *argv[64];
	char bin[1024], port_file[600], state[600], *tmp, *text;
	size_t n = 0, i;
	int waited = 0, st;

	memset(f, 0, sizeof(*f));
	if (!build || !*build) {
		fprintf(stderr, "SBXLOOP_BUILDDIR is not set: run the suite "
				"with make check\n");
		return -1;
	}
	snprintf(bin, sizeof(bin), "%s/tests/fakes/github-server", build);
	tmp = tu_tmpdir();
	snprintf(f->dir, sizeof(f->dir), "%s", tmp);
	free(tmp);
	snprintf(f->log, sizeof(f->log), "%s/requests.jsonl", f->dir);
	snprintf(port_file, sizeof(port_file), "%s/port", f->dir);
	snprintf(state, sizeof(state), "%s/state.json", f->dir);
	argv[n++] = bin;
	argv[n++] = "--port-file";
	argv[n++] = port_file;
	argv[n++] = "--log";
	argv[n++] = f->log;
	argv[n++] = "--state";
	argv[n++] = state;
	if (token) {
		argv[n++] = "--token";
		argv[n++] = token;
	}
	for (i = 0; repos && repos[i] && n + 3 < 64; i++) {
		argv[n++] = "--repo";
		argv[n++] = repos[i];
	}
	argv[n] = NULL;
	f->pid = spawn(argv, 0, NULL);
	if (f->pid < 0) {
		fprintf(stderr, "cannot fork: %s\n", strerror(errno));
		return -1;
	}
	while (!(text = tu_read(port_file))) {
		if (waitpid(f->pid, &st, WNOHANG) == f->pid) {
			fprintf(stderr, "github-server exited before "
					"listening (see its stderr above)\n");
			f->pid = 0;
			gh_fake_stop(f);
			return -1;
		}
		if (waited >= START_SECONDS * 1000) {
			fprintf(stderr,
				"github-server did not write its port "
				"file in %d s\n",
				START_SECONDS);
			gh_fake_stop(f);
			return -1;
		}
		sleep_ms(10);
		waited += 10;
	}
	f->port = atoi(text);
	free(text);
	snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d", f->port);
	return 0;
}

void gh_fake_stop(struct gh_fake *f)
{
	if (f->tls_pid > 0) {
		kill(-f->tls_pid, SIGTERM); /* socat and its forks */
		reap(f->tls_pid, 5000);
		f->tls_pid = 0;
	}
	if (f->pid > 0) {
		kill(f->pid, SIGTERM);
		f->exit_status = reap(f->pid, START_SECONDS * 1000);
		f->pid = 0;
	}
	if (f->dir[0]) {
		tu_rmtree(f->dir);
		f->dir[0] = '\0';
	}
}

/* One HTTP/1.1 exchange with the fake (Connection: close): the status,
 * the body in *OUT (caller frees), or -1. */
static int http_call(int port, const char *method, const char *path,
		     const char *body, char **out)
{
	struct sockaddr_in sa;
	char head[512], chunk[65536], *resp = NULL, *sep;
	size_t len = 0, blen = body ? strlen(body) : 0;
	int fd, status = -1, hn;
	ssize_t got;

	*out = NULL;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto out;
	hn = snprintf(head, sizeof(head),
		      "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		      "Connection: close\r\nContent-Length: %zu\r\n\r\n",
		      method, path, port, blen);
	if (write(fd, head, (size_t)hn) != hn ||
	    (blen && write(fd, body, blen) != (ssize_t)blen))
		goto out;
	while ((got = read(fd, chunk, sizeof(chunk))) > 0) {
		resp = realloc(resp, len + (size_t)got + 1);
		if (!resp)
			abort();
		memcpy(resp + len, chunk, (size_t)got);
		len += (size_t)got;
		resp[len] = '\0';
	}
	if (!resp || sscanf(resp, "HTTP/1.1 %d", &status) != 1)
		goto out;
	sep = strstr(resp, "\r\n\r\n");
	*out = strdup(sep ? sep + 4 : "");
out:
	free(resp);
	close(fd);
	return status;
}

cJSON *gh_fake_state(const struct gh_fake *f)
{
	char *body;
	cJSON *state = NULL;

	if (http_call(f->port, "GET", "/_fake/state", NULL, &body) == 200)
		state = cJSON_Parse(body);
	free(body);
	return state;
}

int gh_fake_set_faults(const struct gh_fake *f, const char *json_array)
{
	char *body;
	int status =
		http_call(f->port, "POST", "/_fake/faults", json_array, &body);

	free(body);
	return status == 200 ? 0 : -1;
}

cJSON *gh_fake_requests(const struct gh_fake *f)
{
	cJSON *arr = cJSON_CreateArray(), *o;
	char *text = tu_read(f->log), *line, *save;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		if ((o = cJSON_Parse(line)))
			cJSON_AddItemToArray(arr, o);
	free(text);
	return arr;
}

int gh_fake_count(const struct gh_fake *f, int from, int *requests,
		  int *connections)
{
	cJSON *reqs = gh_fake_requests(f), *r;
	int i = 0, n = 0, last = -1, conns = 0;

	cJSON_ArrayForEach (r, reqs) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(r, "conn");

		if (i++ < from)
			continue;
		n++;
		if (cJSON_IsNumber(c) && c->valueint != last) {
			conns++;
			last = c->valueint;
		}
	}
	cJSON_Delete(reqs);
	*requests = n;
	*connections = conns;
	return i;
}

/* Run the openssl CLI: 0, or -1 with its stderr on ours. */
static int openssl(const char *const *argv)
{
	struct tu_run r;
	int rc;

	tu_exec(&r, NULL, NULL, argv);
	rc = r.status == 0 ? 0 : -1;
	if (rc)
		fprintf(stderr, "%s %s failed (%d): %s\n", argv[0], argv[1],
			r.status, r.err);
	tu_run_free(&r);
	return rc;
}

static int make_certs(const char *dir)
{
	char ca_key[600], ca[600], key[600], csr[600], crt[600], ext[600];
	char serial[600];
	const char *const ca_argv[] = {"openssl",
				       "req",
				       "-x509",
				       "-newkey",
				       "ec",
				       "-pkeyopt",
				       "ec_paramgen_curve:prime256v1",
				       "-nodes",
				       "-keyout",
				       ca_key,
				       "-out",
				       ca,
				       "-days",
				       "2",
				       "-subj",
				       "/CN=sbxloop github-fake CA",
				       "-addext",
				       "basicConstraints=critical,CA:TRUE",
				       "-addext",
				       "keyUsage=critical,keyCertSign,cRLSign",
				       NULL};
	const char *const csr_argv[] = {"openssl",
					"req",
					"-new",
					"-newkey",
					"ec",
					"-pkeyopt",
					"ec_paramgen_curve:prime256v1",
					"-nodes",
					"-keyout",
					key,
					"-out",
					csr,
					"-subj",
					"/CN=127.0.0.1",
					NULL};
	const char *const sign_argv[] = {
		"openssl",  "x509",      "-req",  "-in",
		csr,        "-CA",       ca,      "-CAkey",
		ca_key,     "-CAserial", serial,  "-CAcreateserial",
		"-out",     crt,         "-days", "2",
		"-extfile", ext,         NULL};

	snprintf(ca_key, sizeof(ca_key), "%s/ca.key", dir);
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(key, sizeof(key), "%s/server.key", dir);
	snprintf(csr, sizeof(csr), "%s/server.csr", dir);
	snprintf(crt, sizeof(crt), "%s/server.pem", dir);
	snprintf(ext, sizeof(ext), "%s/server.ext", dir);
	snprintf(serial, sizeof(serial), "%s/ca.srl", dir);
	tu_write(ext, "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
		      "basicConstraints=CA:FALSE\n"
		      "keyUsage=critical,digitalSignature\n"
		      "extendedKeyUsage=serverAuth\n");
	return openssl(ca_argv) || openssl(csr_argv) || openssl(sign_argv) ? -1
									   : 0;
}

/* A port nobody listens on now (socat cannot report the one it got). */
static int free_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int can_connect(int port)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

int gh_fake_tls_start(struct gh_fake *f, char *https_url, size_t n,
		      char *ca_file, size_t m)
{
	char listen[1400], target[64], err[600], *text;
	const char *const argv[] = {"socat", "-lp",  "github-fake-tls",
				    listen,  target, NULL};
	int port, attempt, waited, st;

	if (make_certs(f->dir) < 0)
		return -1;
	snprintf(target, sizeof(target), "TCP:127.0.0.1:%d", f->port);
	/* socat's complaints (our probes hang up before the handshake) */
	snprintf(err, sizeof(err), "%s/socat.err", f->dir);
	for (attempt = 0; attempt < 5; attempt++) {
		port = free_port();
		snprintf(listen, sizeof(listen),
			 "OPENSSL-LISTEN:%d,bind=127.0.0.1,reuseaddr,fork,"
			 "cert=%s/server.pem,key=%s/server.key,verify=0",
			 port, f->dir, f->dir);
		f->tls_pid = spawn(argv, 1, err);
		if (f->tls_pid < 0) {
			f->tls_pid = 0;
			return -1;
		}
		for (waited = 0; waited < 10000; waited += 20) {
			if (waitpid(f->tls_pid, &st, WNOHANG) == f->tls_pid)
				break;
			if (can_connect(port)) {
				snprintf(https_url, n, "https://127.0.0.1:%d",
					 port);
				snprintf(ca_file, m, "%s/ca.pem", f->dir);
				return 0;
			}
			sleep_ms(20);
		}
		if (waited < 10000) { /* socat exited: the port was taken */
			f->tls_pid = 0;
			continue;
		}
		text = tu_read(err);
		fprintf(stderr, "socat did not listen on port %d: %s\n", port,
			text ? text : "");
		free(text);
		return -1;
	}
	fprintf(stderr, "socat could not listen after %d attempts\n", attempt);
	return -1;
}
