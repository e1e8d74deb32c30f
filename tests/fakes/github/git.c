/*
 * git.c - real git objects for the fake GitHub server
 * (tests/fakes/github-server): an object store per repository keyed by
 * sha1("TYPE LEN\0" + content), trees in git's binary format and entry
 * order (a directory sorts as if its name ended in "/", its mode written
 * "40000"), trees built from a base tree plus path edits (nested paths
 * make directories, emptied directories vanish), commit objects in git's
 * text format, and ancestry for fast-forward checks. The routes and
 * state.c call it; it knows nothing of HTTP.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "github.h"

const char *gh_otype_name(enum gh_otype t)
{
	return t == GH_BLOB ? "blob" : t == GH_TREE ? "tree" : "commit";
}

static unsigned hash_of(const char *sha)
{
	unsigned h = 0;
	int i;

	for (i = 0; i < 8; i++)
		h = h * 16 + (unsigned)(sha[i] <= '9' ? sha[i] - '0'
						      : sha[i] - 'a' + 10);
	return h % GH_OBJ_BUCKETS;
}

const struct gh_obj *gh_odb_put(struct gh_odb *odb, enum gh_otype type,
				const void *data, size_t len)
{
	char head[64];
	int hn = snprintf(head, sizeof(head), "%s %zu", gh_otype_name(type),
			  len);
	unsigned char *all = gh_xmalloc((size_t)hn + 1 + len);
	struct gh_obj *o;
	char sha[41];
	unsigned h;

	memcpy(all, head, (size_t)hn + 1);
	if (len)
		memcpy(all + hn + 1, data, len);
	gh_sha1_hex(all, (size_t)hn + 1 + len, sha);
	free(all);
	o = (struct gh_obj *)gh_odb_get(odb, sha);
	if (o)
		return o;
	o = gh_xmalloc(sizeof(*o));
	memcpy(o->sha, sha, 41);
	o->type = type;
	o->data = gh_xmalloc(len + 1);
	if (len)
		memcpy(o->data, data, len);
	o->data[len] = '\0';
	o->len = len;
	h = hash_of(sha);
	o->next = odb->bucket[h];
	odb->bucket[h] = o;
	odb->count++;
	return o;
}

const struct gh_obj *gh_odb_get(const struct gh_odb *odb, const char *sha)
{
	const struct gh_obj *o;

	if (!gh_is_sha(sha))
		return NULL;
	for (o = odb->bucket[hash_of(sha)]; o; o = o->next)
		if (!strcmp(o->sha, sha))
			return o;
	return NULL;
}

void gh_odb_free(struct gh_odb *odb)
{
	struct gh_obj *o, *next;
	size_t i;

	for (i = 0; i < GH_OBJ_BUCKETS; i++)
		for (o = odb->bucket[i]; o; o = next) {
			next = o->next;
			free(o->data);
			free(o);
		}
	memset(odb, 0, sizeof(*odb));
}

/* ---- trees ------------------------------------------------------------- */

const char *gh_mode_api(unsigned mode)
{
	switch (mode) {
	case 040000:
		return "040000";
	case 0100755:
		return "100755";
	case 0120000:
		return "120000";
	case 0160000:
		return "160000";
	default:
		return "100644";
	}
}

const char *gh_mode_type(unsigned mode)
{
	return mode == 040000 ? "tree" : mode == 0160000 ? "commit" : "blob";
}

