// SPDX-License-Identifier: GPL-2.0-only
/*
 * A recorder's life: checks and set-up in an order that fails early and
 * leaves nothing behind (open), the start of the recording (start), and
 * what is left when it is freed. The loop is in loop.c, the end in
 * finish.c, what the user sees in summary.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "perfdata/perf_format.h"
#include "perfdata/perf_writer.h"
#include "record/recorder_int.h"
#include "util/bsearch.h"
#include "util/vec.h"

/*
 * libbpf's print callback takes no context: the sink of the recorder that
 * set it, for as long as that recorder lives (one recorder at a time).
 * libbpf logs from the unwinder's thread too (its ring buffer).
 */
static const struct msg_sink *libbpf_ms;

struct pid_key {
	const struct tgid_set *t;
	uint32_t pid;
};

static bool at_or_after(const void *ctx, size_t i)
{
	const struct pid_key *k = ctx;

	return k->t->v[i] >= k->pid;
}

bool tgid_set__has(const struct tgid_set *t, uint32_t pid)
{
	struct pid_key k = { t, pid };
	size_t i = bsearch_first(t->n, at_or_after, &k);

	return i < t->n && t->v[i] == pid;
}

int tgid_set__add(struct tgid_set *t, uint32_t pid)
{
	size_t i;

	if (tgid_set__has(t, pid))
		return 0;
	if (vec__reserve((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v), 64))
		return -ENOMEM;
	for (i = t->n; i > 0 && t->v[i - 1] > pid; i--)
		t->v[i] = t->v[i - 1];
	t->v[i] = pid;
	t->n++;
	return 0;
}

void recorder__reap_child(struct recorder *r, bool block)
{
	int status;
	pid_t p;

	if (!r->have_child || r->child_done)
		return;
	do
		p = waitpid(r->wl.pid, &status, block ? 0 : WNOHANG);
	while (p < 0 && errno == EINTR);
	if (p == r->wl.pid) {
		r->child_done = true;
		r->child_wait = status;
	}
}

int recorder__new(const struct record_opts *o, const struct msg_sink *ms, struct recorder **out)
{
	struct recorder *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->o = o;
	r->ms = ms;
	*out = r;
	return 0;
}

void recorder__free(struct recorder *r)
{
	if (!r)
		return;
	if (!r->started) {
		/* nothing was recorded: no command left held, no file left behind */
		if (r->have_child) {
			kill(r->wl.pid, SIGKILL);
			recorder__reap_child(r, true);
		}
		perf_writer__abort(r->w);
	}
	cpu_events__free(r->cpu);
	unwind_loader__free(r->unwind);
	ustack_fix__free(r->fix);
	pyframes__free(r->py);
	offcpu_bpf__free(r->bpf);
	merge__free(r->m);
	perf_writer__free(r->w); /* before the DSO hits and names: it taps into them */
	dso_hits__free(r->hits);
	thread_names__free(r->names);
	target_watch__free(r->watch);
	run_as__exit(&r->run_as);
	free(r->targets.v);
	if (libbpf_ms == r->ms) /* the parts are gone: libbpf says nothing more of ours */
		libbpf_ms = NULL;
	if (r->signals)
		recorder__restore_signals();
	free(r);
}

bool recorder__command_failed(const struct recorder *r)
{
	return r->command_failed;
}

int recorder__command_status(const struct recorder *r)
{
	if (!r->child_done)
		return 0;
	if (WIFEXITED(r->child_wait))
		return WEXITSTATUS(r->child_wait);
	if (WIFSIGNALED(r->child_wait))
		return 128 + WTERMSIG(r->child_wait);
	return 1;
}

/* ---- open ---- */

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

/* Is p (a -p or -t target, named `what`) there? Said when it is not. */
static int target_check(const struct recorder *r, int p, const char *what)
{
	if (pid_exists(p) && !pid_exited(p))
		return 0;
	msg__say(r->ms, MSG_ERROR, "no such %s: %d%s", what, p,
		 pid_exists(p) ? " (it has exited)" : "");
	return -ESRCH;
}

