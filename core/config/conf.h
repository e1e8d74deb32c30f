/*
 * The resolved configuration: every key of the schema (core keys and the
 * keys plugins declare for their own mappings) with its typed value and
 * where it came from. Loaded from YAML files and the environment.
 */
#ifndef SL_CONF_H
#define SL_CONF_H

#include <stdio.h>

#include <sbxloop/plugin.h>

enum sl_source {
	SL_SRC_DEFAULT = 0,
	SL_SRC_USER = 1,    /* $XDG_CONFIG_HOME/sbxloop/config.yaml */
	SL_SRC_PROJECT = 2, /* ./sbxloop.yaml or --config FILE */
	SL_SRC_ENV = 3,     /* SBXLOOP_SECTION__KEY */
	SL_SRC_CLI = 4      /* a command-line flag */
};

/* A schema entry. Core entries are static; plugin entries are added. */
struct sl_config_spec {
	const char *path; /* "budgets.max_tasks" */
	enum sbxloop_value_type type;
	const char *dflt;    /* textual default; NULL = unset */
	const char *choices; /* "a|b" or NULL */
	const char *help;
	/* extra check; returns NULL or a message (static or in buf) */
	const char *(*check)(const struct sl_config_spec *spec,
			     const char *value, char *buf, size_t buflen);
};

struct sl_config_value {
	const struct sl_config_spec *spec;
	char *str;    /* scalar text, NULL when unset */
	char **items; /* lists */
	size_t n_items;
	enum sl_source source;
	char *origin; /* "file:line:col", env var name, or NULL */
};

struct sl_config;

struct sl_config_opts {
	const char *config_file; /* --config; NULL = ./sbxloop.yaml */
	const char *cwd;         /* NULL = getcwd */
	int no_user_file;        /* skip the user file */
	int no_env;              /* skip SBXLOOP_* variables */
};

/*
 * Load and validate. On failure returns a negative code and `errors`
 * (caller frees) holds one message per line. Component mappings are kept
 * aside until sl_config_add_component() declares their keys and
 * sl_config_finish() checks for leftovers.
 */
int sl_config_load(struct sl_config **out, const struct sl_config_opts *o,
		   char **errors);
void sl_config_free(struct sl_config *cfg);

/* Declare a component's keys (its mapping is named `section`). */
int sl_config_add_component(struct sl_config *cfg, const char *section,
			    const struct sbxloop_config_key *keys,
			    char **errors);
/* Report mappings no core section or component claimed. */
int sl_config_finish(struct sl_config *cfg, char **errors);

const struct sl_config_value *sl_config_get(const struct sl_config *cfg,
					    const char *path);
const char *sl_config_str(const struct sl_config *cfg, const char *path);
long long sl_config_int(const struct sl_config *cfg, const char *path,
			long long dflt);
double sl_config_double(const struct sl_config *cfg, const char *path,
			double dflt);
int sl_config_bool(const struct sl_config *cfg, const char *path, int dflt);
size_t sl_config_list_len(const struct sl_config *cfg, const char *path);
const char *sl_config_list_item(const struct sl_config *cfg, const char *path,
				size_t i);
/* Override a key from a command-line flag; validated like the others. */
int sl_config_set(struct sl_config *cfg, const char *path, const char *value,
		  char **error);

/* Iterate every value in schema order. */
size_t sl_config_count(const struct sl_config *cfg);
const struct sl_config_value *sl_config_at(const struct sl_config *cfg,
					   size_t i);
const char *sl_source_name(enum sl_source src);
/* The file the project layer came from, or NULL. */
const char *sl_config_project_file(const struct sl_config *cfg);

/* Write a fully commented starter file covering every known key. */
void sl_config_write_starter(const struct sl_config *cfg, FILE *out);
/* Render a value as YAML (scalar or flow list), caller frees. */
char *sl_config_value_yaml(const struct sl_config_value *v);
/* The whole config as a JSON object text {"a.b": value}, caller frees. */
char *sl_config_to_json(const struct sl_config *cfg);

/* Load ./.env into the environment without overriding; 0 or -errno. */
int sl_dotenv_load(const char *path, char **error);

/*
 * Whether `name` is an SBXLOOP_ variable sbxloop, its worker or its test
 * harness read themselves (SBXLOOP_PLUGIN_PATH, ...), not a config key.
 * Every other SBXLOOP_ variable must name a key.
 */
int sl_tool_variable(const char *name);

/* The core schema. */
extern const struct sl_config_spec sl_core_schema[];
extern const size_t sl_core_schema_len;

#endif
