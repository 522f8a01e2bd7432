/*
 * hostlist.h - Slurm hostlist expressions ("n[1-3],gpu[01-02]") and job
 * array index sets ("0-3,7,9-12%2"), parsed and printed.
 *
 * Pure functions: no I/O, no state, no locale.  Every input is treated as
 * hostile: lengths, counts and numbers are checked, and a refusal is
 * JF_EINVAL with a message that names the problem and where it is.
 *
 * Hostlists, as Slurm 22.05 reads them (checked with `scontrol show
 * hostnames`):
 *   "n1"                  one name
 *   "n[1-3]"              n1 n2 n3
 *   "n[1,3-4],gpu[01-02]" n1 n3 n4 gpu01 gpu02 (commas inside brackets
 *                         separate ranges, outside they separate names)
 *   "n[08-10]"            n08 n09 n10: a low bound written with a leading
 *                         zero sets the width; "n[8-10]" is n8 n9 n10
 *   "a[1-2]b[3-4]"        a1b3 a1b4 a2b3 a2b4: several bracket groups in one
 *                         name multiply, the first one outermost
 *   ""                    no names
 * Refused, as Slurm refuses them: text after the last ']' ("a[1-2]b"),
 * descending or empty ranges ("n[3-1]", "n[]", "n[1,,2]"), steps
 * ("n[1-9:2]").  Refused although Slurm reads something into them:
 * unbalanced brackets ("n[1-3", "n1]"), open ranges ("n[1-]"), empty
 * names (",,") and any character outside [A-Za-z0-9._-] in a name
 * (spaces included).  Names are at most JF_HOSTNAME_MAX bytes.
 *
 * Index sets: comma-separated indexes and ranges "a-b", a range may have a
 * step "a-b:s" (sbatch --array=1-9:2), and the whole set may end in "%P",
 * Slurm's limit of P elements running at once (the array throttle).
 * Indexes are 0 .. JF_IDX_MAX.
 */
#ifndef JF_SLURM_HOSTLIST_H
#define JF_SLURM_HOSTLIST_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define JF_HOSTNAME_MAX 255                 /* bytes in one host name, without the NUL */
#define JF_IDX_MAX      INT64_C(2147483647) /* largest array index accepted */

/* Expand list into *names (a heap array of *n heap strings, in Slurm's
 * order, duplicates kept) of at most max names.  On JF_OK the caller owns
 * *names and frees it with jf_hostlist_free(*names, *n); "" gives *n = 0
 * and *names = NULL.  On failure (JF_EINVAL: malformed, or more than max
 * names; JF_ENOMEM) *names = NULL, *n = 0 and *err says why. */
enum jf_err jf_hostlist_expand(const char *list, char ***names, size_t *n, size_t max,
			       struct jf_error *err);

/* Free what jf_hostlist_expand() returned; NULL does nothing. */
void jf_hostlist_free(char **names, size_t n);

/* The first host of list, without expanding the rest (the whole list is
 * still checked).  JF_OK with the name in buf; JF_ENOENT for an empty list;
 * JF_EINVAL when list is malformed; JF_EFBIG when the name does not fit in
 * n bytes.  buf is "" on failure (when n > 0). */
enum jf_err jf_hostlist_first(const char *list, char *buf, size_t n);

/* Format idx[0..n) as an index set, runs of consecutive indexes as "a-b":
 * { 0, 1, 2, 3, 7, 9, 10, 11, 12 } -> "0-3,7,9-12", with "%throttle"
 * appended when throttle > 0 and n > 0; n = 0 gives "".  Sorted distinct
 * input gives the shortest form; other input still gives an expression of
 * the same indexes in the same order.  Returns a heap string the caller
 * frees, or NULL with errno = ENOMEM, or EINVAL when an index is outside
 * 0 .. JF_IDX_MAX or throttle is negative. */
char *jf_idxset_format(const int64_t *idx, size_t n, int64_t throttle);

/* Parse an index set into *idx (sorted, distinct, heap; the caller frees
 * it) and *n; *throttle (if not NULL) gets P of a "%P" suffix, 0 without
 * one.  "" gives *n = 0 and *idx = NULL.  More than max indexes (counted
 * before repeats are removed) is JF_EINVAL, as is anything malformed; on
 * failure *idx = NULL, *n = 0. */
enum jf_err jf_idxset_parse(const char *s, int64_t **idx, size_t *n, size_t max, int64_t *throttle,
			    struct jf_error *err);

/* The GPUs of one node from an entry of a Slurm job's gres_detail
 * ("gpu:4090:2(IDX:0-1,4)", "gpu(IDX:3)", several gres joined by ','):
 * their indexes as "0,1,4" in buf (n bytes).  JF_OK; JF_ENOENT when the
 * entry names no GPU index ("", "gpu:0", "gpu:2(IDX:N/A)"); JF_EINVAL
 * when malformed or an index is over 1023; JF_EFBIG when the list does
 * not fit.  buf is "" on failure (when n > 0). */
enum jf_err jf_gres_gpu_ids(const char *detail, char *buf, size_t n);

#endif
