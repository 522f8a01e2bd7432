/*
 * cdi.c - a node's GPU devices from CDI specs (cdi.h).
 *
 * The specs are read in directory order, files in name order; a later
 * spec's device of the same name does not replace an earlier one's (the
 * first found is used, as a runtime that reads /etc/cdi before
 * /var/run/cdi does).  Only what a container needs is read:
 * containerEdits.deviceNodes and containerEdits.env, of the spec and of
 * each device asked for.
 */
#include "runtime/cdi.h"
#include "runtime/yamljson.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define CDI_KIND     "nvidia.com/gpu"
#define CDI_FILE_MAX (1 << 20)

static int add_node(struct jf_cdi *out, json_t *dn, const char *file, char *err, size_t errlen)
{
	const char *path = json_string_value(json_object_get(dn, "path"));
	const char *host = json_string_value(json_object_get(dn, "hostPath"));
	if (!path || path[0] != '/' || strlen(path) >= JF_CDI_PATH ||
	    (host && (host[0] != '/' || strlen(host) >= JF_CDI_PATH))) {
		snprintf(err, errlen, "CDI spec %s: a device node without an absolute path", file);
		return -1;
	}
	for (size_t i = 0; i < out->ndevices; i++)
		if (!strcmp(out->devices[i].path, path))
			return 0; /* the spec's own, listed once */
	if (out->ndevices == JF_CDI_MAX_DEVICES) {
		snprintf(err, errlen, "CDI: more than %d device nodes", JF_CDI_MAX_DEVICES);
		return -1;
	}
	struct jf_cdi_device *d = &out->devices[out->ndevices];
	memset(d, 0, sizeof(*d));
	snprintf(d->path, sizeof(d->path), "%s", path);
	snprintf(d->host_path, sizeof(d->host_path), "%s", host ? host : path);
	const char *type = json_string_value(json_object_get(dn, "type"));
	json_t *maj = json_object_get(dn, "major"), *min = json_object_get(dn, "minor");
	json_t *mode = json_object_get(dn, "fileMode");
	if (type && maj && min) {
		d->type = type[0] == 'b' ? 'b' : 'c';
		d->major = json_integer_value(maj);
		d->minor = json_integer_value(min);
	} else {
		struct stat st;
		if (stat(d->host_path, &st) != 0) {
			snprintf(err, errlen, "CDI spec %s: device node %s: %s", file, d->host_path,
				 strerror(errno));
			return -1;
		}
		if (!(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
			snprintf(err, errlen, "CDI spec %s: %s is not a device node", file,
				 d->host_path);
			return -1;
		}
		d->type = S_ISBLK(st.st_mode) ? 'b' : 'c';
		d->major = major(st.st_rdev);
		d->minor = minor(st.st_rdev);
	}
	if (json_is_integer(mode))
		d->mode = (uint32_t)json_integer_value(mode);
	out->ndevices++;
	return 0;
}

static int add_edits(struct jf_cdi *out, json_t *edits, const char *file, char *err, size_t errlen)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(edits, "deviceNodes"), i,
			   v) if (add_node(out, v, file, err, errlen) < 0) return -1;
	json_array_foreach(json_object_get(edits, "env"), i, v)
	{
		const char *e = json_string_value(v);
		if (!e || !strchr(e, '=') || strlen(e) >= sizeof(out->env[0]))
			continue;
		bool dup = false;
		for (size_t k = 0; k < out->nenv && !dup; k++)
			dup = !strcmp(out->env[k], e);
		if (!dup && out->nenv < JF_CDI_MAX_ENV)
			snprintf(out->env[out->nenv++], sizeof(out->env[0]), "%s", e);
	}
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* one directory: its *.json specs of our kind, for each id not found yet */
/* A spec file, JSON or (.yaml, .yml) YAML; NULL with a message. */
static json_t *load_spec(const char *path, char *err, size_t errlen)
{
	size_t l = strlen(path);
	if (l > 5 && !strcmp(path + l - 5, ".json")) {
		json_error_t je;
		json_t *spec = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
		if (!spec)
			snprintf(err, errlen, "CDI spec %s: not valid JSON (line %d: %s)", path,
				 je.line, je.text);
		return spec;
	}
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "CDI spec %s: %s", path, strerror(errno));
		return NULL;
	}
	char *text = malloc(CDI_FILE_MAX + 1);
	size_t n = text ? fread(text, 1, CDI_FILE_MAX + 1, f) : 0;
	bool bad = ferror(f);
	fclose(f);
	if (!text || bad || n > CDI_FILE_MAX) {
		snprintf(err, errlen, "CDI spec %s: %s", path,
			 !text ? "out of memory"
			 : bad ? "cannot be read"
			       : "larger than 1 MiB");
		free(text);
		return NULL;
	}
	char why[200];
	json_t *spec = jf_yaml_to_json(text, n, why, sizeof(why));
	free(text);
	if (!spec)
		snprintf(err, errlen, "CDI spec %s: not valid YAML (%s)", path, why);
	return spec;
}

static int scan_dir(const char *dir, char ids[][32], bool *found, size_t nids, struct jf_cdi *out,
		    char *err, size_t errlen)
{
	DIR *dp = opendir(dir);
	if (!dp)
		return 0; /* no such directory: no specs */
	char *names[256];
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(dp)) && n < 256) {
		size_t l = strlen(de->d_name);
		if ((l > 5 && !strcmp(de->d_name + l - 5, ".json")) ||
		    (l > 5 && !strcmp(de->d_name + l - 5, ".yaml")) ||
		    (l > 4 && !strcmp(de->d_name + l - 4, ".yml")))
			names[n++] = strdup(de->d_name);
	}
	closedir(dp);
	qsort(names, n, sizeof(names[0]), by_name);
	int rc = 0;
	for (size_t f = 0; f < n; f++) {
		char path[4096];
		if (!names[f])
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, names[f]);
		json_t *spec = rc ? NULL : load_spec(path, err, errlen);
		if (!rc && !spec)
			rc = -1;
		const char *kind = json_string_value(json_object_get(spec, "kind"));
		if (!rc && kind && !strcmp(kind, CDI_KIND)) {
			bool used = false;
			size_t i;
			json_t *dev;
			json_array_foreach(json_object_get(spec, "devices"), i, dev)
			{
				const char *name = json_string_value(json_object_get(dev, "name"));
				for (size_t k = 0; name && k < nids && !rc; k++) {
					if (found[k] || strcmp(ids[k], name) != 0)
						continue;
					found[k] = true;
					used = true;
					out->nfound++;
					rc = add_edits(out, json_object_get(dev, "containerEdits"),
						       path, err, errlen);
				}
			}
			if (!rc && used)
				rc = add_edits(out, json_object_get(spec, "containerEdits"), path,
					       err, errlen);
		}
		json_decref(spec);
		free(names[f]);
	}
	return rc;
}

int jf_cdi_gpus(const char *dirs, const char *ids, struct jf_cdi *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	char idv[64][32];
	bool found[64] = { false };
	size_t nids = 0;
	for (const char *p = ids; p && *p && nids < 64;) {
		const char *c = strchr(p, ',');
		size_t l = c ? (size_t)(c - p) : strlen(p);
		if (l && l < sizeof(idv[0])) {
			memcpy(idv[nids], p, l);
			idv[nids++][l] = '\0';
		}
		p += l + (c ? 1 : 0);
	}
	if (!nids)
		return 0;
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", dirs ? dirs : "/etc/cdi:/var/run/cdi");
	for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save))
		if (scan_dir(d, idv, found, nids, out, err, errlen) < 0)
			return -1;
	return 0;
}
