// SPDX-License-Identifier: GPL-2.0-only
/*
 * `offcpu report` text output, laid out like `perf report --stdio`: one
 * section per event, entries keyed by the --sort keys with Children/Self
 * percentages, and optionally the call graph under each entry.
 *
 * Entries are built from the profile's distinct stacks (not samples): the
 * self entry of a stack is keyed on its innermost frame; in children mode
 * every distinct key along the stack also gains the stack's period once.
 *
 * Self (--no-children) is the default, unlike perf's: the first screen of a
 * report should say where the time went. In an off-CPU section the
 * innermost frame is where a thread blocked (the scheduler's frames are
 * trimmed), so every entry is a blocking point (do_nanosleep,
 * futex_do_wait, ep_poll), and its call graph (callee order) goes out from
 * there to the program's own functions. With children, the frames every
 * stack passes through lead: a whole-machine recording of pgbench began
 * with entry_SYSCALL_64_after_hwframe and do_syscall_64 at 37.7 %, then
 * start_thread and main, and its blocking points were screens further
 * down. --children gives perf's view.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/outputs.h"
#include "output/report.h"
#include "profile/callgraph.h"
#include "util/hash.h"
#include "util/hex.h"
#include "util/htab.h"
#include "util/psort.h"
#include "util/vec.h"

struct entry {
	uint32_t comm, pid, tid;
	const char *dso;
	uint32_t sym; /* frame id, CG_NONE when the stack is empty */
	char state;
	uint64_t cgroup;
	uint64_t self, self_samples, children, children_samples;
	uint32_t root; /* its call graph's node in rep.cg (CG_NONE: none) */
	uint32_t textlen; /* bytes of its columns' text, their NULs counted */
	size_t text;      /* its columns' text in rep.text, one string each */
};

struct rep {
	const struct session *s;
	const struct profile *p;
	const struct report_opts *o;
	bool children;
	unsigned int mask; /* 1 << sort key */
	struct htab ents;  /* struct entry, by key */
	FILE *f;
	uint64_t total;
	int event;
	/*
	 * The call graphs of the shown entries, one tree: each entry's is the
	 * subtree of a node of its own under the root (one array of nodes,
	 * not thousands of small ones growing side by side).
	 */
	struct callgraph *cg;
	/*
	 * Every entry's columns (entry.text), made once for the sort, which
	 * compares each many times, and kept for the widths and the rows.
	 */
	char *text;
};

static void make_key(const struct rep *r, const struct pstack *st, const uint32_t *fr, int i,
		     struct entry *k)
{
	const struct frame *f = i >= 0 ? session__frame(r->s, fr[i]) : NULL;

	memset(k, 0, sizeof(*k));
	k->sym = CG_NONE;
	k->root = CG_NONE;
	if (r->mask & (1u << SK_COMM))
		k->comm = st->comm;
	if (r->mask & (1u << SK_PID))
		k->pid = st->pid;
	if (r->mask & (1u << SK_TID))
		k->tid = st->tid, k->pid = st->pid;
	if (r->mask & (1u << SK_DSO))
		k->dso = f ? f->dso : NULL;
	if (r->mask & (1u << SK_SYM))
		k->sym = f ? fr[i] : CG_NONE;
	if (r->mask & (1u << SK_STATE))
		k->state = st->state;
	if (r->mask & (1u << SK_CGROUP))
		k->cgroup = st->cgroup;
}

static bool key_eq(const struct entry *a, const struct entry *b)
{
	return a->comm == b->comm && a->pid == b->pid && a->tid == b->tid && a->dso == b->dso &&
	       a->sym == b->sym && a->state == b->state && a->cgroup == b->cgroup;
}

static uint64_t key_hash(const void *entry)
{
	const struct entry *k = entry;

	return hash__mix(((uint64_t)k->comm << 32 | k->sym) ^ hash__mix((uintptr_t)k->dso) ^
			 hash__mix(((uint64_t)k->pid << 32 | k->tid) + (uint8_t)k->state) ^
			 hash__mix(k->cgroup + 1));
}

static bool ent_eq(const void *entry, const void *key)
{
	return key_eq(entry, key);
}

static struct entry *ent_at(const struct rep *r, size_t i)
{
	return htab__at(&r->ents, i);
}

