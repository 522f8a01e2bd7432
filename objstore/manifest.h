/*
 * manifest.h - the object list of a mirror, as a sorted text file, and the
 * merge of an old list with a new listing (pure but for the file I/O).
 *
 *   jobfs-sync manifest 1<TAB>ENDPOINT<TAB>BUCKET<TAB>PREFIX
 *   KEY<TAB>SIZE<TAB>ETAG<TAB>MTIME
 *   ...
 *
 * One line per object, keys in byte order (S3's listing order), ETag
 * without quotes ("-" when the listing gave none), MTIME the object's
 * LastModified in seconds since the epoch.  Keys of a manifest are safe
 * (keys.h), so they hold no TAB or newline; the header's fields were
 * checked likewise.
 *
 * Reading streams one line at a time: memory is one line, whatever the
 * number of objects.  A line that does not parse, or a key not after the
 * one before it, ends the reader there (jf_mf_damaged says so): what is
 * after it is treated as absent, which at worst fetches objects again.
 *
 * The merge walks an old manifest alongside the keys of a listing, both in
 * byte order: for each listed key, the old entries before it are gone
 * (reported through a callback), and the key is NEW (not in the old list),
 * SAME (same size, ETag and mtime) or CHANGED.
 */
#ifndef JF_OBJSTORE_MANIFEST_H
#define JF_OBJSTORE_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"
#include "objstore/s3.h"

#define JF_MF_MAGIC "jobfs-sync manifest 1"

struct jf_mf_entry {
	const char *key; /* NUL-terminated, valid until the next read */
	size_t keylen;
	int64_t size;
	char etag[JF_S3_ETAG_MAX]; /* "" when none */
	int64_t mtime;
};

struct jf_mf_reader;

/* Open path for reading; a file that does not exist is an empty manifest. */
enum jf_err jf_mf_open(const char *path, struct jf_mf_reader **out, struct jf_error *err);
/* The same over text in memory (tests). */
enum jf_err jf_mf_open_mem(const char *text, size_t n, struct jf_mf_reader **out,
			   struct jf_error *err);
void jf_mf_close(struct jf_mf_reader *r);
/* The current entry, NULL at the end. */
const struct jf_mf_entry *jf_mf_peek(struct jf_mf_reader *r);
void jf_mf_next(struct jf_mf_reader *r);
/* The header's fields ("" when the file was empty or had no header). */
const char *jf_mf_endpoint(const struct jf_mf_reader *r);
const char *jf_mf_bucket(const struct jf_mf_reader *r);
const char *jf_mf_prefix(const struct jf_mf_reader *r);
bool jf_mf_has_header(const struct jf_mf_reader *r);
/* The reader stopped at a bad line: its number (1-based), else 0. */
int jf_mf_damaged(const struct jf_mf_reader *r);

struct jf_mf_writer;

/* Create path (truncating) and write the header. */
enum jf_err jf_mf_create(const char *path, const char *endpoint, const char *bucket,
			 const char *prefix, struct jf_mf_writer **out, struct jf_error *err);
/* One entry; keys must come in byte order (not checked here). */
enum jf_err jf_mf_write(struct jf_mf_writer *w, const char *key, size_t keylen, int64_t size,
			const char *etag, int64_t mtime, struct jf_error *err);
/* The writer's first errno, 0 when none. */
int jf_mf_errno(const struct jf_mf_writer *w);
/* Flush (and fsync when durable) and close; the first write error, if
 * any (errno kept in *errno_out when not NULL).  Always frees w. */
enum jf_err jf_mf_finish(struct jf_mf_writer *w, bool durable, int *errno_out,
			 struct jf_error *err);
/* Close and forget (on failure). */
void jf_mf_abandon(struct jf_mf_writer *w);

enum jf_mf_verdict {
	JF_MF_NEW,
	JF_MF_SAME,
	JF_MF_CHANGED,
};

/* Called with each old entry that is not in the new listing. */
typedef void (*jf_mf_gone_fn)(void *ud, const struct jf_mf_entry *e);

/* Merge one listed object (keys must come in byte order) with old
 * (advancing it past the key); gone may be NULL. */
enum jf_mf_verdict jf_mf_merge(struct jf_mf_reader *old, const char *key, size_t keylen,
			       int64_t size, const char *etag, int64_t mtime, jf_mf_gone_fn gone,
			       void *ud);
/* The listing ended: every old entry left is gone. */
void jf_mf_merge_rest(struct jf_mf_reader *old, jf_mf_gone_fn gone, void *ud);

#endif
