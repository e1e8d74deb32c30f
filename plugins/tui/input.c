/*
 * The dashboard's input line (tui.h): a line editor fed one byte at a
 * time from a terminal in cbreak mode. It keeps only valid UTF-8,
 * removes whole characters on Backspace, clears on Ctrl-U, removes a
 * word on Ctrl-W, swallows escape sequences (arrows, function keys,
 * Alt+key) and other control bytes, and hands a line over on Enter.
 * No I/O and no locking: tui.c feeds it under its mutex.
 */
#include "config.h"

#include <string.h>

#include "tui.h"

#define ESC_NONE 0
#define ESC_SEEN 1 /* ESC: one more byte decides */
#define ESC_CSI 2  /* ESC [: up to a final byte 0x40-0x7e */
#define ESC_SS3 3  /* ESC O: one more byte */

static int is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/* Bytes of a UTF-8 sequence led by `c`, 0 when `c` cannot lead one. */
static unsigned seq_len(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	if (c >= 0xf0 && c <= 0xf4)
		return 4;
	return 0;
}

/* Forget a character still missing continuation bytes. */
static void drop_partial(struct tui_input *in)
{
	if (in->need) {
		in->len = in->start;
		in->text[in->len] = '\0';
		in->need = 0;
	}
}

static void back_one(struct tui_input *in)
{
	while (in->len && is_cont((unsigned char)in->text[in->len - 1]))
		in->len--;
	if (in->len)
		in->len--;
	in->text[in->len] = '\0';
}

static void back_word(struct tui_input *in)
{
	while (in->len && in->text[in->len - 1] == ' ')
		in->len--;
	while (in->len && in->text[in->len - 1] != ' ')
		in->len--;
	in->text[in->len] = '\0';
}

static int escape(struct tui_input *in, unsigned char c)
{
	switch (in->esc) {
	case ESC_SEEN:
		in->esc = c == '[' ? ESC_CSI : c == 'O' ? ESC_SS3 : ESC_NONE;
		break;
	case ESC_CSI:
		if (c >= 0x40 && c <= 0x7e)
			in->esc = ESC_NONE;
		else if (c < 0x20 || c > 0x3f)
			in->esc = ESC_NONE; /* not a CSI after all */
		break;
	default:
		in->esc = ESC_NONE;
	}
	return TUI_KEY_NONE;
}

static int add_byte(struct tui_input *in, unsigned char c)
{
	unsigned n;

	if (is_cont(c)) {
		if (!in->need) /* a stray continuation byte */
			return TUI_KEY_NONE;
		in->text[in->len++] = (char)c;
		in->text[in->len] = '\0';
		in->need--;
		return TUI_KEY_EDIT;
	}
	drop_partial(in);
	n = seq_len(c);
	if (!n || in->len + n >= sizeof(in->text))
		return TUI_KEY_NONE; /* invalid, or the line is full */
	in->start = in->len;
	in->text[in->len++] = (char)c;
	in->text[in->len] = '\0';
	in->need = n - 1;
	return TUI_KEY_EDIT;
}

int tui_input_feed(struct tui_input *in, unsigned char c)
{
	if (in->esc)
		return escape(in, c);
	switch (c) {
	case 0x1b:
		drop_partial(in);
		in->esc = ESC_SEEN;
		return TUI_KEY_NONE;
	case '\r':
	case '\n': {
		size_t lead;

		drop_partial(in);
		while (in->len && in->text[in->len - 1] == ' ')
			in->text[--in->len] = '\0';
		lead = strspn(in->text, " ");
		if (lead == in->len) {
			in->len = 0;
			in->text[0] = '\0';
			return TUI_KEY_EDIT;
		}
		memmove(in->text, in->text + lead, in->len - lead + 1);
		in->len -= lead;
		return TUI_KEY_ENTER;
	}
	case 0x7f:
	case 0x08:
		if (in->need)
			drop_partial(in);
		else
			back_one(in);
		return TUI_KEY_EDIT;
	case 0x15: /* Ctrl-U */
		in->len = 0;
		in->need = 0;
		in->text[0] = '\0';
		return TUI_KEY_EDIT;
	case 0x17: /* Ctrl-W */
		drop_partial(in);
		back_word(in);
		return TUI_KEY_EDIT;
	case '\t':
		return add_byte(in, ' ');
	default:
		if (c < 0x20)
			return TUI_KEY_NONE;
		return add_byte(in, c);
	}
}

void tui_input_clear(struct tui_input *in)
{
	memset(in, 0, sizeof(*in));
}
