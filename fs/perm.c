/*
 * perm.c - the permission rules of perm.h.
 *
 * One function, rule(), decides; jf_perm_check(), jf_perm_access() and
 * jf_perm_mode() only ask it about a real uid, an access(2) mask, or the
 * two classes a mode can describe (the owner, and anyone else).  So the
 * modes stat shows cannot drift from what the operations enforce.
 *
 * What rule() knows of the asker is three facts: an admin (root or the
 * daemon's user), the object's owner, the owner of the queue it is in.
 */
#include "fs/perm.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/spec.h"

struct who {
	bool admin;
	bool owner;
	bool queue_owner;
};

bool jf_perm_admin(const struct jf_perm_daemon *d, uint32_t uid)
{
	return uid == 0 || uid == d->uid;
}

static struct who who_is(const struct jf_perm_daemon *d, const struct jf_perm_obj *o, uint32_t uid)
{
	struct who w = {
		.admin = jf_perm_admin(d, uid),
		.owner = uid == o->owner,
		.queue_owner = o->in_queue && uid == o->queue_owner,
	};
	return w;
}

/* Inside a private queue only its owner and the admins see anything. */
static bool inside_ok(const struct jf_perm_obj *o, struct who w)
{
	return !o->in_queue || !o->private_ || w.admin || w.queue_owner;
}

/* Make a queue, a group or a batch: anyone when the daemon can run the
 * maker's tasks as the maker (it is root), else only the admins. */
static bool may_make(const struct jf_perm_daemon *d, struct who w)
{
	return d->root || w.admin;
}

static int rule(const struct jf_perm_daemon *d, const struct jf_perm_obj *o, struct who w,
		enum jf_perm_act act)
{
	bool dir = o->file == JF_F_DIR;
	bool mine = w.admin || w.owner;
	/* a private queue's own directory still shows in /queues */
	bool queue_dir = o->obj == JF_O_QUEUE && dir;
	if (!inside_ok(o, w) && !(queue_dir && act == JF_PERM_LOOKUP))
		return EACCES;
	switch (act) {
	case JF_PERM_LOOKUP:
		return 0;
	case JF_PERM_READ:
		if (o->obj == JF_O_SCRATCH)
			return mine || (o->scratch_mode & S_IROTH) ? 0 : EACCES;
		return 0;
	case JF_PERM_OWN:
		return mine ? 0 : EACCES;
	case JF_PERM_WRITE:
		break;
	}
	if (dir) {
		switch (o->obj) {
		case JF_O_QUEUES:
		case JF_O_BATCHES:
		case JF_O_GROUPS:
		case JF_O_VOLUMES: /* mkdir of a volume or an object source */
		case JF_O_OBJECTS:
			return may_make(d, w) ? 0 : EACCES;
		case JF_O_VOLUME:
		case JF_O_OBJSRC:
			return mine ? 0 : EACCES;
		case JF_O_QUEUE: /* editors' temp files beside the queue spec */
		case JF_O_GROUP: /* ... beside a group spec; a batch's task renames */
		case JF_O_TASKS: /* task renames */
			return mine ? 0 : EACCES;
		case JF_O_IMAGES: /* rmdir of an image: the host's cache */
			return w.admin ? 0 : EACCES;
		default:
			return EACCES;
		}
	}
	switch (o->file) {
	case JF_F_SPEC:
		if (!mine)
			return EACCES;
		return o->spec_locked ? EROFS : 0;
	case JF_F_CTL:
	case JF_F_DATA:
		return mine ? 0 : EACCES;
	default:
		return EACCES;
	}
}

int jf_perm_check(const struct jf_perm_daemon *d, const struct jf_perm_obj *o, uint32_t uid,
		  enum jf_perm_act act)
{
	return rule(d, o, who_is(d, o, uid), act);
}

int jf_perm_access(const struct jf_perm_daemon *d, const struct jf_perm_obj *o, uint32_t uid,
		   int mask)
{
	struct who w = who_is(d, o, uid);
	int rc = rule(d, o, w, JF_PERM_LOOKUP);
	if (!rc && (mask & R_OK))
		rc = rule(d, o, w, JF_PERM_READ);
	if (!rc && (mask & W_OK))
		rc = rule(d, o, w, JF_PERM_WRITE);
	if (!rc && (mask & X_OK))
		rc = o->file == JF_F_DIR ? rule(d, o, w, JF_PERM_READ) : EACCES;
	return rc;
}

static mode_t class_bits(const struct jf_perm_daemon *d, const struct jf_perm_obj *o, struct who w)
{
	bool dir = o->file == JF_F_DIR;
	mode_t m = 0;
	if (rule(d, o, w, JF_PERM_READ) == 0)
		m |= dir ? 5 : 4;
	if (rule(d, o, w, JF_PERM_WRITE) == 0)
		m |= 2;
	return m;
}

mode_t jf_perm_mode(const struct jf_perm_daemon *d, const struct jf_perm_obj *o)
{
	struct who owner = {
		.admin = jf_perm_admin(d, o->owner),
		.owner = true,
		.queue_owner = o->in_queue && o->owner == o->queue_owner,
	};
	struct who other = { false, false, false };
	mode_t others = class_bits(d, o, other);
	mode_t m = class_bits(d, o, owner) << 6 | others << 3 | others;
	if (o->file == JF_F_DIR && (others & 2) &&
	    (o->obj == JF_O_QUEUES || o->obj == JF_O_BATCHES || o->obj == JF_O_GROUPS ||
	     o->obj == JF_O_VOLUMES || o->obj == JF_O_OBJECTS))
		m |= S_ISVTX;
	return m;
}

bool jf_perm_queue_private(const char *spec)
{
	if (!spec || !strstr(spec, "private"))
		return false;
	struct jf_queue_spec q;
	memset(&q, 0, sizeof(q));
	if (jf_queue_spec_parse(spec, strlen(spec), &q, NULL) != JF_OK)
		return true;
	bool p = q.private_;
	jf_queue_spec_release(&q);
	return p;
}
