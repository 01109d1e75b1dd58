// SPDX-License-Identifier: GPL-2.0-only
/*
 * The walk of a perf.data file (perf_reader__process): records located,
 * timed and queued, then delivered in perf's ordered-events order (as
 * found, in a file that says they are in time order: offcpu's), the scan
 * in a thread of its own beside the caller's.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfdata/reader_int.h"
#include "util/bytes.h"
#include "util/vec.h"

/*
 * Records are located, timed and sorted by a producer (a thread of its own
 * when one can be started) that hands batches of record offsets, in
 * delivery order, to the caller's thread, which parses them and calls back:
 * the scan of the file (and its page faults) and the sorting run beside
 * the callback's work on the second core. The producer maps the chunks of
 * the file it scans and unmaps those whose records were all delivered
 * (chunk_pending counts them), when it recycles the batches the consumer
 * is done with.
 *
 * A batch is what the sequential walk would deliver between two
 * FINISHED_ROUNDs: the records without a time found in the round, then the
 * queued records the round's end lets go, in (time, file order);
 * consecutive rounds' batches are one while they are small (BATCH_MIN),
 * which delivers in the same order.
 */
struct batch {
	uint64_t *offs;
	size_t n, cap;
	struct batch *next;
};

/*
 * The producer runs ahead of the consumer by at most PIPE_MAX_BATCHES
 * batches, and by PIPE_MAPPED_BATCHES once max_mapped chunks are mapped
 * (rounds of offcpu's recordings are a second of data each, megabytes).
 * The mapped chunks are a thirty-second of the data, 2 to 16 of them (2
 * to 16 MiB): mapped pages count in the peak RSS, and a report of 100 MB
 * peaks at 54 MB with 4 MiB mapped (perf's at 200 MB). The batches kept
 * ready past that are what keeps the consumer from waiting for the scan's
 * stalls (populating a chunk, a turn of the three threads on two cores):
 * with one, the consumer of a 100 MB report waited 70 ms for the scan
 * (recorded by offcpu, under its overhead), with four 3-9 ms, with the
 * same peak RSS. A batch holds the records of BATCH_CHUNKS chunks at
 * most: a batch pins its chunks until it comes back, and 8192 of offcpu's
 * records are 3-4 MiB, so four batches kept 12-16 MiB of a big round
 * mapped (script of offcpu's 100 MB recording: 41.9 MB peak, 38.5 with
 * two chunks a batch, in the same time).
 */
#define PIPE_MAX_BATCHES 8
#define PIPE_MAPPED_BATCHES 4
#define PIPE_MIN_MAPPED 2
#define PIPE_MAX_MAPPED 16
#define BATCH_MIN 8192  /* records: a batch is several rounds when they are small */
#define BATCH_MAX 8192  /* records: and part of a round when it is large */
#define PREFETCH_AHEAD 6
#define BATCH_CHUNKS 2  /* chunks a batch's records may lie in (see above) */

/*
 * The scan asks for the file READAHEAD_STEP bytes at a time, from
 * READAHEAD_STEP to twice that ahead of it. A file not in the page cache
 * (a big recording, or pages the machine took back) is then read from the
 * disk while the records before are walked, not when the scan's pread()
 * reaches it: the report of a 305 MB recording dropped from the page
 * cache took 0.40-0.66 s, with this 0.30-0.37 s (0.25 s all cached).
 */
#define READAHEAD_STEP (UINT64_C(8) << 20)

