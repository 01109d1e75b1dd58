// SPDX-License-Identifier: GPL-2.0-only
/*
 * `offcpu report --chains`: why the threads waited (profile/chains.h).
 * The selected waits are summed per sleeper and blocking point, each a
 * tree of what its time went to, read as an answer:
 *
 *   cm-a  301.13 ms  1 wait  in cm_cond_wait [k] futex_do_wait
 *       301.10 ms  100.0%  <- cm-b  asleep in cm_pipe_read [k] anon_pipe_read
 *       200.01 ms   66.4%    <- cm-c  on CPU in cm_spin
 *       100.08 ms   33.2%    <- cm-c  asleep in cm_nap [k] do_nanosleep [timer]
 *
 * "<- X" is the thread that woke the line above it; each line is what X
 * was doing meanwhile. With --folded, one line per path (chains__profile);
 * with --pprof FILE, the same paths as a pprof profile.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/outputs.h"
#include "output/pprof/pprof.h"
#include "output/report.h"
#include "perfdata/offcpu_payload.h"
#include "profile/chains.h"
#include "util/hash.h"
#include "util/htab.h"
#include "util/intern.h"
#include "util/vec.h"

#define CHILDREN_SHOWN 12 /* per tree node; the rest summed in one line */

/* A node of the answer tree: under parent, a thread doing one thing (label). */
struct node {
	uint32_t parent;      /* node index, CHAINS_NONE for a group */
	uint32_t who;         /* label id: "cm-b" or "cm-b 16263/16264" */
	uint32_t what;        /* label id: "asleep in ...", "on CPU in ..." */
	uint8_t kind;         /* enum chain_seg_kind, or CHAIN_SEG__NR for a hop that waited itself */
	uint64_t ns;
	uint64_t waits;       /* groups: waits in it */
	uint64_t segs;
};

struct tree {
	struct chains *c;
	struct session *s;
	const struct report_opts *o;
	struct htab nodes;    /* struct node by (parent, who, what, kind) */
	struct intern labels;
	uint32_t *hop_node;   /* per hop of the current walk: its node */
	size_t cap_hop_node;
	uint64_t kind_ns[CHAIN_SEG__NR];
};

static bool node_eq(const void *entry, const void *key)
{
	const struct node *a = entry, *b = key;

	return a->parent == b->parent && a->who == b->who && a->what == b->what && a->kind == b->kind;
}

/* The node (parent, who, what, kind), made on first sight: its index, CHAINS_NONE on ENOMEM. */
static uint32_t node_get(struct tree *t, uint32_t parent, uint32_t who, uint32_t what, uint8_t kind)
{
	struct node key = { parent, who, what, kind, 0, 0, 0 }, *n;
	uint64_t h = hash__mix(((uint64_t)parent << 32 | who) ^ ((uint64_t)what << 8 | kind) * 0x9e3779b97f4a7c15ULL);
	bool added;

	n = htab__get(&t->nodes, h, node_eq, &key, &added);
	if (!n)
		return CHAINS_NONE;
	if (added)
		*n = key;
	return (uint32_t)(n - (struct node *)htab__at(&t->nodes, 0));
}

static struct node *node_at(struct tree *t, uint32_t i)
{
	return htab__at(&t->nodes, i);
}

/* Whether a frame is of the system (libc, ld.so, ...): the program's own frames name a wait better. */
static bool system_frame(const struct frame *f)
{
	return !f->dso || !strncmp(f->dso, "/lib", 4) || !strncmp(f->dso, "/usr/lib", 8) ||
	       f->dso[0] == '[';
}

/*
 * A stack's words for the tree: where the thread was, "in PROG [k] KERNEL"
 * (the innermost frame of the program itself, else the innermost user
 * frame; the innermost kernel frame), or for on-CPU time that program
 * frame alone (the leaf, what exactly ran, is in --folded and the flame
 * graph), the innermost frame when the stack has no user frame.
 */
