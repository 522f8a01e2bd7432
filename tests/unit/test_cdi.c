/*
 * test_cdi.c - a node's GPU devices from CDI specs (runtime/cdi.c): the
 * devices of the ids asked for and the spec's own edits once, type and
 * numbers from the spec or from the host's device node, env, and what is
 * refused (bad JSON or YAML, a missing node); specs in YAML.  The stand-in
 * device nodes are the host's /dev/null, /dev/zero and /dev/full.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "runtime/cdi.h"
#include "testutil.h"

static const char spec_json[] =
	"{\"cdiVersion\":\"0.6.0\",\"kind\":\"nvidia.com/gpu\","
	"\"devices\":["
	"{\"name\":\"0\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/nvidia0\","
	"\"hostPath\":\"/dev/null\"}]}},"
	"{\"name\":\"1\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/nvidia1\","
	"\"hostPath\":\"/dev/zero\",\"type\":\"c\",\"major\":195,\"minor\":1}],"
	"\"env\":[\"GPU1=yes\"]}}],"
	"\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/nvidiactl\",\"hostPath\":"
	"\"/dev/full\"}],\"env\":[\"NVIDIA_CDI=1\"]}}";

static void test_devices(void **state)
{
	char dir[512], p[700], err[256];
	struct jf_cdi c;
	(void)state;
	jft_mkdtemp(dir, sizeof(dir), jft_tmp_base(), "cdi");
	snprintf(p, sizeof(p), "%s/nvidia.json", dir);
	jft_write_file(p, spec_json);
	/* another kind is not read */
	snprintf(p, sizeof(p), "%s/other.json", dir);
	jft_write_file(p, "{\"cdiVersion\":\"0.6.0\",\"kind\":\"vendor.com/fpga\",\"devices\":["
			  "{\"name\":\"0\",\"containerEdits\":{\"deviceNodes\":[{\"path\":"
			  "\"/dev/fpga0\",\"hostPath\":\"/dev/null\"}]}}]}");

	assert_int_equal(jf_cdi_gpus(dir, "1", &c, err, sizeof(err)), 0);
	assert_int_equal(c.nfound, 1);
	assert_int_equal(c.ndevices, 2);
	assert_string_equal(c.devices[0].path, "/dev/nvidia1");
	assert_int_equal(c.devices[0].major, 195); /* the spec's numbers */
	assert_string_equal(c.devices[1].path, "/dev/nvidiactl");
	assert_int_equal(c.devices[1].major, 1); /* /dev/full's: 1:7 */
	assert_int_equal(c.devices[1].minor, 7);
	assert_int_equal(c.nenv, 2);
	assert_string_equal(c.env[0], "GPU1=yes");
	assert_string_equal(c.env[1], "NVIDIA_CDI=1");

	assert_int_equal(jf_cdi_gpus(dir, "0,1", &c, err, sizeof(err)), 0);
	assert_int_equal(c.nfound, 2);
	assert_int_equal(c.ndevices, 3); /* nvidiactl once */
	assert_int_equal(c.devices[0].type, 'c');
	assert_int_equal(c.devices[0].minor, 3); /* /dev/null is 1:3 */

	/* an id no spec has, no ids, no such directory: nothing, no error */
	assert_int_equal(jf_cdi_gpus(dir, "7", &c, err, sizeof(err)), 0);
	assert_int_equal(c.nfound, 0);
	assert_int_equal(c.ndevices, 0);
	assert_int_equal(jf_cdi_gpus(dir, "", &c, err, sizeof(err)), 0);
	assert_int_equal(jf_cdi_gpus("/nonexistent", "0", &c, err, sizeof(err)), 0);

	/* refused: a node that is not there, a spec that is not JSON */
	snprintf(p, sizeof(p), "%s/nvidia.json", dir);
	jft_write_file(p, "{\"kind\":\"nvidia.com/gpu\",\"devices\":[{\"name\":\"0\","
			  "\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/nvidia0\","
			  "\"hostPath\":\"/dev/nosuchgpu\"}]}}]}");
	assert_int_equal(jf_cdi_gpus(dir, "0", &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/dev/nosuchgpu"));
	jft_write_file(p, "{\"kind\":\"nvidia.com/gpu\",\"devices\":[{\"name\":\"0\","
			  "\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/nvidia0\","
			  "\"hostPath\":\"/etc/hostname\"}]}}]}");
	assert_int_equal(jf_cdi_gpus(dir, "0", &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a device node"));
	jft_write_file(p, "{not json");
	assert_int_equal(jf_cdi_gpus(dir, "0", &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not valid JSON"));
	jft_rmtree(dir);

	/* a YAML spec, as nvidia-ctk writes it by default: the same devices */
	jft_mkdtemp(dir, sizeof(dir), jft_tmp_base(), "cdi");
	snprintf(p, sizeof(p), "%s/nvidia.yaml", dir);
	jft_write_file(p, "---\n"
			  "cdiVersion: 0.6.0\n"
			  "kind: nvidia.com/gpu\n"
			  "containerEdits:\n"
			  "  env: [NVIDIA_CDI=1]\n"
			  "  deviceNodes:\n"
			  "  - path: /dev/nvidiactl\n"
			  "    hostPath: /dev/full\n"
			  "devices:\n"
			  "- name: \"0\"\n"
			  "  containerEdits:\n"
			  "    deviceNodes:\n"
			  "    - {path: /dev/nvidia0, hostPath: /dev/null}\n"
			  "- name: \"1\"\n"
			  "  containerEdits:\n"
			  "    env:\n"
			  "    - GPU1=yes\n"
			  "    deviceNodes:\n"
			  "    - path: /dev/nvidia1\n"
			  "      hostPath: /dev/zero\n"
			  "      type: c\n"
			  "      major: 195\n"
			  "      minor: 1\n");
	assert_int_equal(jf_cdi_gpus(dir, "1", &c, err, sizeof(err)), 0);
	assert_int_equal(c.nfound, 1);
	assert_int_equal(c.ndevices, 2);
	assert_string_equal(c.devices[0].path, "/dev/nvidia1");
	assert_int_equal(c.devices[0].major, 195);
	assert_int_equal(c.devices[0].minor, 1);
	assert_string_equal(c.devices[1].path, "/dev/nvidiactl");
	assert_int_equal(c.nenv, 2);
	assert_string_equal(c.env[0], "GPU1=yes");
	/* a YAML spec that does not parse is refused with its file and line */
	snprintf(p, sizeof(p), "%s/bad.yml", dir);
	jft_write_file(p, "kind: nvidia.com/gpu\ndevices: [\n");
	assert_int_equal(jf_cdi_gpus(dir, "1", &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "bad.yml: not valid YAML (line"));
	jft_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_devices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