/* The entry for key k, made empty on first sight with create; NULL otherwise, or on ENOMEM. */
static struct entry *entry_get(struct rep *r, const struct entry *k, bool create)
{
	struct entry *e;
	bool added;

	if (!create)
		return htab__find(&r->ents, key_hash(k), ent_eq, k);
	e = htab__get(&r->ents, key_hash(k), ent_eq, k, &added);
	if (e && added)
		*e = *k;
	return e;
}

/*
 * Walk the event's stacks: with graphs=false accumulate entry values; with
 * graphs=true add each stack's path to the graph of its entries that have
 * one (the displayed ones).
 */
static int walk(struct rep *r, bool graphs, bool caller)
{
	struct entry keys[64];

	for (size_t si = 0; si < profile__nr_stacks(r->p); si++) {
		const struct pstack *st = profile__stack(r->p, si);
		const uint32_t *fr = profile__frames(r->p, st);
		struct entry k, *e;
		int nk = 0;

		if ((int)st->event != r->event)
			continue;
		make_key(r, st, fr, st->nr ? 0 : -1, &k);
		e = entry_get(r, &k, !graphs);
		if (!e) {
			if (!graphs)
				return -ENOMEM;
		} else if (!graphs) {
			e->self += st->period;
			e->self_samples += st->samples;
			if (!r->children || !st->nr) {
				e->children += st->period;
				e->children_samples += st->samples;
			}
		} else if (e->root != CG_NONE && !r->children && st->nr) {
			/* no-children: callee walks out from the leaf, caller comes down to it */
			uint32_t n = caller ? callgraph__add_reversed(r->cg, e->root, fr, st->nr, 0, st->samples, st->period)
					    : callgraph__add(r->cg, e->root, fr, st->nr, 0, st->samples, st->period);
			if (n == CG_NONE)
				return -ENOMEM;
		}
		if (!r->children)
			continue;
		for (uint32_t i = 0; i < st->nr; i++) {
			bool seen = false;

			make_key(r, st, fr, i, &k);
			for (int j = 0; j < nk && !seen; j++)
				seen = key_eq(&keys[j], &k);
			if (seen)
				continue;
			if (nk < (int)(sizeof(keys) / sizeof(keys[0])))
				keys[nk++] = k;
			e = entry_get(r, &k, !graphs);
			if (!e) {
				if (!graphs)
					return -ENOMEM;
				continue;
			}
			if (!graphs) {
				e->children += st->period;
				e->children_samples += st->samples;
			} else if (e->root != CG_NONE) {
				/*
				 * As perf: the leaf's own entry shows the whole chain; a caller's
				 * entry shows from it down to the leaf (caller order) or up to
				 * the root (callee order).
				 */
				uint32_t m = i == 0 ? st->nr : i + 1;
				uint32_t n = caller ? callgraph__add_reversed(r->cg, e->root, fr, m, 0, st->samples, st->period)
						    : callgraph__add(r->cg, e->root, fr + i, st->nr - i, 0, st->samples, st->period);
				if (n == CG_NONE)
					return -ENOMEM;
			}
		}
	}
	return 0;
}

/*
 * A frame's name in the report: its symbol; else its DSO, as the folded
 * and flame graph outputs name it, with the address in it (each address
 * is an entry of its own: "[postgres]+0x47259d"); a kernel address, or
 * one in no known DSO, as perf shows it.
 */
static const char *sym_name(const struct frame *f, char *buf, size_t len)
{
	char dso[256], t[256 + 32];
	const char *name;
	size_t n = 0, l;

	if (f->sym)
		return f->sym;
	/* snprintf's "0x%016" PRIx64 or "%s+0x%" PRIx64, written out: a report has thousands */
	if (!f->kernel && strcmp(f->dso, "[unknown]")) {
		name = frame__name(f, dso, sizeof(dso));
		l = strnlen(name, sizeof(dso) - 1);
		memcpy(t, name, l);
		t[l] = '+';
		n = l + 1;
	}
	t[n++] = '0';
	t[n++] = 'x';
	n += hex_put(t + n, f->addr, n == 2 ? 16 : 1);
	if (n >= len)
		n = len - 1;
	memcpy(buf, t, n);
	buf[n] = 0;
	return buf;
}

