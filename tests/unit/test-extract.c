/*
 * test-extract.c - JSON extraction from agent text (worker/extract.c),
 * linked in directly: the answers match the straightforward search
 * (cJSON tried at every '{' and '[' in turn, kept here as the reference)
 * on many random texts, and the work stays linear in the text on the
 * inputs that made the reference take 49 s for a 1 MB reply.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "worker.h"

#define MB (1024u * 1024)

/* The search as it was (and as upstream specifies it), prose part. */
static cJSON *reference_prose(const char *text)
{
	size_t len = strlen(text), i;
	cJSON *found = NULL;

	for (i = 0; i < len;) {
		const char *end = NULL;
		cJSON *v;

		if (text[i] != '{' && text[i] != '[') {
			i++;
			continue;
		}
		v = cJSON_ParseWithLengthOpts(text + i, len - i, &end, 0);
		if (v && (cJSON_IsObject(v) || cJSON_IsArray(v)) &&
		    end > text + i) {
			cJSON_Delete(found);
			found = v;
			i = (size_t)(end - text);
		} else {
			cJSON_Delete(v);
			i++;
		}
	}
	return found;
}

/* The reference for a text without fences or a whole-text answer. */
static cJSON *reference(const char *text)
{
	const char *s = text, *end = NULL;
	size_t n = strlen(text);
	cJSON *v;

	while (n && (unsigned char)*s <= ' ' && strchr(" \t\r\n\f\v", *s))
		s++, n--;
	while (n && strchr(" \t\r\n\f\v", s[n - 1]))
		n--;
	if (n) {
		v = cJSON_ParseWithLengthOpts(s, n, &end, 0);
		if (v && (cJSON_IsObject(v) || cJSON_IsArray(v)) &&
		    end == s + n)
			return v;
		cJSON_Delete(v);
	}
	return reference_prose(text);
}

/* Compared printed: cJSON_Compare is wrong on duplicate keys. */
static void assert_same(const char *text)
{
	cJSON *want = reference(text), *got = wk_extract_json(text);
	char *a = want ? cJSON_PrintUnformatted(want) : NULL;
	char *b = got ? cJSON_PrintUnformatted(got) : NULL;

	ck_assert_msg((!a && !b) || (a && b && !strcmp(a, b)),
		      "text '%s': want %s, got %s", text, a ? a : "none",
		      b ? b : "none");
	free(a);
	free(b);
	cJSON_Delete(want);
	cJSON_Delete(got);
}

static char *repeat(const char *unit, size_t total, const char *tail)
{
	size_t u = strlen(unit), t = strlen(tail), n = 0;
	char *s = malloc(total + t + 1);

	ck_assert_ptr_nonnull(s);
	while (n + u <= total) {
		memcpy(s + n, unit, u);
		n += u;
	}
	memcpy(s + n, tail, t + 1);
	return s;
}

/* ---------------------------------------------------------------- */

START_TEST(test_answers_match_the_reference_on_random_text)
{
	/* the characters that matter to JSON, and a few that do not */
	static const char alphabet[] = "{}[]\"\"::,,  \\u0123456789aAdDeE-+."
				       "tnrulfsx\n\t";
	unsigned seed = 11;
	char text[48];
	int i;

	for (i = 0; i < 200000; i++) {
		int n = rand_r(&seed) % 40, k;

		for (k = 0; k < n; k++)
			text[k] = alphabet[(unsigned)rand_r(&seed) %
					   (sizeof(alphabet) - 1)];
		text[n] = '\0';
		if (strstr(text, "```"))
			continue;
		assert_same(text);
	}
}
END_TEST

