/*
 * yamljson.h - a YAML document as a jansson value, for the files jobfs
 * reads that their makers write in either form (CDI specs: nvidia-ctk
 * writes YAML by default).
 *
 * One document; mappings become objects (keys are scalars, a key twice is
 * an error), sequences arrays, scalars by YAML 1.2's core schema: a plain
 * null, ~ or empty scalar is null, true/false (any case of those) a
 * boolean, a decimal, 0x or 0o integer that fits in 64 bits an integer, a
 * decimal number with a point or an exponent a real; anything quoted, and
 * every other scalar, a string.  Aliases are followed, bounded: the result
 * has at most JF_YJ_MAX_NODES values and JF_YJ_MAX_DEPTH levels, so an
 * alias bomb is an error, not a hang.  Built on libyaml alone (no core/),
 * so that jobfs-shim can link it statically.
 */
#ifndef JF_YAMLJSON_H
#define JF_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

#define JF_YJ_MAX_NODES 100000
#define JF_YJ_MAX_DEPTH 64

/* text (len bytes) as a value the caller decrefs, or NULL with a message
 * naming the line in err. */
json_t *jf_yaml_to_json(const char *text, size_t len, char *err, size_t errlen);

#endif
