// SPDX-License-Identifier: GPL-2.0-only
/* Who is recorded: number lists, CPUs, processes, and the command. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <time.h>
#include <unistd.h>

#include "record/record.h"
#include "util/vec.h"

/* Lists longer than this are refused: a range list like 0-65536,0-65536,...
 * would otherwise grow without bound (fuzz_procfs ran out of memory). */
#define INT_LIST_MAX (1u << 20)

/* Append v. -E2BIG past INT_LIST_MAX. */
static int list_push(struct int_list *l, int v)
{
	if (l->n >= INT_LIST_MAX)
		return -E2BIG;
	if (vec__reserve((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v), 16))
		return -ENOMEM;
	l->v[l->n++] = v;
	return 0;
}

/*
 * Parse "1,2,5" (or, with ranges, "0-3,6") into l. Appends, so that an
 * option given twice adds up. -EINVAL on anything that is not a list of
 * non-negative numbers, or on a list of more than INT_LIST_MAX.
 *
 * Not util/idlist: that one reads the report's filters, where strtoull
 * takes " 5", "+5", "-1" (as a huge number) and empty items ("1,,2"); a
 * PID, TID or CPU list refuses each of them, and numbers past INT_MAX
 * (pid_t), as it always has (tests/unit/test_record_parts.c).
 */
int int_list__parse(struct int_list *l, const char *s, bool ranges)
{
	const char *p = s;

	if (!*s)
		return -EINVAL;
	while (*p) {
		char *end;
		long a, b;

		errno = 0;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		a = strtol(p, &end, 10);
		if (errno || a < 0 || a > INT_MAX)
			return -EINVAL;
		b = a;
		if (ranges && *end == '-') {
			p = end + 1;
			if (*p < '0' || *p > '9')
				return -EINVAL;
			b = strtol(p, &end, 10);
			if (errno || b < a || b > INT_MAX || b - a > 65536)
				return -EINVAL;
		}
		for (long v = a; v <= b; v++) {
			int err = list_push(l, (int)v);

			if (err)
				return err == -E2BIG ? -EINVAL : err;
		}
		if (*end == ',')
			end++;
		else if (*end)
			return -EINVAL;
		p = end;
	}
	return 0;
}

void int_list__free(struct int_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

static int read_cpu_list(const char *path, struct int_list *l)
{
	char buf[4096];
	FILE *f = fopen(path, "re");
	int err;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	err = int_list__parse(l, buf, true);
	return err;
}

int online_cpus(struct int_list *l)
{
	return read_cpu_list("/sys/devices/system/cpu/online", l);
}

int possible_cpus(void)
{
	struct int_list l = { 0 };
	int n = -1;

	if (!read_cpu_list("/sys/devices/system/cpu/possible", &l) && l.n)
		n = l.v[l.n - 1] + 1;
	int_list__free(&l);
	return n > 0 ? n : (int)sysconf(_SC_NPROCESSORS_CONF);
}

uint32_t tgid_of(uint32_t tid)
{
	char path[64], buf[4096];
	uint64_t tgid;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	n = proc_read(path, buf, sizeof(buf));
	if (n < 0 || proc_status__field(buf, (size_t)n, "Tgid", 10, &tgid) || !tgid || tgid > INT32_MAX)
		return tid;
	return (uint32_t)tgid;
}

bool pid_exists(int pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d", pid);
	return access(path, F_OK) == 0;
}

bool pid_exited(int pid)
{
	char path[64], buf[1024];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	n = proc_read(path, buf, sizeof(buf));
	if (n < 0)
		return true;
	return strchr("ZXx", proc_stat__state(buf)) != NULL;
}

/*
 * Which targets of -p and -t still live. Processes are watched through
 * pidfds (readable once the process has exited, zombie or not; immune to
 * the pid being reused), threads through /proc/TGID/task/TID.
 */
struct target_watch {
	int *pidfds;
	size_t nr_pidfds;
	int *tids;
	uint32_t *tgids;
	size_t nr_tids;
};

int target_watch__new(const struct record_opts *o, const uint32_t *tgids,
		      struct target_watch **out, int *gone)
{
	struct target_watch *w = calloc(1, sizeof(*w));
	int err = 0;

	if (!w)
		return -ENOMEM;
	w->pidfds = calloc(o->pids.n + 1, sizeof(*w->pidfds));
	w->tids = calloc(o->tids.n + 1, sizeof(*w->tids));
	w->tgids = calloc(o->tids.n + 1, sizeof(*w->tgids));
	if (!w->pidfds || !w->tids || !w->tgids) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < o->pids.n; i++) {
		int fd = (int)syscall(SYS_pidfd_open, o->pids.v[i], 0);

		if (fd < 0) {
			err = -errno;
			if (err == -ENOSYS || err == -EINVAL) /* no pidfds: /proc only */
				continue;
			*gone = o->pids.v[i];
			goto cleanup;
		}
		w->pidfds[w->nr_pidfds++] = fd;
	}
	for (size_t i = 0; i < o->tids.n; i++) {
		w->tids[i] = o->tids.v[i];
		w->tgids[i] = tgids[i];
	}
	w->nr_tids = o->tids.n;
	*out = w;
	return 0;
cleanup:
	target_watch__free(w);
	return err;
}

void target_watch__free(struct target_watch *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nr_pidfds; i++)
		close(w->pidfds[i]);
	free(w->pidfds);
	free(w->tids);
	free(w->tgids);
	free(w);
}

int target_watch__epoll_add(struct target_watch *w, int epfd)
{
	for (size_t i = 0; i < w->nr_pidfds; i++) {
		struct epoll_event ev = { .events = EPOLLIN };

		if (epoll_ctl(epfd, EPOLL_CTL_ADD, w->pidfds[i], &ev))
			return -errno;
	}
	return 0;
}

