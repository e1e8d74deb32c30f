/*
 * Configuration loading: defaults, the user file, the project file,
 * SBXLOOP_SECTION__KEY environment variables and command-line overrides,
 * in rising precedence, validated against the schema (core keys plus the
 * keys plugins declare for their own mappings). Owns struct sl_config and
 * its lifecycle, the raw-entry records the readers produce, and the schema
 * lookups ("did you mean"). Every error names where the value came from
 * (file:line:column or the variable) and the key path. The CLI calls
 * sl_config_load() before anything else starts; the rest of
 * core/config/ shares the helpers declared in conf_internal.h.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/conf.h"
#include "config/conf_internal.h"
#include "common/util.h"

extern char **environ;

/* ---- records shared by the readers and the layers ---------------------- */

void sl_conf_raw_release(struct raw *r)
{
	size_t i;

	free(r->path);
	free(r->scalar);
	for (i = 0; i < r->n_items; i++)
		free(r->items[i]);
	free(r->items);
	free(r->origin);
	free(r->key_origin);
	free(r->sect_origin);
	memset(r, 0, sizeof(*r));
}

void sl_conf_value_release(struct sl_config_value *v)
{
	size_t i;

	free(v->str);
	for (i = 0; i < v->n_items; i++)
		free(v->items[i]);
	free(v->items);
	free(v->origin);
	v->str = NULL;
	v->items = NULL;
	v->n_items = 0;
	v->origin = NULL;
}

const char *sl_source_name(enum sl_source src)
{
	switch (src) {
	case SL_SRC_DEFAULT:
		return "default";
	case SL_SRC_USER:
		return "user file";
	case SL_SRC_PROJECT:
		return "project file";
	case SL_SRC_ENV:
		return "env";
	case SL_SRC_CLI:
		return "command line";
	}
	return "?";
}

void sl_conf_error(struct sl_buf *errs, const char *origin, const char *fmt,
		   ...)
{
	va_list ap;

	if (origin)
		sl_buf_addf(errs, "%s: ", origin);
	va_start(ap, fmt);
	sl_buf_vaddf(errs, fmt, ap);
	va_end(ap);
	sl_buf_addc(errs, '\n');
}

void sl_conf_grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	void **p = pp;

	if (need <= *cap)
		return;
	*cap = *cap ? *cap * 2 : 8;
	if (*cap < need)
		*cap = need;
	*p = sl_xrealloc(*p, *cap * elem);
}

void sl_conf_raw_push(struct raw **out, size_t *n_out, size_t *cap,
		      struct raw *r)
{
	sl_conf_grow(out, cap, *n_out + 1, sizeof(**out));
	(*out)[(*n_out)++] = *r;
}

/* ---- the schema ------------------------------------------------------- */

struct sl_config_value *sl_conf_find(const struct sl_config *cfg,
				     const char *path)
{
	size_t i;

	for (i = 0; i < cfg->n_values; i++)
		if (strcmp(cfg->values[i].spec->path, path) == 0)
			return &cfg->values[i];
	return NULL;
}

int sl_conf_section_is_core(const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < sl_core_schema_len; i++) {
		const char *p = sl_core_schema[i].path;

		if (strncmp(p, name, n) == 0 && p[n] == '.')
			return 1;
	}
	return 0;
}

static int section_is_claimed(const struct sl_config *cfg, const char *name)
{
	size_t i;

	if (sl_conf_section_is_core(name))
		return 1;
	for (i = 0; i < cfg->n_sections; i++)
		if (strcmp(cfg->sections[i], name) == 0)
			return 1;
	return 0;
}

/*
 * The nearest known name to `key` among the keys of `section` ("" for
 * top level), for "did you mean". Returns a pointer into the schema or
 * NULL when nothing is close.
 */
