/*
 * `sbxloop run OUTCOME` and `sbxloop resume RUN`: wire the store, the
 * event bus, the sinks and the sandbox provider together, rehydrate a
 * resumed run's config, drive the engine on its own thread while the
 * main thread watches for SIGINT/SIGTERM, and print the summary.
 */
#include "config.h"

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <sbxloop/sandbox.h>
#include <sbxloop/states.h>
#include <sbxloop/store.h>

#include "cli/cli.h"
#include "engine/engine.h"
#include "host/events.h"
#include "engine/ids.h"
#include "host/redact.h"
#include "host/runlock.h"
#include "host/runs.h"
#include "common/launch.h"
#include "common/util.h"

#define QUIESCE_S 3.0
#define MAX_SINKS 8
#define MAX_REPORTERS 8
#define MAX_OVERRIDES 40

static volatile sig_atomic_t signals_seen;
/* the terminal's mode at start, put back on a forced exit */
static struct termios saved_tio;
static volatile sig_atomic_t have_tio;

static void on_signal(int sig)
{
	static const char msg[] = "\nforced exit; if sandboxes were left "
				  "behind: sbxloop sandbox prune --force\n";

	(void)sig;
	if (++signals_seen >= 2) {
		/* the dashboard's input line had echo and line mode off */
		if (have_tio)
			tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
			/* nothing left to try */
		}
		_exit(SL_EXIT_INTERRUPTED);
	}
}

struct session {
	struct sl_cli *cli;
	struct sl_core *core;
	struct sl_instance store;
	struct sl_instance sinks[MAX_SINKS];
	size_t n_sinks;
	struct sl_instance reporters[MAX_REPORTERS];
	size_t n_reporters;
	struct sl_bus *bus;
	struct sl_engine *engine;
	const char *verb; /* "run" or "resume" */
	char run_id[32];
	struct sl_runlock lock; /* held while this process drives the run */
	const char *outcome;
	int resume;
	int no_tui;
	int dashboard; /* the tui sink draws */
	/* engine thread */
	struct sbxloop_error err;
	int rc;
	/* set by the engine thread when it returns; the main thread
	 * wakes for it at once (and every 50 ms for the signals) */
	pthread_mutex_t done_mu;
	pthread_cond_t done_cv;
	int done;
};

static void *engine_main(void *arg)
{
	struct session *s = arg;

	if (s->resume)
		s->rc = sl_engine_resume(s->engine, s->run_id, &s->err);
	else
		s->rc = sl_engine_start(s->engine, s->run_id, s->outcome,
					&s->err);
	pthread_mutex_lock(&s->done_mu);
	s->done = 1;
	pthread_cond_broadcast(&s->done_cv);
	pthread_mutex_unlock(&s->done_mu);
	return NULL;
}

/* Whether the engine thread returned, waiting up to `ms` for it. */
static int wait_done(struct session *s, long ms)
{
	struct timespec ts;
	int done;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (ms % 1000) * 1000000L;
	ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&s->done_mu);
	while (!s->done &&
	       pthread_cond_timedwait(&s->done_cv, &s->done_mu, &ts) == 0)
		;
	done = s->done;
	pthread_mutex_unlock(&s->done_mu);
	return done;
}

static int set_override(struct sl_core *core, const char *key,
			const char *json_value)
{
	char *error = NULL;

	if (sl_config_set(core->cfg, key, json_value, &error) < 0) {
		sl_cli_error("invalid option for '%s': %s", key,
			     error ? error : "rejected");
		free(error);
		return -1;
	}
	return 0;
}

/*
 * Why the dashboard cannot draw here (NULL: it may try): --no-tui, a
 * standard output that is not a terminal, or TERM unset or dumb.
 */
static const char *no_dashboard(const struct session *s)
{
	const char *term = getenv("TERM");

	if (s->no_tui)
		return "--no-tui was given";
	if (!isatty(STDOUT_FILENO))
		return "standard output is not a terminal";
	if (!term || !*term)
		return "TERM is unset";
	if (strcmp(term, "dumb") == 0)
		return "TERM is dumb";
	return NULL;
}