/* What can be checked before anything is opened. */
static int preflight(const struct recorder *r)
{
	const struct record_opts *o = r->o;
	const char *btf = getenv("OFFCPU_BTF");
	int err = 0;

	if (!have_privileges()) {
		msg__say(r->ms, MSG_ERROR, "permission denied: run as root or with CAP_BPF and CAP_PERFMON");
		return -EPERM;
	}
	if (!btf)
		btf = "/sys/kernel/btf/vmlinux";
	if (access(btf, R_OK)) {
		msg__say(r->ms, MSG_ERROR, "this kernel has no BTF (%s missing); CONFIG_DEBUG_INFO_BTF=y is required",
			 btf);
		return -ENOTSUP;
	}
	if (o->cgroup) {
		char path[4096];

		err = cgroup_resolve(o->cgroup, path, sizeof(path));
		if (err) {
			msg__say(r->ms, MSG_ERROR, "'%s' is not a cgroup v2 directory (%s: %s)",
				 o->cgroup, path,
				 err == -ENOTDIR ? "not on the cgroup v2 hierarchy" : strerror(-err));
			return err;
		}
	}
	for (size_t i = 0; !err && i < o->pids.n; i++)
		err = target_check(r, o->pids.v[i], "process");
	for (size_t i = 0; !err && i < o->tids.n; i++)
		err = target_check(r, o->tids.v[i], "thread");
	return err;
}

/* libbpf's warnings and debug log with OFFCPU_DEBUG, as they come; nothing otherwise. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if ((level == LIBBPF_WARN || level == LIBBPF_DEBUG) && getenv("OFFCPU_DEBUG"))
		msg__vsay(libbpf_ms, MSG_DEBUG, fmt, args);
	return 0;
}

/*
 * Every record written (the perf writer's tap): the processes' mappings,
 * DSO hits, threads' names. A failure is kept by dso_hits or thread_names
 * and fails the end of the file.
 */
static void on_written(void *ctx, const void *rec, size_t len)
{
	struct recorder *r = ctx;
	_Alignas(8) uint8_t rec2[PYFRAMES_REC_MAX];
	size_t len2 = 0;

	(void)dso_hits__record(r->hits, rec, len);
	thread_names__record(r->names, r->w, rec, len);
	/*
	 * A Python interpreter's mapping brings the Python symbol file's
	 * (pyframes.c) into the same process, written just before it, at the
	 * same time: this tap runs before each record is written.
	 */
	if (r->py)
		pyframes__after(r->py, rec, len, rec2, &len2);
	if (len2)
		perf_writer__write(r->w, rec2, len2);
}

/*
 * The output, or the FILE.old it would become, is another user's: said
 * (true), or not (false: the -EPERM has another cause).
 */
static bool foreign_output(const struct recorder *r)
{
	const char *out = r->o->output;
	char old[4096 + 8];
	struct stat st;

	snprintf(old, sizeof(old), "%s.old", out);
	if (!lstat(out, &st) && st.st_uid != geteuid() &&
	    (!r->o->give_output || st.st_uid != r->o->owner_uid)) {
		msg__say(r->ms, MSG_ERROR, "%s belongs to uid %u, not to you: it is left alone "
			 "(remove it, or choose another -o)", out, (unsigned int)st.st_uid);
		return true;
	}
	if (!lstat(old, &st) && st.st_uid != geteuid() &&
	    (!r->o->give_output || st.st_uid != r->o->owner_uid)) {
		msg__say(r->ms, MSG_ERROR, "%s would replace %s, which belongs to uid %u, not to you: "
			 "both are left alone (remove it, or choose another -o)", out, old,
			 (unsigned int)st.st_uid);
		return true;
	}
	return false;
}

