/*
 * The summary printed after a run: its state, each task's, the duration,
 * the artifacts and where the work and any kept sandboxes are, and the
 * pull request a reporter delivered (or how to retry it). Called by
 * cmd_run.c through engine.h once the engine has returned.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "engine/egress_report.h"
#include "host/redact.h"
#include "common/util.h"

/* One line when the sandbox tried hosts no plan declared (best effort). */
static void egress_line(struct sl_engine *e, FILE *out)
{
	struct sbxloop_error err = {0, ""};
	cJSON *report = NULL;
	char *line;

	if (sl_egress_report(e->st, e->sctx, e->run_id, &report, &err) < 0)
		return;
	line = sl_egress_report_blocked_line(report);
	if (line)
		fprintf(out, "%s\n", line);
	free(line);
	cJSON_Delete(report);
}

void sl_engine_print_summary(struct sl_engine *e, FILE *dest)
{
	size_t i, len = 0;
	double secs = sl_monotonic() - e->started;
	char *text = NULL, *shown;
	/*
	 * Titles and file names are agent text: the summary is built here
	 * and shown with secrets masked and control characters escaped.
	 */
	FILE *out = open_memstream(&text, &len);

	if (!out) {
		fputs("fatal: out of memory\n", stderr);
		abort();
	}
	fprintf(out, "run %s finished: %s\n", e->run_id, e->state);
	for (i = 0; i < e->n_tasks; i++) {
		char *id = sl_shown(e->tasks[i].id, 0);
		char *title = sl_shown(e->tasks[i].title, 0);

		fprintf(out, "  %s: %s  (%s)\n", id,
			sl_task_state_name(&e->tasks[i]), title);
		free(id);
		free(title);
	}
	fprintf(out, "duration: %.1fs\n", secs);
	if (e->artifacts_dir && e->n_artifacts) {
		fprintf(out, "artifacts: %zu file(s) in %s (%s)\n",
			e->n_artifacts, e->artifacts_dir,
			e->info.mounted ? "live workspace" : "harvested");
		for (i = 0; i < e->n_artifact_files; i++) {
			char *name = sl_shown(e->artifact_files[i], 0);

			fprintf(out, "  %s\n", name);
			free(name);
		}
		if (e->n_artifacts > e->n_artifact_files)
			fprintf(out, "  ... +%zu more\n",
				e->n_artifacts - e->n_artifact_files);
		if (e->artifacts_note)
			fprintf(out, "  %s\n", e->artifacts_note);
	} else if (e->workspace) {
		fprintf(out, "artifacts: none produced (workspace: %s)\n",
			e->workspace);
	}
	if (e->workspace &&
	    (!e->artifacts_dir || strcmp(e->artifacts_dir, e->workspace) != 0))
		fprintf(out, "workspace: %s\n", e->workspace);
	if (e->fetch_cmd)
		fprintf(out, "bring the work back with: %s\n", e->fetch_cmd);
	if (e->kept_reason) {
		const char *names[SL_PAIR_LANES_MAX + 2];
		size_t n =
			sl_pair_names(e->pair, names, SL_PAIR_LANES_MAX + 2);

		fprintf(out, "kept sandbox%s: %s", n > 1 ? "es" : "",
			n ? names[0] : e->box_name);
		for (i = 1; i < n; i++)
			fprintf(out, ", %s", names[i]);
		fprintf(out,
			" (sbxloop shell %s; sbxloop sandbox rm --run %s)\n",
			e->run_id, e->run_id);
	}
	if (e->delivered_url)
		fprintf(out, "pull request: #%lld %s\n", e->delivered_number,
			e->delivered_url);
	if (e->delivery_error)
		fprintf(out,
			"delivery failed: %s\n  retry with: sbxloop deliver "
			"%s\n",
			e->delivery_error, e->run_id);
	egress_line(e, out);
	fprintf(out, "events: sbxloop logs %s\n", e->run_id);
	fclose(out);
	shown = sl_shown(text, SL_TERM_KEEP_NL);
	fputs(shown, dest);
	free(shown);
	free(text);
}
