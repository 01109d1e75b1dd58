// SPDX-License-Identifier: GPL-2.0-only
/*
 * waitmix: threads that wait a known time in named functions, and one that
 * burns a known CPU time. The reference workload of the record tests and of
 * `make demo`.
 *
 *   nanosleep   wl_nanosleep_loop  100 short sleeps (4 ms each)
 *   pipe-read   wl_pipe_read       blocking read; the writer writes after a delay
 *   pipe-write  wl_pipe_write      the writer's sleep before each write
 *   mutex-wait  wl_mutex_wait      pthread_mutex_lock on a mutex held by...
 *   mutex-hold  wl_mutex_hold      ...this thread, which sleeps while holding it
 *   fsync       wl_fsync           fsync of freshly written data (D state)
 *   vfork-wait  wl_vfork_wait      parent of a CLONE_VFORK child, in D state until
 *                                  the child (wl_vfork_child, asleep) exits
 *   spin        wl_spin            on-CPU only
 *   child-sleep wl_child_sleep     (with --child) sleeps in a forked process
 *
 * Every thread measures itself, from its first to its last instruction:
 * CLOCK_MONOTONIC wall time, CLOCK_THREAD_CPUTIME_ID on-CPU time and the
 * run-queue wait from /proc/self/task/TID/schedstat, so that
 * wall - oncpu - rqwait is what the kernel accounts as asleep (S + D). The
 * same three are measured around each blocking call in the named function:
 * the disk time of fsync is not fixed, so measured values are the reference,
 * designed values are printed beside them. The CPU time leaves out what the
 * hypervisor stole while the thread was current, which is then counted
 * asleep; so that the checkers can bound it, the thread's task-clock (see
 * wl.h) is measured beside it ("task_clock_ns", -1 where perf events are
 * not allowed).
 *
 * With --json FILE (or $WAITMIX_JSON) a summary is written there after all
 * threads have ended; without -q a table goes to stdout.
 *
 * Frame pointers: Debian's libc has none, and a frame-pointer walk from
 * inside it skips its immediate caller. Each named function therefore calls
 * libc through a one-line wl_call_* helper, which is the frame that gets
 * skipped; the named function stays in the stack.
 *
 * Without frame pointers: the same source is built as waitmix-nofp with
 * -O2 -fomit-frame-pointer (see the Makefile), to check unwinding from
 * .eh_frame: there every named function, the outer wl_* and the inner
 * wl_call_* (and wl_spin_step under wl_spin), must be in the stacks. So
 * that each is a frame of its own at -O2, the named functions are
 * WL_FRAME (not inlined, cloned or merged) and no helper ends in a tail
 * call (wl_done after the call). The JSON names each thread's inner
 * function too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wl.h"

#define MS 1000000LL

/* A function that stays a frame of its own, whatever the optimization. */
#define WL_FRAME __attribute__((noipa))

/* After a call: keeps it from being a tail call (the caller's frame stays). */
static inline void wl_done(void)
{
	__asm__ volatile("" ::: "memory");
}

struct wl_thread {
	const char *role;
	const char *func;
	const char *inner; /* the named function it waits (or spins) in, under func */
	pid_t pid, tid;
	int calls;
	int64_t design_ns;           /* designed time in func (off-CPU, or CPU for spin) */
	int64_t f_wall, f_cpu, f_tclk, f_rq; /* summed around the calls in func */
	/* f_rq split by what the calls did (see span_end) */
	int64_t f_rq_wake, f_rq_preempt, f_rq_mixed;
	long f_nvcsw; /* voluntary context switches inside the calls: its off-CPU intervals there */
	int64_t t0, t1, cpu0, cpu1, tclk0, tclk1, rq0, rq1; /* whole thread */
	int schedfd, tclk; /* tclk: its task-clock counter, -1 if none */
};

static struct {
	double scale;
	const char *json;
	const char *dir;
	int fsync_kb;
	int fsyncs;
	int child;
	int quiet;
} opt = { .scale = 1.0, .dir = ".", .fsync_kb = 64, .fsyncs = 100 };

static int64_t scaled(int64_t ns)
{
	return (int64_t)(ns * opt.scale);
}