static const char *suggest(const struct sl_config *cfg, const char *section,
			   const char *key, char *buf, size_t len)
{
	size_t i, best = (size_t)-1, seclen = strlen(section);
	const char *winner = NULL;

	for (i = 0; i < cfg->n_values; i++) {
		const char *p = cfg->values[i].spec->path;
		const char *name;
		char top[128];
		size_t d;

		if (seclen) {
			if (strncmp(p, section, seclen) != 0 ||
			    p[seclen] != '.')
				continue;
			name = p + seclen + 1;
		} else {
			size_t n = strcspn(p, ".");

			if (n >= sizeof(top))
				continue;
			memcpy(top, p, n);
			top[n] = '\0';
			name = top;
		}
		d = sl_levenshtein(key, name);
		if (d < best) {
			best = d;
			snprintf(buf, len, "%s", name);
			winner = buf;
		}
	}
	if (!winner || best > (strlen(key) + 2) / 3 + 1)
		return NULL;
	return winner;
}

static void unknown_key_error(const struct sl_config *cfg, struct sl_buf *errs,
			      const struct raw *r)
{
	char section[128] = "", buf[128];
	const char *dot = strchr(r->path, '.');
	const char *key = r->path;
	const char *hint;

	if (dot && (size_t)(dot - r->path) < sizeof(section)) {
		memcpy(section, r->path, (size_t)(dot - r->path));
		section[dot - r->path] = '\0';
		key = dot + 1;
	}
	const char *where = r->key_origin ? r->key_origin : r->origin;

	hint = suggest(cfg, section, key, buf, sizeof(buf));
	if (hint)
		sl_conf_error(errs, where,
			      "unknown key '%s' (did you mean '%s'?)", r->path,
			      hint);
	else
		sl_conf_error(errs, where, "unknown key '%s'", r->path);
}

/* ---- layers ------------------------------------------------------------ */

static void add_spec(struct sl_config *cfg, const struct sl_config_spec *s)
{
	struct sl_config_value *v;
	struct sl_buf errs = SL_BUF_INIT;
	struct raw r;

	cfg->values = sl_xrealloc(cfg->values,
				  (cfg->n_values + 1) * sizeof(*cfg->values));
	v = &cfg->values[cfg->n_values++];
	memset(v, 0, sizeof(*v));
	v->spec = s;
	v->source = SL_SRC_DEFAULT;
	if (!s->dflt)
		return;
	if (sl_conf_parse_inline(s->dflt, s->path, "default", &r, &errs) ==
	    0) {
		sl_conf_apply_raw(v, &r, &errs);
		sl_conf_raw_release(&r);
	}
	v->source = SL_SRC_DEFAULT;
	free(v->origin);
	v->origin = NULL;
	if (errs.len) /* a broken built-in default is a programming error */
		fprintf(stderr, "bug: default of %s: %s", s->path,
			sl_buf_str(&errs));
	sl_buf_release(&errs);
}

/*
 * SBXLOOP_ variables: each one is a key (SBXLOOP_KEY, SBXLOOP_SECTION__KEY)
 * or one of the variables sbxloop, its worker or its test harness read
 * (sl_tool_variable); anything else is a mistake and is reported.
 */
