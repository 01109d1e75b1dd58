// SPDX-License-Identifier: GPL-2.0-only
/*
 * This process's vDSO image. Every process of one kernel (and ABI) maps
 * the same one, so the recorder copies it into its recordings and the
 * reader falls back on it, as perf does, for recordings that carry none.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "symbols/vdso.h"

int vdso__self(void **image, size_t *len)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR), lo, hi;
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int err = -ENOENT;

	*image = NULL;
	*len = 0;
	if (!base || !f) {
		if (f)
			fclose(f);
		return -ENOENT;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "[vdso]") || sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) != 2)
			continue;
		if (lo != base || hi <= lo || hi - lo > (1u << 20))
			break;
		*image = malloc(hi - lo);
		if (!*image) {
			err = -ENOMEM;
			break;
		}
		memcpy(*image, (const void *)(uintptr_t)lo, hi - lo);
		*len = hi - lo;
		err = 0;
		break;
	}
	fclose(f);
	return err;
}
