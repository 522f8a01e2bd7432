/*
 * cgroup_parse.h - the pure parts of runtime/cgroup.c, fed by text, for
 * its tests (tests/unit/test_cgroup.c): the "key N" files of cgroups
 * (memory.events, cpu.stat, memory.oom_control), a word in a controller
 * list (cgroup.subtree_control), and which cgroup hierarchies a
 * /proc/self/mountinfo describes.  No allocation.
 */
#ifndef JF_CGROUP_PARSE_H
#define JF_CGROUP_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/cgroup.h"

/* N of the line "KEY N" in text (lines of "key value"), -1 when there is
 * no such line or N is not a non-negative decimal.  A key is matched
 * whole: "oom_kill" is not "oom_kill_disable". */
int64_t jf_cg_parse_kv(const char *text, const char *key);

/* Whether word is one of the space-separated words of list ("cpu" is not
 * in "cpuset memory"). */
bool jf_cg_has_word(const char *list, const char *word);

/* The cgroup file systems of a mount table: the mount points of the v1
 * hierarchies holding the memory, cpu and cpuacct controllers (the first
 * of each; "" when none), of the cgroup2 one (/sys/fs/cgroup preferred),
 * and which of them are mounted read-only. */
struct jf_cg_roots {
	int version; /* 1: a v1 memory hierarchy (hybrid or not); 2: only cgroup2; 0: none */
	bool hybrid; /* v1, with a cgroup2 mount at /sys/fs/cgroup/unified */
	char mem[JF_CG_PATH];
	char cpu[JF_CG_PATH];
	char acct[JF_CG_PATH];
	char v2[JF_CG_PATH];
	bool mem_ro, cpu_ro, acct_ro, v2_ro;
};

void jf_cg_roots_init(struct jf_cg_roots *r);
/* One line of mountinfo (proc(5)); line is modified (split, unescaped). */
void jf_cg_roots_line(struct jf_cg_roots *r, char *line);
/* Sets and returns r->version (and r->hybrid) from the lines seen. */
int jf_cg_roots_finish(struct jf_cg_roots *r);
/* init, each line of text (lines over 4 KiB are skipped), finish */
int jf_cg_parse_mountinfo(const char *text, struct jf_cg_roots *r);
/* The same, read from fd (/proc/self/mountinfo) a line at a time into a
 * buffer of 4 KiB on the stack; fd is left open. */
int jf_cg_read_mountinfo(int fd, struct jf_cg_roots *r);

#endif
