/*
 * slurm_jobcomp.c - Slurm's jobcomp/filetxt record, read by the slurm
 * backend's thread: one line per run segment, "JobId=N ... StartTime=T
 * EndTime=T ..." in the controller's local time.  Read from where the
 * last look stopped, whole lines only, at most JOBCOMP_READ_MAX bytes a
 * look; the latest JOBCOMP_KEEP segments are kept to be looked up.
 */
#include "backends/slurm/slurm_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define JOBCOMP_READ_MAX (4 << 20)
#define JOBCOMP_KEEP     100000

static int64_t local_time(const char *v)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *end = strptime(v, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end || (*end && *end != ' ' && *end != '\n'))
		return 0;
	tm.tm_isdst = -1;
	time_t t = mktime(&tm);
	return t < 0 ? 0 : (int64_t)t;
}

static const char *field(const char *line, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = line; (p = strstr(p, key)); p += n)
		if ((p == line || p[-1] == ' ') && p[n] == '=')
			return p + n + 1;
	return NULL;
}

/* Lines appended since the last look: "JobId=N ... StartTime=T EndTime=T". */
static void jobcomp_read(struct slurm *s)
{
	struct jobcomp *jc = &s->jc;
	FILE *f = jc->path ? fopen(jc->path, "re") : NULL;
	if (!f)
		return;
	struct stat sb;
	if (fstat(fileno(f), &sb) == 0 && sb.st_size < jc->off)
		jc->off = 0; /* a new file */
	if (fseeko(f, jc->off, SEEK_SET) != 0) {
		fclose(f);
		return;
	}
	char line[4096];
	off_t read_now = 0;
	while (read_now < JOBCOMP_READ_MAX && fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		if (len == 0 || line[len - 1] != '\n')
			break; /* a line still being written: again next time */
		read_now += (off_t)len;
		jc->off += (off_t)len;
		const char *id = field(line, "JobId"), *st = field(line, "StartTime"),
			   *en = field(line, "EndTime");
		if (!id || !st || !en)
			continue;
		if (jc->n == jc->cap) {
			if (jc->cap >= JOBCOMP_KEEP) {
				memmove(jc->v, jc->v + jc->cap / 2,
					(jc->cap - jc->cap / 2) * sizeof(*jc->v));
				jc->n = jc->cap - jc->cap / 2;
			} else {
				size_t nc = jc->cap ? jc->cap * 2 : 256;
				struct seg *p = realloc(jc->v, nc * sizeof(*p));
				if (!p)
					break;
				jc->v = p;
				jc->cap = nc;
			}
		}
		jc->v[jc->n++] =
			(struct seg){ strtoll(id, NULL, 10), local_time(st), local_time(en) };
	}
	fclose(f);
}

/* Slurm's end of the run of job_id that started at start_s; 0 unknown. */
int64_t jf_sl_jobcomp_end(struct slurm *s, int64_t job_id, int64_t start_s)
{
	if (!s->jc.path || job_id <= 0)
		return 0;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = s->jc.n; i-- > 0;)
			if (s->jc.v[i].job_id == job_id && s->jc.v[i].start_s == start_s)
				return s->jc.v[i].end_s;
		if (pass == 0)
			jobcomp_read(s);
	}
	return 0;
}
