/*
 * writer.c - threads that write and hash downloaded chunks (writer.h).
 *
 * DESIGN.  One mutex, one condition variable for the buffers, and per
 * thread a FIFO of chunks and a condition variable to wake it.  A stream
 * is bound to a thread when it is opened (round robin), so its chunks are
 * written and hashed in order without any ordering of their own; a chunk
 * carries the offset it was given at submission.  libcurl 7.88 hands its
 * write callback at most 16 KiB at a time: the caller gathers those into
 * a chunk (256 KiB in sync.c), so a gigabyte is four thousand pwrite calls,
 * not sixty-five thousand.  Why threads at all: on a machine of a few
 * cores the MD5 and the copy into the page cache cost as much CPU as
 * receiving does, and one thread doing all three is the bottleneck.
 */
#include "objstore/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct chunk {
	struct chunk *next;
	struct jf_wstream *s; /* NULL: a writeback of wb_fd (malloc'd, no buffer) */
	int wb_fd;
	char *buf;
	size_t n;
	int64_t off;
};

struct worker {
	struct jf_wpool *p;
	pthread_t th;
	bool started;
	pthread_cond_t cv;
	struct chunk *head, *tail;
};

struct jf_wpool {
	pthread_mutex_t mu;
	pthread_cond_t free_cv; /* a buffer came back, or a stream drained */
	size_t chunk;
	char **free_bufs;
	int nfree, nbufs;
	char *mem;
	struct chunk *free_chunks;
	struct chunk *chunks;
	struct worker *w;
	int nw, next_w;
	bool stop;
};

size_t jf_wpool_chunk(const struct jf_wpool *p)
{
	return p->chunk;
}

