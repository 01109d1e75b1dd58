// SPDX-License-Identifier: GPL-2.0-only
/*
 * --call-graph dwarf: keeps the BPF unwinder's tables (src/unwind/) up to
 * date with the recorded processes.
 *
 * Before the command runs, its files' tables are built (and those of the
 * files offcpu itself maps: libc, ld.so and the vDSO are everyone's), and
 * the processes already there are read from /proc. From then on a thread
 * follows the side-band of its own perf events, one per CPU (MMAP2 of
 * executable mappings, COMM of an exec, FORK, EXIT) of the whole machine,
 * keeping the processes it follows (a command's tree, or the targets). They
 * are read every 100 ms or when half full, and at once when the BPF side
 * asks (unw_notify): when a recorded process execs (its libraries are
 * mapped in the next milliseconds: the side-band is then read every
 * millisecond for UNW_BURST_NS), and when a stack meets a process or a
 * mapping without a table (a dlopen). During such a burst a second event
 * per CPU (the bell) wakes the thread at every record, so that a starting
 * program's libraries are in its table within microseconds of their
 * mapping. Events of the command's own tasks (inherited, waking at every
 * record) would be simpler, but a task with a perf event of its own pays
 * for it at every context switch (the perf context is switched with it):
 * 12 % more on the pinned pipe benchmark. Waking at every record of the
 * whole machine, always, costs the recorded programs dearly on a busy one
 * (7 % more on the pipe benchmark here while others compiled).
 *
 * A stack taken before its process's table is there is walked with the
 * mappings the BPF side finds itself (the executable, the vDSO, and one
 * bpf_find_vma lookup) in the files already built, which are published
 * by identity (unw_files), and counted (unwind.early); a frame in a file
 * it cannot place is counted (unwind.no_mapping) and stepped by its frame
 * pointer.
 *
 * Its size (about 810 lines): the side-band reading, the thread and the
 * counters all share the loader's private state (its rings, its table
 * backend, what it has read and lost), which stays in this file.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "perfdata/perf_format.h"
#include "record/record.h"
#include "unwind/tables.h"
#include "util/clock.h"
#include "util/vec.h"

#define SB_PAGES 64 /* data pages per CPU: 256 KiB */
#define UNW_PERIOD_MS 100           /* side-band read at least this often */
#define UNW_BURST_NS 30000000ULL    /* after a request: read every millisecond this long */

struct sb_ring {
	int cpu, fd;
	void *base;
	int bell_fd;     /* the same records, waking at each one (see open_rings) */
	void *bell_base;
};

/* A side-band record copied out of its ring, to be handled in time order. */
struct sb_rec {
	uint64_t time;
	size_t seq, off;
	uint32_t len;
};

struct unwind_loader {
	struct unw_tables *t;
	struct pyframes *py; /* --python: the Python processes follow the same side-band */
	struct ustack_fix *fix; /* the deferred stacks: the mappings of processes gone */
	struct offcpu_unwind_maps maps;
	void *rows_map;
	size_t rows_len;
	uint64_t *pgen; /* unw_pgen, memory-mapped */
	size_t pgen_len;
	struct sb_ring *rings;
	size_t nr;
	size_t page;
	int epfd, stopfd;
	struct ring_buffer *notify;  /* requests of the BPF side */
	uint64_t burst_until, requests;
	bool bells_on; /* the bell events are enabled (a burst) */
	struct offcpu_unw_notify asked[64]; /* requests since the last drain */
	size_t nasked;
	pthread_t thread;
	sem_t ready; /* posted by the thread once it runs as it will (loader_main) */
	bool running;
	bool can_rt; /* it may run as a real-time thread (loader_realtime) */
	uint64_t late_ns; /* OFFCPU_TEST_UNWIND_LATE: its first wake-up handled this late */
	bool test_fail;   /* OFFCPU_TEST_UNWIND_FAIL: its first drain fails */
	int err;          /* the thread's failure (it stopped): atomic, the recorder reads it */
	uint64_t lost, records, setup_ns;
	uint8_t *buf; /* records of one batch */
	size_t len, cap;
	struct sb_rec *recs;
	size_t nrec, caprec;
};

/* ---- the backend: the BPF maps ---- */

