/*
 * Private to the tui module: the terminal's control sequences (term.c),
 * read from terminfo once. Every string is malloc'd, "" when the
 * terminal lacks it; freed by tui_term_release().
 */
#ifndef SBXLOOP_TUI_TERM_H
#define SBXLOOP_TUI_TERM_H

struct tui_term {
	char *sgr0, *bold, *dim;
	char *civis, *cnorm; /* cursor invisible, normal */
	char *ed;            /* clear to the end of the screen */
	char *cuu1;          /* cursor up one line */
	char *cr;
	char *fg[8]; /* setaf 0..7 when `color` */
	int color;
	int cols; /* terminfo's width, -1 unknown */
};

/*
 * Read the sequences of $TERM for the terminal on `fd`; colours only
 * when `want_color`. 0, or -1 when the terminal is unknown or cannot
 * move the cursor up and clear below it.
 */
int tui_term_load(struct tui_term *t, int fd, int want_color);
void tui_term_release(struct tui_term *t);

#endif
