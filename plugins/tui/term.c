/*
 * The terminal's control sequences, read once from terminfo (ncurses'
 * tinfo, no curses screen) into tui_term. The only file that includes
 * <term.h>, whose capability macros would shadow ordinary names
 * elsewhere. Called by tui.c at create.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curses.h>
#include <term.h>

#include "term.h"

static char *cap(const char *name)
{
	char *s = tigetstr(name);

	if (!s || s == (char *)-1)
		return strdup("");
	return strdup(s);
}

static int load_caps(struct tui_term *t, int want_color);

int tui_term_load(struct tui_term *t, int fd, int want_color)
{
	int err = 0, rc;

	memset(t, 0, sizeof(*t));
	if (setupterm(NULL, fd, &err) != OK)
		return -1;
	rc = load_caps(t, want_color);
	/* every capability is copied: the terminfo entry is not kept */
	del_curterm(cur_term);
	cur_term = NULL;
	return rc;
}

static int load_caps(struct tui_term *t, int want_color)
{
	int i;

	t->sgr0 = cap("sgr0");
	t->bold = cap("bold");
	t->dim = cap("dim");
	t->civis = cap("civis");
	t->cnorm = cap("cnorm");
	t->ed = cap("ed");
	t->cuu1 = cap("cuu1");
	t->cr = cap("cr");
	if (!t->sgr0 || !t->bold || !t->dim || !t->civis || !t->cnorm ||
	    !t->ed || !t->cuu1 || !t->cr) {
		tui_term_release(t);
		return -1;
	}
	if (!*t->cr) {
		free(t->cr);
		t->cr = strdup("\r");
	}
	t->cols = tigetnum("cols");
	if (!*t->ed || !*t->cuu1) {
		/* cannot move over the panel: no dashboard */
		tui_term_release(t);
		return -1;
	}
	if (want_color && tigetnum("colors") >= 8) {
		char *setaf = tigetstr("setaf");

		if (setaf && setaf != (char *)-1) {
			for (i = 0; i < 8; i++) {
				char *s = tiparm(setaf, i);

				t->fg[i] = strdup(s ? s : "");
			}
			t->color = 1;
		}
	}
	return 0;
}

void tui_term_release(struct tui_term *t)
{
	int i;

	free(t->sgr0);
	free(t->bold);
	free(t->dim);
	free(t->civis);
	free(t->cnorm);
	free(t->ed);
	free(t->cuu1);
	free(t->cr);
	for (i = 0; i < 8; i++)
		free(t->fg[i]);
	memset(t, 0, sizeof(*t));
}
