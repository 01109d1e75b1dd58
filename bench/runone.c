// SPDX-License-Identifier: GPL-2.0-only
/*
 * runone OUT CMD [ARG...]: run CMD with stdout and stderr to /dev/null and
 * append "WALL_S PEAK_RSS_KB" to OUT: the time from its fork to its exit,
 * to the ms, and its peak RSS from wait4(). A small C process starts it,
 * so that the peak a child inherits from its parent until exec() is this
 * one's, a few hundred KB (python's would be 10 MB), and no other process
 * starts or ends inside the time (`date` before and after took 4-8 ms on
 * a paravirtualized VM: a tenth of a 0.13 s report).
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct rusage ru;
	double t0, t1;
	FILE *out;
	int status, fd;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: runone OUT CMD [ARG...]\n");
		return 2;
	}
	t0 = now();
	pid = fork();
	if (pid < 0) {
		perror("runone: fork");
		return 1;
	}
	if (pid == 0) {
		fd = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("runone: wait4");
		return 1;
	}
	t1 = now();
	out = fopen(argv[1], "a");
	if (!out || fprintf(out, "%.3f %ld\n", t1 - t0, ru.ru_maxrss) < 0 || fclose(out)) {
		perror(argv[1]);
		return 1;
	}
	return 0;
}
