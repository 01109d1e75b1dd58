// SPDX-License-Identifier: GPL-2.0-only
/*
 * chainmix: waits whose causes are known, the reference workload of wait
 * chains (`offcpu record --chains`). Each mode builds a chain of threads
 * and processes where every wait is ended by the next one, and the last
 * one spins in a named function or waits for a timer or a disk. Modes run
 * one after the other, in the order given:
 *
 *   cond   cm-a waits on a condition variable (cm_cond_wait); cm-b reads
 *          a pipe (cm_pipe_read), then signals the condition
 *          (cm_cond_signal); cm-c spins 200 ms of CPU (cm_spin), sleeps
 *          100 ms (cm_nap), then writes the pipe (cm_pipe_write). cm-a's
 *          wait (~300 ms) is cm-c's spin, then cm-c's sleep, through cm-b.
 *   tcp    cm-client sends a byte over TCP on 127.0.0.1 (cm_tcp_request)
 *          and waits for the answer (cm_tcp_recv); cm-server receives it,
 *          spins 20 ms (cm_spin) and answers (cm_tcp_send). 10 rounds.
 *          The client is woken by the server's send: loopback's receive
 *          runs as softirq work in the sender's own context.
 *   unix   two processes: this one's cm-client sends a byte over a unix
 *          socket and waits for the answer (cm_unix_recv); a forked
 *          server process's thread cm-worker receives it, spins 150 ms
 *          (cm_spin), writes 16 MiB to a file in -d DIR and fsyncs it
 *          (cm_fsync: D-state waits for the disk), then answers
 *          (cm_unix_send).
 *   relay  one chain through every kind of wait: the main thread cm-main
 *          waits for a mutex (cm_mutex_wait) held by cm-r1, which waits
 *          on a condition variable (cm_cond_wait) signalled by cm-r2
 *          after its pipe read (cm_pipe_read), written by cm-r3 after its
 *          unix socket receive (cm_unix_recv), sent by cm-r4 after its
 *          TCP receive (cm_tcp_recv), sent by cm-r5 after its eventfd
 *          read (cm_eventfd_read), written by cm-r6 after it waited for
 *          a child process (cm_waitpid) that spun 100 ms (cm_spin) and
 *          exited, and after an fsync (cm_fsync). cm-main's wait is the
 *          child's spin and cm-r6's fsync, eight hops away.
 *
 * Each thread notes what it did (-j FILE, JSON): per step its name, pid,
 * tid, CLOCK_MONOTONIC start and end, and the thread's CPU time over it
 * (CLOCK_THREAD_CPUTIME_ID). A thread that starts a chain waits until
 * the threads before it are asleep (their /proc state is S), so that
 * every wait of the chain spans what follows it.
 *
 * Built with frame pointers (chainmix) and without (chainmix-nofp: -O2
 * -fomit-frame-pointer, unwound from .eh_frame). The named functions are
 * CM_FRAME (each stays a frame of its own at -O2), and call libc through
 * cm_call_* helpers that end in no tail call.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wl.h"

#define MS 1000000LL
#define MAX_MARKS 256

/* One step of one thread, as it measured it. */
struct cm_mark {
	char name[32];
	int pid, tid;
	int64_t start_ns, end_ns, cpu_ns;
	int64_t oncpu_ns; /* by the task-clock (wl.h): with what the host stole; cpu_ns without one */
};

/* Shared with forked processes (MAP_SHARED): every process notes here. */
static struct cm_shared {
	int nmarks;
	struct cm_mark marks[MAX_MARKS];
} *sh;

static struct {
	const char *json, *dir;
	int rounds;
} opt = { .dir = ".", .rounds = 10 };

/* A step's start: its clocks. */
struct cm_step {
	int64_t t0, c0, o0;
};

/*
 * The calling thread's time on a CPU by its task-clock, opened at its
 * first step (and again in a forked child, whose inherited counter counts
 * its parent); its CPU time without one. main() holds one from the start,
 * so that no step waits for the first one's RCU grace period.
 */
static int64_t oncpu_now(void)
{
	static __thread int fd = -1, tid;

	if (tid != gettid()) {
		tid = gettid();
		fd = task_clock_open();
	}
	return fd >= 0 ? task_clock_ns(fd) : cpu_ns();
}

static struct cm_step step_begin(void)
{
	int64_t o0 = oncpu_now();

	return (struct cm_step){ mono_ns(), cpu_ns(), o0 };
}