static void env_layer(struct sl_config *cfg, struct raw **out, size_t *n,
		      size_t *cap, struct sl_buf *errs)
{
	char **e;

	for (e = environ; *e; e++) {
		const char *eq = strchr(*e, '=');
		char *name, *path, *p, buf[128];
		const char *hint;
		size_t i, len;
		int bad = 0;
		struct raw r;

		if (!eq || strncmp(*e, "SBXLOOP_", 8) != 0)
			continue;
		name = sl_xstrndup(*e, (size_t)(eq - *e));
		if (sl_tool_variable(name)) {
			free(name);
			continue;
		}
		len = strlen(name + 8);
		path = sl_xcalloc(len + 1, 1);
		for (i = 0, p = path; i < len; i++) {
			char c = name[8 + i];

			if (!isalnum((unsigned char)c) && c != '_') {
				name[8 + i] = '?'; /* never echo controls */
				bad = 1;
			}
			if (c == '_' && name[8 + i + 1] == '_') {
				*p++ = '.';
				i++;
			} else {
				*p++ = (char)tolower((unsigned char)c);
			}
		}
		if (!*path) {
			sl_conf_error(
				errs, name,
				"no key after the prefix: set SBXLOOP_KEY or "
				"SBXLOOP_SECTION__KEY, or unset it");
		} else if (bad || path[0] == '.' || strstr(path, "..") ||
			   path[strlen(path) - 1] == '.') {
			sl_conf_error(errs, name,
				      "not a key name: set SBXLOOP_KEY or "
				      "SBXLOOP_SECTION__KEY, or unset it");
		} else if (!strchr(path, '.') && !sl_conf_find(cfg, path)) {
			if (sl_conf_section_is_core(path))
				sl_conf_error(
					errs, name,
					"'%s' is a section: set one of its "
					"keys as %s__KEY",
					path, name);
			else if ((hint = suggest(cfg, "", path, buf,
						 sizeof(buf))))
				sl_conf_error(errs, name,
					      "unknown key '%s' (did you mean "
					      "'%s'?)",
					      path, hint);
			else
				sl_conf_error(errs, name,
					      "unknown key '%s', and not a "
					      "variable sbxloop reads",
					      path);
		} else if (sl_conf_parse_inline(eq + 1, path, name, &r,
						errs) == 0) {
			r.source = SL_SRC_ENV;
			r.from_env = 1;
			sl_conf_raw_push(out, n, cap, &r);
		}
		free(name);
		free(path);
	}
}

/* Apply the raw entries the schema knows; keep the rest pending. */
static void apply_all(struct sl_config *cfg, struct raw *raws, size_t n,
		      struct sl_buf *errs)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct raw *r = &raws[i];
		struct sl_config_value *v = sl_conf_find(cfg, r->path);
		char top[128];
		size_t tl = strcspn(r->path, ".");

		if (v) {
			sl_conf_apply_raw(v, r, errs);
			sl_conf_raw_release(r);
			continue;
		}
		snprintf(top, sizeof(top), "%.*s", (int)tl, r->path);
		/* "name:" with nothing under it: an empty section */
		if (!strchr(r->path, '.') && r->is_null &&
		    section_is_claimed(cfg, top)) {
			sl_conf_raw_release(r);
			continue;
		}
		if (!strchr(r->path, '.') && r->is_null) {
			char *marker = sl_xasprintf("%s.", r->path);

			free(r->path);
			r->path = marker;
			free(r->sect_origin);
			r->sect_origin = sl_xstrdup(r->key_origin);
		} else if (!strchr(r->path, '.') ||
			   section_is_claimed(cfg, top)) {
			unknown_key_error(cfg, errs, r);
			sl_conf_raw_release(r);
			continue;
		}
		sl_conf_raw_push(&cfg->pending, &cfg->n_pending,
				 &cfg->cap_pending, r);
		memset(r, 0, sizeof(*r));
	}
}

static char *home_dir(void)
{
	const char *h = getenv("HOME");

	return sl_xstrdup(h && *h ? h : "/");
}

static void resolve_state_dir(struct sl_config *cfg)
{
	struct sl_config_value *v = sl_conf_find(cfg, "state_dir");
	char *home, *s;

	if (!v || !v->str)
		return;
	home = home_dir();
	if (strcmp(v->str, "~") == 0)
		s = sl_xstrdup(home);
	else if (strncmp(v->str, "~/", 2) == 0)
		s = sl_xasprintf("%s/%s", home, v->str + 2);
	else if (v->str[0] != '/')
		s = sl_xasprintf("%s/%s", cfg->cwd, v->str);
	else
		s = sl_xstrdup(v->str);
	free(v->str);
	v->str = s;
	free(home);
}

static void cross_checks(struct sl_config *cfg, struct sl_buf *errs)
{
	static const char *const pairs[][2] = {
		{"limits.disk_warn", "limits.disk_abort"},
		{"limits.mem_warn", "limits.mem_abort"},
	};
	size_t i;

	for (i = 0; i < SL_ARRAY_SIZE(pairs); i++) {
		const struct sl_config_value *w =
			sl_conf_find(cfg, pairs[i][0]);
		const struct sl_config_value *a =
			sl_conf_find(cfg, pairs[i][1]);
		double wv = sl_config_double(cfg, pairs[i][0], 0);
		double av = sl_config_double(cfg, pairs[i][1], 0);

		if (av > 0 && !(av > wv)) {
			const struct sl_config_value *blame =
				a->source >= w->source ? a : w;

			sl_conf_error(
				errs, blame->origin,
				"%s (%g) must be greater than %s (%g), or 0 "
				"to disable it",
				pairs[i][1], av, pairs[i][0], wv);
		}
	}
}