/* The output file (given to the user under sudo), the queue, the signals. */
static int open_output(struct recorder *r)
{
	const struct record_opts *o = r->o;
	int err;

	err = perf_writer__new_for(o->output, o->give_output ? o->owner_uid : geteuid(), &r->w);
	if (err == -EPERM && foreign_output(r)) {
		return err;
	} else if (err) {
		msg__say(r->ms, MSG_ERROR, "cannot write %s: %s", o->output, strerror(-err));
		return err;
	}
	/* before a byte is written: even an interrupted recording is the user's */
	if (o->give_output) {
		err = perf_writer__chown(r->w, o->owner_uid, o->owner_gid);
		if (err)
			msg__say(r->ms, MSG_WARNING, "cannot give %s to uid %u (SUDO_UID): %s; it stays "
				 "root's", o->output, (unsigned int)o->owner_uid, strerror(-err));
	}
	r->m = merge__new();
	r->hits = dso_hits__new();
	r->names = thread_names__new(OFFCPU_ID_OFFCPU);
	if (!r->m || !r->hits || !r->names) {
		msg__say(r->ms, MSG_ERROR, "out of memory");
		return -ENOMEM;
	}
	err = recorder__setup_signals();
	if (err) {
		msg__say(r->ms, MSG_ERROR, "cannot take the signals: %s", strerror(-err));
		return err;
	}
	r->signals = true;
	perf_writer__set_tap(r->w, on_written, r);
	return 0;
}

/* The command, forked as --user says and held before its exec. */
static int open_command(struct recorder *r)
{
	const struct record_opts *o = r->o;
	int err;

	if (o->user) {
		err = run_as__resolve(&r->run_as, o->user);
		if (err) {
			msg__say(r->ms, MSG_ERROR, "--user %s: %s", o->user,
				 err == -ENOENT ? "no such user" : strerror(-err));
			return err;
		}
	}
	if (!o->argv)
		return 0;
	err = workload__prepare(&r->wl, o->argv, o->user ? &r->run_as : NULL);
	if (err) {
		msg__say(r->ms, MSG_ERROR, "cannot start '%s': %s", o->argv[0], strerror(-err));
		return err;
	}
	r->have_child = true;
	return 0;
}

/*
 * The recorder's own priority (--nice, default -20), from here on: after
 * the command's fork, which keeps the caller's. On a machine whose CPUs
 * are all busy, a recorder at the default share loads its programs (about
 * 1 s of the verifier's CPU time) at 1/100th of a CPU, starts and stops
 * seconds late, and drains its rings too late to hold every sample. Its
 * CPU time is the same at any priority: what it costs the workload does
 * not change, only when it is paid (README, "What it costs"). Set on this
 * thread; the unwinder's loader thread, started later, inherits it.
 */
static void raise_priority(const struct recorder *r)
{
	if (!r->o->nice || !setpriority(PRIO_PROCESS, 0, r->o->nice))
		return;
	msg__say(r->ms, MSG_NOTE, "cannot set the recorder's nice value to %d (%s): on a busy "
		 "machine it may start, drain and stop late", r->o->nice, strerror(errno));
}

/* The processes whose side-band is kept; the -p/-t targets watched. */
static int open_targets(struct recorder *r)
{
	const struct record_opts *o = r->o;
	uint32_t *tgids = calloc(o->tids.n + 1, sizeof(*tgids));
	int gone = 0, err = 0;

	/* --chains: every process's names and mappings (wakers are rarely targets) */
	r->filter_sideband = (o->argv || o->pids.n || o->tids.n) && !o->chains;
	if (r->have_child)
		err = tgid_set__add(&r->targets, r->wl.pid);
	for (size_t i = 0; !err && i < o->pids.n; i++)
		err = tgid_set__add(&r->targets, o->pids.v[i]);
	for (size_t i = 0; !err && tgids && i < o->tids.n; i++) {
		tgids[i] = tgid_of(o->tids.v[i]);
		err = tgid_set__add(&r->targets, tgids[i]);
	}
	if (!tgids || err) {
		free(tgids);
		msg__say(r->ms, MSG_ERROR, "out of memory");
		return -ENOMEM;
	}
	if ((o->pids.n || o->tids.n) && !o->all_cpus)
		err = target_watch__new(o, tgids, &r->watch, &gone);
	if (err == -ESRCH)
		msg__say(r->ms, MSG_ERROR, "no such process: %d (it has exited)", gone);
	else if (err)
		msg__say(r->ms, MSG_ERROR, "cannot watch the targets: %s", strerror(-err));
	free(tgids);
	return err;
}

