/*
 * writer.h - a few threads that write downloaded chunks to their files and
 * hash them, so that the one thread that runs libcurl only receives.
 *
 * A stream is one file being written from offset 0 or a resume point: its
 * chunks are written in the order they were submitted (a stream is bound
 * to one thread), at consecutive offsets, and fed to its MD5 (when it has
 * one) in that order.  Buffers come from the pool (jf_wpool_buf), are
 * filled by the caller and given back with jf_wpool_submit; when all are
 * in use, jf_wpool_buf waits for one.  jf_wpool_wait returns once every
 * chunk of a stream is written: then the stream's offset, MD5 and error
 * may be read.  The first write error of a stream (its errno) sticks, and
 * later chunks of that stream are dropped.
 *
 * A stream may start without its file (fd -1, jf_wpool_open_at): the
 * thread creates it at its first chunk, so that the creation (costly on a
 * busy ext4) is not the receiving thread's either; s->fd says what it got
 * once jf_wpool_wait returned.
 *
 * With no threads (nthreads 0) every call works inline: submit writes and
 * hashes before it returns.
 */
#ifndef JF_OBJSTORE_WRITER_H
#define JF_OBJSTORE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "objstore/s3.h"

struct jf_wstream {
	int fd;             /* -1 until made (see jf_wpool_open_at) */
	int dirfd;          /* where to make it */
	char name[96];      /* its name there */
	int64_t off;        /* where the next submitted chunk goes */
	struct jf_md5 *md5; /* NULL: none */
	int64_t *md5_n;     /* bytes hashed, kept up to date with md5 */
	/* the pool's */
	int worker;
	int pending; /* chunks submitted, not yet written */
	int err;     /* the first errno */
};

struct jf_wpool;

/* nthreads threads (0: inline), nbufs buffers of chunk bytes. */
enum jf_err jf_wpool_new(int nthreads, size_t chunk, int nbufs, struct jf_wpool **out,
			 struct jf_error *err);
/* Waits for every stream's chunks, then ends the threads. */
void jf_wpool_free(struct jf_wpool *p);
size_t jf_wpool_chunk(const struct jf_wpool *p);

/* Start a stream on fd at offset off (every earlier chunk written). */
void jf_wpool_open(struct jf_wpool *p, struct jf_wstream *s, int fd, int64_t off,
		   struct jf_md5 *md5, int64_t *md5_n);
/* The same for a file not made yet: dirfd/name, created (O_CREAT, 0644,
 * no symlink followed) by the first chunk. */
void jf_wpool_open_at(struct jf_wpool *p, struct jf_wstream *s, int dirfd, const char *name,
		      struct jf_md5 *md5, int64_t *md5_n);
/* A free buffer of jf_wpool_chunk bytes (waits for one). */
char *jf_wpool_buf(struct jf_wpool *p);
/* Write buf's first n bytes at s->off (s->off += n) and hash them; buf goes
 * back to the pool.  n may be 0 (the buffer is only given back). */
void jf_wpool_submit(struct jf_wpool *p, struct jf_wstream *s, char *buf, size_t n);
/* Start the writeback of fd's dirty pages (sync_file_range, WRITE) on a
 * writer thread: it may block while the disk's queue is full, and the
 * thread that receives should not.  The pool works on a dup of fd. */
void jf_wpool_writeback(struct jf_wpool *p, int fd);
/* Wait until s has nothing queued; its errno, 0 when all went well. */
int jf_wpool_wait(struct jf_wpool *p, struct jf_wstream *s);
/* s's errno so far (0: none), without waiting. */
int jf_wpool_error(struct jf_wpool *p, const struct jf_wstream *s);

#endif