/* Run-queue wait of the calling thread so far (schedstat field 2), ns. */
static int64_t rq_ns(struct wl_thread *t)
{
	char buf[128];
	long long oncpu, rq;
	ssize_t n = pread(t->schedfd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (sscanf(buf, "%lld %lld", &oncpu, &rq) != 2)
		return 0;
	return rq;
}

/* Start of a thread's window: everything it does from here is measured. */
static void thread_begin(struct wl_thread *t, const char *comm)
{
	char path[64];

	t->tclk = task_clock_open();
	t->t0 = mono_ns();
	t->cpu0 = cpu_ns();
	t->tclk0 = task_clock_ns(t->tclk);
	t->pid = getpid();
	t->tid = gettid();
	prctl(PR_SET_NAME, comm);
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", t->tid);
	t->schedfd = open(path, O_RDONLY | O_CLOEXEC);
	t->rq0 = rq_ns(t);
}

static void thread_end(struct wl_thread *t)
{
	t->rq1 = rq_ns(t);
	t->tclk1 = task_clock_ns(t->tclk);
	t->cpu1 = cpu_ns();
	t->t1 = mono_ns();
	close(t->schedfd);
	if (t->tclk >= 0)
		close(t->tclk);
}

struct span {
	int64_t wall, cpu, tclk, rq;
	long nvcsw, nivcsw;
};

static void switches(long *vol, long *invol)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	*vol = ru.ru_nvcsw;
	*invol = ru.ru_nivcsw;
}

static void span_begin(struct wl_thread *t, struct span *s)
{
	switches(&s->nvcsw, &s->nivcsw);
	s->rq = rq_ns(t);
	s->tclk = task_clock_ns(t->tclk);
	s->cpu = cpu_ns();
	s->wall = mono_ns();
}

/*
 * Run-queue wait comes from two causes that an off-CPU recorder must treat
 * differently: the wait for a CPU after a wake-up is inside the off-CPU
 * interval (switch-out to switch-in), the wait after a preemption is not.
 * schedstat gives only the sum, so each call's share is classed by its
 * context switches: no involuntary one, it is all wake-up latency; no
 * voluntary one, all preemption; both, it stays "mixed".
 */
static void span_end(struct wl_thread *t, struct span *s)
{
	long vol, invol;
	int64_t rq;

	t->f_wall += mono_ns() - s->wall;
	t->f_cpu += cpu_ns() - s->cpu;
	t->f_tclk += task_clock_ns(t->tclk) - s->tclk;
	rq = rq_ns(t) - s->rq;
	switches(&vol, &invol);
	t->f_rq += rq;
	if (invol == s->nivcsw)
		t->f_rq_wake += rq;
	else if (vol == s->nvcsw)
		t->f_rq_preempt += rq;
	else
		t->f_rq_mixed += rq;
	t->f_nvcsw += vol - s->nvcsw;
	t->calls++;
}

/* The libc calls, one frame below the named functions (see the top). */
WL_FRAME void wl_call_nanosleep(int64_t ns)
{
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	wl_done();
}

WL_FRAME ssize_t wl_call_read(int fd, void *buf, size_t n)
{
	ssize_t r = read(fd, buf, n);

	wl_done();
	return r;
}

WL_FRAME ssize_t wl_call_write(int fd, const void *buf, size_t n)
{
	ssize_t r = write(fd, buf, n);

	wl_done();
	return r;
}

WL_FRAME int wl_call_mutex_lock(pthread_mutex_t *m)
{
	int r = pthread_mutex_lock(m);

	wl_done();
	return r;
}

WL_FRAME int wl_call_fsync(int fd)
{
	int r = fsync(fd);

	wl_done();
	return r;
}

/* ---- nanosleep ---------------------------------------------------------- */

#define NSLEEPS 100
#define SLEEP_NS (4 * MS)

WL_FRAME void wl_nanosleep_loop(struct wl_thread *t)
{
	struct span s;

	for (int i = 0; i < NSLEEPS; i++) {
		span_begin(t, &s);
		wl_call_nanosleep(scaled(SLEEP_NS));
		span_end(t, &s);
	}
}

static void *nanosleep_main(void *arg)
{
	struct wl_thread *t = arg;

	thread_begin(t, "wm-nanosleep");
	t->design_ns = NSLEEPS * scaled(SLEEP_NS);
	wl_nanosleep_loop(t);
	thread_end(t);
	return NULL;
}