START_TEST(test_answers_match_the_reference_on_chosen_text)
{
	static const char *const cases[] = {
		"I think {\"a\":1} and finally {\"b\":[2]} ok",
		"outer {\"a\":{\"inner\":true}} end",
		"x {\"a\":[1,{\"b\":2}, [3] end",
		"x [1, [2, [3]] y",
		"see \"[1]\" and {\"k\":\"[2]\"",
		"{\"s\":\"\\u12\"} [1]",
		"{\"s\":\"\\uZZZZ\"}",
		"{\"s\":\"\\ud800\\udc00\"} and {\"s\":\"\\ud800\"}",
		"{\"s\":\"\\udc00\"} [true,false,null]",
		"[1e5, -0.5, 01, 1.2.3] [-] [1e] [+1]",
		"{\"a\" : 1 , \"b\" :[ ] , \"c\":{ }}",
		"[nullx] [nul] [tru",
		"{\"a\":1,} [1,] {,} [,1]",
		"{\"\\\"\":\"\\\\\"} ok",
		"[\"\\x\"] [\"\\/\"]",
		"[12345678901234567890123456789012345678901234567890123456789"
		"0123456789]",
		"x [4444444444444444444444444444444444444444444444444444444444"
		"44444444444444444444444444444444444444] y",
		"{\"d\":1,\"d\":2} and [\"\u00e9\"]",
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(*cases); i++)
		assert_same(cases[i]);
}
END_TEST

/* Past cJSON's nesting limit the answer is the tallest inner value. */
START_TEST(test_nesting_past_the_limit_matches_the_reference)
{
	size_t n = CJSON_NESTING_LIMIT + 3, i;
	char *text = malloc(2 * n + 32);

	strcpy(text, "prose ");
	for (i = 0; i < n; i++)
		strcat(text + 6 + i, "[");
	for (i = 0; i < n; i++)
		text[6 + n + i] = ']';
	strcpy(text + 6 + 2 * n, " end");
	assert_same(text);
	free(text);
}
END_TEST

/*
 * A megabyte of unclosed nesting, of each kind, with and without an
 * answer behind it: the work is a few passes over the text, not one
 * per bracket times the nesting limit.
 */
START_TEST(test_a_megabyte_of_unclosed_nesting_is_linear)
{
	static const char *const units[] = {"[", "{\"a\":", "[1,", "{\"k\":[",
					    "[\"x\",{\"y\":"};
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(*units); i++) {
		char *text = repeat(units[i], MB - 64, "");
		cJSON *v = wk_extract_json(text);
		size_t len = strlen(text);

		ck_assert_msg(v == NULL, "unit '%s'", units[i]);
		ck_assert_msg(wk_extract_last_work() <= 4 * len,
			      "unit '%s': %zu bytes of work for %zu", units[i],
			      wk_extract_last_work(), len);
		free(text);

		text = repeat(units[i], MB - 64, " answer: {\"ok\":1}");
		v = wk_extract_json(text);
		ck_assert_msg(
			v && cJSON_IsNumber(cJSON_GetObjectItem(v, "ok")),
			"unit '%s': no answer", units[i]);
		ck_assert_msg(wk_extract_last_work() <= 4 * strlen(text),
			      "unit '%s' + answer: %zu bytes of work",
			      units[i], wk_extract_last_work());
		cJSON_Delete(v);
		free(text);
	}
}
END_TEST

/* Many unclosed strings and brackets mixed: still bounded. */
START_TEST(test_crafted_rescans_stay_bounded)
{
	static const char *const units[] = {"[\"[", "{\"a\":\"{\"", "[\"]\",[",
					    "\"[\"", "[\"\\\"[\""};
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(*units); i++) {
		char *text = repeat(units[i], MB - 64, "");

		cJSON_Delete(wk_extract_json(text));
		ck_assert_msg(wk_extract_last_work() <=
				      10 * strlen(text) + 65536 * 2,
			      "unit '%s': %zu bytes of work", units[i],
			      wk_extract_last_work());
		free(text);
	}
}
END_TEST

static Suite *extract_suite(void)
{
	Suite *s = suite_create("extract");
	TCase *tc = tcase_create("extract");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_answers_match_the_reference_on_random_text);
	tcase_add_test(tc, test_answers_match_the_reference_on_chosen_text);
	tcase_add_test(tc, test_nesting_past_the_limit_matches_the_reference);
	tcase_add_test(tc, test_a_megabyte_of_unclosed_nesting_is_linear);
	tcase_add_test(tc, test_crafted_rescans_stay_bounded);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(extract_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