/* The BPF programs loaded, the unwinder's backend, the perf events opened. */
static int open_events(struct recorder *r)
{
	const struct record_opts *o = r->o;
	int err;

	kernel_facts__read(&r->kernel, o->wakeups);
	err = offcpu_bpf__new(o, &r->kernel, r->ms, &r->bpf);
	if (err) {
		msg__say(r->ms, MSG_ERROR, "cannot load the BPF program: %s%s", strerror(-err),
			 getenv("OFFCPU_DEBUG") ? "" : " (OFFCPU_DEBUG=1 shows libbpf's log)");
		return err;
	}
	if (r->have_child)
		offcpu_bpf__trace_from_exec(r->bpf, r->wl.pid);
	if (o->dwarf) {
		err = unwind_loader__new(o, r->bpf, r->ms, &r->unwind);
		if (!err && o->python)
			err = pyframes__new(o, r->bpf, &r->py);
		if (!err)
			err = ustack_fix__new(r->py, &r->fix);
		if (err) {
			msg__say(r->ms, MSG_ERROR, "cannot set up the DWARF unwinder: %s",
				 strerror(-err));
			return err;
		}
		offcpu_bpf__set_ustack_fix(r->bpf, r->fix, r->py);
		unwind_loader__set_python(r->unwind, r->py);
		unwind_loader__set_fix(r->unwind, r->fix);
	}
	err = cpu_events__new(o, r->ms, offcpu_bpf__filter_prog_fd(r->bpf), &r->cpu);
	if (!err && record_opts__bpf_cpu_samples(o)) {
		/* CPU samples come from BPF: they take the event's id of their CPU */
		uint64_t *cpu_ids;
		int *cpus;
		size_t n;

		err = cpu_events__cpu_ids(r->cpu, &cpus, &cpu_ids, &n);
		if (!err) {
			err = offcpu_bpf__set_cpu_ids(r->bpf, cpus, cpu_ids, n);
			free(cpus);
			free(cpu_ids);
		}
	}
	return err;
}

/* --chains: its events (offcpu-switch, offcpu-stack, chain-cpu-clock). */
static int write_chain_events(struct recorder *r, const struct perf_event_attr *cattr)
{
	uint64_t sid = OFFCPU_ID_SWITCH, kid = OFFCPU_ID_STACK, cid = OFFCPU_ID_CHAIN_CPU;
	struct perf_event_attr a;
	int err;

	chain_switch_attr(&a);
	err = perf_writer__add_event(r->w, &a, OFFCPU_SWITCH_EVENT_NAME, &sid, 1);
	offcpu_event_attr(&a);
	if (!err)
		err = perf_writer__add_event(r->w, &a, OFFCPU_STACK_EVENT_NAME, &kid, 1);
	/* the others' CPU samples: the cpu-clock event's attr, without its side-band */
	a = *cattr;
	a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 0;
	if (!err)
		err = perf_writer__add_event(r->w, &a, OFFCPU_CHAIN_CPU_EVENT_NAME, &cid, 1);
	return err;
}

/* The file's events (the CPU samples', offcpu's), then its header. */
static int write_header(struct recorder *r)
{
	const struct record_opts *o = r->o;
	uint64_t oid = OFFCPU_ID_OFFCPU, wid = OFFCPU_ID_WAKEUP, did = OFFCPU_ID_SCHED_DELAY;
	const struct perf_event_attr *cattr;
	struct perf_event_attr oattr;
	const uint64_t *ids;
	const char *name;
	size_t nr_ids;
	int err;

	cattr = cpu_events__attr(r->cpu, 0, &name, &ids, &nr_ids);
	offcpu_event_attr(&oattr);
	err = perf_writer__add_event(r->w, cattr, name, ids, nr_ids);
	if (!err)
		err = perf_writer__add_event(r->w, &oattr, OFFCPU_EVENT_NAME, &oid, 1);
	/* same attr: the sample id tells the events apart */
	if (!err && o->wakeups)
		err = perf_writer__add_event(r->w, &oattr, OFFCPU_WAKEUP_EVENT_NAME, &wid, 1);
	if (!err && o->sched_delay)
		err = perf_writer__add_event(r->w, &oattr, OFFCPU_SCHED_DELAY_EVENT_NAME, &did, 1);
	if (!err && o->chains)
		err = write_chain_events(r, cattr);
	if (!err)
		err = perf_writer__begin(r->w);
	if (err)
		msg__say(r->ms, MSG_ERROR, "cannot write %s: %s", o->output, strerror(-err));
	return err;
}

