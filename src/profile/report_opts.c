// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>

#include "profile/filter.h"
#include "profile/report_opts.h"

void report_opts__init(struct report_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->input = "perf.data";
	o->children = -1;
	o->sort[0] = SK_COMM;
	o->sort[1] = SK_DSO;
	o->sort[2] = SK_SYM;
	o->nr_sort = 3;
	o->graph_min = 0.5;
	o->by = -1;
	o->limit = 30;
	o->chain_min_ns = -1;
	o->thread_sort = -1;
}

void report_opts__free(struct report_opts *o)
{
	report__filters_free(o);
}