/* Text of one sort column of an entry. */
static const char *col(const struct rep *r, const struct entry *e, enum sort_key k, char *buf,
		       size_t len)
{
	const struct frame *f = e->sym != CG_NONE ? session__frame(r->s, e->sym) : NULL;
	char tmp[256];

	switch (k) {
	case SK_COMM:
		return session__comm(r->s, e->comm);
	case SK_PID:
		snprintf(buf, len, "%7d", (int32_t)e->pid);
		return buf;
	case SK_TID:
		snprintf(buf, len, "%7d/%-7d", (int32_t)e->pid, (int32_t)e->tid);
		return buf;
	case SK_DSO:
		if (!e->dso)
			return "[unknown]";
		if (r->o->verbose)
			return e->dso;
		{
			const char *sl = strrchr(e->dso, '/');
			return sl && sl[1] ? sl + 1 : e->dso;
		}
	case SK_SYM:
		if (!f)
			return "[.] [unknown]";
		{ /* "[%c] %s" */
			const char *name = sym_name(f, tmp, sizeof(tmp));
			size_t l = strlen(name);

			if (l > len - 5)
				l = len - 5;
			memcpy(buf, f->kernel ? "[k] " : "[.] ", 4);
			memcpy(buf + 4, name, l);
			buf[4 + l] = 0;
		}
		if (f->srcfile) {
			size_t l = strlen(buf);
			snprintf(buf + l, len - l, " %s:%u", f->srcfile, f->line);
		}
		return buf;
	case SK_STATE:
		buf[0] = e->state ? e->state : '-';
		buf[1] = 0;
		return buf;
	case SK_CGROUP:
		if (!e->cgroup)
			return "-";
		snprintf(buf, len, "%" PRIu64, e->cgroup);
		return buf;
	default:
		return "";
	}
}

/*
 * The keys' text compared column by column, as strcmp on each: one memcmp
 * of the NUL-separated columns orders them the same (a shorter column
 * ends with a NUL where the longer goes on), and two texts equal over the
 * shorter's length are the same text (both end with their last column's
 * NUL).
 */
static int cmp_keys(const struct entry *x, const struct entry *y, const struct rep *r)
{
	uint32_t n = x->textlen < y->textlen ? x->textlen : y->textlen;

	return memcmp(r->text + x->text, r->text + y->text, n);
}

/* perf's output order: the shown value, then the other, then the keys' text. */
static int cmp_entries(const void *a, const void *b, void *ctx)
{
	const struct entry *x = a, *y = b;
	const struct rep *r = ctx;
	uint64_t vx = r->children ? x->children : x->self, vy = r->children ? y->children : y->self;

	if (vx != vy)
		return vx > vy ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return cmp_keys(x, y, r);
}

static const char *const col_titles[SK_MAX] = {
	[SK_COMM] = "Command", [SK_PID] = "    Pid", [SK_TID] = "    Pid/Tid", [SK_DSO] = "Shared Object",
	[SK_SYM] = "Symbol", [SK_STATE] = "State", [SK_CGROUP] = "Cgroup",
};

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * v / total : 0.0;
}

static void graph_name(const struct rep *r, uint32_t frame, char *buf, size_t len)
{
	const struct frame *f = session__frame(r->s, frame);
	char tmp[256];

	if (!f) {
		snprintf(buf, len, "[unknown]");
		return;
	}
	if (f->srcfile)
		snprintf(buf, len, "%s %s:%u", sym_name(f, tmp, sizeof(tmp)), f->srcfile, f->line);
	else
		snprintf(buf, len, "%s%s", sym_name(f, tmp, sizeof(tmp)), f->inlined ? " (inlined)" : "");
}

/* c or the first of its later siblings shown (-g's minimum), else CG_NONE. */
static uint32_t shown_from(const struct rep *r, const struct callgraph *cg, uint32_t c)
{
	for (; c != CG_NONE; c = callgraph__node(cg, c)->next_sibling)
		if (pct(callgraph__value(cg, c, 0)->total, r->total) >= r->o->graph_min)
			return c;
	return CG_NONE;
}

/*
 * perf's graph layout: single-child chains straight down, branches with
 * |--x%--; at most 4096 children of a node shown. A chain goes down in a
 * loop and only a branch recurses: a frame of this function per level
 * of a deep chain (a buffer of 4096 children each, as it had) was
 * megabytes of stack touched for the first time, page by page.
 */
