/*
 * End-to-end suite of the `tui` dashboard sink: the real `sbxloop run`
 * ($SBXLOOP_BIN) on scripted scenarios (tests/scenarios/tui_*.json) in a
 * 100x30 window of a private tmux server, read back with capture-pane
 * (-e for the colours). Every wait polls the screen every 50 ms until
 * the expected text shows or a generous timeout passes; no fixed sleep
 * is an assertion. A crash signal must leave the terminal as usable as
 * Ctrl-C does. tmux is a CI dependency: without it the suite fails.
 */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtest.h"

#define WAIT_S 30.0

static char server[64];

static char *run_out(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	char *text = NULL;
	size_t len = 0, cap = 0, n;
	char chunk[4096];

	ck_assert_msg(p != NULL, "cannot run %s", cmd);
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0) {
		if (len + n + 1 > cap) {
			cap = (len + n + 1) * 2;
			text = realloc(text, cap);
			ck_assert_ptr_nonnull(text);
		}
		memcpy(text + len, chunk, n);
		len += n;
	}
	pclose(p);
	if (!text)
		return strdup("");
	text[len] = '\0';
	return text;
}

/* `tmux ARGS` on the suite's private server: its output (caller frees). */
static char *tmux(const char *fmt, ...) RT_PRINTF(1, 2);
static char *tmux(const char *fmt, ...)
{
	char args[4096], cmd[4300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "tmux -L %s -f /dev/null %s 2>&1", server,
		 args);
	return run_out(cmd);
}

static void setup(void)
{
	char *v;

	rt_setup();
	v = run_out("tmux -V 2>&1");
	ck_assert_msg(!strncmp(v, "tmux ", 5),
		      "tmux is missing (%s): this suite needs it; install "
		      "the Debian package tmux",
		      v);
	free(v);
	snprintf(server, sizeof(server), "sbxloop-test-%ld", (long)getpid());
}

static void teardown(void)
{
	free(tmux("kill-server"));
	rt_teardown();
}

/*
 * Start `sbxloop run OUTCOME` followed by shell text `tail` (NULL: none)
 * in the scratch dir, in a fresh 100x30 window whose shell then prints
 * DONE-<exit code> and stays. `env` is extra `export` text.
 */
static void start(const char *outcome, const char *env, const char *tail)
{
	char script[8192];
	char *out;

	snprintf(script, sizeof(script),
		 "trap : INT\n"
		 "export SBXLOOP_PLUGIN_PATH='%s' SBXLOOP_WORKER='%s'\n"
		 "unset NO_COLOR\n"
		 "%s\n"
		 "cd '%s' || exit 1\n"
		 "'%s' run '%s'%s\n"
		 "echo DONE-$?\n"
		 "exec sleep 600\n",
		 env_or("SBXLOOP_PLUGIN_PATH", ""),
		 env_or("SBXLOOP_WORKER", "worker/sbxloop-worker"),
		 env ? env : "", rt_dir(), env_or("SBXLOOP_BIN", "sbxloop"),
		 outcome, tail ? tail : "");
	put_file("go.sh", script);
	out = tmux("new-session -d -s t -x 100 -y 30 'sh %s/go.sh'", rt_dir());
	ck_assert_msg(!*out, "tmux new-session: %s", out);
	free(out);
}

/* The window's text (`flags`: "-e" for attributes, "-S -" all history). */
static char *capture(const char *flags)
{
	return tmux("capture-pane -p -J %s -t t", flags);
}

/* Poll the screen until it holds `needle`: the capture, or NULL. */
static char *wait_screen(const char *flags, const char *needle, double secs)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		char *text = capture(flags);

		if (strstr(text, needle))
			return text;
		free(text);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 >
		    secs)
			return NULL;
		sleep_ms(50);
	}
}

/*
 * Poll until the screen holds every one of `needles` (NULL-terminated)
 * at once, so a frame caught half-written is read again.
 */
static char *must_see_all(const char *flags, const char *const *needles)
{
	struct timespec t0, t;
	char *text;
	size_t i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		text = capture(flags);
		for (i = 0; needles[i] && strstr(text, needles[i]); i++)
			;
		if (!needles[i])
			return text;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 >
		    WAIT_S)
			break;
		free(text);
		sleep_ms(50);
	}
	ck_abort_msg("the screen never showed '%s':\n%s", needles[i], text);
	return NULL;
}

