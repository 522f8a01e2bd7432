/*
 * shim_output.c - what jobfs-shim writes into RUN_DIR: each proc's output
 * in stdout and stderr as it comes and by whole lines in logs, the
 * rotation of those three files and the RUN_DIR/rotation record, and the
 * `started` line and the `result` record.  The rules (what logs holds,
 * when and how a file rotates, the result's fields) are the DESIGN at the
 * top of shim.c; the Slurm mode's additions to the result are at the top
 * of shim_slurm.c.
 *
 * What holds: an outfile's size is the bytes in NAME and size1 those in
 * NAME.1; with a cap, size never passes it (logs: after its last whole
 * line that fits); fd is -1 only after a rotation that could not reopen
 * NAME, and the next write tries again.  A stream's line buffer holds the
 * partial line not yet in logs, less than SHIM_LINE_CAP bytes.  Nothing
 * here blocks on a proc or stops draining a pipe: a write that fails loses
 * its bytes.  `started` and `result` are replaced whole (written to
 * NAME.tmp and renamed; `result` is fsynced first and its directory after,
 * `started` is not: the fsynced claim is the durable record of a start).
 *
 * Use: prepare() opens the three files (outfile_open), run_loop() hands
 * every readable pipe to stream_read() and closes them with
 * stream_close(); proc_note() for a proc that could not start;
 * report_started() once the procs were started (or could not be),
 * write_result() once they are all done.
 */
#include "tools/shim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* name.tmp, fsync (if durable), rename onto name; fsync the directory too
 * if durable.  Not durable: replaced whole, but a power cut may lose it. */
static int write_atomic(int dirfd, const char *name, const char *data, size_t n, bool durable)
{
	bool sync_dir = durable;
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (write_all(fd, data, n) < 0 || (durable && fsync(fd) < 0))
		goto fail_fd;
	if (close(fd) < 0) {
		fd = -1;
		goto fail_fd;
	}
	if (renameat(dirfd, tmp, dirfd, name) < 0)
		goto fail_tmp;
	if (sync_dir && fsync(dirfd) < 0)
		return -1;
	return 0;

fail_fd:
	if (fd >= 0) {
		int e = errno;
		close(fd);
		errno = e;
	}
fail_tmp : {
	int e = errno;
	unlinkat(dirfd, tmp, 0);
	errno = e;
	return -1;
}
}

/* ---- output ---- */

int outfile_open(struct shim *s, struct outfile *f, const char *name)
{
	char old[16];
	struct stat st;
	f->name = name;
	f->cap = s->l.log_cap;
	f->fd = openat(s->dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (f->fd < 0 || fstat(f->fd, &st) < 0)
		return -1;
	f->size = st.st_size;
	snprintf(old, sizeof(old), "%s.1", name);
	if (fstatat(s->dirfd, old, &st, 0) == 0)
		f->size1 = st.st_size;
	return 0;
}

/* RUN_DIR/rotation, replaced whole (see the top of shim.c). */
static void rotation_record(struct shim *s)
{
	const struct outfile *files[] = { &s->fout, &s->ferr, &s->flogs };
	char buf[512];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "{\"cap\":%" PRId64, s->l.log_cap);
	for (int k = 0; k < 3; k++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				      ",\"%s\":{\"rotations\":%" PRId64 ",\"dropped\":%" PRId64 "}",
				      files[k]->name, files[k]->rotations, files[k]->dropped);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "}\n");
	int fd = openat(s->dirfd, "rotation.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	bool ok = write_all(fd, buf, n) == 0;
	if (close(fd) < 0)
		ok = false;
	if (!ok || renameat(s->dirfd, "rotation.tmp", s->dirfd, "rotation") < 0)
		unlinkat(s->dirfd, "rotation.tmp", 0);
}

/* NAME becomes NAME.1 and a new NAME is opened; false if neither that nor
 * emptying NAME in place worked (the cap cannot hold: write nothing). */
