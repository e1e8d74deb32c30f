/*
 * The dashboard's input line (plugins/tui/input.c) fed byte by byte as a
 * terminal in cbreak mode sends them, and the chat rows of its panel
 * (plugins/tui/model.c): what is typed, mended, swallowed and sent.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sbxloop/events.h>

#include "plugins/tui/tui.h"

static struct tui_input in;

/* Feed `bytes`; the last key's result. */
static int type(const char *bytes)
{
	int k = TUI_KEY_NONE;

	for (; *bytes; bytes++)
		k = tui_input_feed(&in, (unsigned char)*bytes);
	return k;
}

static void reset(void)
{
	tui_input_clear(&in);
}

START_TEST(test_enter_hands_over_a_trimmed_line)
{
	reset();
	ck_assert_int_eq(type("  use tabs  "), TUI_KEY_EDIT);
	ck_assert_int_eq(type("\r"), TUI_KEY_ENTER);
	ck_assert_str_eq(in.text, "use tabs");
	reset();
	/* a blank line is not a message */
	ck_assert_int_eq(type("   \r"), TUI_KEY_EDIT);
	ck_assert_str_eq(in.text, "");
	ck_assert_int_eq(type("\n"), TUI_KEY_EDIT);
}
END_TEST

START_TEST(test_backspace_removes_whole_utf8_characters)
{
	reset();
	type("caf\xc3\xa9 \xe2\x82\xac");
	ck_assert_str_eq(in.text, "caf\xc3\xa9 \xe2\x82\xac");
	type("\x7f");
	ck_assert_str_eq(in.text, "caf\xc3\xa9 ");
	type("\x7f\x08");
	ck_assert_str_eq(in.text, "caf");
	/* Ctrl-W a word, Ctrl-U the line */
	type(" au lait");
	type("\x17");
	ck_assert_str_eq(in.text, "caf au ");
	type("\x15");
	ck_assert_str_eq(in.text, "");
	ck_assert_uint_eq(in.len, 0);
}
END_TEST

START_TEST(test_escape_sequences_and_controls_are_swallowed)
{
	reset();
	type("a\x1b[A\x1b[1;5Cb\x1bOPc\x1b"
	     "xd\x01\x02\x07"
	     "e");
	ck_assert_str_eq(in.text, "abcde");
	/* a tab is a space */
	type("\tf");
	ck_assert_str_eq(in.text, "abcde f");
}
END_TEST

START_TEST(test_invalid_utf8_never_reaches_the_line)
{
	reset();
	/* a stray continuation byte, an invalid lead, an overlong lead */
	type("a\x80\xff\xc0\xc1"
	     "b");
	ck_assert_str_eq(in.text, "ab");
	/* a character cut short by another one is dropped */
	type("\xe2\x82"
	     "c");
	ck_assert_str_eq(in.text, "abc");
	/* a character cut short by Enter is dropped */
	type("\xe2\x82\r");
	ck_assert_str_eq(in.text, "abc");
}
END_TEST

START_TEST(test_a_full_line_takes_no_more)
{
	size_t i;

	reset();
	for (i = 0; i < 2 * TUI_INPUT_MAX; i++)
		tui_input_feed(&in, 'x');
	ck_assert_uint_eq(in.len, TUI_INPUT_MAX - 1);
	ck_assert_uint_eq(strlen(in.text), TUI_INPUT_MAX - 1);
	/* no room for a two-byte character: none of it goes in */
	type("\xc3\xa9");
	ck_assert_uint_eq(in.len, TUI_INPUT_MAX - 1);
	type("\x7f");
	type("\xc3\xa9");
	ck_assert_uint_eq(in.len, TUI_INPUT_MAX - 2);
}
END_TEST

static void event(struct tui_model *m, const char *type, const char *json,
		  double ts)
{
	struct sbxloop_event ev;
	cJSON *data = cJSON_Parse(json);

	memset(&ev, 0, sizeof(ev));
	ev.struct_size = sizeof(ev);
	ev.type = type;
	ev.run_id = "r1";
	ev.ts = ts;
	ev.data_json = json;
	tui_model_update(m, &ev, data);
	cJSON_Delete(data);
}