static int put_rules(void *ctx, uint32_t first, uint32_t n, const struct offcpu_unw_rule *r)
{
	struct unwind_loader *l = ctx;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = first + i;

		if (bpf_map_update_elem(l->maps.rules, &id, &r[i], BPF_ANY))
			return -errno;
	}
	return 0;
}

static int put_proc(void *ctx, uint32_t tgid, const struct offcpu_unw_proc *p)
{
	struct unwind_loader *l = ctx;

	if (bpf_map_update_elem(l->maps.procs, &tgid, p, BPF_ANY))
		return -errno;
	/* after the table: a stack cached under the new generation was walked with it */
	__atomic_fetch_add(&l->pgen[tgid % OFFCPU_UNW_PGEN], 1, __ATOMIC_SEQ_CST);
	return 0;
}

static int del_proc(void *ctx, uint32_t tgid)
{
	struct unwind_loader *l = ctx;

	bpf_map_delete_elem(l->maps.procs, &tgid);
	return 0;
}

static int put_file(void *ctx, const struct offcpu_unw_file_key *k, const struct offcpu_unw_file *f)
{
	struct unwind_loader *l = ctx;

	return bpf_map_update_elem(l->maps.files, k, f, BPF_ANY) ? -errno : 0;
}

static int del_file(void *ctx, const struct offcpu_unw_file_key *k)
{
	struct unwind_loader *l = ctx;

	bpf_map_delete_elem(l->maps.files, k);
	return 0;
}

/* The BPF side's struct unw_exec (src/bpf/unwind.bpf.h). */
struct unw_exec_val {
	uint32_t count, pad;
	uint64_t exec_id;
};

static int get_execs(void *ctx, uint32_t tgid, uint32_t *execs)
{
	struct unwind_loader *l = ctx;
	struct unw_exec_val v;

	*execs = bpf_map_lookup_elem(l->maps.execs, &tgid, &v) ? 0 : v.count;
	return 0;
}

/* ---- side-band events ---- */

/*
 * Per CPU, system-wide: the side-band event read in batches, and its bell:
 * the same records into a one-page ring that is never read (its records
 * are dropped at each wake-up), waking the thread at each one while
 * enabled (a burst, loader_bells). Both are written by the same kernel
 * call, the bell's after the batch event's (opened in that order).
 */
static int open_rings(struct unwind_loader *l)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
		.sample_id_all = 1,
		/*
		 * No use_clockid: the times only order the records, and a
		 * dummy event with mmap on CLOCK_MONOTONIC made a pinned
		 * context-switch benchmark 10 % slower here (as fast as
		 * without these events on the default perf clock).
		 */
		.mmap = 1,
		.mmap2 = 1,
		.comm = 1,
		.comm_exec = 1,
		.task = 1,
		.disabled = 1,
		.watermark = 1,
		.wakeup_watermark = SB_PAGES * l->page / 2,
	};
	struct perf_event_attr bell = a;
	struct int_list cpus = { 0 };
	int err = online_cpus(&cpus);

	bell.wakeup_watermark = 1;
	if (err)
		return err;
	l->rings = calloc(cpus.n ? cpus.n : 1, sizeof(*l->rings));
	if (!l->rings) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < cpus.n; i++) {
		struct sb_ring *r = &l->rings[l->nr];
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };

		r->bell_fd = -1;
		r->fd = syscall(SYS_perf_event_open, &a, -1, cpus.v[i], -1, PERF_FLAG_FD_CLOEXEC);
		if (r->fd < 0) {
			err = -errno;
			goto out;
		}
		r->cpu = cpus.v[i];
		l->nr++;
		r->base = mmap(NULL, (SB_PAGES + 1) * l->page, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
		if (r->base == MAP_FAILED) {
			r->base = NULL;
			err = -errno;
			goto out;
		}
		r->bell_fd = syscall(SYS_perf_event_open, &bell, -1, cpus.v[i], -1, PERF_FLAG_FD_CLOEXEC);
		if (r->bell_fd < 0) {
			err = -errno;
			goto out;
		}
		r->bell_base = mmap(NULL, 2 * l->page, PROT_READ | PROT_WRITE, MAP_SHARED, r->bell_fd, 0);
		if (r->bell_base == MAP_FAILED) {
			r->bell_base = NULL;
			err = -errno;
			goto out;
		}
		if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, r->fd, &ev) ||
		    epoll_ctl(l->epfd, EPOLL_CTL_ADD, r->bell_fd, &ev)) {
			err = -errno;
			goto out;
		}
	}
