/*
 * ctl.h - what a write to a `ctl` file says (reference 4).
 *
 * A ctl write is exactly one verb, pause, resume, stop or restart, with
 * optional blanks (space, tab, CR) around it and at most one trailing
 * newline: `echo stop > ctl`, `printf stop > ctl`.  Anything else, an
 * unknown or misspelt verb, two verbs, a NUL, binary bytes, more than
 * JF_CTL_MAX_BYTES, is refused with JF_EINVAL (JF_EFBIG for the size) and a
 * message that quotes what was written, escaped and cut short.
 *
 * Pure: no allocation, no state; the buffer is borrowed.
 */
#ifndef JF_CTL_H
#define JF_CTL_H

#include <stddef.h>

#include "core/err.h"

#define JF_CTL_MAX_BYTES 256 /* a ctl write longer than this is refused */

enum jf_ctl_verb { JF_CTL_PAUSE, JF_CTL_RESUME, JF_CTL_STOP, JF_CTL_RESTART, JF_CTL_NVERBS };

/* Parse len bytes of buf (need not be NUL-terminated; NULs are refused).
 * On success *verb is set; on failure *verb is untouched and err (if not
 * NULL) says what was written and what is accepted. */
enum jf_err jf_ctl_parse(const char *buf, size_t len, enum jf_ctl_verb *verb, struct jf_error *err);

/* "pause", "resume", "stop", "restart"; "?" for anything else. */
const char *jf_ctl_verb_name(enum jf_ctl_verb verb);

#endif
