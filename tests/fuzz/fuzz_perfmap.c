// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzz target: the perf-PID.map parser (src/symbols/perfmap.c), then
 * lookups at the edges of the addresses written in the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/sym_internal.h"
#include "fuzz_common.h"

static void probe(void *ctx, uint64_t addr)
{
	const struct sym_entry *e = perfmap__find(ctx, addr);

	/* a hit contains the address and has a name that is a string */
	if (e && (addr - e->start >= e->size || !e->name || strlen(e->name) == (size_t)-1))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap *m = perfmap__parse((const char *)data, size);

	if (!m)
		return 0;
	fuzz_hex_probes(data, size, probe, m);
	probe(m, 0);
	probe(m, UINT64_MAX);
	perfmap__free(m);
	return 0;
}
