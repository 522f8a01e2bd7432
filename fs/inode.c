/*
 * inode.c - inode numbers and the fixed files of each kind of object.
 */
#include "fs/inode.h"

#include <string.h>

#include <fuse_lowlevel.h>

uint64_t jf_ino_make(enum jf_obj obj, int64_t id, enum jf_file file)
{
	if (obj == JF_O_ROOT && file == JF_F_DIR)
		return FUSE_ROOT_ID;
	return ((uint64_t)obj << 56) | (((uint64_t)id & ((UINT64_C(1) << 48) - 1)) << 8) |
	       (uint64_t)file;
}

bool jf_ino_split(uint64_t ino, struct jf_ino *out)
{
	if (ino == FUSE_ROOT_ID) {
		out->obj = JF_O_ROOT;
		out->id = 0;
		out->file = JF_F_DIR;
		return true;
	}
	out->obj = (enum jf_obj)(ino >> 56);
	out->id = (int64_t)((ino >> 8) & ((UINT64_C(1) << 48) - 1));
	out->file = (enum jf_file)(ino & 0xff);
	return out->obj > JF_O_NONE && out->obj < JF_O__COUNT && out->file < JF_F__COUNT;
}

static const char *const file_names[JF_F__COUNT] = {
	[JF_F_DIR] = "",
	[JF_F_README] = "README",
	[JF_F_SPEC] = "spec.yaml",
	[JF_F_STATUS] = "status",
	[JF_F_STATUS_JSON] = "status.json",
	[JF_F_COST] = "cost",
	[JF_F_EVENTS] = "events",
	[JF_F_WATCH] = "watch",
	[JF_F_CTL] = "ctl",
	[JF_F_LOGS] = "logs",
	[JF_F_STDOUT] = "stdout",
	[JF_F_STDERR] = "stderr",
	[JF_F_LOGS_PREV] = "logs.prev",
	[JF_F_ALLOCATION] = "allocation",
	[JF_F_GPUS] = "gpus",
	[JF_F_FORECAST] = "forecast",
	[JF_F_SETTINGS] = "settings",
	[JF_F_LEDGER] = "ledger.csv",
	[JF_F_SUMMARY] = "summary",
	[JF_F_DATA] = "",
	[JF_F_LINK] = "data",
	[JF_F_TIMELINE_SVG] = "timeline.svg",
	[JF_F_USAGE_SVG] = "usage.svg",
	[JF_F_COST_SVG] = "cost.svg",
};

const char *jf_file_name(enum jf_file f)
{
	return (unsigned)f < JF_F__COUNT ? file_names[f] : "";
}

static const enum jf_file root_files[] = { JF_F_README, JF_F_DIR };
static const enum jf_file cluster_files[] = {
	JF_F_GPUS, JF_F_FORECAST, JF_F_SETTINGS, JF_F_USAGE_SVG, JF_F_DIR,
};
static const enum jf_file machine_files[] = { JF_F_STATUS, JF_F_DIR };
static const enum jf_file queue_files[] = {
	JF_F_SPEC, JF_F_STATUS, JF_F_STATUS_JSON, JF_F_COST, JF_F_EVENTS, JF_F_WATCH, JF_F_DIR,
};
static const enum jf_file group_files[] = {
	JF_F_SPEC,  JF_F_STATUS, JF_F_STATUS_JSON,  JF_F_COST, JF_F_EVENTS,
	JF_F_WATCH, JF_F_CTL,    JF_F_TIMELINE_SVG, JF_F_DIR,
};
static const enum jf_file task_files[] = {
	JF_F_STATUS, JF_F_STATUS_JSON, JF_F_COST, JF_F_EVENTS, JF_F_WATCH, JF_F_CTL, JF_F_DIR,
};
static const enum jf_file node_files[] = {
	JF_F_STATUS, JF_F_STATUS_JSON, JF_F_COST,      JF_F_EVENTS,     JF_F_WATCH, JF_F_LOGS,
	JF_F_STDOUT, JF_F_STDERR,      JF_F_LOGS_PREV, JF_F_ALLOCATION, JF_F_DIR,
};
static const enum jf_file attempt_files[] = {
	JF_F_STATUS, JF_F_STATUS_JSON, JF_F_LOGS, JF_F_STDOUT, JF_F_STDERR, JF_F_DIR,
};
static const enum jf_file image_files[] = { JF_F_STATUS, JF_F_STATUS_JSON, JF_F_DIR };
static const enum jf_file volume_files[] = {
	JF_F_SPEC, JF_F_STATUS, JF_F_STATUS_JSON, JF_F_EVENTS, JF_F_LINK, JF_F_DIR,
};
static const enum jf_file objsrc_files[] = {
	JF_F_SPEC, JF_F_STATUS, JF_F_STATUS_JSON, JF_F_EVENTS, JF_F_CTL, JF_F_DIR,
};
static const enum jf_file billing_files[] = {
	JF_F_LEDGER, JF_F_SUMMARY, JF_F_COST, JF_F_COST_SVG, JF_F_DIR,
};
static const enum jf_file no_files[] = { JF_F_DIR };

const enum jf_file *jf_obj_files(enum jf_obj obj)
{
	switch (obj) {
	case JF_O_ROOT:
		return root_files;
	case JF_O_CLUSTER:
		return cluster_files;
	case JF_O_MACHINE:
		return machine_files;
	case JF_O_QUEUE:
		return queue_files;
	case JF_O_GROUP:
		return group_files;
	case JF_O_TASK:
		return task_files;
	case JF_O_NODE:
		return node_files;
	case JF_O_ATTEMPT:
		return attempt_files;
	case JF_O_BILLING:
		return billing_files;
	case JF_O_IMAGE:
		return image_files;
	case JF_O_VOLUME:
		return volume_files;
	case JF_O_OBJSRC:
		return objsrc_files;
	default:
		return no_files;
	}
}

/*
 * A file a reader may wait on for ever is looked up, opened and read by
 * name but left out of readdir, the way /proc resolves thread ids it does
 * not list: `grep -r`, `rg`, `cp -r`, `tar` and `find | xargs cat` open
 * what they list and read it to end-of-file, and a `watch` of anything
 * unfinished (a queue, always) has none.  Every other file ends: rendered
 * files at their stat size, events and logs where they are at the moment.
 */
bool jf_file_listed(enum jf_file f)
{
	return f != JF_F_WATCH;
}

enum jf_file jf_file_lookup(enum jf_obj obj, const char *name)
{
	for (const enum jf_file *f = jf_obj_files(obj); *f != JF_F_DIR; f++)
		if (strcmp(file_names[*f], name) == 0)
			return *f;
	return JF_F_DIR;
}

int64_t jf_attempt_name(const char *name)
{
	/* numbers of the 48 bits an id has at most: 15 digits */
	int64_t v = 0;
	size_t n = strlen(name);
	if (n == 0 || n > 15 || name[0] == '0')
		return 0;
	for (const char *p = name; *p; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		v = v * 10 + (*p - '0');
	}
	return v;
}