struct pipe {
	struct perf_reader *r;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct batch *head, *tail, *free; /* ready batches, oldest first; spares */
	int nready;
	bool done;          /* the producer has ended (perr says how) */
	bool stop;          /* the consumer wants no more */
	int perr;
	char perr_msg[256];
	/* producer state */
	uint64_t pos, round_max, prev_limit;
	bool have_prev;
	bool window_warned;
	/*
	 * The file says its records are in time order (offcpu's): each goes
	 * as soon as it is found, in file order, which is the order the
	 * rounds would give (time, then file order), without waiting for the
	 * next round's end to let a round go (a second of offcpu's records:
	 * the first batch came after two of them, 13-20 ms into a report of
	 * 100 MB) and without sorting. A record older than the one before
	 * ends it, said: from there the rounds order the rest.
	 */
	bool ordered;
	uint64_t last_time;
	size_t nr_mapped;   /* chunks mapped */
	size_t max_mapped;  /* see PIPE_MAX_MAPPED */
	uint64_t window;    /* window_max() */
	uint64_t span_start; /* see window_full() */
	uint64_t ra_end;    /* the file is asked for up to here (READAHEAD_STEP) */
	bool at_end;        /* the scan is over: what is left in rel goes out */
	/*
	 * The records to deliver, in order, not yet in a batch: the first
	 * rel_ready of them (from rel_head) may go (their round has ended),
	 * the others are the current round's records without a time.
	 */
	uint64_t *rel;
	size_t rel_head, rel_ready, rel_n, rel_cap;
	struct u64pair *tmp;
	size_t tmpcap;
};

/* Append the record at off to the records to deliver. */
static int rel_put(struct pipe *pp, uint64_t off)
{
	if (pp->rel_head && pp->rel_head == pp->rel_n) /* all gone out: start again at 0 */
		pp->rel_head = pp->rel_ready = pp->rel_n = 0;
	if (vec__reserve((void **)&pp->rel, &pp->rel_cap, pp->rel_n + 1, sizeof(*pp->rel), 4096))
		return -ENOMEM;
	pp->rel[pp->rel_n++] = off;
	return 0;
}

/*
 * Move the queued records with time <= limit, sorted, to the records to
 * deliver, and let everything there go (a round ended).
 */
