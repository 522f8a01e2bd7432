/*
 * test_perm.c - who may do what in the tree (fs/perm.c): the rules for
 * owners, other users and admins, private queues, a daemon that is not
 * root, the access(2) answers, and modes that agree with the rules for
 * every kind of object.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/perm.h"

#define DAEMON 900u  /* a daemon that is not root runs as this uid */
#define A      1001u /* owns the queue */
#define B      1002u /* another user */
#define C      1003u /* a third user, owns nothing */

static const struct jf_perm_daemon root_daemon = { 0, true };
static const struct jf_perm_daemon user_daemon = { DAEMON, false };

static struct jf_perm_obj fixed(enum jf_obj obj, enum jf_file file, uint32_t daemon_uid)
{
	struct jf_perm_obj o = { .obj = obj, .file = file, .owner = daemon_uid };
	return o;
}

/* Something in a queue that A owns; owner is the group's (or the queue's). */
static struct jf_perm_obj in_queue(enum jf_obj obj, enum jf_file file, uint32_t owner,
				   bool private_)
{
	struct jf_perm_obj o = {
		.obj = obj,
		.file = file,
		.owner = owner,
		.queue_owner = A,
		.in_queue = true,
		.private_ = private_,
	};
	return o;
}

static void test_admin(void **state)
{
	(void)state;
	assert_true(jf_perm_admin(&root_daemon, 0));
	assert_false(jf_perm_admin(&root_daemon, A));
	assert_true(jf_perm_admin(&user_daemon, 0));
	assert_true(jf_perm_admin(&user_daemon, DAEMON));
	assert_false(jf_perm_admin(&user_daemon, A));
}

static void test_owner_and_others(void **state)
{
	const struct jf_perm_daemon *d = &root_daemon;
	(void)state;
	/* B's group in A's shared queue */
	struct jf_perm_obj spec = in_queue(JF_O_GROUP, JF_F_SPEC, B, false);
	struct jf_perm_obj ctl = in_queue(JF_O_GROUP, JF_F_CTL, B, false);
	struct jf_perm_obj gdir = in_queue(JF_O_GROUP, JF_F_DIR, B, false);
	struct jf_perm_obj status = in_queue(JF_O_NODE, JF_F_STATUS, B, false);
	struct jf_perm_obj task = in_queue(JF_O_TASK, JF_F_DIR, B, false);
	struct jf_perm_obj tctl = in_queue(JF_O_TASK, JF_F_CTL, B, false);
	for (uint32_t u = 0; u < 4; u++) {
		uint32_t uid = (uint32_t[]){ 0, A, B, C }[u];
		bool mine = uid == 0 || uid == B;
		int want = mine ? 0 : EACCES;
		assert_int_equal(jf_perm_check(d, &spec, uid, JF_PERM_WRITE), want);
		assert_int_equal(jf_perm_check(d, &ctl, uid, JF_PERM_WRITE), want);
		assert_int_equal(jf_perm_check(d, &tctl, uid, JF_PERM_WRITE), want);
		assert_int_equal(jf_perm_check(d, &gdir, uid, JF_PERM_OWN), want);
		assert_int_equal(jf_perm_check(d, &gdir, uid, JF_PERM_WRITE), want);
		assert_int_equal(jf_perm_check(d, &task, uid, JF_PERM_OWN), want);
		/* everyone reads a shared queue */
		assert_int_equal(jf_perm_check(d, &spec, uid, JF_PERM_READ), 0);
		assert_int_equal(jf_perm_check(d, &status, uid, JF_PERM_READ), 0);
		assert_int_equal(jf_perm_check(d, &gdir, uid, JF_PERM_READ), 0);
		assert_int_equal(jf_perm_check(d, &gdir, uid, JF_PERM_LOOKUP), 0);
		/* no one writes a status file, root included */
		assert_int_equal(jf_perm_check(d, &status, uid, JF_PERM_WRITE), EACCES);
	}
	/* the queue owner is no owner of B's group */
	assert_int_equal(jf_perm_check(d, &spec, A, JF_PERM_WRITE), EACCES);
	/* an accepted spec: EROFS for those who could write it, EACCES for the rest */
	spec.spec_locked = true;
	assert_int_equal(jf_perm_check(d, &spec, B, JF_PERM_WRITE), EROFS);
	assert_int_equal(jf_perm_check(d, &spec, 0, JF_PERM_WRITE), EROFS);
	assert_int_equal(jf_perm_check(d, &spec, C, JF_PERM_WRITE), EACCES);
}

