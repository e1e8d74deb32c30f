/*
 * The resolved configuration: every key of the schema (core keys and the
 * keys plugins declare for their own mappings) with its typed value and
 * where it came from. Loaded from YAML files and the environment.
 */
#ifndef SBX_CONF_H
#define SBX_CONF_H

#include <stdio.h>

#include <sbxloop/plugin.h>

enum sbx_source {
	SBX_SRC_DEFAULT = 0,
	SBX_SRC_USER = 1,    /* $XDG_CONFIG_HOME/sbxloop/config.yaml */
	SBX_SRC_PROJECT = 2, /* ./sbxloop.yaml or --config FILE */
	SBX_SRC_ENV = 3,     /* SBXLOOP_SECTION__KEY */
	SBX_SRC_CLI = 4      /* a command-line flag */
};

/* A schema entry. Core entries are static; plugin entries are added. */
struct sbx_config_spec {
	const char *path; /* "budgets.max_tasks" */
	enum sbxloop_value_type type;
	const char *dflt;    /* textual default; NULL = unset */
	const char *choices; /* "a|b" or NULL */
	const char *help;
	/* extra check; returns NULL or a message (static or in buf) */
	const char *(*check)(const struct sbx_config_spec *spec,
			     const char *value, char *buf, size_t buflen);
};

struct sbx_config_value {
	const struct sbx_config_spec *spec;
	char *str;    /* scalar text, NULL when unset */
	char **items; /* lists */
	size_t n_items;
	enum sbx_source source;
	char *origin; /* "file:line:col", env var name, or NULL */
};

struct sbx_config;

struct sbx_config_opts {
	const char *config_file; /* --config; NULL = ./sbxloop.yaml */
	const char *cwd;         /* NULL = getcwd */
	int no_user_file;        /* skip the user file */
	int no_env;              /* skip SBXLOOP_* variables */
};

/*
 * Load and validate. On failure returns a negative code and `errors`
 * (caller frees) holds one message per line. Component mappings are kept
 * aside until sbx_config_add_component() declares their keys and
 * sbx_config_finish() checks for leftovers.
 */
int sbx_config_load(struct sbx_config **out, const struct sbx_config_opts *o,
		    char **errors);
void sbx_config_free(struct sbx_config *cfg);

/* Declare a component's keys (its mapping is named `section`). */
int sbx_config_add_component(struct sbx_config *cfg, const char *section,
			     const struct sbxloop_config_key *keys,
			     char **errors);
/* Report mappings no core section or component claimed. */
int sbx_config_finish(struct sbx_config *cfg, char **errors);

const struct sbx_config_value *sbx_config_get(const struct sbx_config *cfg,
					      const char *path);
const char *sbx_config_str(const struct sbx_config *cfg, const char *path);
long long sbx_config_int(const struct sbx_config *cfg, const char *path,
			 long long dflt);
double sbx_config_double(const struct sbx_config *cfg, const char *path,
			 double dflt);
int sbx_config_bool(const struct sbx_config *cfg, const char *path, int dflt);
size_t sbx_config_list_len(const struct sbx_config *cfg, const char *path);
const char *sbx_config_list_item(const struct sbx_config *cfg,
				 const char *path, size_t i);
/* Override a key from a command-line flag; validated like the others. */
int sbx_config_set(struct sbx_config *cfg, const char *path, const char *value,
		   char **error);

/* Iterate every value in schema order. */
size_t sbx_config_count(const struct sbx_config *cfg);
const struct sbx_config_value *sbx_config_at(const struct sbx_config *cfg,
					     size_t i);
const char *sbx_source_name(enum sbx_source src);
/* The file the project layer came from, or NULL. */
const char *sbx_config_project_file(const struct sbx_config *cfg);

/* Write a fully commented starter file covering every known key. */
void sbx_config_write_starter(const struct sbx_config *cfg, FILE *out);
/* Render a value as YAML (scalar or flow list), caller frees. */
char *sbx_config_value_yaml(const struct sbx_config_value *v);
/* The whole config as a JSON object text {"a.b": value}, caller frees. */
char *sbx_config_to_json(const struct sbx_config *cfg);

/* Load ./.env into the environment without overriding; 0 or -errno. */
int sbx_dotenv_load(const char *path, char **error);

/*
 * Whether `name` is an SBXLOOP_ variable sbxloop, its worker or its test
 * harness read themselves (SBXLOOP_PLUGIN_PATH, ...), not a config key.
 * Every other SBXLOOP_ variable must name a key.
 */
int sbx_tool_variable(const char *name);

/* The core schema. */
extern const struct sbx_config_spec sbx_core_schema[];
extern const size_t sbx_core_schema_len;

#endif