static int take_queued(struct perf_reader *r, struct pipe *pp, uint64_t limit)
{
	size_t n = 0;
	int err;

	if (!r->nq) {
		pp->rel_ready = pp->rel_n;
		return 0;
	}
	if (pp->tmpcap < r->nq) {
		struct u64pair *t = realloc(pp->tmp, r->qcap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		pp->tmp = t;
		pp->tmpcap = r->qcap;
	}
	pairsort(r->q, r->nq, pp->tmp);
	while (n < r->nq && r->q[n].a <= limit) {
		err = rel_put(pp, r->q[n].b);
		if (err)
			return err;
		n++;
	}
	memmove(r->q, r->q + n, (r->nq - n) * sizeof(*r->q));
	r->nq -= n;
	pp->rel_ready = pp->rel_n;
	return 0;
}

static int produce_err(struct pipe *pp, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int produce_err(struct pipe *pp, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pp->perr_msg, sizeof(pp->perr_msg), fmt, ap);
	va_end(ap);
	return err;
}

/* Unmap chunk i when none of its records waits and the scan has left it. */
static void chunk_done(struct perf_reader *r, struct pipe *pp, size_t i)
{
	if (!r->chunk_pending[i] && i < pp->pos >> CHUNK_SHIFT && r->chunks[i]) {
		reader__unmap_chunk(r, i);
		pp->nr_mapped--;
	}
}

/* Evict chunk i: nothing of it is in a batch handed over, it is not being scanned, the mapped are many. */
static void chunk_evict(struct perf_reader *r, struct pipe *pp, size_t i)
{
	if (r->chunks[i] && !r->chunk_inflight[i] && i < pp->pos >> CHUNK_SHIFT &&
	    pp->nr_mapped > pp->max_mapped) {
		reader__unmap_chunk(r, i);
		pp->nr_mapped--;
	}
}

/*
 * The chunk of the record at pos mapped, and the one before it unmapped
 * when it holds nothing to deliver: 0 or a negative errno.
 */
static int chunk_enter(struct perf_reader *r, struct pipe *pp, uint64_t pos)
{
	size_t i = pos >> CHUNK_SHIFT;
	int err;

	if (r->chunks[i])
		return 0;
	if (i) {
		chunk_done(r, pp, i - 1);
		chunk_evict(r, pp, i - 1);
	}
	while (pp->ra_end < pos + 2 * READAHEAD_STEP && pp->ra_end < r->data_end) {
		reader__readahead(r, pp->ra_end, READAHEAD_STEP);
		pp->ra_end += READAHEAD_STEP;
	}
	err = reader__map_chunk(r, pos);
	if (err)
		return produce_err(pp, err, "cannot read the records at offset %" PRIu64 ": %s", pos,
				   strerror(-err));
	pp->nr_mapped++;
	return 0;
}

/*
 * Records queued over more than WINDOW_MAX bytes of the file (a file
 * without FINISHED_ROUND, or records far out of order) go out in time
 * order now, so that what is mapped and queued stays bounded; perf
 * flushes its queue the same way when it outgrows its memory. The span
 * is counted in bytes of the file from the oldest record still queued (as
 * of the last round's end), so that where a file's windows fall depends
 * on the file only.
 */
#define WINDOW_MAX (UINT64_C(256) << 20)
#define QUEUE_MAX (UINT64_C(8) << 20)

/* WINDOW_MAX, or OFFCPU_READER_WINDOW bytes (tests: a window of a few chunks) */
static uint64_t window_max(void)
{
	const char *env = getenv("OFFCPU_READER_WINDOW");
	uint64_t v = env ? strtoull(env, NULL, 0) : 0;

	return v >= CHUNK_SIZE ? v : WINDOW_MAX;
}

static bool window_full(const struct perf_reader *r, const struct pipe *pp)
{
	return pp->pos - pp->span_start > pp->window || r->nq > QUEUE_MAX;
}

/* After a round's end or a flush: the span starts at the oldest record still queued, or here. */
static void span_restart(const struct perf_reader *r, struct pipe *pp)
{
	pp->span_start = pp->pos;
	for (size_t i = 0; i < r->nq; i++)
		if (r->q[i].b < pp->span_start)
			pp->span_start = r->q[i].b;
}

/* How many of the next n records to deliver lie in BATCH_CHUNKS chunks (at least one). */
static size_t batch_len(const struct pipe *pp, size_t n)
{
	size_t seen[BATCH_CHUNKS] = { 0 }, ns = 0, k;

	for (k = 0; k < n; k++) {
		size_t c = pp->rel[pp->rel_head + k] >> CHUNK_SHIFT, j;

		for (j = 0; j < ns && seen[j] != c; j++)
			;
		if (j == ns) {
			if (ns == BATCH_CHUNKS)
				break;
			seen[ns++] = c;
		}
	}
	return k;
}

/*
 * Move records that may go into b: up to BATCH_MAX of them, in
 * BATCH_CHUNKS chunks at most, or with all, every record found (the
 * records before a damaged one: they are delivered before its error).
 */
static int emit(struct pipe *pp, struct batch *b, bool all)
{
	size_t end = all ? pp->rel_n : pp->rel_ready, n = end - pp->rel_head;

	if (!all)
		n = batch_len(pp, n > BATCH_MAX ? BATCH_MAX : n);
	b->n = 0;
	if (!n)
		return 0;
	if (vec__reserve((void **)&b->offs, &b->cap, n, sizeof(*b->offs), 4096))
		return -ENOMEM;
	memcpy(b->offs, pp->rel + pp->rel_head, n * sizeof(*b->offs));
	b->n = n;
	pp->rel_head += n;
	return 0;
}

/* A damaged file's error, with the records found before it in b. */
static int produce_fail(struct pipe *pp, struct batch *b, int err)
{
	return emit(pp, b, true) ? -ENOMEM : err;
}

/*
 * Fewer than BATCH_MIN records ready go now: when the chunks mapped are
 * many (a big round's records, let go at its end); in a file in time
 * order, whose records are ready one by one as found, when they fill
 * BATCH_CHUNKS chunks (a batch of one record each time would cost the
 * threads a wakeup each: a report of 116 MB took 0.51 s, not 0.18).
 */
static bool batch_due(const struct pipe *pp)
{
	if (!pp->ordered)
		return pp->nr_mapped > pp->max_mapped;
	return (pp->pos >> CHUNK_SHIFT) - (pp->rel[pp->rel_head] >> CHUNK_SHIFT) >= BATCH_CHUNKS;
}

/*
 * Scan on until records may go: at least BATCH_MIN of them (consecutive
 * small rounds go out together: each batch costs the threads a wakeup),
 * fewer when the chunks mapped are many, the rest at the end; fill b with
 * at most BATCH_MAX of them (a round of a second of offcpu's records is
 * tens of thousands: its chunks are mapped a batch at a time). Returns 1
 * when more batches follow, 0 at the end, negative errno on a damaged
 * file (with what was found before it in b).
 */
static int produce(struct perf_reader *r, struct pipe *pp, struct batch *b)
{
	int err;

	b->n = 0;
	for (;;) {
		uint64_t pos = pp->pos, t;
		size_t ready = pp->rel_ready - pp->rel_head;
		uint32_t type;
		uint16_t size;
		const uint8_t *rec;

		if (ready >= BATCH_MIN || (ready && (pp->at_end || batch_due(pp)))) {
			err = emit(pp, b, false);
			if (err)
				return err;
			return pp->at_end && pp->rel_head == pp->rel_n ? 0 : 1;
		}
		if (pp->at_end)
			return 0;
		if (pos >= r->data_end)
			break;
		if (r->data_end - pos < 8) {
			r->truncated = true;
			break;
		}
		err = chunk_enter(r, pp, pos);
		if (err)
			return produce_fail(pp, b, err);
		rec = reader__rec(r, pos);
		type = rd32(rec);
		memcpy(&size, rec + 6, 2);
		if (size < 8) {
			if (r->data_to_eof && size == 0 && type == 0) {
				/* zero fill after the last record of an interrupted file */
				r->truncated = true;
				break;
			}
			return produce_fail(pp, b, produce_err(pp, -EINVAL, "record at offset %" PRIu64 " has size %u (smaller than its header)",
							       pos, size));
		}
		if (size > r->data_end - pos) {
			if (r->data_to_eof) {
				r->truncated = true;
				break;
			}
			return produce_fail(pp, b, produce_err(pp, -EINVAL, "record at offset %" PRIu64 " (size %u) runs past the end of the data section at %" PRIu64,
							       pos, size, r->data_end));
		}
		pp->pos += size;
		if (type == PERF_RECORD_FINISHED_ROUND_) {
			if (pp->have_prev) {
				err = take_queued(r, pp, pp->prev_limit);
				if (err)
					return err;
			}
			pp->prev_limit = pp->round_max;
			pp->have_prev = true;
			span_restart(r, pp);
			continue;
		}
		r->chunk_pending[pos >> CHUNK_SHIFT]++;
		t = reader__record_time(r, pos, type, size);
		if (pp->ordered && t != UINT64_MAX && t < pp->last_time) {
			pp->ordered = false;
			err = reader__warn(r, "the record at offset %" PRIu64 " is older than the one before, in a file that says its records are in time order: the rest are ordered by rounds",
					   pos);
			if (err)
				return err;
		}
		if (pp->ordered) {
			if (t != UINT64_MAX) {
				pp->last_time = t;
				if (t > pp->round_max)
					pp->round_max = t;
			}
			err = rel_put(pp, pos);
			if (err)
				return err;
			pp->rel_ready = pp->rel_n;
			continue;
		}
		if (t == UINT64_MAX) {
			err = rel_put(pp, pos);
			if (err)
				return err;
			continue;
		}
		if (vec__reserve((void **)&r->q, &r->qcap, r->nq + 1, sizeof(*r->q), 4096))
			return -ENOMEM;
		r->q[r->nq].a = t;
		r->q[r->nq].b = pos;
		r->nq++;
		if (t > pp->round_max)
			pp->round_max = t;
		if (window_full(r, pp)) {
			if (!pp->window_warned) {
				pp->window_warned = true;
				err = reader__warn(r, "records out of time order over more than %" PRIu64 " MiB of the file (no FINISHED_ROUND between them): delivered in time order within such windows",
						   pp->window >> 20);
				if (err)
					return err;
			}
			err = take_queued(r, pp, UINT64_MAX);
			if (err)
				return err;
			span_restart(r, pp);
		}
	}
	if (r->truncated) {
		if (!r->incomplete || r->features_cut)
			r->incomplete = "its last record is cut off";
		err = reader__warn(r, "the last record is cut off at offset %" PRIu64 "; reporting the %" PRIu64 " bytes of whole records before it",
				   pp->pos, pp->pos - r->data_start);
		if (err)
			return err;
	}
	err = take_queued(r, pp, UINT64_MAX);
	if (err)
		return err;
	pp->at_end = true;
	err = emit(pp, b, false);
	if (err)
		return err;
	return pp->rel_head == pp->rel_n ? 0 : 1;
}

/*
 * Before b goes to the consumer: every chunk its records are in mapped
 * (an evicted chunk again) and pinned, so that nothing unmaps it until
 * the batch comes back. 0 or a negative errno.
 */
static int batch_pin(struct perf_reader *r, struct pipe *pp, struct batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		size_t c = b->offs[i] >> CHUNK_SHIFT;
		int err;

		if (!r->chunks[c]) {
			err = reader__map_chunk(r, b->offs[i]);
			if (err) {
				b->n = i; /* the ones pinned so far go */
				return produce_err(pp, err, "cannot read the records at offset %" PRIu64 ": %s",
						   b->offs[i], strerror(-err));
			}
			pp->nr_mapped++;
		}
		r->chunk_inflight[c]++;
	}
	return 0;
}