static void stack_words(struct tree *t, uint32_t stack, bool on_cpu, char *buf, size_t len)
{
	const uint32_t *fr;
	const struct frame *leaf = NULL, *prog = NULL, *user = NULL, *kern = NULL;
	uint32_t nr;
	size_t at = 0;
	char a[256], b[256];

	buf[0] = 0;
	fr = chains__stack(t->c, stack, &nr);
	for (uint32_t i = 0; i < nr; i++) {
		const struct frame *f = session__frame(t->s, fr[i]);

		if (!f)
			continue;
		if (!leaf)
			leaf = f;
		if (f->kernel && !kern)
			kern = f;
		if (!f->kernel && !user)
			user = f;
		if (!f->kernel && !prog && !system_frame(f))
			prog = f;
	}
	if (!prog)
		prog = user;
	if (!leaf) {
		snprintf(buf, len, "(no stack)");
		return;
	}
	if (on_cpu) { /* the program's function that ran, else what ran */
		if (prog)
			snprintf(buf, len, "%s", frame__name(prog, a, sizeof(a)));
		else
			snprintf(buf, len, "%s%s", leaf->kernel ? "[k] " : "", frame__name(leaf, a, sizeof(a)));
		return;
	}
	if (prog)
		at = (size_t)snprintf(buf, len, "%s", frame__name(prog, a, sizeof(a)));
	if (kern && at < len)
		snprintf(buf + at, len - at, "%s[k] %s", at ? " " : "", frame__name(kern, b, sizeof(b)));
}

/* "comm", "comm pid" or "comm pid/tid" of a thread (--by). */
static int who_label(struct tree *t, uint32_t ti, uint32_t *id)
{
	const struct chain_thread *th = chains__thread(t->c, ti);
	const char *comm = th->comm ? session__comm(t->s, th->comm) : "[unknown]";
	char buf[96];

	if (t->o->by == BY_TID)
		snprintf(buf, sizeof(buf), "%s %u/%u", comm, th->pid, th->tid);
	else if (t->o->by == BY_PID)
		snprintf(buf, sizeof(buf), "%s %u", comm, th->pid);
	else
		snprintf(buf, sizeof(buf), "%s", comm);
	return intern__id(&t->labels, buf, id);
}

static int what_label(struct tree *t, uint32_t stack, int kind, uint32_t preempted_by, uint32_t *id)
{
	char words[600], buf[800];
	const char *tag = kind < CHAIN_SEG__NR ? chain_seg__tag(kind) : NULL;

	stack_words(t, stack, kind == CHAIN_SEG_ON_CPU, words, sizeof(words));
	switch (kind) {
	case CHAIN_SEG_ON_CPU:
		snprintf(buf, sizeof(buf), "on CPU in %s", words);
		break;
	case CHAIN_SEG_RUNQ:
		if (preempted_by != CHAINS_NONE) {
			const struct chain_thread *p = chains__thread(t->c, preempted_by);

			snprintf(buf, sizeof(buf), "on a run queue (preempted by %s) in %s",
				 p && p->comm ? session__comm(t->s, p->comm) : "?", words);
		} else {
			snprintf(buf, sizeof(buf), "on a run queue in %s", words);
		}
		break;
	case CHAIN_SEG_UNKNOWN:
		snprintf(buf, sizeof(buf), "[unknown] (not recorded)");
		break;
	case CHAIN_SEG_TRUNCATED:
		snprintf(buf, sizeof(buf), "[truncated]");
		break;
	default: /* asleep: ending here (tag), or going on to its waker */
		snprintf(buf, sizeof(buf), "asleep in %s%s%s", words, tag ? " " : "", tag ? tag : "");
		break;
	}
	return intern__id(&t->labels, buf, id);
}