static char *must_see(const char *flags, const char *needle)
{
	char *text = wait_screen(flags, needle, WAIT_S);

	if (!text) {
		char *now = capture("-S -");

		ck_abort_msg("the screen never showed '%s':\n%s", needle, now);
	}
	return text;
}

static void config(const char *scenario, const char *extra)
{
	char buf[4096];

	copy_scenario(scenario);
	/* no plugins.sinks: the default is what a terminal gets */
	snprintf(buf, sizeof(buf),
		 "state_dir: state\n"
		 "prompts_dir: %s/prompts\n"
		 "worker_path: %s\n"
		 "plugins:\n"
		 "  sandbox: local\n"
		 "agent:\n"
		 "  backend: script\n"
		 "  script: scenario.json\n"
		 "local:\n"
		 "  isolation: none\n"
		 "%s",
		 env_or("SBXLOOP_SRCDIR", "."),
		 env_or("SBXLOOP_WORKER", "worker/sbxloop-worker"),
		 extra ? extra
		       : "limits:\n  disk_warn: 0\n  disk_abort: 0\n"
			 "  mem_warn: 0\n  mem_abort: 0\n");
	put_file("sbxloop.yaml", buf);
}

/* The line of `text` starting with `prefix` (caller frees), or NULL. */
static char *line_of(const char *text, const char *prefix)
{
	const char *s = text;

	while (s && *s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);

		if (!strncmp(s, prefix, strlen(prefix)))
			return strndup(s, n);
		s = nl ? nl + 1 : NULL;
	}
	return NULL;
}

/* How often `needle` occurs in text. */
static int count(const char *text, const char *needle)
{
	int n = 0;

	while ((text = strstr(text, needle)) != NULL) {
		n++;
		text += strlen(needle);
	}
	return n;
}

/* Offset of `needle` in text, -1 when absent. */
static long at(const char *text, const char *needle)
{
	const char *p = strstr(text, needle);

	return p ? (long)(p - text) : -1;
}

/*
 * The SGR state (bold, dim, foreground 0-7 or -1) in force where `needle`
 * starts in a capture -e text: tmux writes only the changes.
 */
static int sgr_at(const char *text, const char *needle, int *bold, int *dim,
		  int *fg)
{
	const char *end = strstr(text, needle), *s = text;

	*bold = *dim = 0;
	*fg = -1;
	if (!end)
		return -1;
	while (s < end) {
		if (s[0] == '\033' && s[1] == '[') {
			const char *p = s + 2;
			int params[16], n = 0, v = 0, have = 0, i;

			while (p < end &&
			       ((*p >= '0' && *p <= '9') || *p == ';')) {
				if (*p == ';') {
					if (n < 16)
						params[n++] = have ? v : 0;
					v = have = 0;
				} else {
					v = v * 10 + (*p - '0');
					have = 1;
				}
				p++;
			}
			if (n < 16)
				params[n++] = have ? v : 0;
			if (p < end && *p == 'm') {
				for (i = 0; i < n; i++) {
					int c = params[i];

					if (c == 0) {
						*bold = *dim = 0;
						*fg = -1;
					} else if (c == 1) {
						*bold = 1;
					} else if (c == 2) {
						*dim = 1;
					} else if (c == 22) {
						*bold = *dim = 0;
					} else if (c >= 30 && c <= 37) {
						*fg = c - 30;
					} else if (c >= 90 && c <= 97) {
						*fg = c - 90;
					} else if (c == 39) {
						*fg = -1;
					} else if (c == 38 && i + 2 < n &&
						   params[i + 1] == 5) {
						*fg = params[i + 2] < 8
							      ? params[i + 2]
							      : -1;
						i += 2;
					} else if ((c == 48 || c == 58) &&
						   i + 2 < n) {
						i += params[i + 1] == 5 ? 2
									: 4;
					}
				}
			}
			s = p;
			continue;
		}
		s++;
	}
	return 0;
}