/*
 * A batch to fill: a spare one, or a new one. The records of a spare one
 * were delivered: the chunks that held them and nothing else still to
 * deliver are unmapped here, by the producer, which maps them too.
 */
static struct batch *batch_get(struct pipe *pp)
{
	struct perf_reader *r = pp->r;
	struct batch *b;

	pthread_mutex_lock(&pp->mu);
	b = pp->free;
	if (b)
		pp->free = b->next;
	pthread_mutex_unlock(&pp->mu);
	if (!b)
		return calloc(1, sizeof(*b));
	for (size_t i = 0; i < b->n; i++) {
		size_t c = b->offs[i] >> CHUNK_SHIFT;

		r->chunk_inflight[c]--;
		if (!--r->chunk_pending[c])
			chunk_done(r, pp, c);
		else if (!r->chunk_inflight[c])
			chunk_evict(r, pp, c);
	}
	b->n = 0;
	return b;
}

static void *producer(void *arg)
{
	struct pipe *pp = arg;
	int ret;

	pthread_setname_np(pthread_self(), "offcpu-reader"); /* in top and in profiles */
	do {
		struct batch *b = batch_get(pp);

		ret = b ? produce(pp->r, pp, b) : -ENOMEM;
		if (b) {
			int err = batch_pin(pp->r, pp, b);

			if (err && ret >= 0)
				ret = err;
		}
		pthread_mutex_lock(&pp->mu);
		if (b) {
			b->next = NULL;
			if (pp->tail)
				pp->tail->next = b;
			else
				pp->head = b;
			pp->tail = b;
			pp->nready++;
		}
		if (ret <= 0) {
			pp->done = true;
			pp->perr = ret;
		}
		pthread_cond_broadcast(&pp->cv);
		while (ret > 0 && !pp->stop &&
		       (pp->nready >= PIPE_MAX_BATCHES ||
			(pp->nready >= PIPE_MAPPED_BATCHES && pp->nr_mapped > pp->max_mapped)))
			pthread_cond_wait(&pp->cv, &pp->mu);
		if (pp->stop)
			ret = 0;
		pthread_mutex_unlock(&pp->mu);
	} while (ret > 0);
	return NULL;
}