bool target_watch__all_gone(const struct target_watch *w)
{
	char path[64];

	for (size_t i = 0; i < w->nr_pidfds; i++) {
		struct pollfd p = { .fd = w->pidfds[i], .events = POLLIN };

		if (poll(&p, 1, 0) == 0)
			return false;
	}
	for (size_t i = 0; i < w->nr_tids; i++) {
		snprintf(path, sizeof(path), "/proc/%u/task/%d", w->tgids[i], w->tids[i]);
		if (!access(path, F_OK) && !pid_exited(w->tids[i]))
			return false;
	}
	return true;
}

int run_as__resolve(struct run_as *r, const char *user)
{
	struct passwd *pw;
	char *end;
	int n = 32;

	memset(r, 0, sizeof(*r));
	errno = 0;
	pw = getpwnam(user);
	if (!pw && *user >= '0' && *user <= '9') {
		unsigned long id = strtoul(user, &end, 10);

		if (!*end && id < UINT_MAX)
			pw = getpwuid((uid_t)id);
	}
	if (!pw)
		return errno ? -errno : -ENOENT;
	r->uid = pw->pw_uid;
	r->gid = pw->pw_gid;
	r->name = strdup(pw->pw_name);
	r->home = strdup(pw->pw_dir ? pw->pw_dir : "/");
	if (!r->name || !r->home)
		goto nomem;
	for (;;) {
		gid_t *g = realloc(r->groups, n * sizeof(*g));
		int got = n;

		if (!g)
			goto nomem;
		r->groups = g;
		if (getgrouplist(r->name, r->gid, r->groups, &got) >= 0) {
			r->nr_groups = got;
			return 0;
		}
		if (got <= n || got > 65536)
			return -EINVAL;
		n = got;
	}
nomem:
	run_as__exit(r);
	return -ENOMEM;
}

void run_as__exit(struct run_as *r)
{
	free(r->groups);
	free(r->name);
	free(r->home);
	memset(r, 0, sizeof(*r));
}

/*
 * Become the user for good: supplementary groups, then the group, then the
 * user (the order in which each step still has the privilege it needs).
 * Every id, real, effective and saved, changes, so that nothing can be
 * regained; that it cannot is checked.
 */
static int run_as__become(const struct run_as *r)
{
	if (setgroups((size_t)r->nr_groups, r->groups) || setresgid(r->gid, r->gid, r->gid) ||
	    setresuid(r->uid, r->uid, r->uid))
		return errno;
	if (r->uid != 0 && (setuid(0) == 0 || seteuid(0) == 0))
		return EPERM;
	setenv("USER", r->name, 1);
	setenv("LOGNAME", r->name, 1);
	setenv("HOME", r->home, 1);
	return 0;
}

/* In the child: tell the parent what failed, and how. */
static void __attribute__((noreturn)) child_fail(int fd, int stage, int err)
{
	int msg[2] = { stage, err };

	if (write(fd, msg, sizeof(msg)) != sizeof(msg)) {
		/* nothing more we can do */
	}
	_exit(127);
}

/*
 * Fork the command and hold it before exec. The child waits for a byte on
 * a pipe; then (with --user) takes the user's identity and execs. A failure
 * of either is written on a close-on-exec pipe, so the parent learns of it
 * (EOF means exec succeeded). The recorder's own descriptors are all
 * close-on-exec: the command inherits none of them.
 */
int workload__prepare(struct workload *wl, char **argv, const struct run_as *as)
{
	int go[2], er[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(er, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(go[0]);
		close(go[1]);
		close(er[0]);
		close(er[1]);
		return err;
	}
	if (pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(er[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		if (read(go[0], &c, 1) != 1)
			_exit(127); /* the recorder gave up */
		if (as && (e = run_as__become(as)))
			child_fail(er[1], WORKLOAD_ERR_IDENTITY, e);
		execvp(argv[0], argv);
		child_fail(er[1], WORKLOAD_ERR_EXEC, errno);
	}
	close(go[0]);
	close(er[1]);
	wl->pid = pid;
	wl->go_fd = go[1];
	wl->err_fd = er[0];
	return 0;
}

int workload__start(struct workload *wl, int *stage)
{
	char c = 1;
	int msg[2] = { WORKLOAD_ERR_EXEC, 0 };
	ssize_t n;

	*stage = WORKLOAD_ERR_EXEC;
	if (write(wl->go_fd, &c, 1) != 1)
		return -errno;
	close(wl->go_fd);
	wl->go_fd = -1;
	do
		n = read(wl->err_fd, msg, sizeof(msg));
	while (n < 0 && errno == EINTR);
	close(wl->err_fd);
	wl->err_fd = -1;
	if (n != sizeof(msg))
		return 0;
	*stage = msg[0];
	return -msg[1];
}

/*
 * Resolve -G: an absolute path, or one relative to the cgroup v2 mount
 * (/sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid systems). Only a
 * cgroup v2 directory will do: the BPF helper tests v2 membership.
 */
int cgroup_resolve(const char *arg, char *path, size_t size)
{
	struct statfs sfs;

	if (arg[0] == '/' && !access(arg, F_OK))
		snprintf(path, size, "%s", arg);
	else if (!statfs("/sys/fs/cgroup", &sfs) && sfs.f_type == CGROUP2_SUPER_MAGIC)
		snprintf(path, size, "/sys/fs/cgroup/%s", arg + strspn(arg, "/"));
	else
		snprintf(path, size, "/sys/fs/cgroup/unified/%s", arg + strspn(arg, "/"));
	if (statfs(path, &sfs))
		return -errno;
	return sfs.f_type == CGROUP2_SUPER_MAGIC ? 0 : -ENOTDIR;
}