static void print_chain(const struct rep *r, const struct callgraph *cg, uint32_t node,
			char *prefix, size_t plen, size_t pcap)
{
	char name[512];
	uint32_t c, next;
	size_t nv = 0;

	for (;;) {
		c = shown_from(r, cg, callgraph__node(cg, node)->first_child);
		if (c == CG_NONE)
			return;
		if (shown_from(r, cg, callgraph__node(cg, c)->next_sibling) != CG_NONE ||
		    callgraph__value(cg, c, 0)->total != callgraph__value(cg, node, 0)->total)
			break;
		graph_name(r, callgraph__node(cg, c)->frame, name, sizeof(name));
		fwrite(prefix, 1, plen, r->f); /* "%.*s%s\n" */
		fputs(name, r->f);
		fputc('\n', r->f);
		node = c;
	}
	for (; c != CG_NONE && nv < 4096; c = next, nv++) {
		bool last;
		char pc[32];

		next = shown_from(r, cg, callgraph__node(cg, c)->next_sibling);
		last = next == CG_NONE || nv + 1 == 4096;
		graph_name(r, callgraph__node(cg, c)->frame, name, sizeof(name));
		report__fmt_fixed2(pc, sizeof(pc), pct(callgraph__value(cg, c, 0)->total, r->total), 0);
		/* "%.*s|          \n" then "%.*s%s%.2f%%--%s\n" */
		fwrite(prefix, 1, plen, r->f);
		fputs("|          \n", r->f);
		fwrite(prefix, 1, plen, r->f);
		fputs(last ? " --" : "|--", r->f);
		fputs(pc, r->f);
		fputs("%--", r->f);
		fputs(name, r->f);
		fputc('\n', r->f);
		if (plen + 11 < pcap) {
			memcpy(prefix + plen, last ? "           " : "|          ", 11);
			print_chain(r, cg, c, prefix, plen + 11, pcap);
		}
	}
}

/* The call graph of the entry whose node is root. */
static int print_graph(const struct rep *r, uint32_t root)
{
	const struct callgraph *cg = r->cg;
	uint32_t top = callgraph__node(cg, root)->first_child;
	char name[512];
	char *prefix;
	size_t cap = 16384;

	if (top == CG_NONE || pct(callgraph__value(cg, root, 0)->total, r->total) < r->o->graph_min)
		return 0;
	prefix = malloc(cap);
	if (!prefix)
		return -ENOMEM;
	memset(prefix, ' ', 15);
	if (callgraph__node(cg, top)->next_sibling == CG_NONE) {
		graph_name(r, callgraph__node(cg, top)->frame, name, sizeof(name));
		fprintf(r->f, "            |\n            ---%s\n", name);
		print_chain(r, cg, top, prefix, 15, cap);
	} else {
		/* several outermost frames: branch right from the entry */
		print_chain(r, cg, root, prefix, 12, cap);
	}
	fputc('\n', r->f);
	free(prefix);
	return 0;
}

/* Each entry's columns as the sort compares them and the rows show them, once: 0 or -ENOMEM. */
static int sort_texts(struct rep *r, size_t n)
{
	char buf[1024];
	size_t len = 0, cap = 0;

	for (size_t i = 0; i < n; i++) {
		struct entry *e = ent_at(r, i);

		e->text = len;
		for (int k = 0; k < r->o->nr_sort; k++) {
			const char *t = col(r, e, r->o->sort[k], buf, sizeof(buf));
			size_t l = strlen(t) + 1;

			if (vec__reserve((void **)&r->text, &cap, len + l, 1, 1 << 16)) {
				free(r->text);
				r->text = NULL;
				return -ENOMEM;
			}
			memcpy(r->text + len, t, l);
			len += l;
		}
		e->textlen = (uint32_t)(len - e->text);
	}
	return 0;
}

/*
 * The entries of event r->event, sorted as shown; those above
 * --percent-limit (*shown of them) indexed for the graph walk, and the
 * width of each sort column among them.
 */
