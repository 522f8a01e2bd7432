/*
 * test_netns.c - a node's network namespace with forwarded ports
 * (runtime/netns.c).
 *
 * What is refused (any user): too many ports, a port out of 1-65535 or
 * twice, an expose address that is not IPv4, a bad run directory; each
 * leaves nothing (no file, no child).  As root with slirp4netns (skipped
 * otherwise; JOBFS_NETNS_REQUIRED=1 makes that a failure, as in CI), in a
 * private mount namespace as jobfs-shim runs: two namespaces, both
 * forwarding container port 8080 (one 9000 too), each with a server
 * inside (a child that jf_netns_enter()s); the host reaches each through
 * its own free port on 127.0.0.1 and on no other address; inside, the
 * namespace's loopback reaches its server, the host's sockets are not
 * seen and the host's loopback is not reachable through the gateway;
 * jf_netns_close leaves no helper, no mount, no file, no listener.  The
 * same with pasta when it is installed.  A helper that fails to start
 * leaves nothing; slirp4netns whose sandbox fails is started without it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/netns.h"
#include "testutil.h"

#define MAX_KIDS 8

static char g_dir[2][512];
static struct jf_netns g_ns[2];
static pid_t g_kids[MAX_KIDS];

static int setup(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++)
		jft_mkdtemp(g_dir[i], sizeof(g_dir[i]), jft_tmp_base(), "netns");
	return 0;
}

static void kill_kid(pid_t *p)
{
	if (*p > 0) {
		int st;
		kill(*p, SIGKILL);
		waitpid(*p, &st, 0);
	}
	*p = 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < MAX_KIDS; i++)
		kill_kid(&g_kids[i]);
	for (int i = 0; i < 2; i++) {
		jf_netns_close(&g_ns[i]);
		jft_rmtree(g_dir[i]);
	}
	unsetenv("JOBFS_NETNS_HELPER");
	return 0;
}

static void keep_kid(pid_t pid)
{
	for (int i = 0; i < MAX_KIDS; i++)
		if (g_kids[i] == 0) {
			g_kids[i] = pid;
			return;
		}
	fail_msg("too many children");
}

static bool have(const char *name)
{
	char p[64];
	static const char *const dirs[] = { "/usr/bin", "/bin", "/usr/local/bin" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", dirs[i], name);
		if (access(p, X_OK) == 0)
			return true;
	}
	return false;
}

/* May this process make a network namespace (root is not enough in an
 * unprivileged container)?  Tried in a child. */
static bool may_unshare_net(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(unshare(CLONE_NEWNET) == 0 ? 0 : 1);
	int st;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* root that may make network namespaces, /dev/net/tun and slirp4netns,
 * else skipped (a failure with JOBFS_NETNS_REQUIRED=1) */
static void need_root_slirp(void)
{
	if (geteuid() == 0 && have("slirp4netns") && access("/dev/net/tun", R_OK | W_OK) == 0 &&
	    may_unshare_net())
		return;
	const char *req = getenv("JOBFS_NETNS_REQUIRED");
	if (req && !strcmp(req, "1"))
		fail_msg("JOBFS_NETNS_REQUIRED: root (allowed network namespaces), /dev/net/tun "
			 "and slirp4netns are needed");
	skip();
}

static bool no_children(void)
{
	int st;
	return waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD;
}

static bool dir_empty(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n == 0;
}

/* Is path a mount point in this mount namespace? */
static bool mounted(const char *path)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	assert_non_null(f);
	char line[4096], mp[4096];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && !strcmp(mp, path))
			found = true;
	fclose(f);
	return found;
}

/* A /proc/net/tcp-style table: the listeners on port (any address); their
 * addresses' raw words in addrs (up to 8).  ino, when not 0: whether a
 * socket with that inode is in the table, in *has_ino. */
