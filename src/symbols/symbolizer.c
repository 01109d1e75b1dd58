// SPDX-License-Identifier: GPL-2.0-only
/* Temporary stub: resolves nothing, so callers link. Replaced shortly. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/symbolizer.h"

struct sym_dso {
	char *path;
};

struct symbolizer {
	struct sym_dso dso;
};

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	(void)opts;
	return calloc(1, sizeof(struct symbolizer));
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	free(s->dso.path);
	free(s);
}

struct sym_dso *symbolizer__dso(struct symbolizer *s, const char *path,
				const uint8_t *build_id, size_t build_id_size)
{
	(void)build_id;
	(void)build_id_size;
	(void)path;
	return &s->dso;
}

const char *sym_dso__name(const struct sym_dso *d)
{
	return d && d->path ? d->path : "[unknown]";
}

const char *sym_dso__warning(const struct sym_dso *d)
{
	(void)d;
	return NULL;
}

int symbolizer__resolve(struct symbolizer *s, struct sym_dso *d, uint64_t map_start,
			uint64_t pgoff, uint64_t ip, struct sym_frame *frames, int max)
{
	(void)s; (void)d; (void)map_start; (void)pgoff; (void)ip; (void)frames; (void)max;
	return 0;
}

void symbolizer__set_kernel_text(struct symbolizer *s, uint64_t text_addr)
{
	(void)s; (void)text_addr;
}

int symbolizer__resolve_kernel(struct symbolizer *s, uint64_t ip, struct sym_frame *frame,
			       const char **module)
{
	(void)s; (void)ip;
	memset(frame, 0, sizeof(*frame));
	if (module)
		*module = "[kernel.kallsyms]";
	return 0;
}

int symbolizer__resolve_perfmap(struct symbolizer *s, int pid, uint64_t ip,
				struct sym_frame *frame)
{
	(void)s; (void)pid; (void)ip;
	memset(frame, 0, sizeof(*frame));
	return 0;
}