/* ---- pipe --------------------------------------------------------------- */

#define NPIPE 5
#define PIPE_DELAY_NS (80 * MS)

static int pipefd[2];

WL_FRAME void wl_pipe_read(struct wl_thread *t)
{
	struct span s;
	char c;

	for (int i = 0; i < NPIPE; i++) {
		span_begin(t, &s);
		if (wl_call_read(pipefd[0], &c, 1) != 1)
			die("pipe read");
		span_end(t, &s);
	}
}

WL_FRAME void wl_pipe_write(struct wl_thread *t)
{
	struct span s;

	for (int i = 0; i < NPIPE; i++) {
		span_begin(t, &s);
		wl_call_nanosleep(scaled(PIPE_DELAY_NS));
		span_end(t, &s);
		if (wl_call_write(pipefd[1], "x", 1) != 1)
			die("pipe write");
	}
}

static void *pipe_read_main(void *arg)
{
	struct wl_thread *t = arg;

	thread_begin(t, "wm-piperead");
	t->design_ns = NPIPE * scaled(PIPE_DELAY_NS);
	wl_pipe_read(t);
	thread_end(t);
	return NULL;
}

static void *pipe_write_main(void *arg)
{
	struct wl_thread *t = arg;

	thread_begin(t, "wm-pipewrite");
	t->design_ns = NPIPE * scaled(PIPE_DELAY_NS);
	wl_pipe_write(t);
	thread_end(t);
	return NULL;
}

/* ---- mutex -------------------------------------------------------------- */

#define HOLD_NS (600 * MS)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t held;

WL_FRAME void wl_mutex_hold(struct wl_thread *t)
{
	struct span s;

	pthread_mutex_lock(&lock);
	sem_post(&held);
	span_begin(t, &s);
	wl_call_nanosleep(scaled(HOLD_NS));
	span_end(t, &s);
	pthread_mutex_unlock(&lock);
}

WL_FRAME void wl_mutex_wait(struct wl_thread *t)
{
	struct span s;

	span_begin(t, &s);
	wl_call_mutex_lock(&lock);
	span_end(t, &s);
	pthread_mutex_unlock(&lock);
}

static void *mutex_hold_main(void *arg)
{
	struct wl_thread *t = arg;

	thread_begin(t, "wm-mutexhold");
	t->design_ns = scaled(HOLD_NS);
	wl_mutex_hold(t);
	thread_end(t);
	return NULL;
}

static void *mutex_wait_main(void *arg)
{
	struct wl_thread *t = arg;

	thread_begin(t, "wm-mutexwait");
	t->design_ns = scaled(HOLD_NS);
	while (sem_wait(&held) && errno == EINTR)
		;
	wl_mutex_wait(t);
	thread_end(t);
	return NULL;
}

/* ---- fsync -------------------------------------------------------------- */


/* Dirties the page cache; kept out of wl_fsync so that any throttling
 * sleep in write() is not counted as fsync time. */
WL_FRAME void wl_fsync_fill(int fd, const char *buf, size_t len, int n)
{
	for (int i = 0; i < n; i++)
		if (wl_call_write(fd, buf, len) != (ssize_t)len)
			die("write");
}

WL_FRAME void wl_fsync(struct wl_thread *t, int fd)
{
	struct span s;

	span_begin(t, &s);
	if (wl_call_fsync(fd))
		die("fsync");
	span_end(t, &s);
}

static void *fsync_main(void *arg)
{
	struct wl_thread *t = arg;
	size_t len = 1024;
	char path[4096], *buf;
	int fd;

	thread_begin(t, "wm-fsync");
	t->design_ns = 0; /* disk time: measured only */
	snprintf(path, sizeof(path), "%s/waitmix-fsync.%d", opt.dir, t->tid);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die(path);
	unlink(path);
	buf = malloc(len);
	if (!buf)
		die("malloc");
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(i * 131 + 7);
	for (int r = 0; r < opt.fsyncs; r++) {
		wl_fsync_fill(fd, buf, len, opt.fsync_kb);
		wl_fsync(t, fd);
	}
	free(buf);
	close(fd);
	thread_end(t);
	return NULL;
}