static int listeners(const char *file, int port, unsigned int *addrs, unsigned long ino,
		     bool *has_ino)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return 0; /* no IPv6 */
	char line[512];
	int n = 0;
	if (has_ino)
		*has_ino = false;
	while (fgets(line, sizeof(line), f)) {
		unsigned int la, lp, st;
		unsigned long inode = 0;
		char a6[40];
		int got = sscanf(line,
				 " %*d: %8X:%4X %*8X:%*4X %2X %*8X:%*8X %*2X:%*8X %*8X %*u %*d %lu",
				 &la, &lp, &st, &inode);
		if (got != 4)
			got = sscanf(line,
				     " %*d: %32[0-9A-Fa-f]:%4X %*s %2X %*8X:%*8X %*2X:%*8X %*8X "
				     "%*u %*d %lu",
				     a6, &lp, &st, &inode) == 4
				      ? 4
				      : 0;
		if (got != 4)
			continue;
		if (has_ino && ino && inode == ino)
			*has_ino = true;
		/* TCP LISTEN is 0x0A; a UDP socket (state 07) counts too */
		if ((int)lp == port && (st == 0x0A || st == 0x07)) {
			if (n < 8 && addrs)
				addrs[n] = la;
			n++;
		}
	}
	fclose(f);
	return n;
}

/* Connect to ip:port and read everything (at most n-1 bytes). */
static bool fetch(const char *ip, int port, char *buf, size_t n)
{
	buf[0] = '\0';
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	struct timeval tv = { .tv_sec = 10 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, ip, &sa.sin_addr);
	size_t have = 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		for (ssize_t r; have < n - 1 && (r = read(fd, buf + have, n - 1 - have)) > 0;)
			have += (size_t)r;
	buf[have] = '\0';
	close(fd);
	return have > 0;
}

/* Does a connection to addr:port get through (waiting at most ms)? */
static bool connects(struct in_addr addr, int port, int ms)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr = addr };
	bool ok = false;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		ok = true;
	} else if (errno == EINPROGRESS) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int e = 0;
		socklen_t el = sizeof(e);
		if (poll(&p, 1, ms) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 &&
		    e == 0)
			ok = true;
	}
	close(fd);
	return ok;
}

/*
 * A server inside n: listens on 0.0.0.0 at each container port and answers
 * every connection to port i with replies[i].  Returns once it listens;
 * the first listener's inode in *ino.
 */
static pid_t server(const struct jf_netns *n, const char *const *replies, unsigned long *ino)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		int fds[JF_NETNS_MAX_PORTS];
		if (jf_netns_enter(n) < 0)
			_exit(3);
		for (size_t i = 0; i < n->nports; i++) {
			fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			int one = 1;
			setsockopt(fds[i], SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			struct sockaddr_in sa = {
				.sin_family = AF_INET,
				.sin_port = htons((uint16_t)n->container_port[i]),
				.sin_addr.s_addr = htonl(INADDR_ANY),
			};
			if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
			    listen(fds[i], 16) < 0)
				_exit(4);
		}
		struct stat st;
		fstat(fds[0], &st);
		unsigned long first = (unsigned long)st.st_ino;
		if (write(p[1], &first, sizeof(first)) != (ssize_t)sizeof(first))
			_exit(5);
		close(p[1]);
		for (;;) {
			struct pollfd pf[JF_NETNS_MAX_PORTS];
			for (size_t i = 0; i < n->nports; i++)
				pf[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
			if (poll(pf, n->nports, -1) < 0)
				continue;
			for (size_t i = 0; i < n->nports; i++) {
				if (!(pf[i].revents & POLLIN))
					continue;
				int c = accept4(fds[i], NULL, NULL, SOCK_CLOEXEC);
				if (c < 0)
					continue;
				if (write(c, replies[i], strlen(replies[i])) < 0)
					_exit(6);
				close(c);
			}
		}
	}
	keep_kid(pid);
	close(p[1]);
	*ino = 0;
	ssize_t got = read(p[0], ino, sizeof(*ino));
	close(p[0]);
	if (got != (ssize_t)sizeof(*ino))
		fail_msg("the server in %s did not start", n->path);
	return pid;
}

