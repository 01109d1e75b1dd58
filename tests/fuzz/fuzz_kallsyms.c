// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzz target: the kallsyms parser (src/symbols/kallsyms.c), then lookups
 * at the edges of the addresses written in the input and of the image.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/sym_internal.h"
#include "fuzz_common.h"

static void probe(void *ctx, uint64_t addr)
{
	const struct sym_entry *e = ksyms__find(ctx, addr);

	/* a hit contains the address, its name is a string, its module "[...]" */
	if (e && (addr - e->start >= e->size || !e->name || strlen(e->name) == (size_t)-1 ||
		  (e->module && e->module[0] != '[')))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ksyms *k = ksyms__parse((const char *)data, size);

	if (!k)
		return 0;
	fuzz_hex_probes(data, size, probe, k);
	probe(k, 0);
	probe(k, UINT64_MAX);
	probe(k, ksyms__image_end(k) - 1);
	ksyms__free(k);
	return 0;
}