static void test_making(void **state)
{
	(void)state;
	struct jf_perm_obj queues = fixed(JF_O_QUEUES, JF_F_DIR, 0);
	struct jf_perm_obj batches = fixed(JF_O_BATCHES, JF_F_DIR, 0);
	struct jf_perm_obj groups = in_queue(JF_O_GROUPS, JF_F_DIR, A, false);
	struct jf_perm_obj qdir = in_queue(JF_O_QUEUE, JF_F_DIR, A, false);
	struct jf_perm_obj tasks = in_queue(JF_O_TASKS, JF_F_DIR, B, false);
	struct jf_perm_obj root = fixed(JF_O_ROOT, JF_F_DIR, 0);
	struct jf_perm_obj machines = fixed(JF_O_MACHINES, JF_F_DIR, 0);
	/* a root daemon: anyone makes queues, batches and groups in a shared queue */
	for (uint32_t uid = 0; uid < 3; uid++) {
		uint32_t u = (uint32_t[]){ 0, A, B }[uid];
		assert_int_equal(jf_perm_check(&root_daemon, &queues, u, JF_PERM_WRITE), 0);
		assert_int_equal(jf_perm_check(&root_daemon, &batches, u, JF_PERM_WRITE), 0);
		assert_int_equal(jf_perm_check(&root_daemon, &groups, u, JF_PERM_WRITE), 0);
	}
	/* ... temp files beside the queue spec and task renames are the owners' */
	assert_int_equal(jf_perm_check(&root_daemon, &qdir, A, JF_PERM_WRITE), 0);
	assert_int_equal(jf_perm_check(&root_daemon, &qdir, B, JF_PERM_WRITE), EACCES);
	assert_int_equal(jf_perm_check(&root_daemon, &tasks, B, JF_PERM_WRITE), 0);
	assert_int_equal(jf_perm_check(&root_daemon, &tasks, A, JF_PERM_WRITE), EACCES);
	/* the fixed tree takes nothing, from anyone */
	assert_int_equal(jf_perm_check(&root_daemon, &root, 0, JF_PERM_WRITE), EACCES);
	assert_int_equal(jf_perm_check(&root_daemon, &machines, B, JF_PERM_WRITE), EACCES);
	/* a daemon that is not root makes work only for the admins */
	queues.owner = batches.owner = DAEMON;
	groups.owner = groups.queue_owner = DAEMON;
	for (uint32_t uid = 0; uid < 2; uid++) {
		uint32_t u = (uint32_t[]){ 0, DAEMON }[uid];
		assert_int_equal(jf_perm_check(&user_daemon, &queues, u, JF_PERM_WRITE), 0);
		assert_int_equal(jf_perm_check(&user_daemon, &groups, u, JF_PERM_WRITE), 0);
	}
	assert_int_equal(jf_perm_check(&user_daemon, &queues, B, JF_PERM_WRITE), EACCES);
	assert_int_equal(jf_perm_check(&user_daemon, &batches, B, JF_PERM_WRITE), EACCES);
	assert_int_equal(jf_perm_check(&user_daemon, &groups, B, JF_PERM_WRITE), EACCES);
	assert_int_equal(jf_perm_check(&user_daemon, &queues, B, JF_PERM_READ), 0);
	/* the daemon's user owns everything another's object lets its owner do */
	struct jf_perm_obj rootgroup = in_queue(JF_O_GROUP, JF_F_SPEC, 0, false);
	assert_int_equal(jf_perm_check(&user_daemon, &rootgroup, DAEMON, JF_PERM_WRITE), 0);
}