static void hex_of(const unsigned char *raw, char hex[41])
{
	int i;

	for (i = 0; i < 20; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
}

int gh_tree_read(const struct gh_odb *odb, const char *sha,
		 struct gh_tentry **ents, size_t *n)
{
	const struct gh_obj *o = gh_odb_get(odb, sha);
	const unsigned char *p, *end, *nul;
	struct gh_tentry *e = NULL;
	size_t cap = 0, k = 0;
	char *sp;

	if (!o || o->type != GH_TREE)
		return -1;
	p = o->data;
	end = p + o->len;
	while (p < end) {
		nul = memchr(p, 0, (size_t)(end - p));
		if (!nul || end - nul < 21)
			gh_die("corrupt tree %s", sha);
		if (k == cap) {
			cap = cap ? cap * 2 : 16;
			e = realloc(e, cap * sizeof(*e));
			if (!e)
				gh_die("out of memory");
		}
		e[k].mode = (unsigned)strtoul((const char *)p, &sp, 8);
		e[k].name = gh_xstrdup(sp + 1);
		hex_of(nul + 1, e[k].sha);
		k++;
		p = nul + 21;
	}
	*ents = e;
	*n = k;
	return 0;
}

void gh_tentries_free(struct gh_tentry *ents, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(ents[i].name);
	free(ents);
}

struct dnode {
	char *name;
	unsigned mode;
	char sha[41];
	struct gh_dir *sub; /* loaded or new directory, else NULL */
};

struct gh_dir {
	struct dnode *e;
	size_t n, cap;
};

static struct dnode *dir_add(struct gh_dir *d, const char *name, unsigned mode)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 8;
		d->e = realloc(d->e, d->cap * sizeof(*d->e));
		if (!d->e)
			gh_die("out of memory");
	}
	memset(&d->e[d->n], 0, sizeof(d->e[d->n]));
	d->e[d->n].name = gh_xstrdup(name);
	d->e[d->n].mode = mode;
	return &d->e[d->n++];
}

struct gh_dir *gh_dir_load(const struct gh_odb *odb, const char *sha)
{
	struct gh_dir *d = calloc(1, sizeof(*d));
	struct gh_tentry *ents;
	size_t n, i;

	if (!d)
		gh_die("out of memory");
	if (!sha)
		return d;
	if (gh_tree_read(odb, sha, &ents, &n) < 0) {
		free(d);
		return NULL;
	}
	for (i = 0; i < n; i++)
		memcpy(dir_add(d, ents[i].name, ents[i].mode)->sha,
		       ents[i].sha, 41);
	gh_tentries_free(ents, n);
	return d;
}

void gh_dir_free(struct gh_dir *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n; i++) {
		free(d->e[i].name);
		gh_dir_free(d->e[i].sub);
	}
	free(d->e);
	free(d);
}

static struct dnode *dir_find(struct gh_dir *d, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (strlen(d->e[i].name) == len &&
		    !memcmp(d->e[i].name, name, len))
			return &d->e[i];
	return NULL;
}

static int bad_component(const char *s, size_t len)
{
	return len == 0 || (len == 1 && s[0] == '.') ||
	       (len == 2 && !memcmp(s, "..", 2)) ||
	       (len == 4 && !memcmp(s, ".git", 4));
}

/* The directory holding PATH's last component (created when CREATE),
 * and that component in *LEAF; NULL on a bad or missing path. */
static struct gh_dir *walk(struct gh_dir *d, const struct gh_odb *odb,
			   const char *path, int create, const char **leaf)
{
	const char *slash;
	struct dnode *e;
	char name[4096];
	size_t len;

	for (;;) {
		slash = strchr(path, '/');
		if (!slash) {
			*leaf = path;
			return bad_component(path, strlen(path)) ? NULL : d;
		}
		len = (size_t)(slash - path);
		if (bad_component(path, len) || len >= sizeof(name))
			return NULL;
		e = dir_find(d, path, len);
		if (e && e->mode == 040000 && !e->sub)
			e->sub = gh_dir_load(odb, e->sha);
		if (!e || e->mode != 040000 || !e->sub) {
			if (!create)
				return NULL;
			memcpy(name, path, len);
			name[len] = '\0';
			if (!e)
				e = dir_add(d, name, 040000);
			e->mode = 040000;
			gh_dir_free(e->sub);
			e->sub = gh_dir_load(odb, NULL);
		}
		d = e->sub;
		path = slash + 1;
	}
}

int gh_dir_set(struct gh_dir *d, const struct gh_odb *odb, const char *path,
	       unsigned mode, const char *sha)
{
	const char *leaf;
	struct dnode *e;

	d = walk(d, odb, path, 1, &leaf);
	if (!d)
		return -1;
	e = dir_find(d, leaf, strlen(leaf));
	if (!e)
		e = dir_add(d, leaf, mode);
	gh_dir_free(e->sub);
	e->sub = NULL;
	e->mode = mode;
	memcpy(e->sha, sha, 41);
	return 0;
}

