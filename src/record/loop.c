// SPDX-License-Identifier: GPL-2.0-only
/*
 * The recording's loop: wake on data, signals or the clock, move records
 * from the kernel (perf rings, the BPF ring buffer, the drained sums) to
 * the file in time order, and stop on any way a recording ends (Ctrl-C,
 * SIGTERM, SIGHUP, -d, the command's exit, the -p/-t targets' exit).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "perfdata/perf_format.h"
#include "perfdata/perf_writer.h"
#include "record/recorder_int.h"
#include "util/clock.h"

#define MERGE_MAX_BYTES (64u << 20) /* drain early past this much queued */

static int sig_pipe[2] = { -1, -1 };
static volatile sig_atomic_t stop_signal;
/* The signals the recorder takes, and their actions before it (restored at its end). */
static const int rec_signals[] = { SIGINT, SIGTERM, SIGCHLD, SIGHUP };
static struct sigaction old_actions[sizeof(rec_signals) / sizeof(rec_signals[0])];
static bool signals_set;

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

int recorder__setup_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	if (signals_set)
		return -EBUSY; /* one recorder at a time */
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	stop_signal = 0;
	for (size_t i = 0; i < sizeof(rec_signals) / sizeof(rec_signals[0]); i++)
		sigaction(rec_signals[i], &sa, &old_actions[i]);
	signals_set = true;
	return 0;
}

void recorder__restore_signals(void)
{
	if (!signals_set)
		return;
	for (size_t i = 0; i < sizeof(rec_signals) / sizeof(rec_signals[0]); i++)
		sigaction(rec_signals[i], &old_actions[i], NULL);
	/* the handlers are gone: nothing writes to the pipe any more */
	close(sig_pipe[0]);
	close(sig_pipe[1]);
	sig_pipe[0] = sig_pipe[1] = -1;
	signals_set = false;
}

/*
 * Side-band records come from the whole machine (the perf events are per
 * CPU); with -p, -t or a command only the targets' are kept, the process
 * tree followed through FORK records, which come in time order here.
 */
static bool keep_sideband(struct recorder *r, const struct perf_event_header *h, size_t len)
{
	uint32_t pid, ppid;

	if (!r->filter_sideband || len < sizeof(*h) + 8)
		return true;
	memcpy(&pid, h + 1, 4);
	switch (h->type) {
	case PERF_RECORD_FORK:
		memcpy(&ppid, (const uint8_t *)(h + 1) + 4, 4);
		/* out of memory: the child's side-band is left out, counted */
		if (pid != ppid && tgid_set__has(&r->targets, ppid) &&
		    tgid_set__add(&r->targets, pid))
			r->nr_sideband_nomem++;
		return tgid_set__has(&r->targets, pid);
	case PERF_RECORD_COMM:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_EXIT:
		return tgid_set__has(&r->targets, pid);
	case PERF_RECORD_MMAP:
		return pid == (uint32_t)-1 || tgid_set__has(&r->targets, pid);
	default:
		return true;
	}
}

/*
 * Every record on its way to the file from the kernel: side-band filter,
 * samples before the recording's start left out, user stacks cut at their
 * junk, sample times. (DSO hits, mappings and threads' names are followed
 * by the writer's tap, which sees the synthesized records too.)
 *
 * The start is offcpu_start's, after the perf events' enable and the pass
 * that notes every target's name (offcpu_names): a CPU sample before it
 * may be of a thread that exited before that pass reached it, gone from
 * /proc too, which nothing could name (thread_names.c).
 */
static int on_record(void *ctx, void *rec, size_t *len)
{
	struct recorder *r = ctx;
	const struct perf_event_header *h = rec;

	if (h->type != PERF_RECORD_SAMPLE && !keep_sideband(r, h, *len))
		return 0;

	if (h->type == PERF_RECORD_SAMPLE && *len >= sizeof(*h) + 32) {
		uint64_t t;
		bool cut;

		memcpy(&t, (const uint8_t *)rec + sizeof(*h) + sample_tid_at(rec) + 8, 8);
		if (t < r->start && sample_of_perf_event(rec)) {
			r->nr_before_start++;
			return 0;
		}
		*len = dso_hits__cut_user(r->hits, rec, *len, &cut);
		r->nr_ustack_cut += cut;
		if (!r->first_time || t < r->first_time)
			r->first_time = t;
		if (t > r->last_time)
			r->last_time = t;
		r->nr_written_samples++;
	}
	return 1;
}

