// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzz target: the /proc text parsers of `offcpu record` (src/record/procfs.c)
 * and its number lists. The whole input goes through each parser: line by
 * line as /proc/PID/maps and /proc/kallsyms, whole as a status or stat
 * file, and its first line as a CPU or PID list.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *p, *nl;
	struct kernel_facts k = { 0 };
	struct int_list l = { 0 };
	uint64_t v;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	proc_status__field(text, size, "Tgid", 10, &v);
	proc_status__field(text, size, "CapEff", 16, &v);
	proc_stat__state(text);

	for (p = text; p < text + size; p = nl + 1) {
		struct proc_map m;

		nl = memchr(p, '\n', (size_t)(text + size - p));
		if (!nl)
			nl = text + size;
		*nl = '\0';
		if (!kernel_facts__line(&k, p, size & 1) && proc_maps__parse_line(p, &m)) {
			/* what synth_maps() writes: the file name must be a string */
			if (m.end < m.start || strlen(m.file) > size + 6)
				abort();
		}
	}

	/* the first line as a list, with and without ranges */
	memcpy(text, data, size);
	text[strcspn(text, "\n")] = '\0';
	int_list__parse(&l, text, true);
	int_list__free(&l);
	int_list__parse(&l, text, false);
	int_list__free(&l);
	free(text);
	return 0;
}