/* The node of hop h of walk w (and of its parents), through t->hop_node. */
static uint32_t hop_node(struct tree *t, const struct chain_walk *w, uint32_t h)
{
	const struct chain_hop *hop = &w->hops[h];
	uint32_t parent, who, what;

	if (t->hop_node[h] != CHAINS_NONE)
		return t->hop_node[h];
	if (hop->parent == CHAINS_NONE) { /* the group: sleeper and blocking point */
		char words[600];

		stack_words(t, hop->stack, false, words, sizeof(words));
		if (who_label(t, hop->thread, &who) || intern__id(&t->labels, words, &what))
			return CHAINS_NONE;
		parent = CHAINS_NONE;
	} else {
		parent = hop_node(t, w, hop->parent);
		if (parent == CHAINS_NONE || who_label(t, hop->thread, &who) ||
		    what_label(t, hop->stack, CHAIN_SEG__NR, CHAINS_NONE, &what))
			return CHAINS_NONE;
	}
	t->hop_node[h] = node_get(t, parent, who, what, CHAIN_SEG__NR);
	return t->hop_node[h];
}

/* Every segment of a walk into the tree: its time to each node on its path. */
static int tree_add(struct tree *t, const struct chain_walk *w)
{
	uint32_t group;

	if (vec__reserve((void **)&t->hop_node, &t->cap_hop_node, w->nhops, sizeof(uint32_t), 256))
		return -ENOMEM;
	memset(t->hop_node, 0xff, w->nhops * sizeof(uint32_t));
	group = hop_node(t, w, 0);
	if (group == CHAINS_NONE)
		return -ENOMEM;
	node_at(t, group)->waits++;
	for (size_t i = 0; i < w->nsegs; i++) {
		const struct chain_seg *sg = &w->segs[i];
		const struct chain_hop *hop = &w->hops[sg->hop];
		uint64_t ns = sg->end - sg->start;
		uint32_t who, what, leaf, n;

		t->kind_ns[sg->kind] += ns;
		/* the segment's own line: under its hop's parent, or under the group for the sleeper's */
		n = hop->parent == CHAINS_NONE ? group : hop_node(t, w, hop->parent);
		if (n == CHAINS_NONE || who_label(t, hop->thread, &who) ||
		    what_label(t, hop->stack, sg->kind, sg->preempted_by, &what))
			return -ENOMEM;
		leaf = node_get(t, n, who, what, sg->kind);
		if (leaf == CHAINS_NONE)
			return -ENOMEM;
		for (n = leaf; n != CHAINS_NONE; n = node_at(t, n)->parent) {
			node_at(t, n)->ns += ns;
			node_at(t, n)->segs++;
		}
	}
	return 0;
}

struct child {
	uint32_t node;
	uint64_t ns;
};

static int cmp_child(const void *a, const void *b)
{
	const struct child *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->node < y->node ? -1 : 1;
}

/* The children of node parent (CHAINS_NONE: the groups), most time first. */
static size_t children(struct tree *t, uint32_t parent, struct child **out)
{
	struct child *v = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < htab__n(&t->nodes); i++) {
		struct node *nd = node_at(t, (uint32_t)i);
		struct child *c;

		if (nd->parent != parent)
			continue;
		c = vec__push((void **)&v, &n, &cap, sizeof(*c));
		if (!c) {
			free(v);
			*out = NULL;
			return SIZE_MAX;
		}
		c->node = (uint32_t)i;
		c->ns = nd->ns;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_child);
	*out = v;
	return n;
}