int recorder__round_trip(struct recorder *r, bool drain, bool final)
{
	uint64_t t;
	int err;

	err = cpu_events__poll(r->cpu, r->m);
	if (!err)
		err = offcpu_bpf__poll(r->bpf, r->m);
	if (err || !drain)
		return err;
	t = mono_ns();
	err = offcpu_bpf__drain(r->bpf, r->m);
	if (!err && final)
		err = offcpu_bpf__drain(r->bpf, r->m); /* the other map too */
	if (!err)
		err = cpu_events__poll(r->cpu, r->m);
	if (!err)
		err = offcpu_bpf__poll(r->bpf, r->m);
	/*
	 * Write up to the previous round's time, not this one's: a record
	 * stamped just before now may still be on its way into a CPU's ring
	 * (its writer preempted, or its vCPU stalled), and would arrive late,
	 * out of order (a FORK after its child's samples shows as ':PID' in
	 * perf). One flush interval is ample time for it to land.
	 */
	if (!err)
		err = merge__flush(r->m, final ? UINT64_MAX : r->prev_round, r->w, on_record, r);
	if (!err && r->py && !final)
		pyframes__flush(r->py); /* best effort: the end writes it for good */
	r->prev_round = t;
	if (!final)
		offcpu_bpf__written_upto(r->bpf, t);
	return err;
}

void recorder__check_unwinder(struct recorder *r)
{
	if (!r->unwind || r->unwind_err)
		return;
	r->unwind_err = unwind_loader__error(r->unwind);
	if (!r->unwind_err)
		return;
	r->unwind_err_at = mono_ns() - r->loop_start;
	recorder__clear_status(r);
	msg__say(r->ms, MSG_ERROR, "the DWARF unwinder's loader failed %.1f s in: %s; user stacks of "
		 "code started, exec'd or loaded since are walked by frame pointers only (callers may "
		 "be missing): the recording goes on, incomplete", r->unwind_err_at / 1e9,
		 strerror(-r->unwind_err));
}

/*
 * When -d ends the recording: counted from the recording's start (the
 * start iterator's time, on the same clock), not from the loop's (start):
 * what came between (/proc, the targets' unwind tables: 80-100 ms under
 * ASan) is inside the window. 0: no -d.
 */
static uint64_t loop_end(const struct recorder *r, uint64_t start)
{
	uint64_t wstart, wstop;

	if (r->o->duration <= 0)
		return 0;
	offcpu_bpf__window(r->bpf, &wstart, &wstop);
	return (wstart && wstart <= start ? wstart : start) + (uint64_t)(r->o->duration * 1e9);
}

/*
 * An epoll set of everything that wakes the loop, or a negative errno,
 * said: a source left out would leave the loop asleep while its data
 * piles up (it would still wake every 100 ms).
 */
static int loop_epoll(const struct recorder *r)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int epfd = epoll_create1(EPOLL_CLOEXEC), err = 0;

	if (epfd < 0)
		err = -errno;
	ev.data.u64 = 0;
	if (!err && epoll_ctl(epfd, EPOLL_CTL_ADD, sig_pipe[0], &ev))
		err = -errno;
	if (!err && epoll_ctl(epfd, EPOLL_CTL_ADD, offcpu_bpf__ringbuf_fd(r->bpf), &ev))
		err = -errno;
	if (!err)
		err = cpu_events__epoll_add(r->cpu, epfd);
	if (!err && r->watch)
		err = target_watch__epoll_add(r->watch, epfd);
	if (!err)
		return epfd;
	msg__say(r->ms, MSG_ERROR, "cannot wait for the recording's events: %s", strerror(-err));
	if (epfd >= 0)
		close(epfd);
	return err;
}

int recorder__loop(struct recorder *r)
{
	uint64_t start = mono_ns(), last_drain = start, last_status = 0;
	uint64_t end = loop_end(r, start);
	int epfd = loop_epoll(r), err = 0;

	if (epfd < 0)
		return epfd;
	r->loop_start = start;
	while (!err) {
		struct epoll_event evs[16];
		uint64_t now;
		char buf[64];
		int timeout = 100;
		bool drain;

		if (end) {
			now = mono_ns();
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
		recorder__reap_child(r, false);
		if (stop_signal || r->child_done || (r->watch && target_watch__all_gone(r->watch)))
			break;
		now = mono_ns();
		drain = now - last_drain >= r->o->flush_ms * 1000000ULL ||
			offcpu_bpf__needs_drain(r->bpf) || merge__bytes(r->m) > MERGE_MAX_BYTES;
		err = recorder__round_trip(r, drain, false);
		if (drain)
			last_drain = now;
		recorder__check_unwinder(r);
		if (r->status_line && now - last_status >= 1000000000ULL) {
			recorder__show_status(r, start);
			last_status = now;
		}
	}
	close(epfd);
	return err;
}