int gh_dir_remove(struct gh_dir *d, const struct gh_odb *odb, const char *path)
{
	const char *leaf;
	struct dnode *e;

	d = walk(d, odb, path, 0, &leaf);
	if (!d)
		return -1;
	e = dir_find(d, leaf, strlen(leaf));
	if (!e)
		return -1;
	free(e->name);
	gh_dir_free(e->sub);
	*e = d->e[--d->n];
	return 0;
}

/* git's order: a directory's name compares as if it ended in '/' */
static int entry_cmp(const void *a, const void *b)
{
	const struct dnode *x = a, *y = b;
	size_t lx = strlen(x->name), ly = strlen(y->name);
	size_t n = lx < ly ? lx : ly;
	int c = memcmp(x->name, y->name, n);
	unsigned char cx, cy;

	if (c)
		return c;
	cx = lx > n ? (unsigned char)x->name[n] : x->mode == 040000 ? '/' : 0;
	cy = ly > n ? (unsigned char)y->name[n] : y->mode == 040000 ? '/' : 0;
	return (int)cx - (int)cy;
}

static void unhex(const char *hex, unsigned char raw[20])
{
	int i;
	unsigned v;

	for (i = 0; i < 20; i++) {
		sscanf(hex + 2 * i, "%2x", &v);
		raw[i] = (unsigned char)v;
	}
}

void gh_dir_write(struct gh_dir *d, struct gh_odb *odb, char sha[41])
{
	struct buf b = {0};
	unsigned char raw[20];
	size_t i;

	for (i = 0; i < d->n;) {
		if (d->e[i].sub) {
			gh_dir_write(d->e[i].sub, odb, d->e[i].sha);
			if (!d->e[i].sub->n) { /* git keeps no empty trees */
				free(d->e[i].name);
				gh_dir_free(d->e[i].sub);
				d->e[i] = d->e[--d->n];
				continue;
			}
		}
		i++;
	}
	qsort(d->e, d->n, sizeof(*d->e), entry_cmp);
	for (i = 0; i < d->n; i++) {
		buf_printf(&b, "%o %s", d->e[i].mode, d->e[i].name);
		buf_add(&b, "", 1);
		unhex(d->e[i].sha, raw);
		buf_add(&b, raw, 20);
	}
	memcpy(sha, gh_odb_put(odb, GH_TREE, b.p ? b.p : "", b.n)->sha, 41);
	buf_free(&b);
}

/* ---- commits ----------------------------------------------------------- */

static void person_line(struct buf *b, const char *role,
			const struct gh_person *p)
{
	int tz = p->tz_minutes < 0 ? -p->tz_minutes : p->tz_minutes;

	buf_printf(b, "%s %s <%s> %lld %c%02d%02d\n", role, p->name, p->email,
		   p->when, p->tz_minutes < 0 ? '-' : '+', tz / 60, tz % 60);
}

void gh_commit_write(struct gh_odb *odb, const char *tree,
		     const char *const *parents, size_t nparents,
		     const struct gh_person *author,
		     const struct gh_person *committer, const char *message,
		     char sha[41])
{
	struct buf b = {0};
	size_t i;

	buf_printf(&b, "tree %s\n", tree);
	for (i = 0; i < nparents; i++)
		buf_printf(&b, "parent %s\n", parents[i]);
	person_line(&b, "author", author);
	person_line(&b, "committer", committer);
	buf_printf(&b, "\n%s", message);
	memcpy(sha, gh_odb_put(odb, GH_COMMIT, b.p, b.n)->sha, 41);
	buf_free(&b);
}

static void parse_person(const char *line, struct gh_person *p)
{
	const char *lt = strchr(line, '<'), *gt = lt ? strchr(lt, '>') : NULL;
	long long when = 0;
	int tz = 0;

	if (!lt || !gt)
		gh_die("corrupt commit identity '%s'", line);
	p->name = strndup(line, (size_t)(lt - line - (lt > line ? 1 : 0)));
	p->email = strndup(lt + 1, (size_t)(gt - lt - 1));
	if (!p->name || !p->email)
		gh_die("out of memory");
	sscanf(gt + 1, " %lld %d", &when, &tz);
	p->when = when;
	p->tz_minutes = (tz < 0 ? -1 : 1) * ((tz < 0 ? -tz : tz) / 100 * 60 +
					     (tz < 0 ? -tz : tz) % 100);
}