out:
	int_list__free(&cpus);
	return err;
}

/*
 * The bells on during a burst, off after it; their records dropped (the
 * batch events have them too).
 */
static void loader_bells(struct unwind_loader *l, bool on)
{
	for (size_t i = 0; i < l->nr; i++) {
		struct perf_event_mmap_page *meta = l->rings[i].bell_base;

		if (on != l->bells_on)
			ioctl(l->rings[i].bell_fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
		__atomic_store_n(&meta->data_tail, __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
	}
	l->bells_on = on;
}

/* Copy one ring's records into the batch. */
static int ring_take(struct unwind_loader *l, struct sb_ring *r)
{
	struct perf_event_mmap_page *meta = r->base;
	uint8_t *data = (uint8_t *)r->base + l->page;
	uint64_t size = SB_PAGES * l->page;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;

	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail % size;
		struct sb_rec *rec;
		uint8_t *dst;

		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(off + i) % size];
		if (h.size < sizeof(h) || h.size > head - tail)
			break;
		if (vec__reserve((void **)&l->buf, &l->cap, l->len + h.size, 1, 4096) ||
		    vec__reserve((void **)&l->recs, &l->caprec, l->nrec + 1, sizeof(*l->recs), 256))
			return -ENOMEM;
		dst = l->buf + l->len;
		if (off + h.size <= size) {
			memcpy(dst, data + off, h.size);
		} else {
			memcpy(dst, data + off, size - off);
			memcpy(dst + (size - off), data, h.size - (size - off));
		}
		rec = &l->recs[l->nrec];
		rec->off = l->len;
		rec->len = h.size;
		rec->seq = l->nrec;
		rec->time = 0;
		if (h.size >= sizeof(h) + 16)
			memcpy(&rec->time, dst + h.size - 8, 8); /* trailer: pid, tid, time */
		l->len += h.size;
		l->nrec++;
		tail += h.size;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct sb_rec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Is the process pid gone (its last thread exited)? */
static bool process_gone(uint32_t pid)
{
	char path[64], buf[2048];
	uint64_t threads = 0;
	ssize_t n;
	char st;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	n = proc_read(path, buf, sizeof(buf));
	if (n <= 0)
		return true;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	st = 0;
	{
		char sbuf[512];
		ssize_t m = proc_read(path, sbuf, sizeof(sbuf));

		if (m > 0)
			st = proc_stat__state(sbuf);
	}
	proc_status__field(buf, (size_t)n, "Threads", 10, &threads);
	return (st == 'Z' || st == 'X') && threads <= 1;
}

static void handle(struct unwind_loader *l, const uint8_t *rec, uint32_t len)
{
	const struct perf_event_header *h = (const void *)rec;
	const uint8_t *b = rec + sizeof(*h);
	size_t body = len - sizeof(*h) - 16; /* without the trailer */
	uint32_t pid, ppid, tid;

	l->records++;
	switch (h->type) {
	case PERF_RECORD_MMAP2: {
		struct unw_mapping m;
		uint64_t addr, mlen;
		uint32_t prot;
		char path[4096];

		if (body < 64 || (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID))
			return;
		memcpy(&pid, b, 4);
		memcpy(&addr, b + 8, 8);
		memcpy(&mlen, b + 16, 8);
		memcpy(&m.pgoff, b + 24, 8);
		memcpy(&m.maj, b + 32, 4);
		memcpy(&m.min, b + 36, 4);
		memcpy(&m.ino, b + 40, 8);
		memcpy(&prot, b + 56, 4);
		if (!(prot & 4 /* PROT_EXEC */))
			return;
		snprintf(path, sizeof(path), "%.*s", (int)(body - 64), (const char *)b + 64);
		m.start = addr;
		m.end = addr + mlen;
		m.path = path;
		unw_tables__mmap(l->t, pid, &m);
		if (l->py && unw_tables__follows(l->t, pid))
			pyframes__mmap(l->py, pid, &m);
		if (l->fix && unw_tables__follows(l->t, pid))
			ustack_fix__mmap(l->fix, pid, &m);
		break;
	}
	case PERF_RECORD_COMM:
		if (body >= 8 && (h->misc & PERF_RECORD_MISC_COMM_EXEC)) {
			memcpy(&pid, b, 4);
			unw_tables__exec(l->t, pid);
			if (l->py)
				pyframes__exec(l->py, pid);
			ustack_fix__exec(l->fix, pid);
		}
		break;
	case PERF_RECORD_FORK:
		if (body >= 16) {
			memcpy(&pid, b, 4);
			memcpy(&ppid, b + 4, 4);
			if (pid != ppid)
				unw_tables__fork(l->t, ppid, pid);
			if (pid != ppid && l->py)
				pyframes__fork(l->py, ppid, pid);
			if (pid != ppid)
				ustack_fix__fork(l->fix, ppid, pid);
		}
		break;
	case PERF_RECORD_EXIT:
		if (body >= 16) {
			memcpy(&pid, b, 4);
			memcpy(&tid, b + 8, 4);
			(void)tid;
			if (unw_tables__follows(l->t, pid) && process_gone(pid)) {
				unw_tables__exit(l->t, pid);
				if (l->py)
					pyframes__exit(l->py, pid);
				ustack_fix__exit(l->fix, pid);
			}
		}
		break;
	case PERF_RECORD_LOST:
		if (body >= 16) {
			uint64_t n;

			memcpy(&n, b + 8, 8);
			l->lost += n;
		}
		break;
	}
}

/*
 * The loader's scheduling. A command blocks within a millisecond of its
 * exec, and its libraries are mapped in that millisecond: the thread must
 * run within microseconds of a record or a request. As an ordinary thread
 * it waited up to a scheduler slice (1-3 ms here) behind the process that
 * woke it. So it is a real-time thread (SCHED_FIFO, lowest priority) while
 * it reads side-band and writes process tables, a few microseconds each
 * time, and an ordinary one while it builds a file's table (milliseconds
 * to tens of them), so that it never holds a CPU away from the recorded
 * programs for long. Without the privilege, an ordinary thread throughout.
 */
static void loader_realtime(struct unwind_loader *l, bool rt)
{
	struct sched_param sp = { .sched_priority = rt ? 1 : 0 };

	if (l->can_rt)
		l->can_rt = !pthread_setschedparam(pthread_self(), rt ? SCHED_FIFO : SCHED_OTHER, &sp);
}

/* Everything in the rings, in time order, into the tables. */
static int drain(struct unwind_loader *l)
{
	int err = 0;

	if (l->test_fail)
		return -EIO;
	l->len = 0;
	l->nrec = 0;
	for (size_t i = 0; i < l->nr && !err; i++)
		err = ring_take(l, &l->rings[i]);
	if (l->nrec)
		qsort(l->recs, l->nrec, sizeof(*l->recs), rec_cmp);
	for (size_t i = 0; i < l->nrec; i++)
		if (l->recs[i].len >= sizeof(struct perf_event_header) + 16)
			handle(l, l->buf + l->recs[i].off, l->recs[i].len);
	for (size_t i = 0; i < l->nasked; i++)
		if (l->asked[i].why == OFFCPU_UNW_WHY_EXEC)
			unw_tables__requested(l->t, l->asked[i].tgid);
	if (!err)
		err = unw_tables__flush(l->t);
	for (size_t i = 0; i < l->nasked && !err; i++) {
		if (l->asked[i].why != OFFCPU_UNW_WHY_MISSING || !l->asked[i].pc)
			continue;
		loader_realtime(l, false); /* it may build a table */
		unw_tables__need(l->t, l->asked[i].tgid, l->asked[i].pc);
		loader_realtime(l, true);
		err = unw_tables__flush(l->t);
	}
	l->nasked = 0;
	return err;
}

/* A request of the BPF side: read the side-band now, and often for a while. */
static int on_notify(void *ctx, void *data, size_t len)
{
	struct unwind_loader *l = ctx;
	const struct offcpu_unw_notify *n = data;

	if (len < sizeof(*n))
		return 0;
	l->requests++;
	l->burst_until = mono_ns() + UNW_BURST_NS;
	if (l->nasked < sizeof(l->asked) / sizeof(l->asked[0]))
		l->asked[l->nasked++] = *n;
	return 0;
}

static void *loader_main(void *arg)
{
	struct unwind_loader *l = arg;
	uint64_t last_expire = mono_ns();
	int err;

	l->can_rt = true;
	loader_realtime(l, true);
	sem_post(&l->ready);
	for (;;) {
		struct epoll_event evs[8];
		bool stop = false;
		int n = epoll_wait(l->epfd, evs, 8, mono_ns() < l->burst_until ? 1 : UNW_PERIOD_MS);

		for (int i = 0; i < n; i++)
			stop |= evs[i].data.u64 == 0;
		if (l->late_ns && !stop) {
			/* tests: the stacks of a process whose table is late */
			struct timespec ts = { l->late_ns / 1000000000ULL, l->late_ns % 1000000000ULL };

			nanosleep(&ts, NULL);
			l->late_ns = 0;
		}
		ring_buffer__consume(l->notify);
		loader_bells(l, mono_ns() < l->burst_until);
		err = drain(l);
		if (err)
			__atomic_store_n(&l->err, err, __ATOMIC_RELEASE);
		if (stop || err)
			break;
		if (mono_ns() - last_expire > 1000000000ULL) {
			unw_tables__expire(l->t, mono_ns());
			last_expire = mono_ns();
		}
	}
	return NULL;
}

/* ---- set-up ---- */

int unwind_loader__new(const struct record_opts *o, const struct offcpu_bpf *b,
		       const struct msg_sink *ms, struct unwind_loader **out)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
	struct unwind_loader *l;
	struct unw_backend be;
	int err;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->epfd = -1;
	l->stopfd = -1;
	l->page = sysconf(_SC_PAGESIZE);
	err = offcpu_bpf__unwind_maps(b, &l->maps);
	if (err)
		goto cleanup;
	l->rows_len = ((size_t)l->maps.row_cap * sizeof(struct offcpu_unw_row) + l->page - 1) /
		      l->page * l->page;
	l->rows_map = mmap(NULL, l->rows_len, PROT_READ | PROT_WRITE, MAP_SHARED, l->maps.rows, 0);
	if (l->rows_map == MAP_FAILED) {
		l->rows_map = NULL;
		err = -errno;
		goto cleanup;
	}
	l->pgen_len = ((size_t)OFFCPU_UNW_PGEN * sizeof(uint64_t) + l->page - 1) / l->page * l->page;
	l->pgen = mmap(NULL, l->pgen_len, PROT_READ | PROT_WRITE, MAP_SHARED, l->maps.pgen, 0);
	if (l->pgen == MAP_FAILED) {
		l->pgen = NULL;
		err = -errno;
		goto cleanup;
	}
	be = (struct unw_backend){
		.ctx = l,
		.rows = l->rows_map,
		.row_cap = l->maps.row_cap,
		.put_rules = put_rules,
		.put_proc = put_proc,
		.del_proc = del_proc,
		.put_file = put_file,
		.del_file = del_file,
		.get_execs = get_execs,
	};
	err = unw_tables__new(&be, o->all_cpus, &l->t);
	if (err)
		goto cleanup;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->epfd < 0 || l->stopfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->stopfd, &ev)) {
		err = -errno;
		goto cleanup;
	}
	l->notify = ring_buffer__new(l->maps.notify, on_notify, l, NULL);
	if (!l->notify) {
		err = -errno;
		goto cleanup;
	}
	ev.data.u64 = 2;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(l->notify), &ev)) {
		err = -errno;
		goto cleanup;
	}
	l->late_ns = (uint64_t)o->test_unwind_late_ms * 1000000ULL;
	l->test_fail = o->test_unwind_fail;
	err = open_rings(l);
	if (err) {
		msg__say(ms, MSG_ERROR, "cannot open the unwinder's side-band events: %s",
			 strerror(-err));
		goto cleanup;
	}
	*out = l;
	return 0;