static int make_entries(struct rep *r, bool caller, size_t *shown, size_t width[SK_MAX])
{
	const struct report_opts *o = r->o;
	size_t n;
	int err;

	htab__clear(&r->ents);
	err = walk(r, false, caller);
	if (err)
		return err;
	n = htab__n(&r->ents);
	err = sort_texts(r, n);
	if (err)
		return err;
	psort(r->ents.v, n, sizeof(struct entry), cmp_entries, r);
	for (*shown = 0; *shown < n; ++*shown) {
		const struct entry *e = ent_at(r, *shown);
		uint64_t v = r->children ? e->children : e->self;
		const char *t = r->text + e->text;

		if (o->percent_limit > 0 && pct(v, r->total) < o->percent_limit)
			break;
		for (int k = 0; k < o->nr_sort; k++) {
			size_t l = strlen(t);

			if (l > width[k])
				width[k] = l;
			t += l + 1;
		}
	}
	return htab__reindex(&r->ents, *shown, key_hash); /* sorted: index again */
}

/* The call graph of each shown entry. */
static int make_graphs(struct rep *r, bool caller, size_t shown)
{
	int err;

	r->cg = callgraph__new(1);
	if (!r->cg)
		return -ENOMEM;
	for (size_t i = 0; i < shown; i++) {
		struct entry *e = ent_at(r, i);
		uint32_t key = (uint32_t)i; /* the root's children are the entries' nodes */

		/*
		 * An entry's graph holds at most its own value (the stacks with
		 * frames of it): below -g's minimum it is not printed, nor made.
		 */
		if (pct(r->children ? e->children : e->self, r->total) < r->o->graph_min)
			continue;
		e->root = callgraph__add(r->cg, CG_ROOT, &key, 1, 0, 0, 0);
		if (e->root == CG_NONE)
			return -ENOMEM;
	}
	err = walk(r, true, caller);
	return err ? err : callgraph__sort(r->cg, 0);
}

/* The event's header lines and the column titles, perf's way. */
static void print_titles(struct rep *r, const struct perf_evattr *a,
			 const struct profile_event *pe, bool offcpu, size_t width[SK_MAX])
{
	const struct report_opts *o = r->o;
	char tbuf[32];

	for (int k = 0; k < o->nr_sort; k++)
		if (strlen(col_titles[o->sort[k]]) > width[k])
			width[k] = strlen(col_titles[o->sort[k]]);
	if (o->quiet)
		return;
	fprintf(r->f, "# Samples: %" PRIu64 " of event '%s'\n", pe->samples, a->name);
	if (profile__attr_from(r->p, r->event))
		fprintf(r->f, "# Derived from %s\n", profile__attr_from(r->p, r->event));
	fprintf(r->f, "# Event count (approx.): %" PRIu64, pe->period);
	if (offcpu) {
		report__fmt_ns(tbuf, sizeof(tbuf), pe->period);
		fprintf(r->f, " (%s %s)", tbuf,
			a->is_sched_delay ? "run-queue delay" :
			a->is_wakeup	  ? "off-CPU, by the wakers' stacks" : "off-CPU");
	}
	fprintf(r->f, "\n#\n#");
	if (r->children)
		fprintf(r->f, " Children      Self");
	else
		fprintf(r->f, " Overhead");
	if (o->show_nr)
		fprintf(r->f, "     Samples");
	if (offcpu)
		fprintf(r->f, "        Time");
	for (int k = 0; k < o->nr_sort; k++)
		fprintf(r->f, "  %-*s", k + 1 < o->nr_sort ? (int)width[k] : 0, col_titles[o->sort[k]]);
	fprintf(r->f, "\n#");
	fprintf(r->f, r->children ? " ........  ........" : " ........");
	if (o->show_nr)
		fprintf(r->f, "  ..........");
	if (offcpu)
		fprintf(r->f, "  ..........");
	for (int k = 0; k < o->nr_sort; k++) {
		fprintf(r->f, "  ");
		for (size_t j = 0; j < width[k]; j++)
			fputc('.', r->f);
	}
	fprintf(r->f, "\n#\n");
}

/*
 * One line per shown entry, its call graph below it. A line is made in a
 * buffer and written at once: a report prints tens of thousands of them,
 * and printf's percentages and padding took most of the time after the
 * walk.
 */