/* Node and its children, depth levels in, shares of the group's total. */
static int print_node(FILE *f, struct tree *t, uint32_t i, unsigned int depth, uint64_t total)
{
	struct node *nd = node_at(t, i);
	struct child *ch;
	size_t n, shown;
	uint64_t rest = 0;
	char ns[32];
	int err = 0;

	report__fmt_ns(ns, sizeof(ns), nd->ns);
	fprintf(f, "%14s  %5.1f%%  %*s<- %s  %s\n", ns, total ? 100.0 * nd->ns / total : 0.0,
		2 * (depth - 1), "", intern__at(&t->labels, nd->who), intern__at(&t->labels, nd->what));
	n = children(t, i, &ch);
	if (n == SIZE_MAX)
		return -ENOMEM;
	shown = n < CHILDREN_SHOWN ? n : CHILDREN_SHOWN;
	for (size_t k = 0; k < n && !err; k++) {
		if (k >= shown || (t->o->percent_limit > 0 && total &&
				   100.0 * ch[k].ns / total < t->o->percent_limit)) {
			rest += ch[k].ns;
			continue;
		}
		err = print_node(f, t, ch[k].node, depth + 1, total);
	}
	if (rest) {
		report__fmt_ns(ns, sizeof(ns), rest);
		fprintf(f, "%14s  %5.1f%%  %*s   (the rest: %zu more lines)\n", ns,
			total ? 100.0 * rest / total : 0.0, 2 * depth, "", n - shown);
	}
	free(ch);
	return err;
}

static void print_header(FILE *f, struct tree *t, const struct chains_totals *tot, uint64_t min_ns,
			 size_t groups)
{
	struct chains_stats st;
	char a[32], b[32];
	static const struct {
		int kind;
		const char *what;
	} parts[] = {
		{ CHAIN_SEG_ON_CPU, "on CPU" },	    { CHAIN_SEG_RUNQ, "run queue" },
		{ CHAIN_SEG_TIMER, "[timer]" },	    { CHAIN_SEG_IO, "[io]" },
		{ CHAIN_SEG_IRQ, "[irq]" },	    { CHAIN_SEG_NO_WAKER, "no waker" },
		{ CHAIN_SEG_WAKE_UNSEEN, "[wakeup unseen]" },
		{ CHAIN_SEG_UNKNOWN, "[unknown]" }, { CHAIN_SEG_DEPTH, "[depth]" },
		{ CHAIN_SEG_CYCLE, "[cycle]" },	    { CHAIN_SEG_TRUNCATED, "[truncated]" },
	};
	bool first = true;

	chains__stats(t->c, &st);
	report__fmt_ns(a, sizeof(a), tot->ns);
	report__fmt_ns(b, sizeof(b), min_ns);
	fprintf(f, "# offcpu report --chains of %s\n#\n", t->o->input);
	fprintf(f, "# %" PRIu64 " waits of %s or more (--chain-min), %s in all, in %zu groups by sleeper and\n"
		   "# blocking point; from %s: %" PRIu64 " waits of %" PRIu64 " threads, %" PRIu64 " CPU samples\n",
		tot->waits, b, a, groups,
		st.switch_records ? "record --chains" : "record --wakeups (recorded threads only)",
		st.waits, st.threads, st.cpu_samples);
	if (tot->intervals > tot->waits)
		fprintf(f, "# (%" PRIu64 " intervals: a thread asleep again on the same stack within %d us on a CPU\n"
			   "# waits once, as a futex woken in vain does)\n",
			tot->intervals, CHAINS_MERGE_NS / 1000);
	fprintf(f, "# where the time went:");
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		if (!t->kind_ns[parts[i].kind])
			continue;
		fprintf(f, "%s %s %.1f%%", first ? "" : ",", parts[i].what,
			tot->ns ? 100.0 * t->kind_ns[parts[i].kind] / tot->ns : 0.0);
		first = false;
	}
	fprintf(f, "%s\n", first ? " nothing" : "");
	if (tot->bad)
		fprintf(f, "# WARNING: %" PRIu64 " waits whose segments do not tile them\n", tot->bad);
	else
		fprintf(f, "# every wait's %" PRIu64 " segments tile it exactly\n", tot->segs);
	if (st.gaps)
		fprintf(f, "# %" PRIu64 " places where records of a thread were lost: [unknown] there\n", st.gaps);
	if (st.wake_unseen)
		fprintf(f, "# %" PRIu64 " sleeps whose wakeup the kernel hid from tracing: [wakeup unseen]\n",
			st.wake_unseen);
	if (tot->truncated)
		fprintf(f, "# %" PRIu64 " waits cut at %d segments: [truncated]\n", tot->truncated,
			CHAINS_MAX_SEGS);
	fprintf(f, "#\n# \"<- X\" is the thread that woke the line above, and what X was doing\n"
		   "# meanwhile: on CPU (in its sampled functions), on a run queue, or asleep\n"
		   "# itself and woken in turn; [timer], [irq], [io] (a disk: D state) end a\n"
		   "# chain; [unknown]: outside the recording or the recorded threads;\n"
		   "# [wakeup unseen]: a wakeup the kernel did not trace, its waker not known.\n#\n");
}