cleanup:
	unwind_loader__free(l);
	return err;
}

void unwind_loader__set_python(struct unwind_loader *l, struct pyframes *py)
{
	l->py = py;
}

void unwind_loader__set_fix(struct unwind_loader *l, struct ustack_fix *fix)
{
	l->fix = fix;
}

/* A process there before the recording: its tables, and whether it is a Python. */
static void add_process(struct unwind_loader *l, uint32_t pid)
{
	unw_tables__add_process(l->t, pid);
	if (l->py)
		pyframes__scan(l->py, pid);
	ustack_fix__scan(l->fix, pid);
}

/* The files offcpu itself maps executable: libc, ld.so... most processes share them. */
static void preload_own(struct unwind_loader *l)
{
	char line[4096 + 256];
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && fgets(line, sizeof(line), f)) {
		char perms[8], *path;
		int pos = 0;

		if (sscanf(line, "%*x-%*x %7s %*x %*x:%*x %*u %n", perms, &pos) < 1 || !pos ||
		    perms[2] != 'x')
			continue;
		path = line + pos;
		path[strcspn(path, "\n")] = 0;
		if (path[0] == '/')
			unw_tables__preload(l->t, path);
	}
	if (f)
		fclose(f);
	unw_tables__preload_vdso(l->t);
}

