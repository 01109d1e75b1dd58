// SPDX-License-Identifier: GPL-2.0-only
/*
 * Records synthesized from /proc for what existed before recording began
 * (COMM per thread, MMAP2 per executable mapping), the kernel's MMAP, and
 * the host facts that go in feature sections.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "perfdata/perf_format.h"
#include "perfdata/perf_writer.h"
#include "record/record.h"
#include "symbols/build_id.h"
#include "symbols/vdso.h"

#define ALIGN8(x) (((x) + 7) & ~(size_t)7)

/* Append the sample_id_all trailer (time 0 for what was there before: before every sample). */
static size_t put_trailer(uint8_t *p, uint32_t pid, uint32_t tid, uint64_t id, uint64_t time)
{
	struct sample_id s = { .pid = pid, .tid = tid, .time = time, .id = id };

	memcpy(p, &s, sizeof(s));
	return sizeof(s);
}

static int write_comm(struct perf_writer *w, uint32_t pid, uint32_t tid, const char *comm,
		      uint64_t id, uint64_t time)
{
	uint8_t buf[256];
	struct perf_event_header *h = (void *)buf;
	size_t n = sizeof(*h), clen = strnlen(comm, 15);

	memcpy(buf + n, &pid, 4);
	memcpy(buf + n + 4, &tid, 4);
	n += 8;
	memset(buf + n, 0, ALIGN8(clen + 1));
	memcpy(buf + n, comm, clen);
	n += ALIGN8(clen + 1);
	n += put_trailer(buf + n, pid, tid, id, time);
	h->type = PERF_RECORD_COMM;
	h->misc = 0;
	h->size = n;
	return perf_writer__write(w, buf, n);
}

struct mmap2_body {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
};

static int write_mmap2(struct perf_writer *w, const struct mmap2_body *b, const char *file,
		       uint64_t id)
{
	uint8_t buf[4096 + 256];
	struct perf_event_header *h = (void *)buf;
	size_t n = sizeof(*h), flen = strnlen(file, 4095);

	memcpy(buf + n, b, sizeof(*b));
	n += sizeof(*b);
	memset(buf + n, 0, ALIGN8(flen + 1));
	memcpy(buf + n, file, flen);
	n += ALIGN8(flen + 1);
	n += put_trailer(buf + n, b->pid, b->tid, id, 0);
	h->type = PERF_RECORD_MMAP2;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = n;
	return perf_writer__write(w, buf, n);
}

/* Functions where an interrupt's work starts (x86-64, arm64): see irq[]. */
/*
 * The kernel addresses the recorder needs, in one pass over kallsyms (it
 * is large: reading it once matters): _text, and the ranges of __schedule
 * and try_to_wake_up, where kernel stacks of sleepers and wakers are made
 * to start; with irq_entries, also the interrupt entry points over the
 * whole core kernel (a longer read). The core kernel's lines are sorted,
 * so a function ends at the next line's address. Zeros when hidden.
 */
void kernel_facts__read(struct kernel_facts *k, bool irq_entries)
{
	char line[512];
	FILE *f = fopen("/proc/kallsyms", "re");

	memset(k, 0, sizeof(*k));
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (kernel_facts__line(k, line, irq_entries))
			break;
	fclose(f);
	if (!k->sched_hi)
		k->sched_lo = 0;
	if (!k->ttwu_hi)
		k->ttwu_lo = 0;
	if (!k->sys_hi)
		k->sys_lo = 0;
	if (!k->backlog_hi)
		k->backlog_lo = 0;
	if (!k->wnt_hi)
		k->wnt_lo = 0;
	if (k->nr_irq && !k->irq[k->nr_irq - 1].hi)
		k->nr_irq--;
}

/*
 * The kernel's map: perf resolves kernel addresses through an MMAP with
 * misc KERNEL, pid -1, filename "[kernel.kallsyms]_text" and pgoff = the
 * address of _text, which tells it how kallsyms is relocated.
 */
