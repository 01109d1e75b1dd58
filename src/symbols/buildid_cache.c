// SPDX-License-Identifier: GPL-2.0-only
/*
 * perf's build-id cache, read only: `perf record` keeps there a copy of
 * every file its samples hit, the vDSO and the kernel's kallsyms among
 * them, as DIR/NAME/HEX/FILE with a link DIR/.build-id/HE/X... to the
 * DIR/NAME/HEX directory (FILE is "elf", "vdso" or "kallsyms"). A
 * recording then stays readable after the files change or on another
 * machine.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "symbols/build_id.h"
#include "symbols/sym_internal.h"

char *buildid_cache__default_dir(void)
{
	const char *env = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
	char *dir = NULL;

	if (env && *env)
		return strdup(env);
	if (!home || !*home || asprintf(&dir, "%s/.debug", home) < 0)
		return NULL;
	return dir;
}

/* path when it names a regular file: 0 (*out owns it), -ENOENT (freed) or -ENOMEM. */
static int regular(char *path, char **out)
{
	struct stat st;

	if (!path)
		return -ENOMEM;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		*out = path;
		return 0;
	}
	free(path);
	return -ENOENT;
}

int buildid_cache__find(const char *dir, const char *name, const uint8_t *bid, size_t bsz,
			const char *file, char **out)
{
	char hex[2 * SYM_BUILD_ID_MAX + 1], *path;
	int err;

	*out = NULL;
	if (!dir || !*dir || !bsz || bsz > SYM_BUILD_ID_MAX)
		return -ENOENT;
	build_id__hex(bid, bsz, hex);
	if (asprintf(&path, "%s/.build-id/%.2s/%s/%s", dir, hex, hex + 2, file) < 0)
		path = NULL;
	err = regular(path, out);
	if (err != -ENOENT || !name)
		return err;
	if (asprintf(&path, "%s/%s%s/%s/%s", dir, name[0] == '/' ? "" : "/", name, hex, file) < 0)
		path = NULL;
	return regular(path, out);
}