int unwind_loader__start(struct unwind_loader *l, const struct record_opts *o, int child)
{
	uint64_t t0 = mono_ns();
	int err = 0;

	for (size_t i = 0; i < l->nr; i++)
		if (ioctl(l->rings[i].fd, PERF_EVENT_IOC_ENABLE, 0))
			return -errno;
	preload_own(l);
	if (o->argv)
		unw_tables__preload_command(l->t, o->argv[0]);
	if (child > 0)
		unw_tables__add_process(l->t, child);
	for (size_t i = 0; i < o->pids.n; i++)
		add_process(l, o->pids.v[i]);
	for (size_t i = 0; i < o->tids.n; i++)
		add_process(l, tgid_of(o->tids.v[i]));
	if (o->all_cpus) {
		DIR *d = opendir("/proc");
		struct dirent *e;

		while (d && (e = readdir(d)))
			if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
				add_process(l, atoi(e->d_name));
		if (d)
			closedir(d);
	}
	err = unw_tables__flush(l->t);
	unw_tables__set_lazy(l->t, true);
	l->setup_ns = mono_ns() - t0;
	if (err)
		return err;
	if (child > 0) {
		/* the command's exec is next: its burst starts now, not at the exec's request */
		l->burst_until = mono_ns() + UNW_BURST_NS;
		loader_bells(l, true);
	}
	/*
	 * The command is released next: the thread must be running first,
	 * real-time, or it may wait a scheduler slice behind the command's
	 * first threads while they block without their table.
	 */
	if (sem_init(&l->ready, 0, 0))
		return -errno;
	err = -pthread_create(&l->thread, NULL, loader_main, l);
	if (!err) {
		l->running = true;
		while (sem_wait(&l->ready) && errno == EINTR)
			;
	}
	sem_destroy(&l->ready);
	return err;
}

