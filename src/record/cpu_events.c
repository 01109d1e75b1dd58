// SPDX-License-Identifier: GPL-2.0-only
/*
 * Per-CPU perf events: the CPU-sampling event (cpu-clock by default) with
 * kernel and user callchains, carrying the side-band (COMM, MMAP2, FORK,
 * EXIT) of the whole machine; with --no-cpu a dummy event carries the
 * side-band alone. Every event is on CLOCK_MONOTONIC, the clock of
 * bpf_ktime_get_ns(), so all records share one time line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perfdata/perf_format.h"
#include "record/record.h"

#define RING_PAGES 128 /* data pages per CPU: 512 KiB */

struct cpu_ring {
	int cpu;
	int fd;
	void *base;
	uint64_t id;
};

struct cpu_events {
	const struct msg_sink *ms; /* the recorder's: where an open that fails is said */
	struct perf_event_attr attr;
	const char *name;
	struct cpu_ring *rings;
	size_t nr;
	uint64_t *ids;
	size_t page;
	uint64_t samples;
	uint64_t lost;
	uint8_t tmp[65536];
};

uint64_t cpu_sample_type(void)
{
	return PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
	       PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
}

/*
 * -F max: the kernel's maximum sampling rate (kernel.perf_event_max_sample_rate,
 * which the kernel lowers itself when sampling takes too long), said.
 */
static unsigned int max_freq(const struct msg_sink *ms)
{
	char buf[32];
	ssize_t n = proc_read("/proc/sys/kernel/perf_event_max_sample_rate", buf, sizeof(buf));
	unsigned long v = n > 0 ? strtoul(buf, NULL, 10) : 0;
	unsigned int hz = v && v <= 1000000 ? v : 1000;

	msg__say(ms, MSG_NOTE, "-F max: %u Hz%s", hz, v ? " (kernel.perf_event_max_sample_rate)"
			: " (kernel.perf_event_max_sample_rate unreadable)");
	return hz;
}

static int event_attr(const struct record_opts *o, unsigned int freq, struct perf_event_attr *a,
		      const char **name)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	if (o->no_cpu) {
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_DUMMY;
		*name = "dummy";
	} else if (!strcmp(o->event, "cpu-clock")) {
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_CPU_CLOCK;
		*name = "cpu-clock";
	} else if (!strcmp(o->event, "task-clock")) {
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_TASK_CLOCK;
		*name = "task-clock";
	} else if (!strcmp(o->event, "cycles")) {
		a->type = PERF_TYPE_HARDWARE;
		a->config = PERF_COUNT_HW_CPU_CYCLES;
		*name = "cycles";
	} else {
		return -EINVAL;
	}
	if (!o->no_cpu) {
		a->freq = !o->period;
		a->sample_freq = o->period ? o->period : freq; /* a union with sample_period */
		a->sample_max_stack = PERF_MAX_STACK;
	}
	a->sample_type = cpu_sample_type();
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->disabled = 1;
	a->watermark = 1;
	a->wakeup_watermark = RING_PAGES * 4096 / 2;
	return 0;
}

/*
 * The event on one CPU, its ring mapped, its id read, the sample filter
 * attached: c's next ring. Failures are said.
 */
static int open_ring(struct cpu_events *c, struct perf_event_attr *attr, int cpu, int filter_prog_fd)
{
	struct cpu_ring *r = &c->rings[c->nr];
	int fd, err;

	fd = syscall(SYS_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (c->attr.type == PERF_TYPE_HARDWARE && (errno == ENOENT || errno == EOPNOTSUPP))
			msg__say(c->ms, MSG_ERROR,
				 "event '%s' is not supported here (no hardware PMU); use -e cpu-clock",
				 c->name);
		else
			msg__say(c->ms, MSG_ERROR, "cannot open event '%s' on CPU %d: %s",
				 c->name, cpu, strerror(-err));
		return err;
	}
	r->fd = fd;
	r->cpu = cpu;
	c->nr++;
	r->base = mmap(NULL, (RING_PAGES + 1) * c->page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		err = -errno;
		msg__say(c->ms, MSG_ERROR, "cannot map the ring of CPU %d: %s", r->cpu,
			 strerror(-err));
		return err;
	}
	if (ioctl(fd, PERF_EVENT_IOC_ID, &r->id))
		return -errno;
	c->ids[c->nr - 1] = r->id;
	if (filter_prog_fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_BPF, filter_prog_fd)) {
		err = -errno;
		msg__say(c->ms, MSG_ERROR, "cannot attach the sample filter: %s", strerror(-err));
		return err;
	}
	return 0;
}

