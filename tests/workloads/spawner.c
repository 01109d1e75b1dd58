// SPDX-License-Identifier: GPL-2.0-only
/*
 * spawner: many short-lived processes with known names and stacks, for the
 * fault tests (test_fault_shortlived.sh, test_fault_pidreuse.sh).
 *
 *   spawner spawn N LIST [J]  run N children (J at a time, default 4), each
 *                             `spawner child I`; write "PID I SLEPT" per
 *                             child to LIST once all have exited
 *   spawner child I           name itself sl%05d (prctl), then wait 2 ms
 *                             in sl_wait, and exit: 0 when the wait put it
 *                             off the CPU (a voluntary context switch, from
 *                             getrusage), 3 when it did not (the timer had
 *                             expired before the task could block: a
 *                             delayed vCPU), so that no sample is owed
 *   spawner reuse a|b         name itself reuse-a or reuse-b, then 10 times:
 *                             sleep 10 ms and spin 2 ms in wl_reuse_a or
 *                             wl_reuse_b
 *   spawner exec CMD...       name itself ex-before, sleep 10 times 3 ms in
 *                             ex_before (short waits: summed in the
 *                             kernel), then exec CMD; with SPAWNER_EX_NS=
 *                             FILE, ex_before's wall time (ns) in FILE
 *   spawner tree LIST         read a byte from stdin, then fork two
 *                             children (no exec) that sleep 300 ms in
 *                             wl_tree_child, the first of them forking a
 *                             grandchild that sleeps 300 ms in
 *                             wl_tree_grandchild; wait for them in wl_tree_parent;
 *                             write "PID ROLE" per process to LIST
 *                             (parent, child, grandchild)
 *
 * Every child waits in a function of its own binary, so that its off-CPU
 * sample has a user frame that must resolve to that binary. Built with
 * frame pointers; the waits go through a non-inlined frame of ours.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void __attribute__((noinline)) nap_ns(long ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void __attribute__((noinline)) spin_ns(long ns)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

void __attribute__((noinline)) sl_wait(void)
{
	nap_ns(2000000);
}

void __attribute__((noinline)) ex_before(void)
{
	for (int i = 0; i < 10; i++)
		nap_ns(3000000);
}

void __attribute__((noinline)) wl_reuse_a(void)
{
	for (int i = 0; i < 10; i++) {
		nap_ns(10000000);
		spin_ns(2000000);
	}
}

void __attribute__((noinline)) wl_reuse_b(void)
{
	for (int i = 0; i < 10; i++) {
		nap_ns(10000000);
		spin_ns(2000000);
	}
}

void __attribute__((noinline)) wl_tree_child(void)
{
	nap_ns(300000000);
}

void __attribute__((noinline)) wl_tree_grandchild(void)
{
	nap_ns(300000000);
}

/* Wait for every child; false when one failed. */
static bool __attribute__((noinline)) wl_tree_parent(void)
{
	int status;
	bool ok = true;

	while (wait(&status) > 0)
		ok &= WIFEXITED(status) && !WEXITSTATUS(status);
	return ok;
}

/*
 * The process tree of `spawner tree`: forked once the byte has come (the
 * recording of the parent has started by then); the pids go through a
 * pipe to the parent, which writes LIST.
 */
static int tree(const char *list)
{
	int fds[2];
	pid_t pids[3];
	char c;
	FILE *f;

	if (read(STDIN_FILENO, &c, 1) != 1 || pipe(fds))
		return 1;
	pids[0] = getpid();
	for (int i = 0; i < 2; i++) {
		pid_t p = fork();

		if (p < 0)
			return 1;
		if (p == 0) {
			close(fds[0]);
			if (i == 0) {
				pid_t g = fork();

				if (g == 0) {
					wl_tree_grandchild();
					_exit(0);
				}
				if (g < 0 || write(fds[1], &g, sizeof(g)) != sizeof(g))
					_exit(1);
			}
			wl_tree_child();
			_exit(wl_tree_parent() ? 0 : 1);
		}
		pids[i + 1] = p;
	}
	close(fds[1]);
	if (!wl_tree_parent())
		return 1;
	f = fopen(list, "w");
	if (!f)
		return 1;
	fprintf(f, "%d parent\n%d child\n%d child\n", (int)pids[0], (int)pids[1], (int)pids[2]);
	/* the grandchild's pid, from its parent */
	for (pid_t g; read(fds[0], &g, sizeof(g)) == sizeof(g);)
		fprintf(f, "%d grandchild\n", (int)g);
	fclose(f);
	return 0;
}

