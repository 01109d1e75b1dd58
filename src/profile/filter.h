/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The filters (--pid, --tid, --comm, --cpu, --time, --event) on resolved
 * samples. The session hands every sample to its consumer, which filters:
 * the off-wake join must see the samples a filter would drop (it filters
 * the joined one), --threads and script filter as they go.
 */
#ifndef OFFCPU_PROFILE_FILTER_H
#define OFFCPU_PROFILE_FILTER_H

#include <stdbool.h>

#include "profile/report_opts.h"
#include "session/session.h"

/* true when the sample passes --pid/--tid/--comm/--cpu/--time/--event */
bool report__match(const struct report_opts *o, const struct session *s, const struct rsample *rs);
/* true when the event passes --event */
bool report__event_match(const struct report_opts *o, const struct perf_evattr *a);
/* true when a filter other than --event is set */
bool report__filtered(const struct report_opts *o);

/*
 * Values of the filter options into o: 0, -EINVAL (not what the option
 * takes), or -ENOMEM. --pid, --tid and --cpu take util/idlist.h lists.
 * --comm NAME[,NAME...] adds up when repeated; --time START,END is in
 * seconds, either end may be empty.
 */
int report__filter_comms(struct report_opts *o, const char *arg);
int report__filter_time(struct report_opts *o, const char *arg);

#endif