/* The default route's gateway in this network namespace. */
static bool gateway(struct in_addr *gw)
{
	FILE *f = fopen("/proc/self/net/route", "r");
	if (!f)
		return false;
	char line[256];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned int dst, g;
		if (sscanf(line, "%*s %8X %8X", &dst, &g) == 2 && dst == 0) {
			gw->s_addr = g; /* the raw word */
			found = true;
		}
	}
	fclose(f);
	return found;
}

enum {
	PROBE_ENTER = 1,
	PROBE_OWN_LOOPBACK = 2,
	PROBE_HOST_SEEN = 4,
	PROBE_SERVER_UNSEEN = 8,
	PROBE_NO_ROUTE = 16,
	PROBE_HOST_LOOPBACK = 32,
	PROBE_OUTBOUND = 64,
};

/* Inside n: what the namespace sees.  A mask of PROBE_* failures.  With
 * out_port, out (a host address, not loopback) must be reachable there. */
static int probe(const struct jf_netns *n, unsigned long server_ino, const char *reply0,
		 struct in_addr out, int out_port)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int bad = 0;
		if (jf_netns_enter(n) < 0)
			_exit(PROBE_ENTER);
		char buf[64];
		if (!fetch("127.0.0.1", n->container_port[0], buf, sizeof(buf)) ||
		    strcmp(buf, reply0))
			bad |= PROBE_OWN_LOOPBACK;
		bool has = false;
		if (listeners("/proc/self/net/tcp", n->host_port[0], NULL, 0, NULL) > 0)
			bad |= PROBE_HOST_SEEN;
		listeners("/proc/self/net/tcp", 0, NULL, server_ino, &has);
		if (!has)
			bad |= PROBE_SERVER_UNSEEN;
		struct in_addr gw;
		if (!gateway(&gw))
			bad |= PROBE_NO_ROUTE;
		else if (connects(gw, n->host_port[0], 300))
			bad |= PROBE_HOST_LOOPBACK;
		if (out_port && !connects(out, out_port, 5000))
			bad |= PROBE_OUTBOUND;
		_exit(bad);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* The host's first IPv4 address that is not loopback, if any. */
static bool host_addr(struct in_addr *a)
{
	struct ifaddrs *ifs, *i;
	if (getifaddrs(&ifs) < 0)
		return false;
	bool found = false;
	for (i = ifs; i && !found; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
			*a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			found = (ntohl(a->s_addr) >> 24) != 127;
		}
	freeifaddrs(ifs);
	return found;
}

/* The host side of one forwarded port: only 127.0.0.1 listens, TCP only. */
static void check_host_port(int port)
{
	unsigned int addrs[8];
	int nl = listeners("/proc/net/tcp", port, addrs, 0, NULL);
	assert_true(nl >= 1);
	for (int i = 0; i < nl && i < 8; i++)
		assert_int_equal(addrs[i], htonl(INADDR_LOOPBACK));
	assert_int_equal(listeners("/proc/net/tcp6", port, NULL, 0, NULL), 0);
	assert_int_equal(listeners("/proc/net/udp", port, NULL, 0, NULL), 0);
	assert_int_equal(listeners("/proc/net/udp6", port, NULL, 0, NULL), 0);
	struct in_addr other;
	if (host_addr(&other))
		assert_false(connects(other, port, 1000));
}

static void open_ok(int i, const int *ports, size_t nports)
{
	char err[256] = "";
	int64_t t0 = jft_mono_ms();
	int rc = jf_netns_open(&g_ns[i], g_dir[i], NULL, ports, nports, err, sizeof(err));
	int64_t ms = jft_mono_ms() - t0;
	if (rc != 0)
		fail_msg("jf_netns_open: %s", err);
	print_message("jf_netns_open (%s, %zu ports): %lld ms\n",
		      getenv("JOBFS_NETNS_HELPER") ? getenv("JOBFS_NETNS_HELPER") : "default",
		      nports, (long long)ms);
	struct jf_netns *n = &g_ns[i];
	assert_true(n->helper > 0);
	assert_int_equal(n->holder, 0);
	assert_string_equal(n->bind_addr, "127.0.0.1");
	assert_int_equal(n->nports, nports);
	char want[1100];
	snprintf(want, sizeof(want), "%s/netns", g_dir[i]);
	assert_string_equal(n->path, want);
	assert_true(mounted(n->path));
	/* the API socket is gone once the forwards are made */
	assert_false(jft_exists(strcat(strcpy(want, g_dir[i]), "/netns.sock")));
	for (size_t k = 0; k < nports; k++) {
		assert_int_equal(n->container_port[k], ports[k]);
		assert_in_range(n->host_port[k], 1024, 65535);
	}
}

