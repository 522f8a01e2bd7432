/*
 * rest_int.h - what the two halves of the slurmrestd client share; private
 * to backends/slurm.  rest.c speaks HTTP and fills a struct reply;
 * rest_parse.c reads it: the verdict on the answer and the records in it.
 */
#ifndef JF_SLURM_REST_INT_H
#define JF_SLURM_REST_INT_H

#include <jansson.h>
#include <stddef.h>

#include "backends/slurm/rest.h"

#define TEXT_MAX 300 /* bytes of Slurm's words in a message */

/* Slurm error numbers rest.c and rest_parse.c give a meaning */
enum {
	SE_UNSPECIFIED = -1,
	SE_UNEXPECTED_MSG = 1000, /* SLURM_UNEXPECTED_MSG_ERROR */
	SE_PROTOCOL_AUTH = 1007,  /* SLURM_PROTOCOL_AUTHENTICATION_ERROR */
	SE_ACCESS_DENIED = 2002,
	SE_USER_ID_MISSING = 2010,
	SE_PART_CONFIG_UNAVAILABLE = 2015, /* queued, but exceeds the partition */
	SE_INVALID_JOB_ID = 2017,
	SE_TRANSITION_STATE = 2020, /* "Job can not be altered now" */
	SE_IN_STANDBY = 2027,
	SE_IN_STANDBY_USE_BACKUP = 2131,
	SE_ZERO_BYTES = 5005, /* SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT */
	SE_DB_CONNECTION = 7000,
	SE_REST_INVALID_JOBS_DESC = 9002, /* also "Unable to find JobId=..." */
	SE_REST_MISSING_UID = 9004,
	SE_REST_MISSING_GID = 9005,
	SE_REST_AUTH_FAIL = 9008,
};

/* One answer: HTTP status, body (in the handle's buffer) and its tree. */
struct reply {
	long status;
	const char *body;
	size_t len;
	json_t *root; /* NULL when empty or not JSON */
	json_error_t jerr;
};

/* ---- rest.c ---- */

void reply_release(struct reply *rep);

/* ---- rest_parse.c ---- */

int entry_number(json_t *e);
/* All the entries' words, "; "-joined, into buf. */
void errors_text(json_t *errors, char *buf, size_t n);
/* The verdict on one answer, the unix-socket reading. */
enum jf_err check_answer(const struct reply *rep, const char *what, int *slurm_errno,
			 struct jf_error *err);
/* The "jobs" ("nodes") list of root; the caller frees *jobs (*nodes). */
enum jf_err jobs_from(json_t *root, struct jf_slurm_job **jobs, size_t *n, struct jf_error *err);
enum jf_err nodes_from(json_t *root, struct jf_slurm_node **nodes, size_t *n, struct jf_error *err);

#endif