int gh_commit_read(const struct gh_odb *odb, const char *sha,
		   struct gh_commit *c)
{
	const struct gh_obj *o = gh_odb_get(odb, sha);
	const char *p, *eol;
	char *line;

	memset(c, 0, sizeof(*c));
	if (!o || o->type != GH_COMMIT)
		return -1;
	for (p = (const char *)o->data; *p && *p != '\n'; p = eol + 1) {
		eol = strchr(p, '\n');
		if (!eol)
			gh_die("corrupt commit %s", sha);
		line = strndup(p, (size_t)(eol - p));
		if (!line)
			gh_die("out of memory");
		if (!strncmp(line, "tree ", 5)) {
			snprintf(c->tree, 41, "%s", line + 5);
		} else if (!strncmp(line, "parent ", 7)) {
			c->parents = realloc(c->parents,
					     (c->nparents + 1) *
						     sizeof(*c->parents));
			if (!c->parents)
				gh_die("out of memory");
			snprintf(c->parents[c->nparents++], 41, "%s",
				 line + 7);
		} else if (!strncmp(line, "author ", 7)) {
			parse_person(line + 7, &c->author);
		} else if (!strncmp(line, "committer ", 10)) {
			parse_person(line + 10, &c->committer);
		}
		free(line);
	}
	c->message = gh_xstrdup(*p ? p + 1 : "");
	return 0;
}

void gh_commit_free(struct gh_commit *c)
{
	free(c->parents);
	free(c->author.name);
	free(c->author.email);
	free(c->committer.name);
	free(c->committer.email);
	free(c->message);
	memset(c, 0, sizeof(*c));
}

int gh_is_ancestor(const struct gh_odb *odb, const char *ancestor,
		   const char *sha)
{
	char(*queue)[41] = NULL;
	size_t head = 0, n = 0, cap = 0, i, j;
	struct gh_commit c;
	int found = 0, seen;

	if (!strcmp(ancestor, sha))
		return 1;
	queue = gh_xmalloc(sizeof(*queue));
	cap = 1;
	memcpy(queue[n++], sha, 41);
	while (head < n && !found) {
		if (gh_commit_read(odb, queue[head++], &c) < 0)
			continue;
		for (i = 0; i < c.nparents && !found; i++) {
			found = !strcmp(c.parents[i], ancestor);
			for (seen = 0, j = 0; j < n && !seen; j++)
				seen = !strcmp(queue[j], c.parents[i]);
			if (seen)
				continue;
			if (n == cap) {
				cap *= 2;
				queue = realloc(queue, cap * sizeof(*queue));
				if (!queue)
					gh_die("out of memory");
			}
			memcpy(queue[n++], c.parents[i], 41);
		}
		gh_commit_free(&c);
	}
	free(queue);
	return found;
}

/* ---- dates ------------------------------------------------------------- */

int gh_parse_date(const char *s, long long *when, int *tz_minutes)
{
	struct tm tm;
	int y, mo, d, h, mi, sec, n = 0, th = 0, tm_ = 0;
	char sign = 0;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec,
		   &n) != 6)
		return -1;
	s += n;
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			;
	if (*s == 'Z' && !s[1]) {
		sign = '+';
	} else if ((*s == '+' || *s == '-') &&
		   sscanf(s + 1, "%2d:%2d", &th, &tm_) == 2) {
		sign = *s;
	} else {
		return -1;
	}
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	*tz_minutes = (sign == '-' ? -1 : 1) * (th * 60 + tm_);
	*when = (long long)timegm(&tm) - (long long)*tz_minutes * 60;
	return 0;
}

void gh_format_date(long long when, int tz_minutes, char out[32])
{
	time_t t = (time_t)when;
	struct tm tm;

	(void)tz_minutes; /* GitHub shows every date in UTC */
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