int cpu_events__new(const struct record_opts *o, const struct msg_sink *ms, int filter_prog_fd,
		    struct cpu_events **out)
{
	struct int_list cpus = { 0 };
	struct perf_event_attr open_attr;
	struct cpu_events *c;
	int err;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->ms = ms;
	c->page = sysconf(_SC_PAGESIZE);
	err = event_attr(o, o->freq_max && !o->no_cpu ? max_freq(ms) : o->freq, &c->attr, &c->name);
	if (err) {
		msg__say(ms, MSG_ERROR, "unknown event '%s' (cpu-clock, task-clock, cycles)",
			 o->event);
		goto cleanup;
	}
	if (o->cpus.n) {
		cpus.v = malloc(o->cpus.n * sizeof(int));
		if (!cpus.v) {
			err = -ENOMEM;
			goto cleanup;
		}
		memcpy(cpus.v, o->cpus.v, o->cpus.n * sizeof(int));
		cpus.n = o->cpus.n;
	} else {
		err = online_cpus(&cpus);
		if (err)
			goto cleanup;
	}
	/*
	 * --call-graph dwarf: the BPF program on the event takes the samples
	 * with their stacks; the kernel need not walk them first (it does for
	 * PERF_SAMPLE_CALLCHAIN before running the program). The file's attr
	 * keeps the callchain: the samples written have one.
	 */
	open_attr = c->attr;
	if (record_opts__bpf_cpu_samples(o)) {
		open_attr.sample_type &= ~(uint64_t)PERF_SAMPLE_CALLCHAIN;
		open_attr.sample_max_stack = 0;
	}
	c->rings = calloc(cpus.n, sizeof(*c->rings));
	c->ids = calloc(cpus.n, sizeof(*c->ids));
	if (!c->rings || !c->ids) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; !err && i < cpus.n; i++)
		err = open_ring(c, &open_attr, cpus.v[i], filter_prog_fd);
	if (err)
		goto cleanup;
	int_list__free(&cpus);
	*out = c;
	return 0;
cleanup:
	int_list__free(&cpus);
	cpu_events__free(c);
	return err;
}

void cpu_events__free(struct cpu_events *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr; i++) {
		if (c->rings[i].base)
			munmap(c->rings[i].base, (RING_PAGES + 1) * c->page);
		close(c->rings[i].fd);
	}
	free(c->rings);
	free(c->ids);
	free(c);
}

static int ioctl_all(struct cpu_events *c, unsigned long req)
{
	for (size_t i = 0; i < c->nr; i++)
		if (ioctl(c->rings[i].fd, req, 0))
			return -errno;
	return 0;
}

int cpu_events__enable(struct cpu_events *c)
{
	return ioctl_all(c, PERF_EVENT_IOC_ENABLE);
}

int cpu_events__disable(struct cpu_events *c)
{
	return ioctl_all(c, PERF_EVENT_IOC_DISABLE);
}

size_t cpu_events__nr_attrs(const struct cpu_events *c)
{
	(void)c;
	return 1;
}

const struct perf_event_attr *cpu_events__attr(const struct cpu_events *c, size_t i,
					       const char **name, const uint64_t **ids,
					       size_t *nr_ids)
{
	(void)i;
	*name = c->name;
	*ids = c->ids;
	*nr_ids = c->nr;
	return &c->attr;
}

int cpu_events__epoll_add(struct cpu_events *c, int epfd)
{
	for (size_t i = 0; i < c->nr; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 + i };

		if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->rings[i].fd, &ev))
			return -errno;
	}
	return 0;
}

/* The time of a kernel record: in the sample body, or in the id trailer. */
static uint64_t record_time(const struct perf_event_header *h)
{
	const uint8_t *p = (const uint8_t *)h;
	uint64_t t = 0;

	if (h->type == PERF_RECORD_SAMPLE) {
		if (h->size >= sizeof(*h) + 32)
			memcpy(&t, p + sizeof(*h) + 24, 8); /* after id, ip, pid/tid */
	} else if (h->size >= sizeof(*h) + 32) {
		memcpy(&t, p + h->size - 24, 8); /* trailer: ..., time, cpu, id */
	}
	return t;
}

/* Move one CPU's ring into the merge queue. */
static int ring_drain(struct cpu_events *c, struct cpu_ring *r, struct merge *m)
{
	struct perf_event_mmap_page *meta = r->base;
	uint8_t *data = (uint8_t *)r->base + c->page;
	uint64_t size = RING_PAGES * c->page;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	int err = 0;

	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail % size;
		const void *rec;

		if (off + sizeof(h) <= size) {
			memcpy(&h, data + off, sizeof(h));
		} else {
			size_t first = size - off;

			memcpy(&h, data + off, first);
			memcpy((uint8_t *)&h + first, data, sizeof(h) - first);
		}
		if (h.size < sizeof(h) || h.size > head - tail)
			break; /* cannot happen with a sane kernel; stop rather than loop */
		if (off + h.size <= size) {
			rec = data + off;
		} else {
			size_t first = size - off;

			memcpy(c->tmp, data + off, first);
			memcpy(c->tmp + first, data, h.size - first);
			rec = c->tmp;
		}
		if (h.type == PERF_RECORD_SAMPLE)
			c->samples++;
		else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
			uint64_t lost;

			memcpy(&lost, (const uint8_t *)rec + sizeof(h) + 8, 8);
			c->lost += lost;
		}
		err = merge__add(m, record_time(rec), rec, h.size);
		if (err)
			break;
		tail += h.size;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return err;
}

int cpu_events__poll(struct cpu_events *c, struct merge *m)
{
	for (size_t i = 0; i < c->nr; i++) {
		int err = ring_drain(c, &c->rings[i], m);

		if (err)
			return err;
	}
	return 0;
}

int cpu_events__cpu_ids(const struct cpu_events *c, int **cpus, uint64_t **ids, size_t *n)
{
	*cpus = calloc(c->nr ? c->nr : 1, sizeof(**cpus));
	*ids = calloc(c->nr ? c->nr : 1, sizeof(**ids));
	if (!*cpus || !*ids) {
		free(*cpus);
		free(*ids);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->nr; i++) {
		(*cpus)[i] = c->rings[i].cpu;
		(*ids)[i] = c->rings[i].id;
	}
	*n = c->nr;
	return 0;
}

uint64_t cpu_events__samples(const struct cpu_events *c)
{
	return c->samples;
}

uint64_t cpu_events__lost(const struct cpu_events *c)
{
	return c->lost;
}