/* ---- vfork: a D-state wait of designed length ----------------------------
 * The parent of a CLONE_VFORK child waits killable (TASK_UNINTERRUPTIBLE |
 * TASK_WAKEKILL, shown as D) until the child exits. The child has its own
 * stack, so its sleep is in wl_vfork_child and not under wl_vfork_wait. */

#define VFORK_NS (300 * MS)

void wl_vfork_child(int64_t ns);

static int vfork_child_main(void *arg)
{
	wl_vfork_child(*(int64_t *)arg);
	_exit(0);
}

WL_FRAME void wl_vfork_child(int64_t ns)
{
	wl_call_nanosleep(ns);
	wl_done();
}

WL_FRAME pid_t wl_call_clone_vfork(void *stack_top, int64_t *ns)
{
	pid_t pid = clone(vfork_child_main, stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD, ns);

	wl_done();
	return pid;
}

WL_FRAME pid_t wl_vfork_wait(struct wl_thread *t, void *stack_top)
{
	struct span s;
	int64_t ns = scaled(VFORK_NS);
	pid_t pid;

	span_begin(t, &s);
	pid = wl_call_clone_vfork(stack_top, &ns);
	span_end(t, &s);
	if (pid < 0)
		die("clone");
	return pid;
}

static void *vfork_main(void *arg)
{
	struct wl_thread *t = arg;
	size_t len = 256 * 1024;
	char *stack;
	pid_t child;

	/*
	 * The window opens before the thread's first malloc: that creates its
	 * arena (mmap, mprotect), which waits for mmap_lock while other
	 * threads create theirs, 20 ms once under OFFCPU_TEST_STALL. A wait
	 * before thread_begin is the thread's own but outside schedstat's
	 * window, and the per-thread check would count it as excess.
	 */
	thread_begin(t, "wm-vfork");
	t->design_ns = scaled(VFORK_NS);
	stack = malloc(len);
	if (!stack)
		die("malloc");
	child = wl_vfork_wait(t, stack + len);
	/*
	 * Reaped here, not in wl_vfork_wait: the vfork ends when the child
	 * releases its memory, before it is a zombie; on a busy machine the
	 * wait for the rest of its exit took 20 ms, counted under
	 * wl_vfork_wait but outside the span measured there.
	 */
	waitpid(child, NULL, 0);
	free(stack);
	thread_end(t);
	return NULL;
}

/* ---- spin --------------------------------------------------------------- */

#define SPIN_NS (500 * MS)

/*
 * The arithmetic, in a leaf function of its own: about 0.5 ms between
 * wl_spin's clock reads keeps the samples out of the clock_gettime path.
 * Built with -O2 -fomit-frame-pointer it has no frame at all: a sample in
 * it shows wl_spin above it only when unwound from .eh_frame.
 */