/* The next batch, waiting for the producer; NULL when there are no more. */
static struct batch *batch_next(struct pipe *pp)
{
	struct batch *b;

	pthread_mutex_lock(&pp->mu);
	while (!pp->head && !pp->done)
		pthread_cond_wait(&pp->cv, &pp->mu);
	b = pp->head;
	if (b) {
		pp->head = b->next;
		if (!pp->head)
			pp->tail = NULL;
		pp->nready--;
		pthread_cond_broadcast(&pp->cv);
	}
	pthread_mutex_unlock(&pp->mu);
	return b;
}

static void batch_free(struct batch *b)
{
	while (b) {
		struct batch *n = b->next;

		free(b->offs);
		free(b);
		b = n;
	}
}

/*
 * A thread pays for itself from about a megabyte of records on; below, the
 * producer runs in the caller's thread, a batch at a time.
 * OFFCPU_READER_THREADS=1 or 0 forces either (tests).
 */
static bool use_thread(const struct perf_reader *r)
{
	const char *env = getenv("OFFCPU_READER_THREADS");

	if (env && *env)
		return *env == '1';
	return r->data_end - r->data_start >= (1u << 20);
}

int perf_reader__process(struct perf_reader *r, perf_reader_cb cb, void *ctx)
{
	struct pipe pp = { .r = r, .pos = r->data_start, .window = window_max(),
			   .span_start = r->data_start, .ra_end = r->data_start,
			   .ordered = reader__says_time_ordered(r) };
	bool threaded;
	struct batch *b;
	pthread_t th;
	int err = 0;

	pthread_mutex_init(&pp.mu, NULL);
	pthread_cond_init(&pp.cv, NULL);
	pp.max_mapped = (r->data_end - r->data_start) / 32 >> CHUNK_SHIFT;
	if (pp.max_mapped < PIPE_MIN_MAPPED)
		pp.max_mapped = PIPE_MIN_MAPPED;
	if (pp.max_mapped > PIPE_MAX_MAPPED)
		pp.max_mapped = PIPE_MAX_MAPPED;
	threaded = use_thread(r) && !pthread_create(&th, NULL, producer, &pp);
	for (;;) {
		if (threaded) {
			b = batch_next(&pp);
		} else { /* one batch at a time, in this thread */
			b = pp.done ? NULL : batch_get(&pp);
			if (b) {
				int perr = produce(r, &pp, b), pin = batch_pin(r, &pp, b);

				pp.perr = pin && perr >= 0 ? pin : perr;
				pp.done = pp.perr <= 0;
			} else if (!pp.done) {
				pp.perr = -ENOMEM;
				pp.done = true;
			}
		}
		if (!b)
			break;
		for (size_t i = 0; i < b->n && !err; i++) {
			/* records come in time order, not in file order: fetch ahead */
			if (i + PREFETCH_AHEAD < b->n) {
				const char *p = (const char *)reader__rec(r, b->offs[i + PREFETCH_AHEAD]);

				__builtin_prefetch(p);
				__builtin_prefetch(p + 64);
				__builtin_prefetch(p + 128);
				__builtin_prefetch(p + 192);
			}
			err = reader__deliver(r, b->offs[i], cb, ctx);
		}
		pthread_mutex_lock(&pp.mu);
		if (err)
			b->n = 0; /* not all delivered: its chunks stay until the end */
		b->next = pp.free;
		pp.free = b;
		if (err)
			pp.stop = true;
		pthread_cond_broadcast(&pp.cv);
		pthread_mutex_unlock(&pp.mu);
		if (err)
			break;
	}
	if (threaded)
		pthread_join(th, NULL);
	if (!err && pp.perr < 0) {
		err = pp.perr;
		if (pp.perr_msg[0])
			snprintf(r->err, sizeof(r->err), "%s", pp.perr_msg);
	}
	batch_free(pp.head);
	batch_free(pp.free);
	free(pp.tmp);
	free(pp.rel);
	/* the walk is over: nothing it mapped or queued is needed any more */
	reader__unmap_all(r);
	free(r->q);
	r->q = NULL;
	r->nq = r->qcap = 0;
	pthread_mutex_destroy(&pp.mu);
	pthread_cond_destroy(&pp.cv);
	return err;
}