int unwind_loader__error(const struct unwind_loader *l)
{
	return l ? __atomic_load_n(&l->err, __ATOMIC_ACQUIRE) : 0;
}

void unwind_loader__stop(struct unwind_loader *l)
{
	uint64_t one = 1;

	if (!l || !l->running)
		return;
	if (write(l->stopfd, &one, sizeof(one)) < 0) {
		/* cannot happen with an eventfd below its maximum */
	}
	pthread_join(l->thread, NULL);
	l->running = false;
}

void unwind_loader__free(struct unwind_loader *l)
{
	if (!l)
		return;
	unwind_loader__stop(l);
	for (size_t i = 0; i < l->nr; i++) {
		if (l->rings[i].base)
			munmap(l->rings[i].base, (SB_PAGES + 1) * l->page);
		if (l->rings[i].bell_base)
			munmap(l->rings[i].bell_base, 2 * l->page);
		close(l->rings[i].fd);
		if (l->rings[i].bell_fd >= 0)
			close(l->rings[i].bell_fd);
	}
	free(l->rings);
	ring_buffer__free(l->notify);
	unw_tables__free(l->t);
	if (l->rows_map)
		munmap(l->rows_map, l->rows_len);
	if (l->pgen)
		munmap(l->pgen, l->pgen_len);
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->stopfd >= 0)
		close(l->stopfd);
	free(l->buf);
	free(l->recs);
	free(l);
}

/* ---- counters ---- */

/* The BPF side's counters (bpf/unwind.h): name in the file, and what it counts. */
static const struct {
	const char *name, *what;
} unw_counter[OFFCPU_UNW_STAT__NR] = {
#define UNW_ROW(id, key, what) [OFFCPU_UNW_##id] = { key, what },
	OFFCPU_UNW_STATS(UNW_ROW)
#undef UNW_ROW
};