/* Does a capture -e text carry a foreground colour anywhere? */
static int has_color(const char *text)
{
	const char *s = text;

	while ((s = strstr(s, "\033[")) != NULL) {
		const char *p = s + 2, *q;

		q = p;
		while ((*q >= '0' && *q <= '9') || *q == ';')
			q++;
		if (*q == 'm') {
			/* each parameter: 30-37, 90-97 or 38;... is colour */
			const char *t = p;

			while (t < q) {
				int c = atoi(t);

				if ((c >= 30 && c <= 38) ||
				    (c >= 90 && c <= 97))
					return 1;
				while (t < q && *t != ';')
					t++;
				if (t < q)
					t++;
			}
		}
		s = q;
	}
	return 0;
}

/* The terminal's line discipline after the run (stty -a in stty.txt). */
static void assert_terminal_modes_restored(void)
{
	char *stty = read_file("stty.txt");

	ck_assert_msg(strstr(stty, " icanon") && !strstr(stty, "-icanon") &&
			      strstr(stty, " echo ") &&
			      !strstr(stty, "-echo "),
		      "line mode or echo left off after the run:\n%s", stty);
	free(stty);
}

#define STTY_TAIL "; rc=$?; stty -a > stty.txt; (exit $rc)"

START_TEST(test_the_panel_shows_the_run_and_the_transcript_stays_in_order)
{
	char *screen, *run, *line, *all;

	config("tui_slow", NULL);
	start("build two files", NULL, NULL);
	/* mid-run: t1 executes slowly under the pinned panel */
	screen = must_see_all(
		"",
		(const char *const[]){"state: running", "build two files",
				      "t1       task t1", "t2       task t2",
				      "agent: disk ", "rev/replan", NULL});
	free(screen);
	screen = must_see_all("", (const char *const[]){"state: running",
							"executing     ",
							"waiting       ",
							"agent: disk ", NULL});
	run = last_run();
	line = line_of(screen, "run ");
	ck_assert_msg(line && strstr(line, run) &&
			      strstr(line, "state: running"),
		      "no header with the run id and state:\n%s", screen);
	free(line);
	line = line_of(screen, "t1 ");
	ck_assert_msg(line && strstr(line, "executing"),
		      "t1's row is not executing:\n%s", screen);
	free(line);
	line = line_of(screen, "t2 ");
	ck_assert_msg(line && strstr(line, "waiting"),
		      "t2's row does not say waiting:\n%s", screen);
	free(line);
	ck_assert_msg(strstr(screen, "agent: disk ") &&
			      strstr(screen, "% \xc2\xb7 mem "),
		      "no gauge line:\n%s", screen);
	ck_assert_msg(strstr(screen, "build two files"), "no outcome:\n%s",
		      screen);
	free(screen);
	screen = must_see("", "DONE-0");
	free(screen);
	/* the whole scrollback: the transcript once, in order, then the
	 * final panel, then the summary */
	all = capture("-S -");
	ck_assert_msg(at(all, "run.state provisioning") >= 0 &&
			      at(all, "run.state provisioning") <
				      at(all, "task.state t1 planning") &&
			      at(all, "task.state t1 planning") <
				      at(all, "task.state t1 executing") &&
			      at(all, "task.state t1 executing") <
				      at(all, "task.end t1 done") &&
			      at(all, "task.end t1 done") <
				      at(all, "task.end t2 done") &&
			      at(all, "task.end t2 done") <
				      at(all, "run.end completed"),
		      "the transcript is out of order:\n%s", all);
	ck_assert_msg(count(all, "task.end t1 done") == 1,
		      "a transcript line was printed twice:\n%s", all);
	/* every earlier panel was erased: one header, the final one */
	ck_assert_msg(count(all, "  state: ") == 1,
		      "a stale panel is left in the scrollback:\n%s", all);
	{
		const char *end = strstr(all, "run.end completed");
		const char *panel = strstr(end, "state: completed");
		const char *summary = strstr(end, "finished: completed");

		ck_assert_msg(panel && summary && panel < summary,
			      "the summary does not follow the final "
			      "panel:\n%s",
			      all);
	}
	free(all);
	free(run);
}
END_TEST

