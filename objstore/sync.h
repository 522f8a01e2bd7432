/*
 * sync.h - bring a local read-only mirror of an S3 prefix up to date.
 *
 * A cache directory DIR holds:
 *   DIR/data/         the mirror: containers bind-mount it read-only.  Files
 *                     0444 (they are only ever replaced by rename, never
 *                     written in place), directories 0755 (so that a sync
 *                     that does not run as root can still rename into
 *                     them); each file's mtime is its object's LastModified
 *   DIR/manifest      what data/ holds (manifest.h), sorted by key
 *   DIR/partial/      downloads: <hash>.part, named by the sha256 of the
 *                     object's key, size, ETag and mtime (one version of
 *                     one object), made 0444 with the object's mtime once
 *                     whole and checked; the new manifest (manifest.new)
 *                     and the list of objects to install (fetch.list)
 *                     while a sync runs; emptied by a sync that ends well
 *   DIR/progress      {"objects_listed","objects_done","bytes_done",
 *                     "bytes_total_so_far"}, replaced at most every 200 ms
 *   DIR/result.json   the last sync's outcome (jf_sync_result_json)
 *   DIR/lock          flock()ed by the sync that runs: one at a time
 *
 * A sync runs in two phases.  Fetch: the listing, page by page, is merged
 * with the old manifest (both in key order, streamed: memory is a page or
 * two plus the transfers under way, whatever the number of objects); an
 * object whose size, ETag and LastModified equal the manifest's and whose
 * file is there with that size and mtime is kept without a request; any
 * other is downloaded into partial/ (GETs in parallel, each checked: size,
 * the GET's ETag against the listing's, the MD5 of the bytes when the ETag
 * is a plain MD5).  data/ is not touched in this phase, so a full disk, a
 * network failure or a signal leaves the old mirror as it was.  Commit,
 * once every GET is done: one syncfs() makes the downloads durable, the
 * objects no longer listed are removed from data/ (empty directories
 * pruned), the downloads are renamed into place, a second syncfs(), and
 * the new manifest is renamed over the old.  A sync cut in the commit
 * leaves a data/ that the next one corrects: keeping needs the file's own
 * size and mtime to match, not only the manifest's word.
 *
 * Resuming: a .part of the same version of the object (its name says it)
 * is continued with "Range: bytes=N-" and If-Match (its MD5 taken over
 * from the bytes on disk); a whole one is checked again with a one-byte
 * range (the ETag still the same) and its MD5 before it is used.  A 200 instead of 206 starts the
 * body over; a 412 (or 404) means the object changed during the sync, as does an ETag that is not
 * the listing's: fetched again up to changed_tries times, then the sync
 * fails naming the key.
 *
 * Keys: unsafe ones (keys.h) and ones that would need a file to be a
 * directory ("a" and "a/b": the first listed wins) are skipped, counted
 * and named (the first JF_SYNC_WARN_MAX) in the result; never written.
 */
#ifndef JF_OBJSTORE_SYNC_H
#define JF_OBJSTORE_SYNC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "objstore/s3.h"

#define JF_SYNC_WARN_MAX 10

struct jf_sync_opts {
	const char *dir;    /* DIR (made when missing) */
	const char *prefix; /* as the user wrote it; NULL = the whole bucket */
	struct jf_s3_opts s3;
	int parallel;      /* GETs at once; 0 = 16 */
	int tries;         /* attempts of one request before the sync fails; 0 = 4 */
	long backoff_ms;   /* before the first retry, doubled each time; 0 = 500 */
	int changed_tries; /* an object that changes while fetched; 0 = 3 */
	long buffer_size;  /* libcurl's receive buffer; 0 = 256 KiB */
	bool fsync_each;   /* fsync every download (default: one syncfs) */
	int writers;       /* threads that write and hash downloads; 0 = one a CPU up to 4 (none
			    * on one CPU), -1 = none: the transfer thread does it */
	volatile sig_atomic_t *stop; /* set (by a signal handler): end, keep .part files */
};

struct jf_sync_result {
	bool ok;
	int64_t objects;       /* in the mirror now */
	int64_t bytes;         /* their sizes */
	int64_t fetched;       /* objects newly placed in data/ */
	int64_t fetched_bytes; /* bytes received this run */
	int64_t kept;          /* objects kept without a GET */
	int64_t removed;       /* objects removed from data/ */
	int64_t skipped;       /* keys not mirrored (unsafe, conflicting) */
	int64_t resumed;       /* downloads continued from an earlier .part */
	int64_t listing_pages;
	double seconds;
	size_t nskipped_keys;
	char skipped_keys[JF_SYNC_WARN_MAX][160]; /* quoted as jf_err_quote does */
	size_t nwarnings;
	char warnings[JF_SYNC_WARN_MAX][JF_ERRMSG_MAX];
	char message[JF_ERRMSG_MAX];
};

/* Sync o->dir.  The caller holds the lock (jf_sync_lock).  *r is filled
 * on failure too (ok false, message = err->msg). */
enum jf_err jf_sync_run(const struct jf_sync_opts *o, struct jf_sync_result *r,
			struct jf_error *err);

/* Make dir if missing and take DIR/lock without waiting: *fd holds it
 * (close to release).  JF_EBUSY when another process holds it. */
enum jf_err jf_sync_lock(const char *dir, int *fd, struct jf_error *err);

/* The result as one line of JSON (malloc'd), and written to
 * DIR/result.json atomically. */
char *jf_sync_result_json(const struct jf_sync_result *r);
enum jf_err jf_sync_write_result(const char *dir, const struct jf_sync_result *r,
				 struct jf_error *err);

#endif