/*
 * The sinks of plugins.sinks; `tui` becomes `plain` where the dashboard
 * cannot draw or its module cannot start.
 */
static void open_sinks(struct session *s)
{
	size_t i, n = sl_config_list_len(s->core->cfg, "plugins.sinks");
	const char *why = no_dashboard(s);
	int have_plain = 0;

	for (i = 0; i < n && s->n_sinks < MAX_SINKS; i++) {
		const char *name =
			sl_config_list_item(s->core->cfg, "plugins.sinks", i);
		struct sbxloop_error err = {0, ""};

		if (strcmp(name, "tui") == 0 && !why &&
		    sl_core_instantiate(s->core, SBXLOOP_KIND_SINK, name,
					&s->sinks[s->n_sinks], &err) == 0) {
			sl_bus_add_sink(s->bus, &s->sinks[s->n_sinks++]);
			s->dashboard = 1;
			continue;
		}
		if (strcmp(name, "tui") == 0) {
			sl_log(SBXLOOP_LOG_INFO,
			       "the plain transcript instead of the dashboard: "
			       "%s",
			       why ? why : err.message);
			if (have_plain)
				continue;
			name = "plain";
			err.code = 0;
			err.message[0] = '\0';
		}
		if (strcmp(name, "plain") == 0) {
			if (have_plain)
				continue;
			have_plain = 1;
		}
		if (sl_core_instantiate(s->core, SBXLOOP_KIND_SINK, name,
					&s->sinks[s->n_sinks], &err) < 0) {
			sl_log(SBXLOOP_LOG_WARN,
			       "event sink '%s' is "
			       "unavailable: %s",
			       name, err.message);
			continue;
		}
		sl_bus_add_sink(s->bus, &s->sinks[s->n_sinks++]);
	}
}

/*
 * The reporters of plugins.reporters, and `github` when github.repo is
 * set with reporting or delivery wanted. A reporter that cannot start
 * is logged; the run goes on without it.
 */
static void open_reporters(struct session *s)
{
	const struct sl_config *cfg = s->core->cfg;
	const char *names[MAX_REPORTERS];
	const char *repo = sl_config_str(cfg, "github.repo");
	size_t i, j, n = 0, listed;
	int have_github = 0;

	listed = sl_config_list_len(cfg, "plugins.reporters");
	for (i = 0; i < listed && n < MAX_REPORTERS; i++) {
		const char *name =
			sl_config_list_item(cfg, "plugins.reporters", i);

		for (j = 0; j < n && strcmp(names[j], name); j++)
			;
		if (j < n)
			continue;
		have_github |= !strcmp(name, "github");
		names[n++] = name;
	}
	if (!have_github && repo && *repo && n < MAX_REPORTERS &&
	    (sl_config_bool(cfg, "github.report", 0) ||
	     sl_config_bool(cfg, "github.deliver", 0)))
		names[n++] = "github";
	for (i = 0; i < n; i++) {
		struct sl_instance *rep = &s->reporters[s->n_reporters];
		struct sbxloop_error err = {0, ""};

		if (sl_core_instantiate(s->core, SBXLOOP_KIND_REPORTER,
					names[i], rep, &err) < 0) {
			sl_log(SBXLOOP_LOG_WARN,
			       "reporter '%s' is unavailable: %s", names[i],
			       err.message);
			continue;
		}
		s->n_reporters++;
		sl_bus_add_reporter(s->bus, rep);
	}
}

static int open_session(struct session *s)
{
	struct sbxloop_error err = {0, ""};
	const char *name;

	if (sl_cli_open_core(s->cli) != 0)
		return SL_EXIT_USAGE;
	s->core = s->cli->core;
	name = sl_config_str(s->core->cfg, "plugins.store");
	if (sl_core_instantiate(s->core, SBXLOOP_KIND_STORE,
				name ? name : "sqlite", &s->store, &err) < 0) {
		sl_cli_error("%s failed: %s", s->verb, err.message);
		return SL_EXIT_USAGE;
	}
	if (sl_bus_open(s->core, &s->store, &s->bus, &err) < 0) {
		sl_cli_error("%s failed: %s", s->verb, err.message);
		return SL_EXIT_USAGE;
	}
	return 0;
}

