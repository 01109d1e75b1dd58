// SPDX-License-Identifier: GPL-2.0-only
/*
 * A recording session: checks, set-up in an order that fails early and
 * leaves nothing behind, the loop that moves records from the kernel to the
 * file in time order, and a clean finish on every way a recording ends
 * (Ctrl-C, SIGTERM, -d, the command's exit).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "perfdata/perf_format.h"
#include "perfdata/perf_writer.h"
#include "record/record.h"

#define MERGE_MAX_BYTES (64u << 20) /* drain early past this much queued */

static int sig_pipe[2] = { -1, -1 };
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (sig != SIGCHLD)
		stop_signal = sig;
	if (write(sig_pipe[1], &c, 1) < 0) {
		/* the pipe is full: a wakeup is pending anyway */
	}
	errno = saved;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

struct tgid_set {
	uint32_t *v; /* sorted */
	size_t n, cap;
};

/* A target the start iterator saw: named afresh if it is gone from /proc. */
struct seen_task {
	uint32_t pid, tid;
	char comm[17];
};

struct session {
	struct record_opts *o;
	struct tgid_set targets;
	struct kernel_facts kernel;
	bool filter_sideband;
	struct perf_writer *w;
	struct offcpu_bpf *bpf;
	struct unwind_loader *unwind; /* --call-graph dwarf */
	struct cpu_events *cpu;
	struct merge *m;
	struct dso_hits *hits;
	struct workload wl;
	struct run_as run_as;       /* --user */
	struct target_watch *watch; /* -p/-t without -a: the recording ends when they all exit */
	bool have_child;
	bool child_done;
	int child_status;
	uint64_t first_time, last_time;
	uint64_t nr_written_samples;
	uint64_t nr_ustack_cut; /* samples whose user stack was cut at a junk frame */
	uint64_t prev_round; /* time of the previous drain: written up to it */
	bool status_line;
	struct seen_task *seen; /* the targets at the start */
	size_t nr_seen, cap_seen;
};