START_TEST(test_gauges_escalate_from_dim_through_yellow_to_bold_red)
{
	char *screen;
	int bold, dim, fg;

	config("tui_gauges", "limits:\n  disk_warn: 80\n  disk_abort: 95\n"
			     "  mem_warn: 0\n  mem_abort: 0\n");
	start("climb the gauges",
	      "export SBXLOOP_FAKE_RESOURCES=fake-resources.txt", NULL);
	screen = must_see("-e", "agent: disk 50%");
	ck_assert_int_eq(sgr_at(screen, "agent: disk 50%", &bold, &dim, &fg),
			 0);
	ck_assert_msg(dim && !bold && fg == -1,
		      "ok gauge: dim %d bold %d colour %d", dim, bold, fg);
	ck_assert_msg(
		!strstr(strstr(screen, "agent: disk 50%"), "\xe2\x9a\xa0"),
		"an ok gauge is flagged:\n%s", screen);
	free(screen);
	screen = must_see("-e", "agent: disk 85%");
	ck_assert_int_eq(sgr_at(screen, "agent: disk 85%", &bold, &dim, &fg),
			 0);
	ck_assert_msg(!bold && fg == 3, "warn gauge: bold %d colour %d", bold,
		      fg);
	ck_assert_msg(strstr(screen, "\xe2\x9a\xa0 warn"), "no warn mark:\n%s",
		      screen);
	free(screen);
	screen = must_see("-e", "agent: disk 97%");
	ck_assert_int_eq(sgr_at(screen, "agent: disk 97%", &bold, &dim, &fg),
			 0);
	ck_assert_msg(bold && fg == 1, "abort gauge: bold %d colour %d", bold,
		      fg);
	ck_assert_msg(strstr(screen, "\xe2\x9a\xa0 abort"),
		      "no abort mark:\n%s", screen);
	free(screen);
	free(must_see("", "DONE-1"));
}
END_TEST

START_TEST(test_a_narrower_window_reclips_the_panel)
{
	char *screen, *line;
	const char *outcome =
		"write two files whose names and contents are described at "
		"such length that the outcome line must be clipped";

	config("tui_slow", NULL);
	start(outcome, NULL, NULL);
	screen = must_see("", "executing");
	line = line_of(screen, "write two files");
	ck_assert_msg(line && strlen(line) > 60 && strlen(line) < 110,
		      "the outcome line at 100 columns: '%s'", line);
	free(line);
	free(screen);
	free(tmux("resize-window -t t -x 60 -y 30"));
	/* the next frame clips every panel line to 59 columns */
	screen = NULL;
	for (int i = 0; i < 600 && !screen; i++) {
		char *now = capture("");

		char *head = line_of(now, "run r");

		line = line_of(now, "write two files");
		if (line && strlen(line) <= 62 &&
		    strstr(line, "\xe2\x80\xa6") && head)
			screen = now;
		else
			free(now);
		free(line);
		free(head);
		if (!screen)
			sleep_ms(50);
	}
	ck_assert_msg(screen, "the panel was not reclipped:\n%s", capture(""));
	line = line_of(screen, "task ");
	/* 59 characters, the last an ellipsis of 3 bytes */
	ck_assert_msg(line && strlen(line) <= 61, "the task header: '%s'",
		      line);
	free(line);
	free(screen);
	screen = must_see("-S -", "DONE-0");
	ck_assert_msg(count(screen, "  state: ") == 1,
		      "a stale panel is left after the resize:\n%s", screen);
	free(screen);
}
END_TEST

START_TEST(test_ctrl_c_leaves_the_terminal_usable)
{
	char *screen, *flag;

	config("tui_slow", NULL);
	start("build two files", NULL, STTY_TAIL);
	free(must_see("", "executing"));
	free(tmux("send-keys -t t C-c"));
	screen = must_see("-S -", "DONE-130");
	assert_terminal_modes_restored();
	ck_assert_msg(strstr(screen, "interrupted"),
		      "no interrupt message:\n%s", screen);
	free(screen);
	flag = tmux("display -p -t t '#{cursor_flag}'");
	ck_assert_msg(!strcmp(flag, "1\n"), "the cursor is hidden: '%s'",
		      flag);
	free(flag);
	/* no attribute is left on: what follows prints plain */
	screen = capture("-e");
	{
		int bold, dim, fg;

		ck_assert_int_eq(sgr_at(screen, "DONE-130", &bold, &dim, &fg),
				 0);
		ck_assert_msg(!bold && !dim && fg == -1,
			      "attributes left on: bold %d dim %d colour %d",
			      bold, dim, fg);
	}
	free(screen);
}
END_TEST