static int open_provider(struct session *s)
{
	struct sbxloop_error err = {0, ""};
	const char *name = sl_config_str(s->core->cfg, "plugins.sandbox");

	if (sl_core_instantiate(s->core, SBXLOOP_KIND_SANDBOX,
				name ? name : "local", &s->core->sandbox,
				&err) < 0) {
		sl_cli_error("%s failed: %s", s->verb, err.message);
		return SL_EXIT_USAGE;
	}
	return 0;
}

static void close_session(struct session *s)
{
	size_t i;

	sl_engine_free(s->engine);
	s->engine = NULL;
	/* before the provider: a reporter's last job may still use it */
	for (i = 0; i < s->n_reporters; i++) {
		sl_bus_detach(s->bus, &s->reporters[i]);
		sl_instance_destroy(&s->reporters[i]);
	}
	if (s->core)
		sl_instance_destroy(&s->core->sandbox);
	if (s->bus)
		sl_bus_close(s->bus);
	for (i = 0; i < s->n_sinks; i++)
		sl_instance_destroy(&s->sinks[i]);
	sl_instance_destroy(&s->store);
}

/* Drive the engine on a thread; the main thread handles signals. */
static int drive(struct session *s)
{
	struct sigaction sa, old_int, old_term;
	struct sl_chat_stdin *chat = NULL;
	pthread_t th;
	double since = 0;
	int interrupted = 0, code;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	s->engine = sl_engine_new(s->core, &s->store);
	for (size_t i = 0; i < s->n_reporters; i++)
		sl_engine_add_reporter(s->engine, &s->reporters[i]);
	if (pthread_create(&th, NULL, engine_main, s) != 0) {
		sl_cli_error("%s failed: cannot start the engine thread",
			     s->verb);
		return SL_EXIT_USAGE;
	}
	if (!s->dashboard && sl_config_bool(s->core->cfg, "chat", 1))
		chat = sl_chat_stdin_start(&s->core->host);
	/* the signals are looked at every 50 ms; the end, at once */
	while (!wait_done(s, 50)) {
		if (signals_seen && !interrupted) {
			interrupted = 1;
			since = sl_monotonic();
			sl_engine_request_cancel(s->engine);
			fprintf(stderr,
				"interrupted: removing sandboxes (Ctrl+C "
				"again to force quit)\n");
		}
		if (interrupted && sl_monotonic() - since > QUIESCE_S) {
			/* the job in flight dies with us (PDEATHSIG) */
			sl_engine_teardown(s->engine);
			if (have_tio)
				tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
			printf("run %s interrupted: resume with `sbxloop "
			       "resume %s`\n",
			       s->run_id, s->run_id);
			fflush(stdout);
			_exit(SL_EXIT_INTERRUPTED);
		}
	}
	pthread_join(th, NULL);
	sl_chat_stdin_stop(chat);
	if (signals_seen && !interrupted)
		interrupted = 1;
	if (interrupted) {
		sl_engine_teardown(s->engine);
		printf("run %s interrupted: resume with `sbxloop resume %s`\n",
		       s->run_id, s->run_id);
		code = SL_EXIT_INTERRUPTED;
	} else if (s->rc < 0) {
		sl_cli_error("%s failed: %s", s->verb, s->err.message);
		/* a refused config (a missing repository) resumes no better */
		if (s->rc != SBXLOOP_ESTATE && s->rc != SBXLOOP_ENOTFOUND &&
		    s->rc != SBXLOOP_EINVAL)
			sl_cli_hint("the run can be resumed: sbxloop resume "
				    "%s",
				    s->run_id);
		code = SL_EXIT_USAGE;
	} else {
		sl_engine_print_summary(s->engine, stdout);
		code = strcmp(sl_engine_state(s->engine),
			      SBXLOOP_RUN_COMPLETED) == 0
			       ? SL_EXIT_OK
			       : SL_EXIT_FAIL;
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return code;
}

static int parse_options(struct session *s, int argc, char **argv,
			 int allow_run_opts, const char **positional,
			 char ***overrides, size_t *n_over)
{
	enum {
		O_MODEL = 1,
		O_KEEP,
		O_NOKEEP,
		O_KOF,
		O_NOKOF,
		O_TUI,
		O_NOTUI,
		O_NOCHAT,
		O_GH
	};
	static const struct option run_opts[] = {
		{"model", required_argument, NULL, O_MODEL},
		SL_GITHUB_OPTIONS(O_GH),
		{"keep-sandboxes", no_argument, NULL, O_KEEP},
		{"no-keep-sandboxes", no_argument, NULL, O_NOKEEP},
		{"keep-on-failure", no_argument, NULL, O_KOF},
		{"no-keep-on-failure", no_argument, NULL, O_NOKOF},
		{"tui", no_argument, NULL, O_TUI},
		{"no-tui", no_argument, NULL, O_NOTUI},
		{"no-chat", no_argument, NULL, O_NOCHAT},
		{NULL, 0, NULL, 0},
	};
	static const struct option resume_opts[] = {
		{"tui", no_argument, NULL, O_TUI},
		{"no-tui", no_argument, NULL, O_NOTUI},
		{"no-chat", no_argument, NULL, O_NOCHAT},
		{NULL, 0, NULL, 0},
	};
	char **ov = sl_xcalloc(MAX_OVERRIDES, sizeof(*ov));
	size_t n = 0;
	int opt;

	opterr = 0;
	optind = 0; /* full reset: main() parsed with another optstring */
	while ((opt = getopt_long(argc, argv, "",
				  allow_run_opts ? run_opts : resume_opts,
				  NULL)) != -1) {
		switch (opt) {
		case O_MODEL: {
			cJSON *q = cJSON_CreateString(optarg);

			ov[n++] = sl_xstrdup("model");
			ov[n++] = cJSON_PrintUnformatted(q);
			cJSON_Delete(q);
			break;
		}
		case O_KEEP:
		case O_NOKEEP:
			ov[n++] = sl_xstrdup("keep_sandboxes");
			ov[n++] = sl_xstrdup(opt == O_KEEP ? "true" : "false");
			break;
		case O_KOF:
		case O_NOKOF:
			ov[n++] = sl_xstrdup("keep_on_failure");
			ov[n++] = sl_xstrdup(opt == O_KOF ? "true" : "false");
			break;
		case O_TUI:
			s->no_tui = 0;
			break;
		case O_GH + 0 ... O_GH + SL_GITHUB_N_OPTIONS - 1:
			sl_github_option(opt - O_GH, optarg, &ov[n]);
			n += 2;
			break;
		case O_NOTUI:
			s->no_tui = 1;
			break;
		case O_NOCHAT:
			ov[n++] = sl_xstrdup("chat");
			ov[n++] = sl_xstrdup("false");
			break;
		default:
			sl_cli_error("unknown option '%s'", argv[optind - 1]);
			goto fail;
		}
		if (n + 2 > MAX_OVERRIDES) {
			sl_cli_error("too many options");
			goto fail;
		}
	}
	if (optind != argc - 1 || !*argv[optind]) {
		sl_cli_error("%s needs exactly one %s", s->verb,
			     allow_run_opts ? "OUTCOME" : "RUN");
		goto fail;
	}
	*positional = argv[optind];
	*overrides = ov;
	*n_over = n;
	return 0;
fail:
	while (n)
		free(ov[--n]);
	free(ov);
	return -1;
}

/*
 * One process drives a run: a second `resume` of a run that another
 * sbxloop drives would run its tasks twice over the same workspace.
 */
static int take_lock(struct session *s)
{
	struct sbxloop_error err = {0, ""};
	const char *state = sl_core_state_dir(s->core);

	if (!state) {
		sl_cli_error("no usable state_dir");
		return SL_EXIT_USAGE;
	}
	if (sl_runlock_take(state, s->run_id, s->verb, &s->lock, &err) == 0) {
		/* the git it starts holds the run too (workspace.c) */
		sl_launch_hold_fd(s->lock.fd);
		return 0;
	}
	sl_cli_error("%s", err.message);
	return SL_EXIT_USAGE;
}

/* Is s->run_id in the store? Says so when it is not; a store that
 * cannot answer is left to the rehydration to report. */
static int run_known(struct session *s)
{
	struct sbxloop_error err = {0, ""};
	struct sl_run r = {0};
	int rc = sl_run_fetch(&s->store, s->run_id, &r, &err);

	sl_run_release(&r);
	if (rc != SBXLOOP_ENOTFOUND)
		return 1;
	sl_cli_error("unknown run %s", s->run_id);
	return 0;
}

static int command(struct sl_cli *cli, int argc, char **argv, int resume)
{
	const struct sl_command *cmd;
	struct session s;
	const char *pos = NULL;
	char **ov = NULL;
	size_t n_ov = 0, i;
	int code;

	memset(&s, 0, sizeof(s));
	s.lock = (struct sl_runlock)SL_RUNLOCK_INIT;
	s.cli = cli;
	s.resume = resume;
	s.verb = resume ? "resume" : "run";
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&s.done_cv, &ca);
		pthread_condattr_destroy(&ca);
		pthread_mutex_init(&s.done_mu, NULL);
	}
	if (parse_options(&s, argc, argv, !resume, &pos, &ov, &n_ov) < 0) {
		for (cmd = sl_commands; cmd->name; cmd++)
			if (strcmp(cmd->name, s.verb) == 0)
				sl_cli_usage(cmd, 1);
		return SL_EXIT_USAGE;
	}
	code = open_session(&s);
	if (code)
		goto out;
	if (resume) {
		if (!sl_run_id_valid(pos)) {
			sl_cli_error("unknown run %s", pos);
			code = SL_EXIT_USAGE;
			goto out;
		}
		snprintf(s.run_id, sizeof(s.run_id), "%s", pos);
		/* the lock first: a refused resume writes nothing (not
		 * even run.config_drift) into a run another one drives */
		code = run_known(&s) ? take_lock(&s) : SL_EXIT_USAGE;
		if (code)
			goto out;
		if (sl_cli_rehydrate(s.core, &s.store, s.run_id) < 0) {
			code = SL_EXIT_USAGE;
			goto out;
		}
	} else {
		sl_run_id_new(s.run_id);
		s.outcome = pos;
		code = take_lock(&s);
		if (code)
			goto out;
	}
	for (i = 0; i + 1 < n_ov; i += 2)
		if (set_override(s.core, ov[i], ov[i + 1]) < 0) {
			code = SL_EXIT_USAGE;
			goto out;
		}
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_tio) == 0)
		have_tio = 1;
	open_sinks(&s);
	open_reporters(&s);
	code = open_provider(&s);
	if (code)
		goto out;
	code = drive(&s);
out:
	close_session(&s);
	/* after the sandboxes are gone: a resume may start on them now */
	sl_launch_hold_fd(-1);
	sl_runlock_release(&s.lock);
	pthread_cond_destroy(&s.done_cv);
	pthread_mutex_destroy(&s.done_mu);
	for (i = 0; i < n_ov; i++)
		free(ov[i]);
	free(ov);
	return code;
}

int sl_cmd_run(struct sl_cli *cli, int argc, char **argv)
{
	return command(cli, argc, argv, 0);
}

int sl_cmd_resume(struct sl_cli *cli, int argc, char **argv)
{
	return command(cli, argc, argv, 1);
}