static int print_rows(struct rep *r, size_t shown, bool offcpu, bool graphs,
		      const size_t width[SK_MAX])
{
	const struct report_opts *o = r->o;
	size_t room = 96, cap = 0;
	char tbuf[32], *line = NULL;
	int err = 0;

	for (int k = 0; k < o->nr_sort; k++)
		room += width[k] + 2;
	for (size_t i = 0; i < shown && !err; i++) {
		const struct entry *e = ent_at(r, i);
		const char *t = r->text + e->text;
		size_t n = 0;

		if (vec__reserve((void **)&line, &cap, room + e->textlen, 1, 256)) {
			err = -ENOMEM;
			break;
		}
		if (r->children) {
			memcpy(line, "  ", 2);
			n = 2 + report__fmt_fixed2(line + 2, cap - 2, pct(e->children, r->total), 7);
			line[n++] = '%';
		}
		memcpy(line + n, "  ", 2);
		n += 2 + report__fmt_fixed2(line + n + 2, cap - n - 2, pct(e->self, r->total), 7);
		line[n++] = '%';
		if (o->show_nr) /* as perf's: the entry's own samples */
			n += (size_t)snprintf(line + n, cap - n, "  %10" PRIu64, e->self_samples);
		if (offcpu) {
			report__fmt_ns(tbuf, sizeof(tbuf), r->children ? e->children : e->self);
			n += (size_t)snprintf(line + n, cap - n, "  %10s", tbuf);
		}
		for (int k = 0; k < o->nr_sort; k++) {
			size_t l = strlen(t);

			/* "  %-*s", the last column unpadded */
			memcpy(line + n, "  ", 2);
			memcpy(line + n + 2, t, l);
			n += 2 + l;
			if (k + 1 < o->nr_sort && l < width[k]) {
				memset(line + n, ' ', width[k] - l);
				n += width[k] - l;
			}
			t += l + 1;
		}
		line[n++] = '\n';
		fwrite(line, 1, n, r->f);
		if (graphs && e->root != CG_NONE)
			err = print_graph(r, e->root);
	}
	free(line);
	return err;
}

static void free_graphs(struct rep *r)
{
	for (size_t i = 0; i < htab__n(&r->ents); i++)
		ent_at(r, i)->root = CG_NONE;
	callgraph__free(r->cg);
	r->cg = NULL;
}

static int print_event(struct rep *r, int ev)
{
	const struct perf_evattr *a = profile__attr(r->p, r->s, ev);
	const struct profile_event *pe = profile__event(r->p, ev);
	const struct report_opts *o = r->o;
	size_t shown = 0, width[SK_MAX] = { 0 };
	bool graphs = (a->attr.sample_type & PERF_SAMPLE_CALLCHAIN) && o->graph != GRAPH_NONE;
	bool caller = o->graph == GRAPH_CALLER || (o->graph == GRAPH_DEFAULT && r->children);
	bool offcpu = a->is_offcpu || a->is_wakeup || a->is_sched_delay; /* a Time column */
	int err;

	r->event = ev;
	r->total = pe->period;
	err = make_entries(r, caller, &shown, width);
	if (!err && graphs)
		err = make_graphs(r, caller, shown);
	if (!err) {
		print_titles(r, a, pe, offcpu, width);
		err = print_rows(r, shown, offcpu, graphs, width);
		fprintf(r->f, o->quiet ? "\n" : "\n\n");
	}
	free_graphs(r);
	free(r->text);
	r->text = NULL;
	return err;
}

/* Whether the file has off-CPU samples (perf's --off-cpu or offcpu's). */
static bool has_offcpu(const struct perf_reader *rd)
{
	for (int i = 0; i < perf_reader__nr_attrs(rd); i++)
		if (perf_reader__attr(rd, i)->is_offcpu)
			return true;
	return false;
}

/*
 * What the file says was lost, on one line. "nothing lost" only when the
 * file is whole and its counters say so: offcpu's loss counters (its
 * drop.* counters and perf's LOST records), or for perf's own files of CPU
 * samples its LOST records. "unknown" when the file is not whole (the
 * counters come at its end: a recorder killed, a file cut off) or has no
 * counters for its off-CPU samples (perf --off-cpu keeps none for the
 * waits its BPF program sums). Every counter with --header.
 */