START_TEST(test_a_crash_signal_restores_the_terminal)
{
	char *screen, *flag, *pid;
	int bold, dim, fg;

	config("tui_slow", NULL);
	start("build two files", NULL, " & echo $! > pid; wait $!");
	free(must_see("", "executing"));
	pid = read_file("pid");
	ck_assert_int_gt(atoi(pid), 0);
	ck_assert_int_eq(kill(atoi(pid), SIGSEGV), 0);
	free(pid);
	free(must_see("", "DONE-139"));
	flag = tmux("display -p -t t '#{cursor_flag}'");
	ck_assert_msg(!strcmp(flag, "1\n"), "the cursor is hidden: '%s'",
		      flag);
	free(flag);
	screen = capture("-e");
	ck_assert_int_eq(sgr_at(screen, "DONE-139", &bold, &dim, &fg), 0);
	ck_assert_msg(!bold && !dim && fg == -1,
		      "attributes left on: bold %d dim %d colour %d", bold,
		      dim, fg);
	free(screen);
}
END_TEST

START_TEST(test_no_color_draws_the_panel_without_colours)
{
	char *screen;

	config("tui_slow", NULL);
	start("build two files", "export NO_COLOR=1", NULL);
	screen = must_see("-e", "executing");
	ck_assert_msg(strstr(screen, "state: running"), "no panel:\n%s",
		      screen);
	ck_assert_msg(!has_color(screen), "colours with NO_COLOR:\n%s",
		      screen);
	free(screen);
	screen = must_see("-e -S -", "DONE-0");
	ck_assert_msg(!has_color(screen), "colours with NO_COLOR:\n%s",
		      screen);
	free(screen);
}
END_TEST

START_TEST(test_a_pipe_gets_the_plain_transcript)
{
	char *screen;

	config("tui_slow", NULL);
	start("build two files", NULL, " | cat");
	screen = must_see("-e -S -", "DONE-0");
	ck_assert_msg(strstr(screen, "task.state t1 executing") &&
			      strstr(screen, "run.end completed"),
		      "no transcript:\n%s", screen);
	ck_assert_msg(!strstr(screen, "state: running") &&
			      !strstr(screen, "rev/replan"),
		      "a panel on a pipe:\n%s", screen);
	ck_assert_msg(!strchr(screen, '\033'), "escapes on a pipe:\n%s",
		      screen);
	free(screen);
}
END_TEST