static void close_ok(int i)
{
	struct jf_netns *n = &g_ns[i];
	pid_t helper = n->helper;
	char path[sizeof(n->path)];
	int ports[JF_NETNS_MAX_PORTS];
	size_t np = n->nports;
	memcpy(path, n->path, sizeof(path));
	memcpy(ports, n->host_port, sizeof(ports));
	jf_netns_close(n);
	assert_int_equal(n->helper, 0);
	assert_int_equal(kill(helper, 0), -1);
	assert_int_equal(errno, ESRCH);
	assert_false(mounted(path));
	assert_false(jft_exists(path));
	for (size_t k = 0; k < np; k++)
		assert_int_equal(listeners("/proc/net/tcp", ports[k], NULL, 0, NULL), 0);
	jf_netns_close(n); /* twice: nothing */
}

/* Two nodes with container port 8080 each, on their own host ports. */
static void two_nodes(bool pasta)
{
	static const int ports_a[] = { 8080, 9000 };
	static const int ports_b[] = { 8080 };
	static const char *const replies_a[] = { "hello\n", "nine\n" };
	static const char *const replies_b[] = { "b\n" };
	char stale[1100];
	snprintf(stale, sizeof(stale), "%s/netns", g_dir[0]);
	jft_write_file(stale, ""); /* left by a shim that died: replaced */

	open_ok(0, ports_a, 2);
	open_ok(1, ports_b, 1);
	struct jf_netns *a = &g_ns[0], *b = &g_ns[1];
	assert_int_not_equal(a->host_port[0], a->host_port[1]);
	assert_int_not_equal(a->host_port[0], b->host_port[0]);
	assert_int_not_equal(a->host_port[1], b->host_port[0]);
	assert_int_not_equal(a->helper, b->helper);

	unsigned long ino_a, ino_b;
	server(a, replies_a, &ino_a);
	server(b, replies_b, &ino_b);
	char buf[64];
	assert_true(fetch("127.0.0.1", a->host_port[0], buf, sizeof(buf)));
	assert_string_equal(buf, "hello\n");
	assert_true(fetch("127.0.0.1", a->host_port[1], buf, sizeof(buf)));
	assert_string_equal(buf, "nine\n");
	assert_true(fetch("127.0.0.1", b->host_port[0], buf, sizeof(buf)));
	assert_string_equal(buf, "b\n");
	check_host_port(a->host_port[0]);
	check_host_port(a->host_port[1]);
	check_host_port(b->host_port[0]);
	/* the servers' sockets are not the host's */
	bool has = true;
	listeners("/proc/net/tcp", 0, NULL, ino_a, &has);
	assert_false(has);

	/* slirp4netns: the host's other addresses are reached as any outside
	 * one (with pasta the namespace has the host's address itself) */
	struct in_addr out = { 0 };
	int out_port = 0, lfd = -1;
	if (!pasta && host_addr(&out)) {
		lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = out };
		socklen_t sl = sizeof(sa);
		assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(listen(lfd, 4), 0);
		assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
		out_port = ntohs(sa.sin_port);
	}
	assert_int_equal(probe(a, ino_a, "hello\n", out, out_port), 0);
	assert_int_equal(probe(b, ino_b, "b\n", out, 0), 0);
	if (lfd >= 0)
		close(lfd);

	for (int i = 0; i < MAX_KIDS; i++)
		kill_kid(&g_kids[i]);
	close_ok(0);
	close_ok(1);
	assert_true(no_children());
	/* what is left in RUN_DIR: the helper's log only */
	for (int i = 0; i < 2; i++) {
		char log[1100];
		snprintf(log, sizeof(log), "%s/netns.log", g_dir[i]);
		assert_true(jft_exists(log));
		unlink(log);
		assert_true(dir_empty(g_dir[i]));
	}
}