/* write and hash one chunk (no lock held); the errno or 0 */
static int do_chunk(struct jf_wstream *s, const char *buf, size_t n, int64_t off)
{
	size_t done = 0;
	if (s->fd < 0) {
		s->fd = openat(s->dirfd, s->name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (s->fd < 0)
			return errno;
	}
	while (done < n) {
		ssize_t k = pwrite(s->fd, buf + done, n - done, off + (int64_t)done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? errno : EIO;
		done += (size_t)k;
	}
	if (s->md5 && *s->md5_n >= 0) {
		jf_md5_update(s->md5, buf, n);
		*s->md5_n += (int64_t)n;
	}
	return 0;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	struct jf_wpool *p = w->p;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!w->head && !p->stop)
			pthread_cond_wait(&w->cv, &p->mu);
		if (!w->head)
			break;
		struct chunk *c = w->head;
		w->head = c->next;
		if (!w->head)
			w->tail = NULL;
		struct jf_wstream *s = c->s;
		if (!s) {
			pthread_mutex_unlock(&p->mu);
			sync_file_range(c->wb_fd, 0, 0, SYNC_FILE_RANGE_WRITE);
			close(c->wb_fd);
			free(c);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		bool skip = s->err != 0;
		pthread_mutex_unlock(&p->mu);
		int e = skip || c->n == 0 ? 0 : do_chunk(s, c->buf, c->n, c->off);
		pthread_mutex_lock(&p->mu);
		if (e && !s->err)
			s->err = e;
		s->pending--;
		p->free_bufs[p->nfree++] = c->buf;
		c->next = p->free_chunks;
		p->free_chunks = c;
		pthread_cond_broadcast(&p->free_cv);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

enum jf_err jf_wpool_new(int nthreads, size_t chunk, int nbufs, struct jf_wpool **out,
			 struct jf_error *err)
{
	*out = NULL;
	if (nbufs < 1)
		nbufs = 1;
	struct jf_wpool *p = calloc(1, sizeof(*p));
	if (!p)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->free_cv, NULL);
	p->chunk = chunk;
	p->nbufs = nbufs;
	p->free_bufs = calloc((size_t)nbufs, sizeof(*p->free_bufs));
	p->chunks = calloc((size_t)nbufs, sizeof(*p->chunks));
	p->mem = malloc(chunk * (size_t)nbufs);
	p->w = nthreads > 0 ? calloc((size_t)nthreads, sizeof(*p->w)) : NULL;
	if (!p->free_bufs || !p->chunks || !p->mem || (nthreads > 0 && !p->w)) {
		jf_wpool_free(p);
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	}
	for (int i = 0; i < nbufs; i++) {
		p->free_bufs[p->nfree++] = p->mem + (size_t)i * chunk;
		p->chunks[i].next = p->free_chunks;
		p->free_chunks = &p->chunks[i];
	}
	for (int i = 0; i < nthreads; i++) {
		struct worker *w = &p->w[i];
		w->p = p;
		pthread_cond_init(&w->cv, NULL);
		p->nw++;
		if (pthread_create(&w->th, NULL, run, w) != 0) {
			jf_wpool_free(p);
			return jf_error_set(err, JF_EIO, 0, "cannot start a writer thread");
		}
		w->started = true;
	}
	*out = p;
	return JF_OK;
}

void jf_wpool_free(struct jf_wpool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	for (int i = 0; i < p->nw; i++)
		pthread_cond_signal(&p->w[i].cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nw; i++) {
		if (p->w[i].started)
			pthread_join(p->w[i].th, NULL);
		pthread_cond_destroy(&p->w[i].cv);
	}
	pthread_cond_destroy(&p->free_cv);
	pthread_mutex_destroy(&p->mu);
	free(p->w);
	free(p->free_bufs);
	free(p->chunks);
	free(p->mem);
	free(p);
}

void jf_wpool_open(struct jf_wpool *p, struct jf_wstream *s, int fd, int64_t off,
		   struct jf_md5 *md5, int64_t *md5_n)
{
	s->fd = fd;
	s->off = off;
	s->md5 = md5;
	s->md5_n = md5_n;
	s->pending = 0;
	s->err = 0;
	s->worker = p->nw ? p->next_w++ % p->nw : 0;
}

void jf_wpool_open_at(struct jf_wpool *p, struct jf_wstream *s, int dirfd, const char *name,
		      struct jf_md5 *md5, int64_t *md5_n)
{
	jf_wpool_open(p, s, -1, 0, md5, md5_n);
	s->dirfd = dirfd;
	snprintf(s->name, sizeof(s->name), "%s", name);
}

char *jf_wpool_buf(struct jf_wpool *p)
{
	pthread_mutex_lock(&p->mu);
	while (p->nfree == 0)
		pthread_cond_wait(&p->free_cv, &p->mu);
	char *b = p->free_bufs[--p->nfree];
	pthread_mutex_unlock(&p->mu);
	return b;
}

void jf_wpool_submit(struct jf_wpool *p, struct jf_wstream *s, char *buf, size_t n)
{
	int64_t off = s->off;
	s->off += (int64_t)n;
	if (p->nw == 0) {
		int e = s->err || n == 0 ? 0 : do_chunk(s, buf, n, off);
		if (e && !s->err)
			s->err = e;
		p->free_bufs[p->nfree++] = buf;
		return;
	}
	pthread_mutex_lock(&p->mu);
	struct chunk *c = p->free_chunks; /* never short: one per buffer */
	p->free_chunks = c->next;
	c->next = NULL;
	c->s = s;
	c->buf = buf;
	c->n = n;
	c->off = off;
	struct worker *w = &p->w[s->worker];
	if (w->tail)
		w->tail->next = c;
	else
		w->head = c;
	w->tail = c;
	s->pending++;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&p->mu);
}

void jf_wpool_writeback(struct jf_wpool *p, int fd)
{
	struct chunk *c = p->nw ? malloc(sizeof(*c)) : NULL;
	int d = c ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (d < 0) {
		free(c);
		sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE); /* here, then */
		return;
	}
	memset(c, 0, sizeof(*c));
	c->wb_fd = d;
	pthread_mutex_lock(&p->mu);
	struct worker *w = &p->w[p->next_w++ % p->nw];
	if (w->tail)
		w->tail->next = c;
	else
		w->head = c;
	w->tail = c;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&p->mu);
}

int jf_wpool_wait(struct jf_wpool *p, struct jf_wstream *s)
{
	if (p->nw == 0)
		return s->err;
	pthread_mutex_lock(&p->mu);
	while (s->pending > 0)
		pthread_cond_wait(&p->free_cv, &p->mu);
	int e = s->err;
	pthread_mutex_unlock(&p->mu);
	return e;
}

int jf_wpool_error(struct jf_wpool *p, const struct jf_wstream *s)
{
	if (p->nw == 0)
		return s->err;
	pthread_mutex_lock(&p->mu);
	int e = s->err;
	pthread_mutex_unlock(&p->mu);
	return e;
}