static void test_private_queue(void **state)
{
	const struct jf_perm_daemon *d = &root_daemon;
	(void)state;
	struct jf_perm_obj qdir = in_queue(JF_O_QUEUE, JF_F_DIR, A, true);
	struct jf_perm_obj qstatus = in_queue(JF_O_QUEUE, JF_F_STATUS, A, true);
	struct jf_perm_obj groups = in_queue(JF_O_GROUPS, JF_F_DIR, A, true);
	struct jf_perm_obj gspec = in_queue(JF_O_GROUP, JF_F_SPEC, A, true);
	struct jf_perm_obj rootgroup = in_queue(JF_O_GROUP, JF_F_STATUS, 0, true);
	struct jf_perm_obj logs = in_queue(JF_O_NODE, JF_F_LOGS, A, true);
	/* the directory shows; nothing in it does */
	assert_int_equal(jf_perm_check(d, &qdir, B, JF_PERM_LOOKUP), 0);
	assert_int_equal(jf_perm_check(d, &qdir, B, JF_PERM_READ), EACCES);
	assert_int_equal(jf_perm_check(d, &qstatus, B, JF_PERM_LOOKUP), EACCES);
	assert_int_equal(jf_perm_check(d, &qstatus, B, JF_PERM_READ), EACCES);
	assert_int_equal(jf_perm_check(d, &groups, B, JF_PERM_READ), EACCES);
	assert_int_equal(jf_perm_check(d, &groups, B, JF_PERM_WRITE), EACCES);
	assert_int_equal(jf_perm_check(d, &gspec, B, JF_PERM_LOOKUP), EACCES);
	assert_int_equal(jf_perm_check(d, &logs, B, JF_PERM_READ), EACCES);
	/* its owner and root see all of it */
	for (uint32_t u = 0; u < 2; u++) {
		uint32_t uid = u ? A : 0;
		assert_int_equal(jf_perm_check(d, &qdir, uid, JF_PERM_READ), 0);
		assert_int_equal(jf_perm_check(d, &qstatus, uid, JF_PERM_READ), 0);
		assert_int_equal(jf_perm_check(d, &groups, uid, JF_PERM_WRITE), 0);
		assert_int_equal(jf_perm_check(d, &gspec, uid, JF_PERM_WRITE), 0);
		assert_int_equal(jf_perm_check(d, &logs, uid, JF_PERM_READ), 0);
		assert_int_equal(jf_perm_check(d, &rootgroup, uid, JF_PERM_READ), 0);
	}
	/* the daemon's user too, in a daemon that is not root */
	qstatus.queue_owner = qstatus.owner = A;
	assert_int_equal(jf_perm_check(&user_daemon, &qstatus, DAEMON, JF_PERM_READ), 0);
	assert_int_equal(jf_perm_check(&user_daemon, &qstatus, B, JF_PERM_READ), EACCES);
	/* another user's group in a private queue: its owner is locked out too */
	struct jf_perm_obj bgroup = in_queue(JF_O_GROUP, JF_F_CTL, B, true);
	assert_int_equal(jf_perm_check(d, &bgroup, B, JF_PERM_WRITE), EACCES);
	assert_int_equal(jf_perm_check(d, &bgroup, A, JF_PERM_READ), 0);
	assert_int_equal(jf_perm_check(d, &bgroup, A, JF_PERM_WRITE), EACCES);
}