int sl_config_load(struct sl_config **out, const struct sl_config_opts *o,
		   char **errors)
{
	struct sl_config *cfg = sl_xcalloc(1, sizeof(*cfg));
	struct sl_buf errs = SL_BUF_INIT;
	struct raw *raws = NULL;
	size_t n = 0, cap = 0, i;
	char cwd[4096];
	char *user_file = NULL;
	const char *xdg;

	*out = NULL;
	*errors = NULL;
	if (o && o->cwd)
		cfg->cwd = sl_xstrdup(o->cwd);
	else
		cfg->cwd = sl_xstrdup(getcwd(cwd, sizeof(cwd)) ? cwd : ".");
	for (i = 0; i < sl_core_schema_len; i++)
		add_spec(cfg, &sl_core_schema[i]);

	if (!o || !o->no_user_file) {
		xdg = getenv("XDG_CONFIG_HOME");
		if (xdg && *xdg) {
			user_file =
				sl_xasprintf("%s/sbxloop/config.yaml", xdg);
		} else {
			char *home = home_dir();

			user_file = sl_xasprintf(
				"%s/.config/sbxloop/config.yaml", home);
			free(home);
		}
		sl_conf_parse_file(user_file, 0, SL_SRC_USER, &raws, &n, &cap,
				   &errs);
	}
	if (o && o->config_file) {
		cfg->project_file = sl_xstrdup(o->config_file);
		sl_conf_parse_file(o->config_file, 1, SL_SRC_PROJECT, &raws,
				   &n, &cap, &errs);
	} else {
		char *p = sl_xasprintf("%s/sbxloop.yaml", cfg->cwd);

		if (access(p, F_OK) == 0)
			cfg->project_file = sl_xstrdup("sbxloop.yaml");
		sl_conf_parse_file(cfg->project_file ? "sbxloop.yaml" : p, 0,
				   SL_SRC_PROJECT, &raws, &n, &cap, &errs);
		free(p);
	}
	if (!o || !o->no_env)
		env_layer(cfg, &raws, &n, &cap, &errs);
	apply_all(cfg, raws, n, &errs);
	for (i = 0; i < n; i++)
		sl_conf_raw_release(&raws[i]);
	free(raws);
	free(user_file);
	resolve_state_dir(cfg);
	cross_checks(cfg, &errs);
	*out = cfg;
	if (errs.len) {
		*errors = sl_buf_detach(&errs);
		return SBXLOOP_EINVAL;
	}
	return 0;
}

int sl_config_add_component(struct sl_config *cfg, const char *section,
			    const struct sbxloop_config_key *keys,
			    char **errors)
{
	struct sl_buf errs = SL_BUF_INIT;
	struct sl_config_spec *specs;
	size_t nk = 0, i, j, sl = strlen(section);

	*errors = NULL;
	if (section_is_claimed(cfg, section))
		return 0; /* core sections and repeats are not re-declared */
	while (keys && keys[nk].name)
		nk++;
	if (cfg->n_owned >= SL_ARRAY_SIZE(cfg->owned_specs))
		return SBXLOOP_ENOMEM;
	specs = sl_xcalloc(nk + 1, sizeof(*specs));
	cfg->owned_specs[cfg->n_owned++] = specs;
	cfg->sections = sl_xrealloc(cfg->sections,
				    (cfg->n_sections + 1) * sizeof(char *));
	cfg->sections[cfg->n_sections++] = sl_xstrdup(section);
	for (i = 0; i < nk; i++) {
		specs[i].path = sl_xasprintf("%s.%s", section, keys[i].name);
		specs[i].type = keys[i].type;
		specs[i].dflt = keys[i].default_value;
		specs[i].choices = keys[i].choices;
		specs[i].help = keys[i].help;
		add_spec(cfg, &specs[i]);
	}
	/* claim this section's pending entries, in layer order */
	for (i = 0, j = 0; i < cfg->n_pending; i++) {
		struct raw *r = &cfg->pending[i];

		if (strncmp(r->path, section, sl) == 0 && r->path[sl] == '.') {
			struct sl_config_value *v = sl_conf_find(cfg, r->path);

			if (r->path[sl + 1] == '\0')
				; /* an empty mapping of this section */
			else if (v)
				sl_conf_apply_raw(v, r, &errs);
			else
				unknown_key_error(cfg, &errs, r);
			sl_conf_raw_release(r);
		} else {
			cfg->pending[j++] = *r;
		}
	}
	cfg->n_pending = j;
	if (errs.len) {
		*errors = sl_buf_detach(&errs);
		return SBXLOOP_EINVAL;
	}
	return 0;
}