static void step_end(struct cm_step s, const char *name)
{
	int64_t c1 = cpu_ns(), o1 = oncpu_now(), t1 = mono_ns();
	int i = __atomic_fetch_add(&sh->nmarks, 1, __ATOMIC_SEQ_CST);

	if (i >= MAX_MARKS)
		return;
	snprintf(sh->marks[i].name, sizeof(sh->marks[i].name), "%s", name);
	sh->marks[i].pid = getpid();
	sh->marks[i].tid = gettid();
	sh->marks[i].start_ns = s.t0;
	sh->marks[i].end_ns = t1;
	sh->marks[i].cpu_ns = c1 - s.c0;
	sh->marks[i].oncpu_ns = o1 - s.o0;
}

static void name_thread(const char *comm)
{
	prctl(PR_SET_NAME, comm);
}

/* Until thread tid of this process sleeps (state S or D). */
static void wait_asleep(int tid)
{
	char path[64], buf[256];

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	for (int i = 0; i < 20000; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		char *p;

		if (fd >= 0)
			close(fd);
		if (n > 0) {
			buf[n] = 0;
			p = strrchr(buf, ')');
			if (p && (p[2] == 'S' || p[2] == 'D'))
				return;
		}
		usleep(200);
	}
	errno = ETIMEDOUT;
	die("a thread never went to sleep");
}

/* ---- libc, one frame below the named functions -------------------------- */

/* A function that stays a frame of its own, whatever the optimization. */
#define CM_FRAME __attribute__((noipa))

/* After a call: keeps it from being a tail call (the caller's frame stays). */
static inline void cm_done(void)
{
	__asm__ volatile("" ::: "memory");
}

CM_FRAME void cm_call_nanosleep(int64_t ns)
{
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	cm_done();
}

CM_FRAME ssize_t cm_call_read(int fd, void *buf, size_t n)
{
	ssize_t r;

	while ((r = read(fd, buf, n)) < 0 && errno == EINTR)
		;
	cm_done();
	return r;
}

CM_FRAME ssize_t cm_call_write(int fd, const void *buf, size_t n)
{
	ssize_t r = write(fd, buf, n);

	cm_done();
	return r;
}

CM_FRAME ssize_t cm_call_recv(int fd, void *buf, size_t n)
{
	ssize_t r;

	while ((r = recv(fd, buf, n, 0)) < 0 && errno == EINTR)
		;
	cm_done();
	return r;
}

CM_FRAME ssize_t cm_call_send(int fd, const void *buf, size_t n)
{
	ssize_t r = send(fd, buf, n, MSG_NOSIGNAL);

	cm_done();
	return r;
}

/* Exactly one byte in or out, or die. */
static void recv1(int fd, const char *what)
{
	char c;

	if (cm_call_recv(fd, &c, 1) != 1)
		die(what);
}

static void send1(int fd, const char *what)
{
	if (cm_call_send(fd, "x", 1) != 1)
		die(what);
}

/* ---- the named functions ------------------------------------------------- */

/* ns of this thread's CPU time, on the CPU all along. */
CM_FRAME void cm_spin(int64_t ns)
{
	int64_t end = cpu_ns() + ns;
	volatile uint64_t x = 0;

	while (cpu_ns() < end)
		for (int i = 0; i < 10000; i++)
			x += i;
	cm_done();
}

CM_FRAME void cm_nap(int64_t ns)
{
	cm_call_nanosleep(ns);
	cm_done();
}

/*
 * Write 16 MiB to a new file in opt.dir and fsync it: the fsync waits for
 * the disk (D state); noted as step `name`, and the whole (the write, the
 * fsync, the unlink) as `name`.all.
 */