int unwind_loader__counters(const struct unwind_loader *l, const struct offcpu_bpf *b,
			    int (*fn)(void *ctx, const char *name, uint64_t v), void *ctx)
{
	uint64_t s[OFFCPU_UNW_STAT__NR];
	struct unw_tables_stats ts;
	int err = offcpu_bpf__unwind_stats(b, s);

	for (int i = 0; !err && i < OFFCPU_UNW_STAT__NR; i++)
		err = fn(ctx, unw_counter[i].name, s[i]);
	if (err || !l)
		return err;
	unw_tables__stats(l->t, &ts);
	{
		const struct {
			const char *name;
			uint64_t v;
		} u[] = {
			{ "unwind.files", ts.files },
			{ "unwind.files_no_cfi", ts.files_no_cfi },
			{ "unwind.files_failed", ts.files_failed },
			{ "unwind.files_no_room", ts.files_no_room },
			{ "unwind.files_dropped", ts.files_dropped },
			{ "unwind.rows_peak", ts.rows_peak },
			{ "unwind.row_capacity", ts.row_cap },
			{ "unwind.rules", ts.rules },
			{ "unwind.rules_overflow", ts.rules_overflow },
			{ "unwind.unsupported_rows", ts.unsupported_rows },
			{ "unwind.build_us", ts.build_ns / 1000 },
			{ "unwind.setup_us", l->setup_ns / 1000 },
			{ "unwind.procs_peak", ts.procs_peak },
			{ "unwind.maps_dropped", ts.maps_dropped },
			{ "unwind.sideband_lost", l->lost },
			{ "unwind.requests", l->requests },
			/* its thread failed (a negative errno, as a positive number): tables not kept */
			{ "unwind.loader_error", (uint64_t)-unwind_loader__error(l) },
		};

		for (size_t i = 0; !err && i < sizeof(u) / sizeof(u[0]); i++)
			err = fn(ctx, u[i].name, u[i].v);
	}
	return err;
}

void unwind_loader__summary(const struct unwind_loader *l, const struct offcpu_bpf *b,
			    bool verbose, const struct msg_sink *ms)
{
	uint64_t s[OFFCPU_UNW_STAT__NR];
	struct unw_tables_stats ts;
	struct msg_line line = { .len = 0 };
	bool any = false;

	if (offcpu_bpf__unwind_stats(b, s))
		return;
	unw_tables__stats(l->t, &ts);
	if (verbose)
		msg__say(ms, MSG_SUMMARY, "user stacks from DWARF tables: %llu unwound, %llu from the cache of "
			 "blocking points (%llu checked by a walk, %llu differed), %.1f frames a stack; "
			 "tables of %llu files, %llu rows at most (of %llu), built in %.0f ms",
			 (unsigned long long)s[OFFCPU_UNW_WALKED], (unsigned long long)s[OFFCPU_UNW_CACHED],
			 (unsigned long long)s[OFFCPU_UNW_CHECKED], (unsigned long long)s[OFFCPU_UNW_STALE],
			 s[OFFCPU_UNW_WALKED] ? (double)s[OFFCPU_UNW_FRAMES] / s[OFFCPU_UNW_WALKED] : 0.0,
			 (unsigned long long)ts.files, (unsigned long long)ts.rows_peak,
			 (unsigned long long)ts.row_cap, ts.build_ns / 1e6);
	for (int i = OFFCPU_UNW_NO_TABLE; i < OFFCPU_UNW_STAT__NR; i++) {
		if (!s[i] || !verbose)
			continue;
		msg_line__add(&line, "%s %s %llu", any ? ";" : "user stacks:", unw_counter[i].name,
			      (unsigned long long)s[i]);
		any = true;
	}
	if (ts.files_no_room || ts.files_failed || l->lost || ts.maps_dropped) {
		msg_line__add(&line, "%s unwind.files_no_room %llu; unwind.files_failed %llu; "
			      "unwind.sideband_lost %llu; unwind.maps_dropped %llu",
			      any ? ";" : "user stacks:", (unsigned long long)ts.files_no_room,
			      (unsigned long long)ts.files_failed, (unsigned long long)l->lost,
			      (unsigned long long)ts.maps_dropped);
		any = true;
	}
	if (any)
		msg__say(ms, MSG_SUMMARY, "%s (see offcpu report's header)", line.text);
}