static void test_scratch(void **state)
{
	const struct jf_perm_daemon *d = &root_daemon;
	(void)state;
	struct jf_perm_obj s = in_queue(JF_O_SCRATCH, JF_F_DATA, B, false);
	s.scratch_mode = 0600;
	assert_int_equal(jf_perm_check(d, &s, B, JF_PERM_READ), 0);
	assert_int_equal(jf_perm_check(d, &s, B, JF_PERM_WRITE), 0);
	assert_int_equal(jf_perm_check(d, &s, B, JF_PERM_OWN), 0);
	assert_int_equal(jf_perm_check(d, &s, C, JF_PERM_READ), EACCES);
	assert_int_equal(jf_perm_check(d, &s, C, JF_PERM_WRITE), EACCES);
	assert_int_equal(jf_perm_check(d, &s, C, JF_PERM_OWN), EACCES);
	assert_int_equal(jf_perm_mode(d, &s), 0600);
	s.scratch_mode = 0755;
	assert_int_equal(jf_perm_check(d, &s, C, JF_PERM_READ), 0);
	assert_int_equal(jf_perm_check(d, &s, C, JF_PERM_WRITE), EACCES);
	assert_int_equal(jf_perm_mode(d, &s), 0644);
}

static void test_access(void **state)
{
	const struct jf_perm_daemon *d = &root_daemon;
	(void)state;
	struct jf_perm_obj qdir = in_queue(JF_O_QUEUE, JF_F_DIR, A, true);
	assert_int_equal(jf_perm_access(d, &qdir, B, F_OK), 0);
	assert_int_equal(jf_perm_access(d, &qdir, B, R_OK), EACCES);
	assert_int_equal(jf_perm_access(d, &qdir, B, X_OK), EACCES);
	assert_int_equal(jf_perm_access(d, &qdir, A, R_OK | W_OK | X_OK), 0);
	struct jf_perm_obj spec = in_queue(JF_O_GROUP, JF_F_SPEC, A, false);
	assert_int_equal(jf_perm_access(d, &spec, A, R_OK | W_OK), 0);
	assert_int_equal(jf_perm_access(d, &spec, B, R_OK), 0);
	assert_int_equal(jf_perm_access(d, &spec, B, W_OK), EACCES);
	assert_int_equal(jf_perm_access(d, &spec, 0, X_OK), EACCES);
	spec.spec_locked = true;
	assert_int_equal(jf_perm_access(d, &spec, A, W_OK), EROFS);
	assert_int_equal(jf_perm_access(d, &spec, 0, W_OK), EROFS);
	struct jf_perm_obj readme = fixed(JF_O_ROOT, JF_F_README, 0);
	assert_int_equal(jf_perm_access(d, &readme, 0, W_OK), EACCES);
	assert_int_equal(jf_perm_access(d, &readme, B, R_OK), 0);
	struct jf_perm_obj queues = fixed(JF_O_QUEUES, JF_F_DIR, 0);
	assert_int_equal(jf_perm_access(d, &queues, B, R_OK | W_OK | X_OK), 0);
}