/* The tree of every selected wait, printed group by group (--limit groups). */
static int print_tree(FILE *f, struct tree *t, uint64_t min_ns)
{
	struct chains_totals tot = { 0 };
	struct chain_sel *sel = NULL;
	struct child *groups = NULL;
	long n = chains__select(t->c, t->o, min_ns, &sel);
	size_t ng;
	int err = n < 0 ? (int)n : 0;

	for (long i = 0; i < n && !err; i++) {
		struct chain_walk w;

		err = chains__walk(t->c, &sel[i], &w);
		if (!err) {
			tot.waits++;
			tot.intervals += sel[i].last - sel[i].first + 1;
			tot.ns += w.end - w.start;
			tot.segs += w.nsegs;
			tot.bad += !chain_walk__tiles(&w);
			err = tree_add(t, &w);
		}
	}
	free(sel);
	if (err)
		return err;
	ng = children(t, CHAINS_NONE, &groups);
	if (ng == SIZE_MAX)
		return -ENOMEM;
	if (!t->o->quiet)
		print_header(f, t, &tot, min_ns, ng);
	for (size_t g = 0; g < ng && !err; g++) {
		struct node *nd = node_at(t, groups[g].node);
		struct child *ch;
		size_t nc;
		char ns[32];

		if (t->o->limit > 0 && g >= (size_t)t->o->limit) {
			fprintf(f, "# ... %zu more groups (--limit 0 shows all)\n", ng - g);
			break;
		}
		report__fmt_ns(ns, sizeof(ns), nd->ns);
		fprintf(f, "%s  %s  %" PRIu64 " wait%s  in %s\n", intern__at(&t->labels, nd->who), ns,
			nd->waits, nd->waits == 1 ? "" : "s", intern__at(&t->labels, nd->what));
		nc = children(t, groups[g].node, &ch);
		if (nc == SIZE_MAX) {
			err = -ENOMEM;
			break;
		}
		for (size_t k = 0; k < nc && !err; k++)
			if (k < CHILDREN_SHOWN)
				err = print_node(f, t, ch[k].node, 1, nd->ns);
		if (nc > CHILDREN_SHOWN)
			fprintf(f, "%14s  %5s   (%zu more lines)\n", "", "", nc - CHILDREN_SHOWN);
		fputc('\n', f);
		free(ch);
	}
	free(groups);
	return err ? err : ferror(f) ? -EIO : 0;
}


/* "comm pid/tid" of thread ti. */
static void thread_words(struct chains *c, struct session *s, uint32_t ti, char *buf, size_t len)
{
	const struct chain_thread *t = chains__thread(c, ti);

	snprintf(buf, len, "%s %u/%u", t && t->comm ? session__comm(s, t->comm) : "[unknown]",
		 t ? t->pid : 0, t ? t->tid : 0);
}