CM_FRAME void cm_fsync(const char *name)
{
	size_t size = 16 << 20;
	char path[4096], all[64], *block = malloc(size);
	struct cm_step s, s_all = step_begin();
	int fd;

	if (!block)
		die("malloc");
	snprintf(path, sizeof(path), "%s/chainmix-%d-%d.tmp", opt.dir, getpid(), gettid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die(path);
	memset(block, 'c', size);
	if (write(fd, block, size) != (ssize_t)size)
		die("write");
	s = step_begin();
	if (fsync(fd))
		die("fsync");
	step_end(s, name);
	close(fd);
	unlink(path);
	free(block);
	snprintf(all, sizeof(all), "%s.all", name);
	step_end(s_all, all);
	cm_done();
}

/* ---- cond: a condition variable, a pipe, a spin and a sleep ------------- */

static pthread_mutex_t cond_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond_cv = PTHREAD_COND_INITIALIZER;
static bool cond_flag;
static int cond_pipe[2];
static volatile int tid_a, tid_b;

CM_FRAME void cm_cond_wait(void)
{
	pthread_mutex_lock(&cond_m);
	while (!cond_flag)
		pthread_cond_wait(&cond_cv, &cond_m);
	pthread_mutex_unlock(&cond_m);
	cm_done();
}

CM_FRAME void cm_cond_signal(void)
{
	pthread_mutex_lock(&cond_m);
	cond_flag = true;
	pthread_cond_signal(&cond_cv);
	pthread_mutex_unlock(&cond_m);
	cm_done();
}

CM_FRAME void cm_pipe_read(int fd)
{
	char c;

	if (cm_call_read(fd, &c, 1) != 1)
		die("pipe read");
	cm_done();
}

CM_FRAME void cm_pipe_write(int fd)
{
	if (cm_call_write(fd, "x", 1) != 1)
		die("pipe write");
	cm_done();
}

static void *cond_a(void *arg)
{
	struct cm_step s;

	(void)arg;
	name_thread("cm-a");
	tid_a = gettid();
	s = step_begin();
	cm_cond_wait();
	step_end(s, "cond.a.wait");
	return NULL;
}

static void *cond_b(void *arg)
{
	struct cm_step s;

	(void)arg;
	name_thread("cm-b");
	tid_b = gettid();
	s = step_begin();
	cm_pipe_read(cond_pipe[0]);
	step_end(s, "cond.b.read");
	cm_cond_signal();
	return NULL;
}

static void *cond_c(void *arg)
{
	struct cm_step s;

	(void)arg;
	name_thread("cm-c");
	while (!tid_a || !tid_b)
		usleep(100);
	wait_asleep(tid_a);
	wait_asleep(tid_b);
	s = step_begin();
	cm_spin(200 * MS);
	step_end(s, "cond.c.spin");
	s = step_begin();
	cm_nap(100 * MS);
	step_end(s, "cond.c.nap");
	cm_pipe_write(cond_pipe[1]);
	return NULL;
}

static void run_threads(void *(*const *fn)(void *), int n)
{
	pthread_t id[8];

	for (int i = 0; i < n; i++) {
		errno = pthread_create(&id[i], NULL, fn[i], NULL);
		if (errno)
			die("pthread_create");
	}
	for (int i = 0; i < n; i++)
		pthread_join(id[i], NULL);
}

static void mode_cond(void)
{
	static void *(*const fn[])(void *) = { cond_a, cond_b, cond_c };

	if (pipe2(cond_pipe, O_CLOEXEC))
		die("pipe");
	run_threads(fn, 3);
	close(cond_pipe[0]);
	close(cond_pipe[1]);
}

/* ---- tcp: a client and a server thread on 127.0.0.1 ---------------------- */

/* A connected pair of TCP sockets on 127.0.0.1: *a the client's, *b the server's. */
static void tcp_pair(int *a, int *b)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sa, &len))
		die("tcp listen");
	*a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*a < 0 || connect(*a, (struct sockaddr *)&sa, sizeof(sa)))
		die("tcp connect");
	*b = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (*b < 0)
		die("tcp accept");
	setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(l);
}

static int tcp_fd[2];

CM_FRAME void cm_tcp_request(int fd)
{
	send1(fd, "tcp send");
	cm_done();
}

CM_FRAME void cm_tcp_recv(int fd)
{
	recv1(fd, "tcp recv");
	cm_done();
}

CM_FRAME void cm_tcp_send(int fd)
{
	send1(fd, "tcp send");
	cm_done();
}

static void *tcp_client(void *arg)
{
	struct cm_step s;

	(void)arg;
	name_thread("cm-client");
	for (int i = 0; i < opt.rounds; i++) {
		cm_tcp_request(tcp_fd[0]);
		s = step_begin();
		cm_tcp_recv(tcp_fd[0]);
		step_end(s, "tcp.client.recv");
	}
	return NULL;
}

