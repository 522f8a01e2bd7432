/*
 * cgroup.h - one cgroup per container with its memory and cpu limits, on
 * cgroups v1 (the memory and cpu,cpuacct hierarchies) or v2 (unified),
 * whichever the host has; a hybrid host (v1 controllers, an empty v2 at
 * /sys/fs/cgroup/unified) is v1.  Read back: the OOM kill counter (the
 * kernel's own, never guessed from an exit code of 137), cpu time used.
 *
 * jobfs-shim makes one for each of a node's containers, host runs and OCI
 * containers alike: a host process joins it (jf_cg_join, safe in a vfork
 * child), an OCI runtime is given jf_cg_runtime_path (a child cgroup with
 * no limits of its own), so that an OOM is always counted here, where the
 * limit is, and outlives the runtime's own cgroup.
 *
 * Linked statically into the shim: system calls and files only, no
 * allocation.
 */
#ifndef JF_CGROUP_H
#define JF_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define JF_CG_PATH 512

struct jf_cg {
	int version;          /* 1 or 2; 0 = none made */
	char rel[256];        /* under the roots: "jobfs/<run>/<name>" */
	char mem[JF_CG_PATH]; /* v1: the memory controller's dir; v2: the cgroup's dir */
	char cpu[JF_CG_PATH]; /* v1: the cpu,cpuacct dir; v2: "" */
	/* v1: the cpuacct controller's dir (cpuacct.usage): the same as cpu
	 * where the two are mounted together, a hierarchy of its own where
	 * the host mounts them apart (/sys/fs/cgroup/cpu and .../cpuacct);
	 * "" where the host has no cpuacct, and on v2.  Several of mem, cpu
	 * and acct may name one hierarchy (mounted together): each is then
	 * joined and removed once. */
	char acct[JF_CG_PATH];
	char procs_mem[JF_CG_PATH + 16]; /* the files jf_cg_join writes, formatted ahead */
	char procs_cpu[JF_CG_PATH + 16];
	char procs_acct[JF_CG_PATH + 16];
};

/* Which cgroups this host has: 2 (unified), 1 (v1, or hybrid), 0 (none
 * writable).  *hybrid: v1 with a cgroup2 mount at /sys/fs/cgroup/unified
 * (crun refuses such a host: jobfs-shim hides that mount first). */
int jf_cg_detect(bool *hybrid);

/* Make the cgroup rel (its parents too, enabling the memory and cpu
 * controllers on v2) and write its limits: memory (bytes; 0 = none) with
 * no swap beyond it where the host lets a limit say so, cpu (millicores:
 * a CFS quota of milli/1000 of a period of 100 ms, at least the kernel's
 * 1 ms; 0 = none).  -1 with a message in err naming the file that could
 * not be written (cg then holds nothing: jf_cg_remove is harmless), or
 * "cgroups are not writable here: ..." where jf_cg_detect says 0.  An
 * empty cgroup rel left over by an earlier run is made anew (its counters
 * are not this one's); one still in use is refused and left alone.  The
 * cgroups are made under the roots of the hierarchies (not under the
 * caller's own cgroup).  On v2 a cgroup with processes of its own cannot
 * enable controllers for children: inside a cgroup namespace whose root
 * holds the caller, enabling them there fails (EBUSY), and so does this. */
int jf_cg_create(struct jf_cg *cg, const char *rel, int64_t mem_bytes, int64_t cpu_milli, char *err,
		 size_t errlen);

/* Move pid (0 = the caller) into it, in each of its hierarchies.
 * Async-signal-safe: usable in the child of vfork (before it drops root:
 * cgroup.procs is root's).  -1 with errno. */
int jf_cg_join(const struct jf_cg *cg, pid_t pid);

/* The OOM kills counted in it (and below it), -1 when the host does not
 * say (v1 before 4.13).  v2 counts a kill in every ancestor as it happens,
 * so one in a child cgroup is counted here even once that child is gone.
 * v1 counts it only in the memcg of the process killed, even when the
 * limit it hit is an ancestor's: this adds up the cgroup and those below,
 * and a kill in an OCI runtime's cgroup ("ctr") is lost when the runtime
 * removes it (`crun run` does as the container exits; `crun delete`
 * does).  So read this after the container has ended but before its
 * runtime cgroup is deleted. */
int64_t jf_cg_oom_kills(const struct jf_cg *cg);

/* cpu time used by everything that ran in it, in microseconds; -1 unknown */
int64_t jf_cg_cpu_usec(const struct jf_cg *cg);

/* The path an OCI runtime's linux.cgroupsPath should name: a child of
 * this one, "/<rel>/ctr" */
void jf_cg_runtime_path(const struct jf_cg *cg, char *buf, size_t n);

/* Kill what is left in it (and below) with SIGKILL (v2: cgroup.kill where
 * the kernel has it), wait for it to be empty (bounded: about a second),
 * remove it and its empty parents up to "jobfs" (kept).  On v1 also rel
 * and its empty parents in the other hierarchies (pids, devices, ...:
 * where an OCI runtime made rel/ctr, it removes only ctr).  Harmless on a
 * cgroup never made, and twice. */
void jf_cg_remove(struct jf_cg *cg);

#endif