static void test_slirp4netns(void **state)
{
	(void)state;
	need_root_slirp();
	setenv("JOBFS_NETNS_HELPER",
	       access("/usr/bin/slirp4netns", X_OK) == 0 ? "/usr/bin/slirp4netns"
							 : "/bin/slirp4netns",
	       1);
	two_nodes(false);
}

static void test_pasta(void **state)
{
	(void)state;
	if (geteuid() != 0 || access("/usr/bin/pasta", X_OK) != 0 ||
	    access("/dev/net/tun", R_OK | W_OK) != 0 || !may_unshare_net())
		skip();
	setenv("JOBFS_NETNS_HELPER", "/usr/bin/pasta", 1);
	two_nodes(true);
}

/* No ports at all: a namespace of its own all the same. */
static void test_no_ports(void **state)
{
	(void)state;
	need_root_slirp();
	char err[256];
	struct jf_netns *n = &g_ns[0];
	assert_int_equal(jf_netns_open(n, g_dir[0], "127.0.0.1", NULL, 0, err, sizeof(err)), 0);
	assert_true(n->helper > 0);
	assert_int_equal(n->nports, 0);
	assert_true(mounted(n->path));
	close_ok(0);
	assert_true(no_children());
}

/* open refused: err says why, nothing made */
static void refused(const char *run_dir, const char *addr, const int *ports, size_t np,
		    const char *why)
{
	char err[256] = "";
	struct jf_netns *n = &g_ns[0];
	memset(n, 0x55, sizeof(*n)); /* whatever was there */
	assert_int_equal(jf_netns_open(n, run_dir, addr, ports, np, err, sizeof(err)), -1);
	if (!strstr(err, why))
		fail_msg("expected \"%s\" in \"%s\"", why, err);
	assert_int_equal(n->helper, 0);
	assert_int_equal(n->holder, 0);
	assert_int_equal(n->path[0], '\0');
	assert_int_equal(n->nports, 0);
	assert_true(dir_empty(g_dir[0]));
	assert_true(no_children());
	jf_netns_close(n);
	errno = 0;
	assert_int_equal(jf_netns_enter(n), -1);
	assert_int_equal(errno, EINVAL);
}

static void test_refused(void **state)
{
	(void)state;
	int many[JF_NETNS_MAX_PORTS + 1];
	for (int i = 0; i <= JF_NETNS_MAX_PORTS; i++)
		many[i] = 8000 + i;
	const char *d = g_dir[0];
	refused(d, NULL, many, JF_NETNS_MAX_PORTS + 1, "at most 32");
	refused(d, NULL, (const int[]){ 8080, 0 }, 2, "0 is not a TCP port");
	refused(d, NULL, (const int[]){ 65536 }, 1, "65536 is not a TCP port");
	refused(d, NULL, (const int[]){ -80 }, 1, "-80 is not a TCP port");
	refused(d, NULL, (const int[]){ 80, 81, 80 }, 3, "80 listed twice");
	refused(d, NULL, NULL, 1, "none given");
	refused(d, "localhost", (const int[]){ 80 }, 1, "localhost: not an IPv4 address");
	refused(d, "::1", (const int[]){ 80 }, 1, "not an IPv4 address");
	refused(d, "127.1", (const int[]){ 80 }, 1, "not an IPv4 address");
	refused(d, "127.0.0.1 ", (const int[]){ 80 }, 1, "not an IPv4 address");
	refused(NULL, NULL, (const int[]){ 80 }, 1, "no run directory");
	char *longdir = malloc(5000);
	assert_non_null(longdir);
	memset(longdir, 'a', 4999);
	longdir[0] = '/';
	longdir[4999] = '\0';
	refused(longdir, NULL, (const int[]){ 80 }, 1, "too long");
	free(longdir);
	setenv("JOBFS_NETNS_HELPER", "pasta", 1);
	refused(d, NULL, (const int[]){ 80 }, 1, "not an executable absolute path");
	setenv("JOBFS_NETNS_HELPER", "/nonexistent/slirp4netns", 1);
	refused(d, NULL, (const int[]){ 80 }, 1, "not an executable absolute path");
	unsetenv("JOBFS_NETNS_HELPER");
	/* an IPv4 address this host does not have: no port to pick */
	if (have("slirp4netns") || have("pasta"))
		refused(d, "203.0.113.77", (const int[]){ 80 }, 1, "no free port on 203.0.113.77");
	else
		refused(d, "203.0.113.77", (const int[]){ 80 }, 1,
			"ports need slirp4netns or pasta");
}