/* The panel line starting with `prefix`, or NULL. */
static const char *panel_line(const struct tui_lines *l, const char *prefix)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!strncmp(l->line[i].text, prefix, strlen(prefix)))
			return l->line[i].text;
	return NULL;
}

START_TEST(test_panel_shows_queued_then_answering_then_nothing)
{
	struct tui_model m;
	struct tui_lines l;

	memset(&m, 0, sizeof(m));
	m.input = "half typ";
	tui_model_chat_queued(&m, 4, "use tabs");
	tui_model_panel(&m, 100, &l);
	ck_assert_ptr_nonnull(panel_line(&l, "queued #4: use tabs"));
	ck_assert_str_eq(l.line[l.n - 1].text, "steer> half typ");
	ck_assert_int_eq(l.line[l.n - 1].tail, 1);
	/* one from another shell shows up with its chat.message */
	event(&m, SBXLOOP_EV_CHAT_MESSAGE,
	      "{\"message_id\":4,\"text\":\"use tabs\"}", 101);
	event(&m, SBXLOOP_EV_CHAT_MESSAGE,
	      "{\"message_id\":5,\"text\":\"from \\u001b[31mafar\"}", 101);
	tui_model_panel(&m, 102, &l);
	ck_assert_ptr_nonnull(panel_line(&l, "answering #4: use tabs"));
	ck_assert_ptr_nonnull(panel_line(&l, "answering #5: from"));
	event(&m, SBXLOOP_EV_CHAT_REPLY, "{\"message_id\":4,\"reply\":\"ok\"}",
	      103);
	event(&m, SBXLOOP_EV_CHAT_REPLY, "{\"message_id\":5,\"error\":\"x\"}",
	      103);
	tui_model_panel(&m, 104, &l);
	ck_assert_ptr_null(panel_line(&l, "answering"));
	ck_assert_ptr_null(panel_line(&l, "queued"));
	tui_model_set_notice(&m, "no run takes steering messages now");
	tui_model_panel(&m, 104, &l);
	ck_assert_ptr_nonnull(panel_line(
		&l, "not sent: no run takes steering messages now"));
	tui_model_release(&m);
}
END_TEST

START_TEST(test_task_rows_show_the_time_in_their_state)
{
	struct tui_model m;
	struct tui_lines l;
	const char *row;

	memset(&m, 0, sizeof(m));
	event(&m, SBXLOOP_EV_TASK_STATE,
	      "{\"task_id\":\"t1\",\"state\":\"planning\"}", 1000);
	event(&m, SBXLOOP_EV_TASK_STATE,
	      "{\"task_id\":\"t1\",\"state\":\"executing\"}", 1010);
	/* the same state again keeps its start */
	event(&m, SBXLOOP_EV_TASK_STATE,
	      "{\"task_id\":\"t1\",\"state\":\"executing\",\"revisions\":0}",
	      1050);
	tui_model_panel(&m, 1135, &l);
	row = panel_line(&l, "t1 ");
	ck_assert_ptr_nonnull(row);
	ck_assert_msg(strstr(row, "executing") && strstr(row, " 2:05"),
		      "row: %s", row);
	event(&m, SBXLOOP_EV_TASK_END,
	      "{\"task_id\":\"t1\",\"state\":\"done\"}", 1200);
	tui_model_panel(&m, 1300, &l);
	row = panel_line(&l, "t1 ");
	ck_assert_msg(!strchr(row + 60, ':'), "a finished task times: %s",
		      row);
	tui_model_release(&m);
}
END_TEST

static Suite *input_suite(void)
{
	Suite *s = suite_create("tui input");
	TCase *tc = tcase_create("input");

	tcase_add_test(tc, test_enter_hands_over_a_trimmed_line);
	tcase_add_test(tc, test_backspace_removes_whole_utf8_characters);
	tcase_add_test(tc, test_escape_sequences_and_controls_are_swallowed);
	tcase_add_test(tc, test_invalid_utf8_never_reaches_the_line);
	tcase_add_test(tc, test_a_full_line_takes_no_more);
	tcase_add_test(tc,
		       test_panel_shows_queued_then_answering_then_nothing);
	tcase_add_test(tc, test_task_rows_show_the_time_in_their_state);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(input_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