static void test_modes(void **state)
{
	(void)state;
	const struct jf_perm_daemon *r = &root_daemon, *u = &user_daemon;
	struct {
		const struct jf_perm_daemon *d;
		struct jf_perm_obj o;
		mode_t mode;
	} cases[] = {
		{ r, fixed(JF_O_ROOT, JF_F_DIR, 0), 0555 },
		{ r, fixed(JF_O_ROOT, JF_F_README, 0), 0444 },
		{ r, fixed(JF_O_CLUSTER, JF_F_GPUS, 0), 0444 },
		{ r, fixed(JF_O_BILLING, JF_F_DIR, 0), 0555 },
		{ r, fixed(JF_O_QUEUES, JF_F_DIR, 0), 01777 },
		{ r, fixed(JF_O_BATCHES, JF_F_DIR, 0), 01777 },
		{ u, fixed(JF_O_QUEUES, JF_F_DIR, DAEMON), 0755 },
		{ r, in_queue(JF_O_QUEUE, JF_F_DIR, A, false), 0755 },
		{ r, in_queue(JF_O_QUEUE, JF_F_SPEC, A, false), 0644 },
		{ r, in_queue(JF_O_QUEUE, JF_F_STATUS, A, false), 0444 },
		{ r, in_queue(JF_O_GROUPS, JF_F_DIR, A, false), 01777 },
		{ r, in_queue(JF_O_GROUP, JF_F_DIR, B, false), 0755 },
		{ r, in_queue(JF_O_GROUP, JF_F_SPEC, B, false), 0644 },
		{ r, in_queue(JF_O_GROUP, JF_F_CTL, B, false), 0644 },
		{ r, in_queue(JF_O_GROUP, JF_F_WATCH, B, false), 0444 },
		{ r, in_queue(JF_O_TASKS, JF_F_DIR, B, false), 0755 },
		{ r, in_queue(JF_O_TASK, JF_F_DIR, B, false), 0555 },
		{ r, in_queue(JF_O_NODE, JF_F_LOGS, B, false), 0444 },
		{ r, in_queue(JF_O_QUEUE, JF_F_DIR, A, true), 0700 },
		{ r, in_queue(JF_O_QUEUE, JF_F_SPEC, A, true), 0600 },
		{ r, in_queue(JF_O_QUEUE, JF_F_EVENTS, A, true), 0400 },
		{ r, in_queue(JF_O_GROUPS, JF_F_DIR, A, true), 0700 },
		{ r, in_queue(JF_O_GROUP, JF_F_CTL, A, true), 0600 },
		{ r, in_queue(JF_O_NODES, JF_F_DIR, A, true), 0500 },
		{ u, in_queue(JF_O_GROUPS, JF_F_DIR, DAEMON, false), 0755 },
		{ r, fixed(JF_O_IMAGES, JF_F_DIR, 0), 0755 },
		{ u, fixed(JF_O_IMAGES, JF_F_DIR, DAEMON), 0755 },
		{ r, fixed(JF_O_IMAGE, JF_F_DIR, 0), 0555 },
		{ r, fixed(JF_O_IMAGE, JF_F_STATUS, 0), 0444 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].d == u)
			cases[i].o.queue_owner = cases[i].o.in_queue ? DAEMON : 0;
		mode_t m = jf_perm_mode(cases[i].d, &cases[i].o);
		if (m != cases[i].mode)
			fail_msg("case %zu (obj %d file %d): mode %04o, want %04o", i,
				 cases[i].o.obj, cases[i].o.file, (unsigned)m,
				 (unsigned)cases[i].mode);
	}
	struct jf_perm_obj locked = in_queue(JF_O_GROUP, JF_F_SPEC, B, false);
	locked.spec_locked = true;
	assert_int_equal(jf_perm_mode(r, &locked), 0444);
}

/* /images: everyone reads, only the admins remove an image (a write of
 * /images), no one writes an image's files. */
static void test_images(void **state)
{
	(void)state;
	const struct jf_perm_daemon *daemons[] = { &root_daemon, &user_daemon };
	for (size_t i = 0; i < 2; i++) {
		const struct jf_perm_daemon *d = daemons[i];
		struct jf_perm_obj top = fixed(JF_O_IMAGES, JF_F_DIR, d->uid);
		struct jf_perm_obj img = fixed(JF_O_IMAGE, JF_F_DIR, d->uid);
		struct jf_perm_obj st = fixed(JF_O_IMAGE, JF_F_STATUS, d->uid);
		assert_int_equal(jf_perm_check(d, &top, 0, JF_PERM_WRITE), 0);
		assert_int_equal(jf_perm_check(d, &top, d->uid, JF_PERM_WRITE), 0);
		assert_int_equal(jf_perm_check(d, &top, A, JF_PERM_WRITE), EACCES);
		assert_int_equal(jf_perm_check(d, &top, A, JF_PERM_READ), 0);
		assert_int_equal(jf_perm_check(d, &img, A, JF_PERM_OWN), EACCES);
		assert_int_equal(jf_perm_check(d, &img, d->uid, JF_PERM_OWN), 0);
		assert_int_equal(jf_perm_check(d, &st, A, JF_PERM_READ), 0);
		assert_int_equal(jf_perm_check(d, &st, 0, JF_PERM_WRITE), EACCES);
		assert_int_equal(jf_perm_access(d, &top, A, W_OK), EACCES);
		assert_int_equal(jf_perm_access(d, &top, 0, R_OK | W_OK | X_OK), 0);
	}
}