WL_FRAME uint64_t wl_spin_step(uint64_t x)
{
	for (int i = 0; i < 200000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	__asm__ volatile("" : "+r"(x));
	return x;
}

WL_FRAME void wl_spin(struct wl_thread *t)
{
	struct span s;
	int64_t start = cpu_ns(), target = scaled(SPIN_NS);
	uint64_t x = 1;

	span_begin(t, &s);
	while (cpu_ns() - start < target)
		x = wl_spin_step(x);
	span_end(t, &s);
	__asm__ volatile("" : : "r"(x));
}

static void *spin_main(void *arg)
{
	struct wl_thread *t = arg;

	thread_begin(t, "wm-spin");
	/* Lowest priority: a waiter that wakes on this CPU preempts the
	 * spinner at once, so run-queue waits stay small beside sleeps. */
	setpriority(PRIO_PROCESS, t->tid, 19);
	t->design_ns = scaled(SPIN_NS);
	wl_spin(t);
	thread_end(t);
	return NULL;
}

/* ---- child process ------------------------------------------------------ */

#define NCHILD 5
#define CHILD_NS (50 * MS)

WL_FRAME void wl_child_sleep(struct wl_thread *t)
{
	struct span s;

	for (int i = 0; i < NCHILD; i++) {
		span_begin(t, &s);
		wl_call_nanosleep(scaled(CHILD_NS));
		span_end(t, &s);
	}
}

/* Forks a process that sleeps in wl_child_sleep and sends its measurement
 * back over a pipe (the struct is plain data; role/func are static strings
 * at the same address in the child). */
static pid_t child_start(int *rfd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		struct wl_thread t = { .role = "child-sleep", .func = "wl_child_sleep",
				       .inner = "wl_call_nanosleep" };

		close(p[0]);
		thread_begin(&t, "wm-child");
		t.design_ns = NCHILD * scaled(CHILD_NS);
		wl_child_sleep(&t);
		thread_end(&t);
		if (write(p[1], &t, sizeof(t)) != (ssize_t)sizeof(t))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

/* ---- output ------------------------------------------------------------- */

static void write_json(FILE *f, struct wl_thread *th, int n, int64_t t0, int64_t t1)
{
	fprintf(f, "{\n  \"pid\": %d,\n  \"scale\": %g,\n  \"start_ns\": %lld,\n"
		   "  \"end_ns\": %lld,\n  \"threads\": [\n",
		getpid(), opt.scale, (long long)t0, (long long)t1);
	for (int i = 0; i < n; i++) {
		struct wl_thread *t = &th[i];
		int64_t wall = t->t1 - t->t0, oncpu = t->cpu1 - t->cpu0, rq = t->rq1 - t->rq0;

		fprintf(f, "    {\"role\": \"%s\", \"func\": \"%s\", \"inner\": \"%s\", \"pid\": %d, \"tid\": %d, "
			   "\"calls\": %d, \"design_ns\": %lld,\n"
			   "     \"func_wall_ns\": %lld, \"func_oncpu_ns\": %lld, \"func_rq_ns\": %lld, "
			   "\"func_offcpu_ns\": %lld, \"func_task_clock_ns\": %lld,\n"
			   "     \"func_rq_wake_ns\": %lld, \"func_rq_preempt_ns\": %lld, "
			   "\"func_rq_mixed_ns\": %lld, \"func_nvcsw\": %ld,\n"
			   "     \"start_ns\": %lld, \"end_ns\": %lld, \"wall_ns\": %lld, "
			   "\"oncpu_ns\": %lld, \"rq_ns\": %lld, \"offcpu_ns\": %lld, \"task_clock_ns\": %lld}%s\n",
			t->role, t->func, t->inner, t->pid, t->tid, t->calls, (long long)t->design_ns,
			(long long)t->f_wall, (long long)t->f_cpu, (long long)t->f_rq,
			(long long)(t->f_wall - t->f_cpu - t->f_rq), (long long)(t->tclk >= 0 ? t->f_tclk : -1),
			(long long)t->f_rq_wake, (long long)t->f_rq_preempt, (long long)t->f_rq_mixed,
			t->f_nvcsw,
			(long long)t->t0, (long long)t->t1, (long long)wall, (long long)oncpu,
			(long long)rq, (long long)(wall - oncpu - rq),
			(long long)(t->tclk >= 0 ? t->tclk1 - t->tclk0 : -1), i + 1 < n ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
}

static void print_table(struct wl_thread *th, int n)
{
	printf("%-12s %7s %-18s %10s %10s %10s %10s %10s\n", "role", "tid", "function",
	       "func ms", "design ms", "wall ms", "oncpu ms", "asleep ms");
	for (int i = 0; i < n; i++) {
		struct wl_thread *t = &th[i];
		int64_t wall = t->t1 - t->t0, oncpu = t->cpu1 - t->cpu0, rq = t->rq1 - t->rq0;
		/* for spin the function's time is CPU time, else off-CPU time */
		int64_t f = !strcmp(t->role, "spin") ? t->f_cpu : t->f_wall - t->f_cpu - t->f_rq;

		printf("%-12s %7d %-18s %10.1f %10.1f %10.1f %10.1f %10.1f\n", t->role, t->tid,
		       t->func, f / 1e6, t->design_ns / 1e6, wall / 1e6, oncpu / 1e6,
		       (wall - oncpu - rq) / 1e6);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: waitmix [-s SCALE] [-j JSON] [-d DIR] [-f N] [-k KB] [--child] [-q]\n"
		"  -s, --scale F     multiply every designed duration by F (default 1)\n"
		"  -j, --json FILE   write the measured summary there (or $WAITMIX_JSON)\n"
		"  -d, --dir DIR     directory of the fsync file, on a real disk (default .)\n"
		"  -f, --fsyncs N    number of fsyncs (default 100)\n"
		"  -k, --fsync-kb N  KiB written before each fsync (default 64)\n"
		"  -c, --child       also fork a process that sleeps in wl_child_sleep\n"
		"  -q, --quiet       no table on stdout\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "scale", required_argument, NULL, 's' }, { "json", required_argument, NULL, 'j' },
		{ "dir", required_argument, NULL, 'd' },   { "fsync-kb", required_argument, NULL, 'k' },
		{ "fsyncs", required_argument, NULL, 'f' },
		{ "child", no_argument, NULL, 'c' },       { "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },        { NULL, 0, NULL, 0 },
	};
	static void *(*const mains[])(void *) = {
		nanosleep_main, pipe_read_main, pipe_write_main, mutex_hold_main,
		mutex_wait_main, fsync_main, vfork_main, spin_main,
	};
	static const char *const roles[][3] = {
		{ "nanosleep", "wl_nanosleep_loop", "wl_call_nanosleep" },
		{ "pipe-read", "wl_pipe_read", "wl_call_read" },
		{ "pipe-write", "wl_pipe_write", "wl_call_nanosleep" },
		{ "mutex-hold", "wl_mutex_hold", "wl_call_nanosleep" },
		{ "mutex-wait", "wl_mutex_wait", "wl_call_mutex_lock" },
		{ "fsync", "wl_fsync", "wl_call_fsync" },
		{ "vfork-wait", "wl_vfork_wait", "wl_call_clone_vfork" },
		{ "spin", "wl_spin", "wl_spin_step" },
	};
	enum { NT = sizeof(mains) / sizeof(mains[0]) };
	struct wl_thread th[NT + 1];
	pthread_t pt[NT];
	int64_t t0 = mono_ns(), t1;
	int c, n = NT, rfd = -1;
	pid_t child = 0;
	int clock_hold;

	opt.json = getenv("WAITMIX_JSON");
	while ((c = getopt_long(argc, argv, "s:j:d:k:f:cqh", lo, NULL)) != -1) {
		switch (c) {
		case 's': opt.scale = atof(optarg); break;
		case 'j': opt.json = optarg; break;
		case 'd': opt.dir = optarg; break;
		case 'k': opt.fsync_kb = atoi(optarg); break;
		case 'f': opt.fsyncs = atoi(optarg); break;
		case 'c': opt.child = 1; break;
		case 'q': opt.quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || !(opt.scale > 0) || opt.fsync_kb < 0 || opt.fsyncs < 0) {
		usage(stderr);
		return 2;
	}
	if (pipe2(pipefd, O_CLOEXEC) || sem_init(&held, 0, 0))
		die("setup");
	/* The first task-clock counter of a quiet system waits for an RCU
	 * grace period (perf turns its context-switch hooks on), 20 ms, and
	 * threads opening theirs at once all wait for it: taken here, before
	 * any thread's measured window, and kept open until the end. */
	clock_hold = task_clock_open();
	memset(th, 0, sizeof(th));
	if (opt.child)
		child = child_start(&rfd);
	/* The holder starts first so that the waiter finds the mutex held. */
	for (int i = 0; i < NT; i++) {
		th[i].role = roles[i][0];
		th[i].func = roles[i][1];
		th[i].inner = roles[i][2];
		if (pthread_create(&pt[i], NULL, mains[i], &th[i]))
			die("pthread_create");
	}
	for (int i = 0; i < NT; i++)
		pthread_join(pt[i], NULL);
	if (child) {
		int st;

		if (read(rfd, &th[n], sizeof(th[n])) == (ssize_t)sizeof(th[n]))
			n++;
		waitpid(child, &st, 0);
		close(rfd);
	}
	t1 = mono_ns();
	if (opt.json) {
		FILE *f = fopen(opt.json, "w");

		if (!f)
			die(opt.json);
		write_json(f, th, n, t0, t1);
		if (fclose(f))
			die(opt.json);
	}
	if (!opt.quiet)
		print_table(th, n);
	if (clock_hold >= 0)
		close(clock_hold);
	return 0;
}