/* A helper that ends at once: the namespace made for it is undone. */
static void test_helper_fails(void **state)
{
	(void)state;
	need_root_slirp();
	setenv("JOBFS_NETNS_HELPER",
	       access("/bin/false", X_OK) == 0 ? "/bin/false" : "/usr/bin/false", 1);
	refused(g_dir[0], NULL, (const int[]){ 8080 }, 1, "slirp4netns ended before it was ready");
	/* a helper that writes something first: its last line is the message */
	char script[1100];
	snprintf(script, sizeof(script), "%s/fail.sh", g_dir[1]);
	jft_write_file(script, "#!/bin/sh\necho starting\necho 'no tap device' >&2\nexit 1\n");
	assert_int_equal(chmod(script, 0755), 0);
	setenv("JOBFS_NETNS_HELPER", script, 1);
	refused(g_dir[0], NULL, (const int[]){ 8080 }, 1,
		"ended before it was ready: no tap device");
	unlink(script);
	unsetenv("JOBFS_NETNS_HELPER");
}

/* slirp4netns's sandbox cannot be made: started again without it */
static void test_sandbox_fallback(void **state)
{
	(void)state;
	need_root_slirp();
	char fake[1100], text[512];
	snprintf(fake, sizeof(fake), "%s/slirp4netns-nosandbox", g_dir[1]);
	snprintf(text, sizeof(text),
		 "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in --enable-sandbox) "
		 "echo 'create_sandbox failed' >&2; exit 1;; esac; done\nexec %s \"$@\"\n",
		 access("/usr/bin/slirp4netns", X_OK) == 0 ? "/usr/bin/slirp4netns"
							   : "/bin/slirp4netns");
	jft_write_file(fake, text);
	assert_int_equal(chmod(fake, 0755), 0);
	setenv("JOBFS_NETNS_HELPER", fake, 1);
	static const int ports[] = { 8080 };
	static const char *const replies[] = { "hello\n" };
	open_ok(0, ports, 1);
	unsigned long ino;
	server(&g_ns[0], replies, &ino);
	char buf[64];
	assert_true(fetch("127.0.0.1", g_ns[0].host_port[0], buf, sizeof(buf)));
	assert_string_equal(buf, "hello\n");
	char *log = jft_read_in(g_dir[0], "netns.log");
	assert_non_null(log);
	assert_non_null(strstr(log, "create_sandbox failed"));
	assert_non_null(strstr(log, "started again without --enable-sandbox"));
	free(log);
	for (int i = 0; i < MAX_KIDS; i++)
		kill_kid(&g_kids[i]);
	close_ok(0);
	assert_true(no_children());
}

/* Not root: no namespace, and nothing left. */
static void test_not_root(void **state)
{
	(void)state;
	if (geteuid() == 0 || !(have("slirp4netns") || have("pasta")))
		skip();
	refused(g_dir[0], NULL, (const int[]){ 8080 }, 1, "a network namespace is not allowed");
}

int main(void)
{
	/* as jobfs-shim runs containers: a private mount namespace, so that
	 * whatever a failed run leaves mounted goes with this process */
	if (geteuid() == 0 && unshare(CLONE_NEWNS) == 0)
		mount("none", "/", NULL, MS_REC | MS_SLAVE, NULL);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_helper_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_ports, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sandbox_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slirp4netns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pasta, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