int synth__kernel_mmap(struct perf_writer *w, uint64_t text, uint64_t id)
{
	static const char name[] = "[kernel.kallsyms]_text";
	uint8_t buf[256];
	struct perf_event_header *h = (void *)buf;
	uint32_t pid = (uint32_t)-1, tid = 0;
	uint64_t len;
	size_t n = sizeof(*h);

	if (!text)
		return 0; /* kallsyms hidden: perf shows raw addresses */
	len = ~0ULL - text;
	memcpy(buf + n, &pid, 4);
	memcpy(buf + n + 4, &tid, 4);
	memcpy(buf + n + 8, &text, 8);
	memcpy(buf + n + 16, &len, 8);
	memcpy(buf + n + 24, &text, 8);
	n += 32;
	memset(buf + n, 0, ALIGN8(sizeof(name)));
	memcpy(buf + n, name, sizeof(name));
	n += ALIGN8(sizeof(name));
	n += put_trailer(buf + n, pid, tid, id, 0);
	h->type = PERF_RECORD_MMAP;
	h->misc = PERF_RECORD_MISC_KERNEL;
	h->size = n;
	return perf_writer__write(w, buf, n);
}

static int read_comm(int pid, int tid, char *comm, size_t size)
{
	char path[96];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(comm, size, f))
		comm[0] = 0;
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	return 0;
}

/* Executable mappings of /proc/PID/maps as MMAP2 records. */
static int synth_maps(struct perf_writer *w, int pid, uint64_t id)
{
	char path[64], line[4096 + 256];
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return 0; /* exited meanwhile */
	while (!err && fgets(line, sizeof(line), f)) {
		struct proc_map pm;
		struct mmap2_body b;

		if (!proc_maps__parse_line(line, &pm))
			continue;
		memset(&b, 0, sizeof(b));
		b.pid = pid;
		b.tid = pid;
		b.addr = pm.start;
		b.len = pm.end - pm.start;
		b.pgoff = pm.pgoff;
		b.maj = pm.maj;
		b.min = pm.min;
		b.ino = pm.ino;
		b.prot = pm.prot;
		b.flags = pm.flags;
		err = write_mmap2(w, &b, pm.file, id);
	}
	fclose(f);
	return err;
}

int synth__process(struct perf_writer *w, int pid, uint64_t id, bool threads)
{
	char path[64], comm[64];
	struct dirent *d;
	DIR *dir;
	int err = 0;

	if (read_comm(pid, pid, comm, sizeof(comm)))
		return 0; /* gone */
	err = write_comm(w, pid, pid, comm, id, 0);
	if (!err && threads) {
		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		dir = opendir(path);
		while (!err && dir && (d = readdir(dir))) {
			int tid = atoi(d->d_name);

			if (tid <= 0 || tid == pid || read_comm(pid, tid, comm, sizeof(comm)))
				continue;
			err = write_comm(w, pid, tid, comm, id, 0);
		}
		if (dir)
			closedir(dir);
	}
	if (!err)
		err = synth_maps(w, pid, id);
	return err;
}

int synth__comm(struct perf_writer *w, uint32_t pid, uint32_t tid, const char *comm, uint64_t id,
		uint64_t time)
{
	return write_comm(w, pid, tid, comm, id, time);
}

int synth__all_processes(struct perf_writer *w, uint64_t id)
{
	DIR *dir = opendir("/proc");
	struct dirent *d;
	int err = 0;

	if (!dir)
		return -errno;
	while (!err && (d = readdir(dir))) {
		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		err = synth__process(w, atoi(d->d_name), id, true);
	}
	closedir(dir);
	return err;
}

static int feature_u32_pair(struct perf_writer *w, unsigned int feat, uint32_t a, uint32_t b)
{
	uint32_t v[2] = { a, b };

	return perf_writer__set_feature(w, feat, v, sizeof(v));
}

/*
 * A copy of the vDSO (the recorder's: one kernel maps the same one into
 * every process of its ABI), so that [vdso] frames are named wherever the
 * file is read. Without one (no vDSO here) the section is left out.
 */