/* The mode's owner bits say what its owner may do, its other bits what a
 * user who is neither owner nor admin may do: for every kind of object. */
static void check_agrees(const struct jf_perm_daemon *d, const struct jf_perm_obj *o)
{
	mode_t m = jf_perm_mode(d, o);
	bool dir = o->file == JF_F_DIR;
	struct {
		uint32_t uid;
		int shift;
	} who[] = { { o->owner, 6 }, { C, 0 } };
	for (size_t k = 0; k < 2; k++) {
		mode_t c = (m >> who[k].shift) & 7;
		bool r = jf_perm_check(d, o, who[k].uid, JF_PERM_READ) == 0;
		bool w = jf_perm_check(d, o, who[k].uid, JF_PERM_WRITE) == 0;
		if (((c & 4) != 0) != r || ((c & 2) != 0) != w || ((c & 1) != 0) != (dir && r))
			fail_msg("obj %d file %d private %d locked %d %s: mode %04o, "
				 "read %d write %d",
				 o->obj, o->file, o->private_, o->spec_locked,
				 k ? "other" : "owner", (unsigned)m, r, w);
		/* group bits equal other bits */
		assert_int_equal((m >> 3) & 7, m & 7);
	}
}

static void test_modes_agree(void **state)
{
	(void)state;
	const struct jf_perm_daemon *daemons[] = { &root_daemon, &user_daemon };
	for (size_t di = 0; di < 2; di++) {
		const struct jf_perm_daemon *d = daemons[di];
		for (int obj = JF_O_ROOT; obj < JF_O__COUNT; obj++) {
			for (int f = 0; f < JF_F__COUNT; f++) {
				for (int flags = 0; flags < 16; flags++) {
					struct jf_perm_obj o = {
						.obj = obj,
						.file = f,
						.owner = flags & 1 ? A : B,
						.queue_owner = A,
						.in_queue = flags & 2,
						.private_ = (flags & 6) == 6,
						.spec_locked = flags & 8,
						.scratch_mode = flags & 1 ? 0644 : 0600,
					};
					check_agrees(d, &o);
				}
			}
		}
	}
}

static void test_queue_private(void **state)
{
	(void)state;
	assert_false(jf_perm_queue_private(NULL));
	assert_false(jf_perm_queue_private(""));
	assert_false(jf_perm_queue_private("capacity: 3\n"));
	assert_false(jf_perm_queue_private("private: false\ncapacity: 1\n"));
	assert_false(jf_perm_queue_private("# not private\ncapacity: 1\n"));
	assert_true(jf_perm_queue_private("private: true\n"));
	assert_true(jf_perm_queue_private("capacity: 2\ngroup_timeout: 5m\nprivate: true\n"));
	/* fails closed */
	assert_true(jf_perm_queue_private("private: [\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_admin),         cmocka_unit_test(test_owner_and_others),
		cmocka_unit_test(test_making),        cmocka_unit_test(test_private_queue),
		cmocka_unit_test(test_scratch),       cmocka_unit_test(test_access),
		cmocka_unit_test(test_modes),         cmocka_unit_test(test_modes_agree),
		cmocka_unit_test(test_queue_private), cmocka_unit_test(test_images),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