static int spawn(const char *self, int n, const char *list, int jobs)
{
	pid_t *pids = calloc(n, sizeof(*pids));
	char *slept = calloc(n, 1);
	int started = 0, running = 0, status, rc = 0;
	pid_t p;
	FILE *f;

	if (!pids || !slept)
		return 1;
	while (started < n || running) {
		if (started < n && running < jobs) {
			char idx[16];

			snprintf(idx, sizeof(idx), "%d", started);
			p = fork();
			if (p < 0) {
				perror("spawner: fork");
				rc = 1;
				n = started;
				continue;
			}
			if (p == 0) {
				execl(self, self, "child", idx, (char *)NULL);
				_exit(127);
			}
			pids[started++] = p;
			running++;
			continue;
		}
		p = wait(&status);
		if (p > 0) {
			running--;
			for (int i = started; i-- > 0;)
				if (pids[i] == p) {
					slept[i] = WIFEXITED(status) && !WEXITSTATUS(status);
					break;
				}
			if (!WIFEXITED(status) || (WEXITSTATUS(status) && WEXITSTATUS(status) != 3))
				rc = 1;
		}
	}
	f = fopen(list, "w");
	if (!f)
		return 1;
	for (int i = 0; i < n; i++)
		fprintf(f, "%d %d %d\n", (int)pids[i], i, slept[i]);
	fclose(f);
	free(pids);
	free(slept);
	return rc;
}

int main(int argc, char **argv)
{
	char name[16];

	if (argc >= 4 && !strcmp(argv[1], "spawn"))
		return spawn(argv[0], atoi(argv[2]), argv[3], argc > 4 ? atoi(argv[4]) : 4);
	if (argc == 3 && !strcmp(argv[1], "child")) {
		snprintf(name, sizeof(name), "sl%05d", atoi(argv[2]));
		struct rusage a, b;

		prctl(PR_SET_NAME, name);
		getrusage(RUSAGE_SELF, &a);
		sl_wait();
		getrusage(RUSAGE_SELF, &b);
		return b.ru_nvcsw > a.ru_nvcsw ? 0 : 3;
	}
	if (argc == 3 && !strcmp(argv[1], "reuse") && (argv[2][0] == 'a' || argv[2][0] == 'b')) {
		snprintf(name, sizeof(name), "reuse-%c", argv[2][0]);
		prctl(PR_SET_NAME, name);
		if (argv[2][0] == 'a')
			wl_reuse_a();
		else
			wl_reuse_b();
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "exec")) {
		/*
		 * ex_before's wall time, for the test: the file opened before the
		 * rename (a wait there has the program's own name), the figure
		 * formatted on the stack and written at once.
		 */
		const char *out = getenv("SPAWNER_EX_NS");
		int fd = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
		struct timespec t0, t1;
		char buf[32];
		int n;

		prctl(PR_SET_NAME, "ex-before");
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ex_before();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (fd >= 0) {
			n = snprintf(buf, sizeof(buf), "%lld\n",
				     (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
			if (write(fd, buf, (size_t)n) != n)
				perror("spawner: SPAWNER_EX_NS");
		}
		execvp(argv[2], argv + 2);
		perror("spawner: exec");
		return 127;
	}
	if (argc == 3 && !strcmp(argv[1], "tree"))
		return tree(argv[2]);
	fprintf(stderr, "usage: spawner spawn N LIST [J] | child I | reuse a|b | exec CMD... | tree LIST\n");
	return 2;
}