static bool tgid_set__has(const struct tgid_set *t, uint32_t pid)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->v[mid] == pid)
			return true;
		if (t->v[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static int tgid_set__add(struct tgid_set *t, uint32_t pid)
{
	size_t i;

	if (tgid_set__has(t, pid))
		return 0;
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		uint32_t *nv = realloc(t->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		t->v = nv;
		t->cap = ncap;
	}
	for (i = t->n; i > 0 && t->v[i - 1] > pid; i--)
		t->v[i] = t->v[i - 1];
	t->v[i] = pid;
	t->n++;
	return 0;
}

/*
 * Side-band records come from the whole machine (the perf events are per
 * CPU); with -p, -t or a command only the targets' are kept, the process
 * tree followed through FORK records, which come in time order here.
 */
static bool keep_sideband(struct session *s, const struct perf_event_header *h, size_t len)
{
	uint32_t pid, ppid;

	if (!s->filter_sideband || len < sizeof(*h) + 8)
		return true;
	memcpy(&pid, h + 1, 4);
	switch (h->type) {
	case PERF_RECORD_FORK:
		memcpy(&ppid, (const uint8_t *)(h + 1) + 4, 4);
		if (pid != ppid && tgid_set__has(&s->targets, ppid))
			tgid_set__add(&s->targets, pid);
		return tgid_set__has(&s->targets, pid);
	case PERF_RECORD_COMM:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_EXIT:
		return tgid_set__has(&s->targets, pid);
	case PERF_RECORD_MMAP:
		return pid == (uint32_t)-1 || tgid_set__has(&s->targets, pid);
	default:
		return true;
	}
}

/*
 * Every record on its way to the file from the kernel: side-band filter,
 * user stacks cut at their junk, sample times. (DSO hits and mappings are
 * followed by on_written, which sees the synthesized records too.)
 */
static int on_record(void *ctx, void *rec, size_t *len)
{
	struct session *s = ctx;
	const struct perf_event_header *h = rec;

	if (h->type != PERF_RECORD_SAMPLE && !keep_sideband(s, h, *len))
		return 0;

	if (h->type == PERF_RECORD_SAMPLE && *len >= sizeof(*h) + 32) {
		uint64_t t;
		bool cut;

		*len = dso_hits__cut_user(s->hits, rec, *len, cpu_sample_type(), &cut);
		s->nr_ustack_cut += cut;
		memcpy(&t, (const uint8_t *)rec + sizeof(*h) + 24, 8);
		if (!s->first_time || t < s->first_time)
			s->first_time = t;
		if (t > s->last_time)
			s->last_time = t;
		s->nr_written_samples++;
	}
	return 1;
}

/*
 * Every record written (the perf writer's tap): the processes' mappings,
 * DSO hits. A failure is kept by dso_hits and fails finish_file().
 */
static void on_written(void *ctx, const void *rec, size_t len)
{
	struct session *s = ctx;

	(void)dso_hits__record(s->hits, rec, len, cpu_sample_type());
}

/* The process a thread belongs to (the tid itself when unknown). */
static uint32_t tgid_of(int tid)
{
	char path[64], buf[4096];
	uint64_t tgid;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	n = proc_read(path, buf, sizeof(buf));
	if (n < 0 || proc_status__field(buf, (size_t)n, "Tgid", 10, &tgid) || !tgid || tgid > INT32_MAX)
		return tid;
	return (uint32_t)tgid;
}

static int on_seen_task(void *ctx, uint32_t pid, uint32_t tid, const char *comm)
{
	struct session *s = ctx;

	if (s->nr_seen == s->cap_seen) {
		size_t ncap = s->cap_seen ? 2 * s->cap_seen : 256;
		struct seen_task *nv = realloc(s->seen, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->seen = nv;
		s->cap_seen = ncap;
	}
	s->seen[s->nr_seen].pid = pid;
	s->seen[s->nr_seen].tid = tid;
	snprintf(s->seen[s->nr_seen].comm, sizeof(s->seen[0].comm), "%s", comm);
	s->nr_seen++;
	return 0;
}

/*
 * Name the threads that were targets at the start and left before /proc
 * was read: their FORK and COMM came before the recording, their samples
 * (a wait in progress, a last CPU sample) would show as ':PID'. One still
 * in /proc now was there all along, and /proc named it.
 */
static int name_gone_tasks(struct session *s, uint64_t id)
{
	char path[64];
	int err = 0;

	for (size_t i = 0; !err && i < s->nr_seen; i++) {
		snprintf(path, sizeof(path), "/proc/%u/task/%u", s->seen[i].pid, s->seen[i].tid);
		if (access(path, F_OK) && errno == ENOENT)
			err = synth__comm(s->w, s->seen[i].pid, s->seen[i].tid, s->seen[i].comm, id);
	}
	return err;
}

static bool have_privileges(void)
{
	char buf[4096];
	uint64_t eff = 0;
	ssize_t n;

	if (geteuid() == 0)
		return true;
	n = proc_read("/proc/self/status", buf, sizeof(buf));
	if (n < 0 || proc_status__field(buf, (size_t)n, "CapEff", 16, &eff))
		return false;
	/* CAP_PERFMON 38, CAP_BPF 39 */
	return (eff >> 38 & 1) && (eff >> 39 & 1);
}

static int preflight(const struct record_opts *o)
{
	const char *btf = getenv("OFFCPU_BTF");

	if (!have_privileges()) {
		fprintf(stderr, "offcpu record: permission denied: run as root or with CAP_BPF and CAP_PERFMON\n");
		return -EPERM;
	}
	if (!btf)
		btf = "/sys/kernel/btf/vmlinux";
	if (access(btf, R_OK)) {
		fprintf(stderr, "offcpu record: this kernel has no BTF (%s missing); CONFIG_DEBUG_INFO_BTF=y is required\n",
			btf);
		return -ENOTSUP;
	}
	if (o->cgroup) {
		char path[4096];
		int err = cgroup_resolve(o->cgroup, path, sizeof(path));

		if (err) {
			fprintf(stderr, "offcpu record: '%s' is not a cgroup v2 directory (%s: %s)\n",
				o->cgroup, path,
				err == -ENOTDIR ? "not on the cgroup v2 hierarchy" : strerror(-err));
			return err;
		}
	}
	for (size_t i = 0; i < o->pids.n; i++)
		if (!pid_exists(o->pids.v[i]) || pid_exited(o->pids.v[i])) {
			fprintf(stderr, "offcpu record: no such process: %d%s\n", o->pids.v[i],
				pid_exists(o->pids.v[i]) ? " (it has exited)" : "");
			return -ESRCH;
		}
	for (size_t i = 0; i < o->tids.n; i++)
		if (!pid_exists(o->tids.v[i]) || pid_exited(o->tids.v[i])) {
			fprintf(stderr, "offcpu record: no such thread: %d%s\n", o->tids.v[i],
				pid_exists(o->tids.v[i]) ? " (it has exited)" : "");
			return -ESRCH;
		}
	return 0;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_WARN && getenv("OFFCPU_DEBUG"))
		return vfprintf(stderr, fmt, args);
	if (level == LIBBPF_DEBUG && getenv("OFFCPU_DEBUG"))
		return vfprintf(stderr, fmt, args);
	return 0;
}

static uint64_t total_drops(struct session *s, uint64_t drops[OFFCPU_DROP__NR])
{
	uint64_t sum = 0;

	offcpu_bpf__drops(s->bpf, drops);
	for (int i = 0; i < OFFCPU_DROP__NR; i++)
		if (i != OFFCPU_DROP_USTACK && i != OFFCPU_DROP_KSTACK &&
		    i != OFFCPU_DROP_WAKER_USTACK && i != OFFCPU_DROP_WAKER_KSTACK)
			sum += drops[i];
	return sum + cpu_events__lost(s->cpu);
}

static void show_status(struct session *s, uint64_t start)
{
	uint64_t drops[OFFCPU_DROP__NR];
	uint64_t samples = offcpu_bpf__samples(s->bpf) + offcpu_bpf__wakeup_samples(s->bpf) +
			   offcpu_bpf__delay_samples(s->bpf) + cpu_events__samples(s->cpu) +
			   offcpu_bpf__cpu_samples(s->bpf);

	fprintf(stderr, "\r[ offcpu record: %.1f s, %llu samples, %llu lost, %.2f MB ]\033[K",
		(now_ns() - start) / 1e9, (unsigned long long)samples,
		(unsigned long long)total_drops(s, drops),
		perf_writer__data_size(s->w) / 1048576.0);
}

/* Move everything the kernel has into the queue, drain sums, write. */
static int round_trip(struct session *s, bool drain, bool final)
{
	uint64_t t;
	int err;

	err = cpu_events__poll(s->cpu, s->m);
	if (!err)
		err = offcpu_bpf__poll(s->bpf, s->m);
	if (err || !drain)
		return err;
	t = now_ns();
	err = offcpu_bpf__drain(s->bpf, s->m);
	if (!err && final)
		err = offcpu_bpf__drain(s->bpf, s->m); /* the other map too */
	if (!err)
		err = cpu_events__poll(s->cpu, s->m);
	if (!err)
		err = offcpu_bpf__poll(s->bpf, s->m);
	/*
	 * Write up to the previous round's time, not this one's: a record
	 * stamped just before now may still be on its way into a CPU's ring
	 * (its writer preempted, or its vCPU stalled), and would arrive late,
	 * out of order (a FORK after its child's samples shows as ':PID' in
	 * perf). One flush interval is ample time for it to land.
	 */
	if (!err)
		err = merge__flush(s->m, final ? UINT64_MAX : s->prev_round, s->w, on_record, s);
	s->prev_round = t;
	return err;
}

static void reap_child(struct session *s, bool block)
{
	int status;
	pid_t r;

	if (!s->have_child || s->child_done)
		return;
	do
		r = waitpid(s->wl.pid, &status, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == s->wl.pid) {
		s->child_done = true;
		s->child_status = status;
	}
}

static int exit_code(struct session *s)
{
	if (!s->have_child)
		return 0;
	if (WIFEXITED(s->child_status))
		return WEXITSTATUS(s->child_status);
	if (WIFSIGNALED(s->child_status))
		return 128 + WTERMSIG(s->child_status);
	return 1;
}

static int put_counter(uint8_t **b, size_t *len, size_t *cap, uint32_t *nr, const char *name,
		       uint64_t v)
{
	uint32_t nl = (strlen(name) + 1 + 7) / 8 * 8;
	size_t need = 4 + nl + 8;

	if (*len + need > *cap) {
		size_t ncap = (*cap + need) * 2;
		uint8_t *nb = realloc(*b, ncap);

		if (!nb)
			return -ENOMEM;
		*b = nb;
		*cap = ncap;
	}
	memcpy(*b + *len, &nl, 4);
	memset(*b + *len + 4, 0, nl);
	memcpy(*b + *len + 4, name, strlen(name));
	memcpy(*b + *len + 4 + nl, &v, 8);
	*len += need;
	(*nr)++;
	return 0;
}

struct counter_buf {
	uint8_t *b;
	size_t len, cap;
	uint32_t nr;
};

static int put_counter_cb(void *ctx, const char *name, uint64_t v)
{
	struct counter_buf *c = ctx;

	return put_counter(&c->b, &c->len, &c->cap, &c->nr, name, v);
}

/* Were off-CPU intervals filtered by their length (-m/-M)? */
static bool block_filtered(const struct record_opts *o)
{
	return o->min_ns || o->max_ns != UINT64_MAX;
}

/* The offcpu section: drop counters and recording facts, by name. */
static int write_offcpu_feature(struct session *s, const uint64_t drops[OFFCPU_DROP__NR])
{
	static const char *const keys[OFFCPU_DROP__NR] = {
		"drop.ringbuf_full",	     "drop.sum_full",		"drop.ustack_failed",
		"drop.kstack_failed",	     "drop.task_storage",	"drop.exits_full",
		"drop.unclosed",	     "drop.waker_storage",	"drop.waker_lost",
		"drop.waker_ustack_failed", "drop.waker_kstack_failed", "drop.sched_delay_storage",
		"drop.cpu_ringbuf_full",
	};
	uint8_t *b = malloc(4);
	size_t len = 4, cap = 4;
	uint32_t nr = 0;
	int err = b ? 0 : -ENOMEM;

	for (int i = 0; !err && i < OFFCPU_DROP__NR; i++)
		err = put_counter(&b, &len, &cap, &nr, keys[i], drops[i]);
	if (!err)
		err = put_counter(&b, &len, &cap, &nr, "drop.perf_lost", cpu_events__lost(s->cpu));
	if (!err)
		err = put_counter(&b, &len, &cap, &nr, "records.out_of_order", merge__late(s->m));
	if (!err)
		err = put_counter(&b, &len, &cap, &nr, "ustack.cut", s->nr_ustack_cut);
	if (!err)
		err = put_counter(&b, &len, &cap, &nr, "offcpu.thresh_ns", s->o->thresh_ns);
	if (!err)
		err = put_counter(&b, &len, &cap, &nr, "offcpu.flush_ms", s->o->flush_ms);
	if (!err)
		err = put_counter(&b, &len, &cap, &nr, "offcpu.state_mask", s->o->state_mask);
	if (!err)
		err = put_counter(&b, &len, &cap, &nr, "samples.offcpu", offcpu_bpf__samples(s->bpf));
	if (!err)
		err = put_counter(&b, &len, &cap, &nr, "samples.cpu",
				  cpu_events__samples(s->cpu) + offcpu_bpf__cpu_samples(s->bpf));
	if (!err)
		err = put_counter(&b, &len, &cap, &nr, "unwind.dwarf", s->o->dwarf);
	if (!err && s->unwind) {
		struct counter_buf c = { b, len, cap, nr };

		err = unwind_loader__counters(s->unwind, s->bpf, put_counter_cb, &c);
		b = c.b;
		len = c.len;
		cap = c.cap;
		nr = c.nr;
	}
	if (!err && s->o->wakeups)
		err = put_counter(&b, &len, &cap, &nr, "samples.offcpu_wakeup",
				  offcpu_bpf__wakeup_samples(s->bpf));
	if (!err && s->o->sched_delay)
		err = put_counter(&b, &len, &cap, &nr, "samples.sched_delay",
				  offcpu_bpf__delay_samples(s->bpf));
	if (!err) {
		static const char *const pkeys[OFFCPU_IN_PROGRESS__NR] = {
			"offcpu.in_progress_start", "offcpu.in_progress_stop",
			"sched_delay.in_progress_start", "sched_delay.in_progress_stop",
		};
		uint64_t start, stop;

		/* the recording's window (CLOCK_MONOTONIC ns): waits count inside it only */
		offcpu_bpf__window(s->bpf, &start, &stop);
		err = put_counter(&b, &len, &cap, &nr, "record.start_ns", start);
		if (!err)
			err = put_counter(&b, &len, &cap, &nr, "record.stop_ns", stop);
		for (int i = 0; !err && i < OFFCPU_IN_PROGRESS__NR; i++)
			if (i < OFFCPU_IN_PROGRESS_DELAY_START || s->o->sched_delay)
				err = put_counter(&b, &len, &cap, &nr, pkeys[i],
						  offcpu_bpf__in_progress(s->bpf, i));
	}
	if (!err) {
		static const char *const kkeys[OFFCPU_STAT__NR] = {
			"kstack.walked", "kstack.cached", "kstack.checked", "kstack.stale",
			"offcpu.closed_at_wakeup", "offcpu.closed_by_sched_info", "kstack.evicted",
			"kstack.unverified", "offcpu.filtered",
		};
		uint64_t ks[OFFCPU_STAT__NR];

		err = offcpu_bpf__stats(s->bpf, ks);
		for (int i = 0; !err && i < OFFCPU_STAT__NR; i++)
			if (i != OFFCPU_STAT_FILTERED || block_filtered(s->o))
				err = put_counter(&b, &len, &cap, &nr, kkeys[i], ks[i]);
	}
	/* -m/-M: the range kept, beside the count of intervals left out */
	if (!err && block_filtered(s->o))
		err = put_counter(&b, &len, &cap, &nr, "offcpu.min_ns", s->o->min_ns);
	if (!err && block_filtered(s->o) && s->o->max_ns != UINT64_MAX)
		err = put_counter(&b, &len, &cap, &nr, "offcpu.max_ns", s->o->max_ns);
	if (!err) {
		memcpy(b, &nr, 4);
		err = perf_writer__set_feature(s->w, PERF_FEAT_OFFCPU, b, len);
	}
	free(b);
	return err;
}

/* One LOST record: n samples of the event `id` lost. */
static int write_lost_record(struct session *s, uint64_t id, uint64_t n)
{
	struct {
		struct perf_event_header h;
		uint64_t id, lost;
		struct sample_id sid;
	} rec = {
		.h = { .type = PERF_RECORD_LOST, .size = sizeof(rec) },
		.id = id,
		.lost = n,
		.sid = { .time = s->last_time, .id = id },
	};

	return n ? perf_writer__write(s->w, &rec, sizeof(rec)) : 0;
}

/*
 * Lost data as LOST records too, so that perf report warns about it. The
 * ring buffer and the sum map are shared by offcpu-time and sched-delay
 * samples: their losses are booked to offcpu-time.
 */
static int write_lost(struct session *s, const uint64_t drops[OFFCPU_DROP__NR])
{
	uint64_t n = drops[OFFCPU_DROP_RINGBUF] + drops[OFFCPU_DROP_SUM_FULL] +
		     drops[OFFCPU_DROP_TASK_STORAGE];
	uint64_t nw = drops[OFFCPU_DROP_WAKER_STORAGE] + drops[OFFCPU_DROP_WAKER_LOST];
	uint64_t nd = drops[OFFCPU_DROP_DELAY_STORAGE];
	int err;

	if (!n && !nw && !nd)
		return 0;
	err = write_lost_record(s, OFFCPU_ID_OFFCPU, n);
	if (!err)
		err = write_lost_record(s, OFFCPU_ID_WAKEUP, nw);
	if (!err)
		err = write_lost_record(s, OFFCPU_ID_SCHED_DELAY, nd);
	return err ? err : perf_writer__finished_round(s->w);
}

static int finish_file(struct session *s, uint64_t drops[OFFCPU_DROP__NR])
{
	uint64_t times[2] = { s->first_time, s->last_time };
	uint8_t *bid = NULL;
	size_t bidlen = 0;
	int err;

	total_drops(s, drops);
	err = write_lost(s, drops);
	if (!err)
		err = perf_writer__set_feature(s->w, PERF_FEAT_SAMPLE_TIME, times, sizeof(times));
	if (!err)
		err = write_offcpu_feature(s, drops);
	if (!err)
		err = dso_hits__build_id_feature(s->hits, &bid, &bidlen);
	if (!err && bidlen)
		err = perf_writer__set_feature(s->w, PERF_FEAT_BUILD_ID, bid, bidlen);
	free(bid);
	if (!err)
		err = perf_writer__finish(s->w);
	return err;
}

/*
 * The end of a recording: what was written, what -m/-M left out, what was
 * lost, in at most three lines; the lost line says every loss. -v adds the
 * facts of how the recording went (kernel stack cache, cut user stacks,
 * waits in progress, missed switch-ins).
 */
static void print_summary(struct session *s, const uint64_t drops[OFFCPU_DROP__NR])
{
	uint64_t lost = cpu_events__lost(s->cpu);
	uint64_t ks[OFFCPU_STAT__NR];
	bool any = lost != 0;

	if (s->status_line)
		fprintf(stderr, "\r\033[K");
	fprintf(stderr, "[ offcpu record: Captured and wrote %.3f MB %s (%llu samples) ]\n",
		perf_writer__data_size(s->w) / 1048576.0, s->o->output,
		(unsigned long long)s->nr_written_samples);
	if (offcpu_bpf__stats(s->bpf, ks))
		memset(ks, 0, sizeof(ks));
	if (block_filtered(s->o)) {
		fprintf(stderr, "[ offcpu record: %llu off-CPU waits left out: ",
			(unsigned long long)ks[OFFCPU_STAT_FILTERED]);
		if (s->o->min_ns)
			fprintf(stderr, "shorter than %llu us (-m)%s",
				(unsigned long long)(s->o->min_ns / 1000),
				s->o->max_ns != UINT64_MAX ? " or " : "");
		if (s->o->max_ns != UINT64_MAX)
			fprintf(stderr, "longer than %llu us (-M)", (unsigned long long)(s->o->max_ns / 1000));
		fprintf(stderr, " ]\n");
	}
	if (s->o->verbose && (ks[OFFCPU_STAT_KSTACK_CACHED] || ks[OFFCPU_STAT_KSTACK_CHECKED]))
		fprintf(stderr, "[ offcpu record: kernel stacks: %llu walked, %llu from the cache of "
			"blocking points; of %llu checked by a walk, %llu differed (%llu keys no longer "
			"cached) ]\n",
			(unsigned long long)ks[OFFCPU_STAT_KSTACK_WALKED],
			(unsigned long long)ks[OFFCPU_STAT_KSTACK_CACHED],
			(unsigned long long)ks[OFFCPU_STAT_KSTACK_CHECKED],
			(unsigned long long)ks[OFFCPU_STAT_KSTACK_STALE],
			(unsigned long long)ks[OFFCPU_STAT_KSTACK_EVICTED]);
	if (s->o->verbose && s->nr_ustack_cut)
		fprintf(stderr, "[ offcpu record: %llu user stacks cut at a frame outside the process's "
			"executable mappings (a frame-pointer walk through code built without frame "
			"pointers) ]\n", (unsigned long long)s->nr_ustack_cut);
	if (s->o->verbose && (offcpu_bpf__in_progress(s->bpf, OFFCPU_IN_PROGRESS_OFFCPU_START) ||
			      offcpu_bpf__in_progress(s->bpf, OFFCPU_IN_PROGRESS_OFFCPU_STOP)))
		fprintf(stderr, "[ offcpu record: waits in progress, counted from the start or up to the "
			"stop only: %llu at the start, %llu at the stop ]\n",
			(unsigned long long)offcpu_bpf__in_progress(s->bpf, OFFCPU_IN_PROGRESS_OFFCPU_START),
			(unsigned long long)offcpu_bpf__in_progress(s->bpf, OFFCPU_IN_PROGRESS_OFFCPU_STOP));
	if (s->unwind)
		unwind_loader__summary(s->unwind, s->bpf, s->o->verbose, stderr);
	if (s->o->verbose && (ks[OFFCPU_STAT_CLOSED_AT_WAKEUP] || ks[OFFCPU_STAT_CLOSED_BY_SCHED_INFO]))
		fprintf(stderr, "[ offcpu record: %llu intervals ended at their wakeup, their switch-in "
			"unseen (the kernel skipped offcpu's tracepoint); %llu of them timed by "
			"the scheduler's run-delay accounting, their wakeup unseen too ]\n",
			(unsigned long long)(ks[OFFCPU_STAT_CLOSED_AT_WAKEUP] +
					     ks[OFFCPU_STAT_CLOSED_BY_SCHED_INFO]),
			(unsigned long long)ks[OFFCPU_STAT_CLOSED_BY_SCHED_INFO]);
	for (int i = 0; i < OFFCPU_DROP__NR; i++)
		any |= drops[i] != 0;
	if (!any) {
		fprintf(stderr, "[ offcpu record: nothing lost ]\n");
		return;
	}
	fprintf(stderr, "[ offcpu record: lost:");
	for (int i = 0; i < OFFCPU_DROP__NR; i++)
		if (drops[i])
			fprintf(stderr, " %s %llu;", offcpu_drop_name(i), (unsigned long long)drops[i]);
	if (lost)
		fprintf(stderr, " cpu samples (perf ring full) %llu;", (unsigned long long)lost);
	fprintf(stderr, " ]\n");
}

static int setup_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	return 0;
}

/* The loop: wake on data, signals or the clock; stop on any end condition. */
static int run_loop(struct session *s)
{
	struct epoll_event ev = { .events = EPOLLIN };
	uint64_t start = now_ns(), last_drain = start, last_status = 0;
	uint64_t wstart, wstop, end = 0;
	int epfd, err = 0;

	/*
	 * -d counts from the recording's start (the start iterator's time, on
	 * the same clock), not from here: what came between (/proc, the
	 * targets' unwind tables: 80-100 ms under ASan) is inside the window.
	 */
	offcpu_bpf__window(s->bpf, &wstart, &wstop);
	if (s->o->duration > 0)
		end = (wstart && wstart <= start ? wstart : start) + (uint64_t)(s->o->duration * 1e9);

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	ev.data.u64 = 0;
	epoll_ctl(epfd, EPOLL_CTL_ADD, sig_pipe[0], &ev);
	epoll_ctl(epfd, EPOLL_CTL_ADD, offcpu_bpf__ringbuf_fd(s->bpf), &ev);
	cpu_events__epoll_add(s->cpu, epfd);
	if (s->watch)
		target_watch__epoll_add(s->watch, epfd);

	while (!err) {
		struct epoll_event evs[16];
		uint64_t now;
		char buf[64];
		int timeout = 100;

		if (end) {
			now = now_ns();
			if (now >= end)
				break;
			if ((end - now) / 1000000 < (uint64_t)timeout)
				timeout = (end - now) / 1000000 + 1;
		}
		if (epoll_wait(epfd, evs, 16, timeout) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		while (read(sig_pipe[0], buf, sizeof(buf)) > 0)
			;
		reap_child(s, false);
		if (stop_signal || s->child_done || (s->watch && target_watch__all_gone(s->watch)))
			break;
		now = now_ns();
		bool drain = now - last_drain >= s->o->flush_ms * 1000000ULL ||
			     offcpu_bpf__needs_drain(s->bpf) || merge__bytes(s->m) > MERGE_MAX_BYTES;
		err = round_trip(s, drain, false);
		if (drain)
			last_drain = now;
		if (s->status_line && now - last_status >= 1000000000ULL) {
			show_status(s, start);
			last_status = now;
		}
	}
	close(epfd);
	return err;
}

int record__run(struct record_opts *o)
{
	struct session sess = { .o = o }, *s = &sess;
	struct perf_event_attr oattr;
	uint64_t drops[OFFCPU_DROP__NR] = { 0 };
	uint64_t oid = OFFCPU_ID_OFFCPU, wid = OFFCPU_ID_WAKEUP, did = OFFCPU_ID_SCHED_DELAY;
	const uint64_t *ids;
	size_t nr_ids;
	const char *name;
	const struct perf_event_attr *cattr;
	bool started = false;
	uint32_t *tgids = NULL;
	int err;

	err = preflight(o);
	if (err)
		return 1;
	libbpf_set_print(libbpf_quiet);
	err = perf_writer__new(o->output, &s->w);
	if (err) {
		fprintf(stderr, "offcpu record: cannot write %s: %s\n", o->output, strerror(-err));
		return 1;
	}
	/* before a byte is written: even an interrupted recording is the user's */
	if (o->give_output) {
		err = perf_writer__chown(s->w, o->owner_uid, o->owner_gid);
		if (err)
			fprintf(stderr, "offcpu record: cannot give %s to uid %u (SUDO_UID): %s; it stays "
				"root's\n", o->output, (unsigned int)o->owner_uid, strerror(-err));
	}
	s->m = merge__new();
	s->hits = dso_hits__new();
	if (!s->m || !s->hits || setup_signals()) {
		err = -ENOMEM;
		fprintf(stderr, "offcpu record: out of memory\n");
		goto cleanup;
	}
	perf_writer__set_tap(s->w, on_written, s);
	if (o->user) {
		err = run_as__resolve(&s->run_as, o->user);
		if (err) {
			fprintf(stderr, "offcpu record: --user %s: %s\n", o->user,
				err == -ENOENT ? "no such user" : strerror(-err));
			goto cleanup;
		}
	}
	if (o->argv) {
		err = workload__prepare(&s->wl, o->argv, o->user ? &s->run_as : NULL);
		if (err) {
			fprintf(stderr, "offcpu record: cannot start '%s': %s\n", o->argv[0],
				strerror(-err));
			goto cleanup;
		}
		s->have_child = true;
	}
	s->filter_sideband = o->argv || o->pids.n || o->tids.n;
	if (s->have_child)
		tgid_set__add(&s->targets, s->wl.pid);
	for (size_t i = 0; i < o->pids.n; i++)
		tgid_set__add(&s->targets, o->pids.v[i]);
	tgids = calloc(o->tids.n + 1, sizeof(*tgids));
	if (!tgids) {
		err = -ENOMEM;
		fprintf(stderr, "offcpu record: out of memory\n");
		goto cleanup;
	}
	for (size_t i = 0; i < o->tids.n; i++) {
		tgids[i] = tgid_of(o->tids.v[i]);
		tgid_set__add(&s->targets, tgids[i]);
	}
	if ((o->pids.n || o->tids.n) && !o->all_cpus) {
		int gone = 0;

		err = target_watch__new(o, tgids, &s->watch, &gone);
		if (err == -ESRCH) {
			fprintf(stderr, "offcpu record: no such process: %d (it has exited)\n", gone);
			goto cleanup;
		}
		if (err) {
			fprintf(stderr, "offcpu record: cannot watch the targets: %s\n", strerror(-err));
			goto cleanup;
		}
	}
	kernel_facts__read(&s->kernel, o->wakeups);
	err = offcpu_bpf__new(o, &s->kernel, &s->bpf);
	if (err) {
		fprintf(stderr, "offcpu record: cannot load the BPF program: %s%s\n", strerror(-err),
			getenv("OFFCPU_DEBUG") ? "" : " (OFFCPU_DEBUG=1 shows libbpf's log)");
		goto cleanup;
	}
	if (s->have_child)
		offcpu_bpf__trace_from_exec(s->bpf, s->wl.pid);
	if (o->dwarf) {
		err = unwind_loader__new(o, s->bpf, &s->unwind);
		if (err) {
			fprintf(stderr, "offcpu record: cannot set up the DWARF unwinder: %s\n",
				strerror(-err));
			goto cleanup;
		}
	}
	err = cpu_events__new(o, offcpu_bpf__filter_prog_fd(s->bpf), &s->cpu);
	if (err)
		goto cleanup;
	if (o->dwarf) {
		/* CPU samples come from BPF: they take the event's id of their CPU */
		uint64_t *cpu_ids;
		int *cpus;
		size_t n;

		err = cpu_events__cpu_ids(s->cpu, &cpus, &cpu_ids, &n);
		if (!err) {
			err = offcpu_bpf__set_cpu_ids(s->bpf, cpus, cpu_ids, n);
			free(cpus);
			free(cpu_ids);
		}
		if (err)
			goto cleanup;
	}

	cattr = cpu_events__attr(s->cpu, 0, &name, &ids, &nr_ids);
	offcpu_event_attr(&oattr);
	err = perf_writer__add_event(s->w, cattr, name, ids, nr_ids);
	if (!err)
		err = perf_writer__add_event(s->w, &oattr, OFFCPU_EVENT_NAME, &oid, 1);
	/* same attr: the sample id tells the events apart */
	if (!err && o->wakeups)
		err = perf_writer__add_event(s->w, &oattr, OFFCPU_WAKEUP_EVENT_NAME, &wid, 1);
	if (!err && o->sched_delay)
		err = perf_writer__add_event(s->w, &oattr, OFFCPU_SCHED_DELAY_EVENT_NAME, &did, 1);
	if (!err)
		err = perf_writer__begin(s->w);
	if (err) {
		fprintf(stderr, "offcpu record: cannot write %s: %s\n", o->output, strerror(-err));
		goto cleanup;
	}
	/*
	 * Events first, /proc second (as perf does): a process started while
	 * /proc is read is then seen by one or the other, never by neither.
	 */
	err = offcpu_bpf__attach(s->bpf);
	if (err) {
		fprintf(stderr, "offcpu record: cannot attach to sched_switch: %s\n", strerror(-err));
		goto cleanup;
	}
	err = cpu_events__enable(s->cpu);
	if (err) {
		fprintf(stderr, "offcpu record: cannot enable the perf events: %s\n", strerror(-err));
		goto cleanup;
	}
	/* the recording starts here: targets already waiting count from now on */
	err = offcpu_bpf__start(s->bpf, on_seen_task, s);
	if (err) {
		fprintf(stderr, "offcpu record: cannot find the waits in progress: %s\n", strerror(-err));
		goto cleanup;
	}
	err = synth__kernel_mmap(s->w, s->kernel.text, oid);
	for (size_t i = 0; !err && i < o->pids.n; i++)
		err = synth__process(s->w, o->pids.v[i], oid, true);
	for (size_t i = 0; !err && i < o->tids.n; i++)
		err = synth__process(s->w, o->tids.v[i], oid, true);
	if (!err && o->all_cpus)
		err = synth__all_processes(s->w, oid);
	if (!err)
		err = name_gone_tasks(s, oid);
	if (!err)
		err = synth__features(s->w, o);
	if (!err)
		err = perf_writer__finished_round(s->w);
	if (err) {
		fprintf(stderr, "offcpu record: cannot write %s: %s\n", o->output, strerror(-err));
		goto cleanup;
	}
	/*
	 * The unwinder follows exec, fork and exit from here on, its BPF side
	 * attached: both count a process's execs alike. Started once the
	 * recording has (it reads /proc and builds the targets' tables: tens
	 * to hundreds of ms), so that no process can start and end unnamed
	 * between the programs' attach and the side-band's enable; stacks
	 * before it are walked with the early table. Before the command runs.
	 */
	if (s->unwind) {
		err = unwind_loader__start(s->unwind, o, s->have_child ? s->wl.pid : 0);
		if (err) {
			fprintf(stderr, "offcpu record: cannot start the DWARF unwinder: %s\n",
				strerror(-err));
			goto cleanup;
		}
	}
	if (s->have_child) {
		int stage;

		err = workload__start(&s->wl, &stage);
		if (err) {
			if (stage == WORKLOAD_ERR_IDENTITY)
				fprintf(stderr, "offcpu record: cannot run '%s' as user %s: %s\n",
					o->argv[0], o->user, strerror(-err));
			else
				fprintf(stderr, "offcpu record: cannot execute '%s': %s\n", o->argv[0],
					strerror(-err));
			reap_child(s, true);
			s->have_child = false;
			perf_writer__abort(s->w);
			err = 127;
			goto out;
		}
	}
	started = true;
	s->status_line = !o->quiet && isatty(STDERR_FILENO);

	err = run_loop(s);
	if (s->have_child && !s->child_done) {
		/* we were told to stop: so is the command, as perf does */
		kill(s->wl.pid, SIGTERM);
		reap_child(s, true);
	}
	cpu_events__disable(s->cpu);
	/* the recording stops here: waits still in progress end now */
	if (!err) {
		int serr = offcpu_bpf__stop(s->bpf, s->m);

		if (serr == -ENOMEM)
			err = serr;
		else if (serr)
			fprintf(stderr, "%soffcpu record: cannot end the waits in progress at the stop: %s; "
				"they are left out\n", s->status_line ? "\r\033[K" : "", strerror(-serr));
	}
	if (!err)
		err = round_trip(s, true, true);
	unwind_loader__stop(s->unwind);
	if (!err)
		err = finish_file(s, drops);
	if (err) {
		fprintf(stderr, "%soffcpu record: writing %s failed: %s; what was written stays readable\n",
			s->status_line ? "\r\033[K" : "", o->output, strerror(-err));
		err = 1;
		goto out;
	}
	if (!o->quiet)
		print_summary(s, drops);
	err = exit_code(s);
	goto out;

cleanup:
	if (!started) {
		if (s->have_child) {
			kill(s->wl.pid, SIGKILL);
			reap_child(s, true);
		}
		perf_writer__abort(s->w);
	}
	err = 1;
out:
	cpu_events__free(s->cpu);
	unwind_loader__free(s->unwind);
	offcpu_bpf__free(s->bpf);
	merge__free(s->m);
	perf_writer__free(s->w); /* before the DSO hits: it taps into them */
	dso_hits__free(s->hits);
	target_watch__free(s->watch);
	run_as__exit(&s->run_as);
	free(tgids);
	free(s->targets.v);
	free(s->seen);
	return err;
}