int recorder__open(struct recorder *r)
{
	int err = preflight(r);

	if (err)
		return err;
	libbpf_ms = r->ms;
	libbpf_set_print(libbpf_log);
	err = open_output(r);
	if (!err)
		err = open_command(r);
	if (!err)
		raise_priority(r);
	if (!err)
		err = open_targets(r);
	if (!err)
		err = open_events(r);
	if (!err)
		err = write_header(r);
	return err;
}

/* ---- start ---- */

/* A target at the start (offcpu_names): named so if gone before its first sample. */
static int on_seen_task(void *ctx, uint32_t pid, uint32_t tid, const char *comm)
{
	struct recorder *r = ctx;

	return thread_names__seen(r->names, pid, tid, comm);
}

/*
 * Events first, /proc second (as perf does): a process started while /proc
 * is read is then seen by one or the other, never by neither.
 */
static int attach_events(struct recorder *r)
{
	uint64_t stop;
	int err = offcpu_bpf__attach(r->bpf);

	if (err) {
		msg__say(r->ms, MSG_ERROR, "cannot attach to sched_switch: %s", strerror(-err));
		return err;
	}
	err = cpu_events__enable(r->cpu);
	if (err) {
		msg__say(r->ms, MSG_ERROR, "cannot enable the perf events: %s", strerror(-err));
		return err;
	}
	/* the recording starts here: targets already waiting count from now on */
	err = offcpu_bpf__start(r->bpf, on_seen_task, r);
	if (err)
		msg__say(r->ms, MSG_ERROR, "cannot find the waits in progress: %s", strerror(-err));
	else
		offcpu_bpf__window(r->bpf, &r->start, &stop);
	return err;
}

/* The processes there before the recording, from /proc; the host's facts. */
static int synthesize(struct recorder *r)
{
	const struct record_opts *o = r->o;
	uint64_t oid = OFFCPU_ID_OFFCPU;
	int err;

	err = synth__kernel_mmap(r->w, r->kernel.text, oid);
	for (size_t i = 0; !err && i < o->pids.n; i++)
		err = synth__process(r->w, o->pids.v[i], oid, true);
	for (size_t i = 0; !err && i < o->tids.n; i++)
		err = synth__process(r->w, o->tids.v[i], oid, true);
	if (!err && (o->all_cpus || o->chains))
		err = synth__all_processes(r->w, oid);
	if (!err)
		err = synth__features(r->w, o);
	if (!err)
		err = perf_writer__finished_round(r->w);
	if (err)
		msg__say(r->ms, MSG_ERROR, "cannot write %s: %s", o->output, strerror(-err));
	return err;
}

/* The command runs; when it cannot, the recording is given up. */
static int release_command(struct recorder *r)
{
	const struct record_opts *o = r->o;
	int stage, err;

	if (!r->have_child)
		return 0;
	err = workload__start(&r->wl, &stage);
	if (!err)
		return 0;
	if (stage == WORKLOAD_ERR_IDENTITY)
		msg__say(r->ms, MSG_ERROR, "cannot run '%s' as user %s: %s", o->argv[0], o->user,
			 strerror(-err));
	else
		msg__say(r->ms, MSG_ERROR, "cannot execute '%s': %s", o->argv[0], strerror(-err));
	recorder__reap_child(r, true);
	r->have_child = false;
	r->command_failed = true;
	return err;
}

int recorder__start(struct recorder *r)
{
	int err = attach_events(r);

	if (!err)
		err = synthesize(r);
	/*
	 * The unwinder follows exec, fork and exit from here on, its BPF side
	 * attached: both count a process's execs alike. Started once the
	 * recording has (it reads /proc and builds the targets' tables: tens
	 * to hundreds of ms), so that no process can start and end unnamed
	 * between the programs' attach and the side-band's enable; stacks
	 * before it are walked with the early table. Before the command runs.
	 */
	if (!err && r->unwind) {
		err = unwind_loader__start(r->unwind, r->o, r->have_child ? r->wl.pid : 0);
		if (err)
			msg__say(r->ms, MSG_ERROR, "cannot start the DWARF unwinder: %s",
				 strerror(-err));
	}
	if (!err)
		err = release_command(r);
	if (err)
		return err;
	r->started = true;
	r->status_line = r->o->status_line;
	return 0;
}