static void *tcp_server(void *arg)
{
	struct cm_step s;

	(void)arg;
	name_thread("cm-server");
	for (int i = 0; i < opt.rounds; i++) {
		recv1(tcp_fd[1], "tcp recv");
		s = step_begin();
		cm_spin(20 * MS);
		step_end(s, "tcp.server.spin");
		cm_tcp_send(tcp_fd[1]);
	}
	return NULL;
}

static void mode_tcp(void)
{
	static void *(*const fn[])(void *) = { tcp_client, tcp_server };

	tcp_pair(&tcp_fd[0], &tcp_fd[1]);
	run_threads(fn, 2);
	close(tcp_fd[0]);
	close(tcp_fd[1]);
}

/* ---- unix: a client process and a server process's worker ---------------- */

static int unix_fd[2];

CM_FRAME void cm_unix_recv(int fd)
{
	recv1(fd, "unix recv");
	cm_done();
}

CM_FRAME void cm_unix_send(int fd)
{
	send1(fd, "unix send");
	cm_done();
}

static void *unix_worker(void *arg)
{
	struct cm_step s;

	(void)arg;
	name_thread("cm-worker");
	recv1(unix_fd[1], "unix recv");
	s = step_begin();
	cm_spin(150 * MS);
	step_end(s, "unix.worker.spin");
	cm_fsync("unix.worker.fsync");
	cm_unix_send(unix_fd[1]);
	return NULL;
}

static void mode_unix(void)
{
	static void *(*const fn[])(void *) = { unix_worker };
	struct cm_step s;
	pid_t child;
	int st;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, unix_fd))
		die("socketpair");
	child = fork();
	if (child < 0)
		die("fork");
	if (!child) {
		name_thread("cm-server");
		close(unix_fd[0]);
		run_threads(fn, 1);
		_exit(0);
	}
	close(unix_fd[1]);
	name_thread("cm-client");
	usleep(20000); /* the worker is in its recv */
	send1(unix_fd[0], "unix send");
	s = step_begin();
	cm_unix_recv(unix_fd[0]);
	step_end(s, "unix.client.recv");
	if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
		die("the server process failed");
	close(unix_fd[0]);
	name_thread("chainmix");
}

/* ---- relay: every kind of wait in one chain ------------------------------ */

static pthread_mutex_t relay_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t relay_cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t relay_cv = PTHREAD_COND_INITIALIZER;
static bool relay_flag;
static int relay_pipe[2], relay_unix[2], relay_tcp[2], relay_efd;
static volatile int relay_tid[8]; /* 0: cm-main, k: cm-rk */

CM_FRAME void cm_mutex_wait(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	cm_done();
}

CM_FRAME void cm_relay_cond_wait(void)
{
	pthread_mutex_lock(&relay_cm);
	while (!relay_flag)
		pthread_cond_wait(&relay_cv, &relay_cm);
	pthread_mutex_unlock(&relay_cm);
	cm_done();
}

CM_FRAME void cm_eventfd_read(int fd)
{
	uint64_t v;

	if (cm_call_read(fd, &v, sizeof(v)) != sizeof(v))
		die("eventfd read");
	cm_done();
}

CM_FRAME void cm_waitpid(pid_t child)
{
	int st;

	if (waitpid(child, &st, 0) != child || !WIFEXITED(st))
		die("waitpid");
	cm_done();
}

static void *relay_r1(void *arg)
{
	(void)arg;
	name_thread("cm-r1");
	pthread_mutex_lock(&relay_m);
	relay_tid[1] = gettid();
	cm_relay_cond_wait();
	pthread_mutex_unlock(&relay_m);
	return NULL;
}

static void *relay_r2(void *arg)
{
	(void)arg;
	name_thread("cm-r2");
	relay_tid[2] = gettid();
	cm_pipe_read(relay_pipe[0]);
	pthread_mutex_lock(&relay_cm);
	relay_flag = true;
	pthread_cond_signal(&relay_cv);
	pthread_mutex_unlock(&relay_cm);
	return NULL;
}

static void *relay_r3(void *arg)
{
	(void)arg;
	name_thread("cm-r3");
	relay_tid[3] = gettid();
	cm_unix_recv(relay_unix[1]);
	cm_pipe_write(relay_pipe[1]);
	return NULL;
}

static void *relay_r4(void *arg)
{
	(void)arg;
	name_thread("cm-r4");
	relay_tid[4] = gettid();
	cm_tcp_recv(relay_tcp[1]);
	cm_unix_send(relay_unix[0]);
	return NULL;
}