int sl_config_finish(struct sl_config *cfg, char **errors)
{
	struct sl_buf errs = SL_BUF_INIT;
	size_t i;

	*errors = NULL;
	for (i = 0; i < cfg->n_pending; i++) {
		struct raw *r = &cfg->pending[i];
		char top[128], buf[128];
		size_t tl = strcspn(r->path, ".");
		const char *hint;

		snprintf(top, sizeof(top), "%.*s", (int)tl, r->path);
		/* report each unknown section once */
		if (i > 0 &&
		    strncmp(cfg->pending[i - 1].path, r->path, tl + 1) == 0)
			continue;
		hint = suggest(cfg, "", top, buf, sizeof(buf));
		if (hint)
			sl_conf_error(
				&errs,
				r->sect_origin ? r->sect_origin : r->origin,
				"unknown section '%s' (did you mean '%s'?)",
				top, hint);
		else
			sl_conf_error(
				&errs,
				r->sect_origin ? r->sect_origin : r->origin,
				"unknown section '%s': no core setting or "
				"loaded plugin component has that name",
				top);
	}
	if (errs.len) {
		*errors = sl_buf_detach(&errs);
		return SBXLOOP_EINVAL;
	}
	return 0;
}

void sl_config_free(struct sl_config *cfg)
{
	size_t i, j;

	if (!cfg)
		return;
	for (i = 0; i < cfg->n_values; i++)
		sl_conf_value_release(&cfg->values[i]);
	free(cfg->values);
	for (i = 0; i < cfg->n_owned; i++) {
		for (j = 0; cfg->owned_specs[i][j].path; j++)
			free((char *)cfg->owned_specs[i][j].path);
		free(cfg->owned_specs[i]);
	}
	for (i = 0; i < cfg->n_sections; i++)
		free(cfg->sections[i]);
	free(cfg->sections);
	for (i = 0; i < cfg->n_pending; i++)
		sl_conf_raw_release(&cfg->pending[i]);
	free(cfg->pending);
	free(cfg->project_file);
	free(cfg->cwd);
	free(cfg);
}

/* ---- the command-line layer ------------------------------------------- */

int sl_config_set(struct sl_config *cfg, const char *path, const char *value,
		  char **error)
{
	struct sl_config_value *v = sl_conf_find(cfg, path);
	struct sl_buf errs = SL_BUF_INIT;
	struct raw r;

	*error = NULL;
	if (!v) {
		*error = sl_xasprintf("unknown key '%s'", path);
		return SBXLOOP_EINVAL;
	}
	if (sl_conf_parse_inline(value, path, "command line", &r, &errs) ==
	    0) {
		r.source = SL_SRC_CLI;
		r.from_env = 1;
		sl_conf_apply_raw(v, &r, &errs);
		sl_conf_raw_release(&r);
	}
	if (strcmp(path, "state_dir") == 0)
		resolve_state_dir(cfg);
	if (errs.len) {
		*error = sl_buf_detach(&errs);
		return SBXLOOP_EINVAL;
	}
	return 0;
}