START_TEST(test_a_typed_message_steers_the_run_and_a_second_shell_too)
{
	char *screen, *run, *p;

	config("tui_chat", NULL);
	start("build two files", NULL, STTY_TAIL);
	free(must_see("", "executing"));
	free(must_see("", "steer> "));
	/* typed with a slip, mended with Backspace; an arrow key is
	 * swallowed, not typed */
	free(tmux("send-keys -t t -l 'use tsbs'"));
	free(tmux("send-keys -t t BSpace BSpace BSpace Up"));
	free(tmux("send-keys -t t -l 'abs please'"));
	screen = must_see("", "steer> use tabs please");
	ck_assert_msg(!strstr(screen, "[A"), "an escape was typed:\n%s",
		      screen);
	free(screen);
	/* Enter once t1's EXECUTE job runs: the row says executing just
	 * before the boundary that precedes the job */
	run = last_run();
	sleep_ms(300);
	free(tmux("send-keys -t t Enter"));
	free(must_see("", "queued #1: use tabs please"));
	ck_assert_int_eq(rt_steer(run, "how far along?"), 0);
	/* both answered at the boundary after t1's EXECUTE, in order */
	screen = must_see("-S -", "DONE-0");
	ck_assert_msg(
		at(screen, "you: use tabs please") >= 0 &&
			at(screen, "you: use tabs please") <
				at(screen, "reply: sure, tabs from now on") &&
			at(screen, "reply: sure, tabs from now on") <
				at(screen, "you: how far along?") &&
			at(screen, "you: how far along?") <
				at(screen, "reply: t1 is under review now"),
		"the chat is missing or out of order:\n%s", screen);
	ck_assert_msg(strstr(screen, "standing guidance for the rest of the "
				     "run: use tabs, not spaces"),
		      "no chat.action line:\n%s", screen);
	free(screen);
	/* the next task's planner and executor were told */
	p = read_file("scenario.json.prompt.4");
	ck_assert_msg(strstr(p, "use tabs please"),
		      "the STEER prompt lacks the message:\n%s", p);
	free(p);
	p = read_file("scenario.json.prompt.8");
	ck_assert_msg(strstr(p, "- use tabs, not spaces"),
		      "t2's plan prompt lacks the guidance:\n%s", p);
	free(p);
	p = read_file("scenario.json.prompt.9");
	ck_assert_msg(strstr(p, "- use tabs, not spaces"),
		      "t2's execute prompt lacks the guidance:\n%s", p);
	free(p);
	assert_terminal_modes_restored();
	free(run);
}
END_TEST

START_TEST(test_no_tui_on_a_terminal_takes_stdin_lines_as_messages)
{
	char *screen;

	config("plain_chat", NULL);
	start("build one file", NULL, " --no-tui" STTY_TAIL);
	free(must_see("", "task.state t1 executing"));
	sleep_ms(300); /* past the boundary before the EXECUTE job */
	free(tmux("send-keys -t t -l 'how is it going?'"));
	free(tmux("send-keys -t t Enter"));
	free(must_see("", "message 1 queued"));
	screen = must_see("-S -", "DONE-0");
	ck_assert_msg(at(screen, "you: how is it going?") >= 0 &&
			      at(screen, "you: how is it going?") <
				      at(screen, "reply: all good so far"),
		      "no chat in the plain transcript:\n%s", screen);
	ck_assert_msg(!strstr(screen, "rev/replan"),
		      "a panel with --no-tui:\n%s", screen);
	free(screen);
	assert_terminal_modes_restored();
}
END_TEST

START_TEST(test_stderr_lands_above_the_panel_not_inside_it)
{
	char *screen;

	/* the local provider warns on stderr as the run starts */
	config("tui_slow", NULL);
	start("build two files", NULL, STTY_TAIL);
	screen = must_see("-S -", "DONE-0");
	ck_assert_msg(count(screen, "  state: ") == 1,
		      "a stale panel is left in the scrollback:\n%s", screen);
	ck_assert_msg(at(screen, "warning: critics are not confined") >= 0 &&
			      at(screen, "warning: critics are not confined") <
				      at(screen, "run.end completed"),
		      "the stderr warning is not in the transcript:\n%s",
		      screen);
	free(screen);
	assert_terminal_modes_restored();
}
END_TEST

static Suite *tui_suite(void)
{
	Suite *s = suite_create("tui");
	TCase *tc = tcase_create("dashboard");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(
		tc,
		test_the_panel_shows_the_run_and_the_transcript_stays_in_order);
	tcase_add_test(
		tc, test_gauges_escalate_from_dim_through_yellow_to_bold_red);
	tcase_add_test(tc, test_a_narrower_window_reclips_the_panel);
	tcase_add_test(tc, test_ctrl_c_leaves_the_terminal_usable);
	tcase_add_test(tc, test_a_crash_signal_restores_the_terminal);
	tcase_add_test(tc, test_no_color_draws_the_panel_without_colours);
	tcase_add_test(tc, test_a_pipe_gets_the_plain_transcript);
	tcase_add_test(
		tc,
		test_a_typed_message_steers_the_run_and_a_second_shell_too);
	tcase_add_test(tc, test_stderr_lands_above_the_panel_not_inside_it);
	tcase_add_test(
		tc, test_no_tui_on_a_terminal_takes_stdin_lines_as_messages);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tui_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