static bool outfile_rotate(struct shim *s, struct outfile *f)
{
	char old[16];
	snprintf(old, sizeof(old), "%s.1", f->name);
	if (renameat(s->dirfd, f->name, s->dirfd, old) == 0) {
		f->dropped += f->size1;
		f->size1 = f->size;
		if (f->fd >= 0)
			close(f->fd);
		f->fd = openat(s->dirfd, f->name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	} else if (f->fd >= 0 && ftruncate(f->fd, 0) == 0) {
		f->dropped += f->size;
	} else {
		return false;
	}
	f->size = 0;
	f->rotations++;
	rotation_record(s);
	return true;
}

/* false if the bytes could not be written (they are lost). */
static bool outfile_raw(struct outfile *f, const char *p, size_t n)
{
	if (n == 0)
		return true;
	/* On a full disk the bytes are lost; the pipe keeps draining. */
	if (write_all(f->fd, p, n) < 0)
		return false;
	f->size += (int64_t)n;
	return true;
}

/* Append, rotating first whenever the next piece would pass the cap. */
static void outfile_write(struct shim *s, struct outfile *f, const char *p, size_t n)
{
	if (f->fd < 0 && f->name) /* a rotation could not reopen it: try again */
		f->fd = openat(s->dirfd, f->name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (f->fd < 0)
		return;
	while (n > 0) {
		if (f->cap <= 0 || f->size + (int64_t)n <= f->cap) {
			outfile_raw(f, p, n);
			return;
		}
		size_t take = f->size < f->cap ? (size_t)(f->cap - f->size) : 0;
		if (f->lines) {
			const char *nl = take ? memrchr(p, '\n', take) : NULL;
			size_t whole = nl ? (size_t)(nl - p) + 1 : 0;
			/* nothing whole fits: rotate first, unless NAME is empty
			 * already (a line longer than the cap is cut) */
			if (whole > 0 || f->size > 0)
				take = whole;
		}
		if (!outfile_raw(f, p, take) || !outfile_rotate(s, f))
			return;
		p += take;
		n -= take;
	}
}

static void logs_flush(struct shim *s)
{
	outfile_write(s, &s->flogs, s->logbuf, s->loglen);
	s->loglen = 0;
}

static void logs_put(struct shim *s, const char *p, size_t n)
{
	if (s->loglen + n > SHIM_LOGBUF)
		logs_flush(s);
	if (n > SHIM_LOGBUF) {
		outfile_write(s, &s->flogs, p, n);
		return;
	}
	memcpy(s->logbuf + s->loglen, p, n);
	s->loglen += n;
}

/* One piece of a line for logs: a whole line, or a forced 64 KiB piece. */
static void logs_line(struct shim *s, struct proc *p, struct stream *st, const char *line, size_t n,
		      bool add_nl)
{
	if (s->l.nprocs > 1 && !st->mid_line) {
		char prefix[SHIM_NAME_MAX + 4];
		int k = snprintf(prefix, sizeof(prefix), "[%s] ", p->spec->name);
		logs_put(s, prefix, (size_t)k);
	}
	logs_put(s, line, n);
	if (add_nl)
		logs_put(s, "\n", 1);
	st->mid_line = !add_nl && line[n - 1] != '\n';
}

static void stream_feed(struct shim *s, struct proc *p, struct stream *st, const char *data,
			size_t n)
{
	outfile_write(s, st->file, data, n);
	while (n > 0) {
		size_t take = SHIM_LINE_CAP - st->len;
		if (take > n)
			take = n;
		memcpy(st->line + st->len, data, take);
		st->len += take;
		data += take;
		n -= take;

		size_t start = 0;
		const char *nl;
		while ((nl = memchr(st->line + start, '\n', st->len - start))) {
			size_t end = (size_t)(nl - st->line) + 1;
			logs_line(s, p, st, st->line + start, end - start, false);
			start = end;
		}
		memmove(st->line, st->line + start, st->len - start);
		st->len -= start;
		if (st->len == SHIM_LINE_CAP) {
			logs_line(s, p, st, st->line, st->len, false);
			st->len = 0;
		}
	}
	logs_flush(s);
}

void stream_close(struct shim *s, struct proc *p, struct stream *st)
{
	if (st->fd < 0)
		return;
	if (st->len > 0) {
		logs_line(s, p, st, st->line, st->len, true);
		st->len = 0;
		logs_flush(s);
	}
	close(st->fd);
	st->fd = -1;
}

void stream_read(struct shim *s, struct proc *p, struct stream *st)
{
	ssize_t r = read(st->fd, s->chunk, SHIM_CHUNK);
	if (r > 0)
		stream_feed(s, p, st, s->chunk, (size_t)r);
	else if (r == 0 || (errno != EAGAIN && errno != EINTR))
		stream_close(s, p, st);
}

/*
 * A line of the shim's own about proc p, "jobfs: TEXT\n" (why it could not
 * start): appended to stderr as it is and to logs by the rules of the
 * proc's own lines ("[name] " first with several procs), rotating as they
 * do.  TEXT is one clean line (msg_clean).
 */
void proc_note(struct shim *s, struct proc *p, const char *text)
{
	char line[SHIM_MSG_MAX + 16];
	int k = snprintf(line, sizeof(line), "jobfs: %s\n", text);
	if (k < 0)
		return;
	size_t n = (size_t)k < sizeof(line) ? (size_t)k : sizeof(line) - 1;
	line[n - 1] = '\n'; /* cut or not, one whole line */
	outfile_write(s, &s->ferr, line, n);
	logs_line(s, p, &p->err, line, n, false);
	logs_flush(s);
}

void report_started(struct shim *s)
{
	char line[SHIM_MSG_MAX + 64 + SHIM_MAX_PROCS * 12];
	size_t off;
	if (s->start_ms == 0)
		s->start_ms = wall_ms();
	if (s->start_failed) {
		off = (size_t)snprintf(line, sizeof(line), "failed %" PRId64 " %s\n", s->start_ms,
				       s->start_msg);
	} else {
		off = (size_t)snprintf(line, sizeof(line), "started %" PRId64, s->start_ms);
		for (size_t i = 0; i < s->l.nprocs; i++)
			off += (size_t)snprintf(line + off, sizeof(line) - off, " %d",
						(int)s->procs[i].pid);
		off += (size_t)snprintf(line + off, sizeof(line) - off, "\n");
	}
	/* The daemon waits on the pipe; the file is for a restarted daemon
	 * that missed the line.  Not fsynced: after a power cut nothing runs
	 * any more, and the claim (fsynced) is the durable record of the
	 * start (its time, its handle); this is a cheaper copy of it. */
	ready_say(s, line);
	if (write_atomic(s->dirfd, "started", line, off, false) < 0)
		fprintf(stderr, "jobfs-shim: started: %s\n", strerror(errno));
}

void report_gpus(struct shim *s)
{
	/* the GPUs Slurm gave this node, numbered as its gres_detail numbers
	 * them: the daemon's answer to "which GPUs" when the element ended
	 * before a poll saw it run (Slurm forgets the detail then) */
	const char *v = getenv("SLURM_STEP_GPUS");
	if (!v || !v[0])
		v = getenv("SLURM_JOB_GPUS");
	if (!v || !jf_shim_gpus_valid(v))
		return;
	char line[JF_SHIM_GPUS_MAX + 1];
	int n = snprintf(line, sizeof(line), "%s\n", v);
	if (write_atomic(s->dirfd, "gpus", line, (size_t)n, false) < 0)
		fprintf(stderr, "jobfs-shim: gpus: %s\n", strerror(errno));
}

int write_result(struct shim *s)
{
	char msg[SHIM_MSG_MAX], sbuf[32];
	int rc = -1;
	json_t *root = NULL, *procs = json_array();
	const struct proc *node = NULL;
	int exit_code = 0, term_signal = 0;

	if (s->end_ms == 0)
		s->end_ms = wall_ms();
	if (s->setup_failed) {
		exit_code = 127; /* nothing was started: "procs" is [] */
		snprintf(msg, sizeof(msg), "%s", s->start_msg);
	} else if (s->start_failed) {
		/* Whatever signal reached it on its way to _exit, it never ran. */
		s->procs[s->failed_proc].exit_code = s->failed_code;
		s->procs[s->failed_proc].term_signal = 0;
		node = &s->procs[s->failed_proc];
		snprintf(msg, sizeof(msg), "%s", s->start_msg);
	} else {
		for (size_t i = 0; i < s->l.nprocs && !node; i++)
			if (s->procs[i].exit_code != 0)
				node = &s->procs[i];
		char what[64], why[64] = "";
		if (!node)
			snprintf(what, sizeof(what), "exit 0");
		else if (node->term_signal)
			snprintf(what, sizeof(what), "killed by %s",
				 signame(node->term_signal, sbuf, sizeof(sbuf)));
		else
			snprintf(what, sizeof(what), "exit %d", node->exit_code);
		if (s->timed_out)
			snprintf(why, sizeof(why),
				 "timed out after %" PRId64 " ms: ", s->sl.timeout_ms);
		else if (s->outside_sig)
			snprintf(why, sizeof(why), "stopped by %s from outside: ",
				 signame(s->outside_sig, sbuf, sizeof(sbuf)));
		if (s->evicted) /* the kubelet's words, whatever the procs did */
			snprintf(msg, sizeof(msg), "%s", s->evict_msg);
		else if (node && s->l.nprocs > 1)
			snprintf(msg, sizeof(msg), "%s%s: %s", why, node->spec->name, what);
		else
			snprintf(msg, sizeof(msg), "%s%s", why, what);
	}
	if (node) {
		exit_code = node->exit_code;
		term_signal = node->term_signal;
	}
	if (s->slurm)
		slurm_conclude(s, exit_code);
	msg_clean(msg);
	if (!procs)
		goto out;
	for (size_t i = 0; i < s->l.nprocs && !s->setup_failed; i++) {
		const struct proc *p = &s->procs[i];
		json_t *o = json_pack("{s:s,s:i,s:i}", "name", p->spec->name, "exit_code",
				      p->exit_code, "signal", p->term_signal);
		if (o && p->oom_killed)
			json_object_set_new(o, "oom_killed", json_true());
		if (o && p->digest[0])
			json_object_set_new(o, "image_digest", json_string(p->digest));
		if (!o || json_array_append_new(procs, o) < 0)
			goto out;
	}
	root = json_pack("{s:i,s:i,s:I,s:I,s:s,s:b,s:O}", "exit_code", exit_code, "signal",
			 term_signal, "start_ms", (json_int_t)s->start_ms, "end_ms",
			 (json_int_t)s->end_ms, "message", msg, "start_failed",
			 s->start_failed || s->setup_failed, "procs", procs);
	if (!root)
		goto out;
	if (s->pull_failed && json_object_set_new(root, "pull_failed", json_true()) < 0)
		goto out;
	if (s->evicted && json_object_set_new(root, "evicted", json_true()) < 0)
		goto out;
	if (s->slurm) {
		const char *sig = s->outside_sig ? sigabbrev_np(s->outside_sig) : "";
		if (json_object_set_new(root, "timed_out", json_boolean(s->timed_out)) < 0 ||
		    json_object_set_new(root, "signalled", json_string(sig ? sig : "")) < 0 ||
		    json_object_set_new(root, "own_failure", json_boolean(s->own_failure)) < 0)
			goto out;
	}
	char *text = json_dumps(root, JSON_COMPACT);
	if (!text)
		goto out;
	size_t len = strlen(text);
	char *line = realloc(text, len + 2);
	if (!line) {
		free(text);
		goto out;
	}
	line[len] = '\n';
	line[len + 1] = '\0';
	rc = write_atomic(s->dirfd, "result", line, len + 1, true);
	if (rc < 0)
		fprintf(stderr, "jobfs-shim: result: %s\n", strerror(errno));
	free(line);
out:
	json_decref(root);
	json_decref(procs);
	return rc;
}