static void print_lost(FILE *f, const struct perf_reader *rd)
{
	uint64_t lost = perf_reader__lost(rd), val;
	bool whole_records, counters = perf_reader__nr_offcpu_counters(rd) > 0;
	const char *name, *cut = perf_reader__incomplete(rd, &whole_records);
	char list[1024] = "";
	size_t at = 0;

	if (lost)
		at += snprintf(list + at, sizeof(list) - at, "%" PRIu64 " samples (perf's LOST records)", lost);
	for (int i = 0; perf_reader__offcpu_counter(rd, i, &name, &val) && at < sizeof(list); i++)
		if (!strncmp(name, "drop.", 5) && val)
			at += snprintf(list + at, sizeof(list) - at, "%s%s %" PRIu64, at ? ", " : "", name, val);
	/*
	 * Only features are missing, every record is there: offcpu's counters
	 * (read, ahead of the cut) or, in perf's files of CPU samples, its LOST
	 * records still count.
	 */
	if (cut && whole_records && (counters || !has_offcpu(rd)))
		cut = NULL;
	if (cut)
		fprintf(f, "# lost: unknown: %s%s%s\n", cut, list[0] ? "; before the cut: " : "", list);
	else if (!counters && has_offcpu(rd))
		fprintf(f, "# lost: unknown for off-CPU samples (the file has no loss counters)%s%s\n",
			list[0] ? "; " : "", list);
	else if (list[0])
		fprintf(f, "# lost: %s (--header: every counter)\n", list);
	else
		fprintf(f, "# nothing lost\n");
}

static void print_header(FILE *f, const struct session *s, const struct report_opts *o)
{
	const struct perf_reader *rd = session__reader(s);
	bool full = o->header != HEADER_SHORT || o->verbose;
	uint64_t first, last, val;
	const char *name;

	fprintf(f, "# offcpu report of %s\n#\n", o->input);
	if (full)
		fprintf(f, "# Total Lost Samples: %" PRIu64 "\n", perf_reader__lost(rd));
	if (report__window(s, &first, &last)) {
		char tbuf[32];
		report__fmt_ns(tbuf, sizeof(tbuf), last - first);
		fprintf(f, "# Sample duration: %s\n", tbuf);
	}
	if (perf_reader__incomplete(rd, NULL))
		fprintf(f, "# WARNING: %s; this report covers the whole records it holds\n",
			perf_reader__incomplete(rd, NULL));
	print_lost(f, rd);
	for (int i = 0; full && perf_reader__offcpu_counter(rd, i, &name, &val); i++)
		fprintf(f, "# offcpu %s: %" PRIu64 "%s\n", name, val,
			!strncmp(name, "drop.", 5) && val ? "  (samples lost)" : "");
	fprintf(f, "#\n");
}

/* The order of the sections: off-CPU time first, then run-queue delay, wakers, the rest. */
static int section_rank(const struct perf_evattr *a)
{
	return a->is_offcpu ? 0 : a->is_sched_delay ? 1 : a->is_wakeup ? 2 : 3;
}

int report_stdio__print(FILE *f, const struct session *s, const struct profile *p,
			const struct report_opts *o)
{
	struct rep r = { .s = s, .p = p, .o = o, .f = f };
	int err = 0, shown = 0;

	for (int ev = 0; ev < profile__nr_events(p); ev++)
		shown += profile__event(p, ev)->samples && report__event_match(o, profile__attr(p, s, ev));
	if (!shown && o->header != HEADER_ONLY)
		return -ENODATA;
	htab__init(&r.ents, sizeof(struct entry));
	htab__huge_from(&r.ents, HTAB_HUGE_OUTPUT); /* filled in one go per event */
	for (int k = 0; k < o->nr_sort; k++)
		r.mask |= 1u << o->sort[k];
	r.children = o->children > 0; /* self by default: see the top of this file */
	if (!o->quiet)
		print_header(f, s, o);
	for (int rank = 0; rank < 4 && o->header != HEADER_ONLY; rank++)
		for (int ev = 0; ev < profile__nr_events(p) && !err; ev++) {
			const struct perf_evattr *a = profile__attr(p, s, ev);

			if (section_rank(a) != rank || !profile__event(p, ev)->samples ||
			    !report__event_match(o, a))
				continue;
			err = print_event(&r, ev);
		}
	htab__free(&r.ents);
	if (!err && ferror(f))
		err = -EIO;
	return err;
}

static int stdio_write(const struct output_run *r)
{
	int err = report_stdio__print(r->f, r->s, r->p, r->o);

	if (err == -ENODATA)
		snprintf(r->err, r->errlen, "%s: no samples%s%s%s", r->o->input,
			 r->o->event ? " of event " : "", r->o->event ? r->o->event : "",
			 report__filtered(r->o) ? " that pass the filters" : "");
	return err;
}

/* The report without an output option. */
const struct report_output stdio_output = { .write = stdio_write };