static int synth_vdso(struct perf_writer *w)
{
	struct perf_vdso_image h = { 0 };
	uint8_t bid[SYM_BUILD_ID_MAX];
	uint8_t *buf = NULL;
	void *image;
	size_t len, pad;
	Elf *elf;
	int n, err;

	if (vdso__self(&image, &len))
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_memory(image, len);
	n = elf ? elf__build_id(elf, bid, sizeof(bid)) : -ENOEXEC;
	elf_end(elf);
	h.size = len;
	if (n > 0) {
		h.build_id_size = n > (int)sizeof(h.build_id) ? sizeof(h.build_id) : (uint32_t)n;
		memcpy(h.build_id, bid, h.build_id_size);
	}
	pad = (8 - len % 8) % 8;
	buf = calloc(1, sizeof(h) + len + pad);
	err = -ENOMEM;
	if (buf) {
		memcpy(buf, &h, sizeof(h));
		memcpy(buf + sizeof(h), image, len);
		err = perf_writer__set_feature(w, PERF_FEAT_OFFCPU_VDSO, buf, sizeof(h) + len + pad);
	}
	free(buf);
	free(image);
	return err;
}

/* Host facts perf and users expect in the header. */
int synth__features(struct perf_writer *w, const struct record_opts *o)
{
	struct utsname u;
	struct timespec res, mono, real;
	char exe[4096];
	const char **args;
	uint64_t v;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int err;

	if (uname(&u))
		return -errno;
	err = perf_writer__set_feature_string(w, PERF_FEAT_HOSTNAME, u.nodename);
	if (!err)
		err = perf_writer__set_feature_string(w, PERF_FEAT_OSRELEASE, u.release);
	if (!err)
		err = perf_writer__set_feature_string(w, PERF_FEAT_VERSION, "offcpu 0.1");
	if (!err)
		err = perf_writer__set_feature_string(w, PERF_FEAT_ARCH, u.machine);
	if (!err)
		err = feature_u32_pair(w, PERF_FEAT_NRCPUS, possible_cpus(), online);
	if (err)
		return err;
	v = (uint64_t)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) / 1024;
	err = perf_writer__set_feature(w, PERF_FEAT_TOTAL_MEM, &v, sizeof(v));
	if (err)
		return err;

	/* CMDLINE: the binary's full path, then the arguments */
	args = calloc(o->orig_argc + 1, sizeof(*args));
	if (!args)
		return -ENOMEM;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	args[0] = n > 0 ? exe : o->orig_argv[0];
	for (int i = 1; i < o->orig_argc; i++)
		args[i] = o->orig_argv[i];
	err = perf_writer__set_feature_strings(w, PERF_FEAT_CMDLINE, args, o->orig_argc);
	free(args);
	if (err)
		return err;

	/*
	 * CLOCKID: the resolution of the clock samples are timed with (perf
	 * shows it as "clockid frequency"). hotspot's perfparser warns that it
	 * cannot read this section, as it does for perf's own recordings made
	 * with -k CLOCK_MONOTONIC, the clock every offcpu recording uses.
	 */
	clock_getres(CLOCK_MONOTONIC, &res);
	v = res.tv_sec * 1000000000ULL + res.tv_nsec;
	err = perf_writer__set_feature(w, PERF_FEAT_CLOCKID, &v, sizeof(v));
	if (err)
		return err;
	/* CLOCK_DATA: one pair of readings relating the clock to wall time */
	{
		struct {
			uint32_t version, clockid;
			uint64_t wall_ns, clock_ns;
		} cd = { .version = 1, .clockid = CLOCK_MONOTONIC };

		clock_gettime(CLOCK_REALTIME, &real);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		cd.wall_ns = real.tv_sec * 1000000000ULL + real.tv_nsec;
		cd.clock_ns = mono.tv_sec * 1000000000ULL + mono.tv_nsec;
		err = perf_writer__set_feature(w, PERF_FEAT_CLOCK_DATA, &cd, sizeof(cd));
	}
	if (!err)
		err = synth_vdso(w);
	return err;
}
