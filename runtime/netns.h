/*
 * netns.h - a node's own network namespace with its ports forwarded from
 * free host ports (reference 8.2, `ports`).
 *
 * jf_netns_open makes a network namespace held by a bind mount at
 * RUN_DIR/netns (so that an OCI runtime can join it by path, and host
 * processes by setns), starts a user-mode network helper for it
 * (slirp4netns from Debian; pasta where slirp4netns is missing) which
 * gives it loopback, an address and outbound access, and forwards each
 * listed container port from a free TCP port on bind_addr (default
 * 127.0.0.1).  Nothing but bind_addr listens on the host.
 *
 * Linked statically into jobfs-shim: no NSS, no threads.  The helper
 * process is the shim's child; jf_netns_close stops it by pid and removes
 * the mount.
 *
 * For the caller (netns.c's top has the details):
 * - Call jf_netns_open as root, single-threaded, before the node's
 *   processes start, and inside the shim's private mount namespace (after
 *   unshare(CLONE_NEWNS) and / made rslave or private): the bind mount then
 *   lives only there and goes with the shim even if it is SIGKILLed (the
 *   helper dies with it: PR_SET_PDEATHSIG); made in the host's mount
 *   namespace it would outlive a killed shim (the next open of that
 *   RUN_DIR replaces it).  crun started by the shim sees it.
 * - RUN_DIR gets netns (the mount, gone after close), netns.log (the
 *   helper's output, kept after close) and, during open only, netns.sock.
 * - The helper is a child of the caller: a reaper that waits for any child
 *   and reaps n->helper must set n->helper = 0 (the node's network is gone),
 *   so that close does not signal a pid that may have been reused.
 * - The namespace (slirp4netns): lo, tap0 10.0.2.100/24, gateway 10.0.2.2,
 *   DNS forwarder 10.0.2.3 (a container's resolv.conf should name it: the
 *   host's may name a loopback resolver).  A port's service must listen on
 *   0.0.0.0 (or 10.0.2.100), not only on 127.0.0.1.  The host's loopback is
 *   not reachable from it; the host's other addresses are.
 * - $JOBFS_NETNS_HELPER, an absolute path, overrides the helper (a name
 *   starting "pasta" is run as pasta, any other as slirp4netns).
 */
#ifndef JF_NETNS_H
#define JF_NETNS_H

#include <stddef.h>
#include <sys/types.h>

#define JF_NETNS_MAX_PORTS 32

struct jf_netns {
	char path[4096]; /* RUN_DIR/netns: the namespace's bind mount */
	pid_t helper;    /* slirp4netns or pasta, 0 = none */
	pid_t holder;    /* a process kept in the namespace while it is set up, 0 = none */
	char bind_addr[64];
	size_t nports;
	int container_port[JF_NETNS_MAX_PORTS];
	int host_port[JF_NETNS_MAX_PORTS];
};

/* Make it for run_dir with ports[0..nports) forwarded.  -1 with a message
 * in err (the helper missing, a port in use, a namespace not allowed);
 * then nothing is left behind. */
int jf_netns_open(struct jf_netns *n, const char *run_dir, const char *bind_addr, const int *ports,
		  size_t nports, char *err, size_t errlen);

/* Enter it (setns) - for a host process, in the child before exec.
 * Async-signal-safe (open, setns, close).  Needs CAP_SYS_ADMIN: call it
 * before dropping to the job's user.  -1 with errno (EINVAL: n not open). */
int jf_netns_enter(const struct jf_netns *n);

/* Stop the helper (SIGKILL, waited for), unmount and remove RUN_DIR/netns.
 * Nothing on a zeroed or already closed n, or after a failed open.  Any
 * process still in the namespace keeps it, without a network. */
void jf_netns_close(struct jf_netns *n);

#endif
