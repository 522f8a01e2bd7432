/*
 * names.h - which directory names the tree accepts (reference 1).
 *
 * A name matches [A-Za-z0-9][A-Za-z0-9._-]{0,62}: a letter or digit, then
 * up to 62 letters, digits, dots, underscores or dashes.  So "." and ".."
 * are never names, and a name is always safe in a path, a CSV field and a
 * shell word.  The same rule holds for machine and GPU model names in the
 * cluster file.
 */
#ifndef JF_NAMES_H
#define JF_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define JF_NAME_MAX_LEN   63  /* bytes, without the NUL */
#define JF_NAME_QUOTE_MAX 192 /* enough for jf_name_quote() of anything */

/* True when name is valid; else false with *err (if not NULL) set to
 * JF_EINVAL and a message that says what is wrong with it. */
bool jf_name_valid(const char *name, struct jf_error *err);

/* True when dirname is "<i>-<batch>" with i = 1, 2, ... written without
 * leading zeros; *index (if not NULL) gets i. */
bool jf_batch_child_name(const char *dirname, const char *batch, int64_t *index);

/*
 * Is name one an editor or a tool writes beside a file it saves, and
 * renames onto it (or removes)?  Those are the only files a group or queue
 * directory lets one make, kept in memory until then:
 *   - hidden names (.spec.yaml.swp, .#spec.yaml, .goutputstream-XXXXXX,
 *     rsync's .spec.yaml.XXXXXX);
 *   - names that contain "spec.y" (spec.yaml~, #spec.yaml#, spec.yaml.new,
 *     spec.yml.tmp);
 *   - sed -i's sedXXXXXX, vim's write test 4913 (and 4913 + k*123 up to
 *     5036, its retries), names ending in ~, .tmp, .swp, .swx, .bak, and
 *     names starting with tmp (Python's tempfile, `mktemp tmp.XXX`).
 * Anything else ("notes", "results.csv") would vanish at the next mount.
 */
bool jf_name_editor_temp(const char *name);

/* Copy s into buf (n bytes, always NUL-terminated when n > 0) for quoting
 * in a message: bytes outside printable ASCII, quotes and backslashes come
 * out as \xNN, and a long s is cut with "..." after about 40 bytes. */
void jf_name_quote(const char *s, char *buf, size_t n);

#endif
