/*
 * inode.h - inode numbers that encode what they name.
 *
 * An inode number is (object kind << 56) | (object id << 8) | file, so the
 * tree keeps no table of inodes: any number the kernel hands back can be
 * decoded and looked up in the store.  Ids come from SQLite AUTOINCREMENT
 * rows and are never reused, so a number never names two things.
 *
 * A node has no row of its own until it first runs; its id is
 * (task id << 10) | node index, and so is its attempts/ directory's.  One
 * attempt (attempts/<a>) is its row in the attempts table, which a node
 * has from its first run on.  Machines use their index + 1.  Images
 * have names, not rows: each name gets a number the first time this daemon
 * sees it, kept for its life (fs/images.c), so a number still names one
 * image.
 */
#ifndef JF_INODE_H
#define JF_INODE_H

#include <stdbool.h>
#include <stdint.h>

enum jf_obj {
	JF_O_NONE = 0,
	JF_O_ROOT,
	JF_O_CLUSTER,  /* /cluster */
	JF_O_MACHINES, /* /cluster/machines */
	JF_O_MACHINE,  /* /cluster/machines/<m>: id = index + 1 */
	JF_O_QUEUES,   /* /queues */
	JF_O_QUEUE,    /* id = queue id */
	JF_O_GROUPS,   /* /queues/<q>/groups: id = queue id */
	JF_O_GROUP,    /* a group or a batch: id = group id */
	JF_O_TASKS,    /* a group's tasks/: id = group id */
	JF_O_TASK,     /* id = task id */
	JF_O_NODES,    /* a task's nodes/: id = task id */
	JF_O_NODE,     /* id = task id << 10 | node index */
	JF_O_BATCHES,  /* /tasks */
	JF_O_BILLING,  /* /billing */
	JF_O_SCRATCH,  /* an editor's temporary file: id = scratch slot id */
	JF_O_IMAGES,   /* /images */
	JF_O_IMAGE,    /* /images/<i>: id = the name's number in this daemon (images.c) */
	JF_O_VOLUMES,  /* /volumes */
	JF_O_VOLUME,   /* /volumes/<v>: id = its stores row (store.h) */
	JF_O_OBJECTS,  /* /objects */
	JF_O_OBJSRC,   /* /objects/<o>: id = its stores row */
	JF_O_ATTEMPTS, /* a node's attempts/: id = the node's (task id << 10 | index) */
	JF_O_ATTEMPT,  /* attempts/<a>: id = its attempts row (store.h) */
	JF_O__COUNT
};

enum jf_file {
	JF_F_DIR = 0,
	JF_F_README,
	JF_F_SPEC,
	JF_F_STATUS,
	JF_F_STATUS_JSON,
	JF_F_COST,
	JF_F_EVENTS,
	JF_F_WATCH,
	JF_F_CTL,
	JF_F_LOGS,
	JF_F_STDOUT,
	JF_F_STDERR,
	JF_F_LOGS_PREV,
	JF_F_ALLOCATION,
	JF_F_GPUS,
	JF_F_FORECAST,
	JF_F_SETTINGS,
	JF_F_LEDGER,
	JF_F_SUMMARY,
	JF_F_DATA,         /* a scratch file's content */
	JF_F_LINK,         /* a volume's `data`: a symlink to its directory */
	JF_F_TIMELINE_SVG, /* a group's or batch's timeline.svg (reference 11) */
	JF_F_USAGE_SVG,    /* /cluster/usage.svg */
	JF_F_COST_SVG,     /* /billing/cost.svg */
	JF_F__COUNT
};

#define JF_NODE_BITS 10
#define JF_NODE_MASK ((INT64_C(1) << JF_NODE_BITS) - 1)

struct jf_ino {
	enum jf_obj obj;
	int64_t id;
	enum jf_file file;
};

uint64_t jf_ino_make(enum jf_obj obj, int64_t id, enum jf_file file);
bool jf_ino_split(uint64_t ino, struct jf_ino *out);

/* File names and which objects have them. */
const char *jf_file_name(enum jf_file f);
/* The file named name in object obj, or JF_F_DIR if there is none. */
enum jf_file jf_file_lookup(enum jf_obj obj, const char *name);
/* Files of obj, in listing order, ending with JF_F_DIR: every file a
 * lookup finds, listed or not. */
const enum jf_file *jf_obj_files(enum jf_obj obj);
/* The attempt number an attempts/ entry names ("1", "2", ...: no sign, no
 * leading zero), or 0 for a name that is none. */
int64_t jf_attempt_name(const char *name);
/* Whether readdir lists f.  `watch` is served by name only: a read of it
 * can block for ever, so recursive tools must not come across it. */
bool jf_file_listed(enum jf_file f);

#endif