int chains_script__print(FILE *f, struct chains *c, struct session *s, const struct report_opts *o)
{
	static const char *const kinds[CHAIN_SEG__NR] = {
		"on-cpu", "run-queue", "timer", "irq", "io", "no-waker", "unknown", "depth", "cycle",
		"truncated",
	};
	struct chain_sel *sel = NULL;
	long n = chains__select(c, o, chains__min_ns(o), &sel);
	int err = n < 0 ? (int)n : 0;

	for (long i = 0; i < n && !err; i++) {
		const struct chain_wait *first = chains__wait(c, sel[i].first);
		struct chain_walk w;
		char who[96], where[96];

		err = chains__walk(c, &sel[i], &w);
		if (err)
			break;
		thread_words(c, s, w.thread, who, sizeof(who));
		fprintf(f, "wait\t%s\t%c\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%zu\n", who,
			first->state, w.start, w.end, w.end - w.start, sel[i].last - sel[i].first + 1);
		for (size_t k = 0; k < w.nsegs; k++) {
			const struct chain_seg *sg = &w.segs[k];
			const struct chain_hop *h = &w.hops[sg->hop];
			const char *leaf = "-";
			const uint32_t *fr;
			uint32_t nr;

			thread_words(c, s, h->thread, who, sizeof(who));
			fr = chains__stack(c, h->stack, &nr);
			if (nr)
				leaf = frame__name(session__frame(s, fr[0]), where, sizeof(where));
			fprintf(f, "seg\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%s\t%u\t%s\t%s%s\n",
				sg->start, sg->end, sg->end - sg->start, kinds[sg->kind], h->depth, who,
				leaf, sg->kind == CHAIN_SEG_ON_CPU && !sg->sampled ? "\t(unsampled)" : "");
		}
	}
	free(sel);
	return err ? err : ferror(f) ? -EIO : 0;
}

/* --folded and --pprof: the paths as a profile of the offcpu-time event. */
static int chains_profile_out(const struct output_run *r, bool pprof)
{
	int ev = session__event(r->s, OFFCPU_EVENT_NAME);
	struct report_opts fo = *r->o;
	struct chains_totals tot;
	struct profile *p = NULL;
	int err;

	if (ev < 0)
		ev = 0;
	fo.event = perf_reader__attr(session__reader(r->s), ev)->name;
	err = chains__profile(r->chains, r->o, chains__min_ns(r->o), ev, PROFILE_KEEP_PID | PROFILE_KEEP_TID,
			      &p, &tot);
	if (err)
		return err;
	if (tot.bad)
		msg__say(r->ms, MSG_WARNING, "%" PRIu64 " waits whose segments do not tile them", tot.bad);
	if (pprof)
		err = pprof__write(r->arg ? r->arg : output_choice__arg(r->c, "pprof"), r->s, p, &fo,
				   r->ms, r->err, r->errlen);
	else
		err = folded__print(r->f, r->s, p, &fo, NULL);
	profile__free(p);
	return err;
}

static int chains_write(const struct output_run *r)
{
	struct tree t = { .c = r->chains, .s = r->s, .o = r->o };
	int err;

	if (output_choice__has(r->c, "folded"))
		return chains_profile_out(r, false);
	if (output_choice__has(r->c, "pprof"))
		return chains_profile_out(r, true);
	htab__init(&t.nodes, sizeof(struct node));
	intern__init(&t.labels);
	err = print_tree(r->f, &t, chains__min_ns(r->o));
	htab__free(&t.nodes);
	intern__free(&t.labels);
	free(t.hop_node);
	return err;
}

static unsigned int chains_prepare(struct report_opts *o, const struct output_choice *c)
{
	(void)c;
	if (o->by < 0)
		o->by = BY_COMM;
	o->waker_by = output_choice__has(c, "folded") || output_choice__has(c, "pprof") ? o->by : BY_COMM;
	return 0;
}

const struct report_output chains_output = {
	.name = "chains",
	.help = "      --chains            why the threads waited (record --chains): each wait\n"
		"                          followed back through its wakers to what ended it,\n"
		"                          summed per sleeper and blocking point; with --folded,\n"
		"                          one `sleeper;[woken by X];X's stack;... VALUE` line per\n"
		"                          path; with --pprof FILE, those paths for pprof\n"
		"      --chain-min MS      --chains: waits of MS or more (default 1)\n",
	.excludes = "wakeups threads",
	.no_event = true,
	.conflict = "--chains, --wakeups, --threads and -e exclude each other",
	.by = true,
	.reads = OUTPUT_READS_CHAINS,
	.prepare = chains_prepare,
	.write = chains_write,
};