static void *relay_r5(void *arg)
{
	(void)arg;
	name_thread("cm-r5");
	relay_tid[5] = gettid();
	cm_eventfd_read(relay_efd);
	cm_tcp_send(relay_tcp[0]);
	return NULL;
}

static void *relay_r6(void *arg)
{
	uint64_t one = 1;
	struct cm_step s;
	pid_t child;

	(void)arg;
	name_thread("cm-r6");
	for (int k = 0; k < 6; k++) {
		while (!relay_tid[k])
			usleep(100);
		wait_asleep(relay_tid[k]);
	}
	child = fork();
	if (child < 0)
		die("fork");
	if (!child) {
		name_thread("cm-child");
		s = step_begin();
		cm_spin(100 * MS);
		step_end(s, "relay.child.spin");
		_exit(0);
	}
	cm_waitpid(child);
	cm_fsync("relay.r6.fsync");
	if (write(relay_efd, &one, sizeof(one)) != sizeof(one))
		die("eventfd write");
	return NULL;
}

static void *relay_main(void *arg)
{
	struct cm_step s;

	(void)arg;
	name_thread("cm-main");
	while (!relay_tid[1])
		usleep(100);
	relay_tid[0] = gettid();
	s = step_begin();
	cm_mutex_wait(&relay_m);
	step_end(s, "relay.main.wait");
	pthread_mutex_unlock(&relay_m);
	return NULL;
}

static void mode_relay(void)
{
	static void *(*const fn[])(void *) = { relay_r1, relay_main, relay_r2, relay_r3,
					       relay_r4, relay_r5, relay_r6 };

	if (pipe2(relay_pipe, O_CLOEXEC) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, relay_unix))
		die("pipe, socketpair");
	tcp_pair(&relay_tcp[0], &relay_tcp[1]);
	relay_efd = eventfd(0, EFD_CLOEXEC);
	if (relay_efd < 0)
		die("eventfd");
	run_threads(fn, 7);
	close(relay_pipe[0]);
	close(relay_pipe[1]);
	close(relay_unix[0]);
	close(relay_unix[1]);
	close(relay_tcp[0]);
	close(relay_tcp[1]);
	close(relay_efd);
}

/* ---- main ----------------------------------------------------------------- */

static void write_json(const char *path)
{
	FILE *f = fopen(path, "w");
	int n = sh->nmarks < MAX_MARKS ? sh->nmarks : MAX_MARKS;

	if (!f)
		die(path);
	fprintf(f, "{\n  \"pid\": %d,\n  \"marks\": [\n", getpid());
	for (int i = 0; i < n; i++) {
		const struct cm_mark *m = &sh->marks[i];

		fprintf(f,
			"    {\"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"start_ns\": %lld, "
			"\"end_ns\": %lld, \"cpu_ns\": %lld, \"oncpu_ns\": %lld}%s\n",
			m->name, m->pid, m->tid, (long long)m->start_ns, (long long)m->end_ns,
			(long long)m->cpu_ns, (long long)m->oncpu_ns, i + 1 < n ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	if (fclose(f))
		die(path);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: chainmix [-j FILE] [-d DIR] [-n ROUNDS] MODE...\n"
		   "  MODE: cond, tcp, unix, relay (run in the order given)\n"
		   "  -j, --json FILE   write what the threads measured there\n"
		   "  -d, --dir DIR     where unix and relay fsync a file (default .: not tmpfs)\n"
		   "  -n, --rounds N    tcp's rounds (default 10)\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", required_argument, NULL, 'j' },
		{ "dir", required_argument, NULL, 'd' },
		{ "rounds", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "j:d:n:h", lo, NULL)) != -1) {
		switch (c) {
		case 'j': opt.json = optarg; break;
		case 'd': opt.dir = optarg; break;
		case 'n': opt.rounds = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc || opt.rounds < 1) {
		usage(stderr);
		return 2;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap");
	oncpu_now(); /* the first counter, kept (see oncpu_now) */
	for (int i = optind; i < argc; i++) {
		if (!strcmp(argv[i], "cond"))
			mode_cond();
		else if (!strcmp(argv[i], "tcp"))
			mode_tcp();
		else if (!strcmp(argv[i], "unix"))
			mode_unix();
		else if (!strcmp(argv[i], "relay"))
			mode_relay();
		else {
			usage(stderr);
			return 2;
		}
	}
	if (opt.json)
		write_json(opt.json);
	return 0;
}
