/*
 * netns.c - a node's own network namespace with forwarded ports (netns.h).
 *
 * jf_netns_open, in order:
 *   1. checks the arguments (nothing is made before that);
 *   2. finds the helper: $JOBFS_NETNS_HELPER (an absolute path; a name
 *      starting "pasta" means pasta, anything else slirp4netns), else
 *      slirp4netns, else pasta, in /usr/bin, /bin, /usr/local/bin: the
 *      shim's PATH may be anything;
 *   3. picks a free TCP port on bind_addr for each container port: a socket
 *      bound to port 0, then given SO_REUSEADDR and kept open (never
 *      listening) until the helper listens there too; while it is held no
 *      other bind without SO_REUSEADDR, and no outgoing connection's
 *      automatic port, can take it;
 *   4. makes the namespace: RUN_DIR/netns created (O_EXCL) and a short-lived
 *      child (the holder) that unshares CLONE_NEWNET and bind-mounts its
 *      /proc/self/ns/net onto it (through /proc/self/fd, not the name, so
 *      that nothing swapped in under RUN_DIR is mounted over); the mount
 *      keeps the namespace alive once the holder has exited;
 *   5. starts the helper (its output in RUN_DIR/netns.log) and waits, at
 *      most JF_NETNS_READY_MS, for it to say it is ready;
 *   6. slirp4netns: adds one forward per port through its API socket
 *      (RUN_DIR/netns.sock, mode 0600), re-picking a port whose forward
 *      fails, then removes the socket's name: nobody can add forwards
 *      later.  pasta takes its forwards on the command line; they are
 *      checked in /proc/net/tcp and the whole start is retried with other
 *      ports when one is missing.
 * Any failure undoes all of it: no child, no mount, no file.
 *
 * The helper:
 *   slirp4netns --configure --mtu=65520 --disable-host-loopback
 *       --enable-sandbox --enable-seccomp --api-socket netns.sock
 *       --ready-fd=3 --netns-type=path RUN_DIR/netns tap0
 *     The namespace gets lo and tap0 10.0.2.100/24, gateway 10.0.2.2, DNS
 *     10.0.2.3 (slirp's forwarder to the host's resolvers); forwards go to
 *     10.0.2.100:PORT, so a service must listen on 0.0.0.0 (or 10.0.2.100),
 *     not only on 127.0.0.1.  The sandbox (a mount namespace with only /etc
 *     and /run, every capability but NET_BIND_SERVICE dropped) and seccomp
 *     matter: slirp4netns runs as root and parses what the job sends.
 *     Where the sandbox cannot be made (its log says "create_sandbox
 *     failed" or "enable_seccomp failed") it is started once more without
 *     both, and netns.log says so: a network rather than none.
 *   pasta -f -q --runas 0 --config-net --no-map-gw -u none -T none -U none
 *       -t ADDR/HOST_PORT:PORT ... -P /proc/self/fd/3 --netns RUN_DIR/netns
 *     (the 2023 pasta must stay root here: as nobody it cannot join a
 *     namespace of the initial user namespace).  The namespace copies the
 *     host's addresses and routes.
 *   Both: stdin /dev/null, no other descriptor of ours, an empty signal
 *   mask, SIGTERM, SIGINT and SIGHUP ignored (Slurm signals every process
 *   of a step; the network must outlive the node's SIGTERM: the helper is
 *   stopped by jf_netns_close's SIGKILL; pasta catches SIGTERM itself, so
 *   it does end on one), PR_SET_PDEATHSIG SIGKILL (it dies
 *   with the shim), umask 077, cwd RUN_DIR, a minimal environment.
 *
 * The host's loopback is not reachable from the namespace
 * (--disable-host-loopback, pasta's --no-map-gw), as in Podman's default:
 * the helper runs as root, so a connection it made to a 127.0.0.1 service
 * would come from root (an ident lookup, an iptables owner match), and the
 * namespace is there to keep the node's ports apart from the host's.  The
 * host's other addresses are reached as any outside address (slirp4netns;
 * with pasta the namespace holds the host's own address, so the host is not
 * reachable at all).  Outbound traffic leaves from the helper, root: owner
 * matches in the host's firewall see root, not the job's user.
 */
#include "runtime/netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JF_NETNS_READY_MS 10000 /* the helper's start */
#define JF_NETNS_API_MS   5000  /* one API request */
#define JF_NETNS_TRIES    8     /* picks of one port (slirp4netns), starts (pasta) */
#define NETNS_NAME        "netns"
#define SOCK_NAME         "netns.sock"
#define LOG_NAME          "netns.log"
#define HELPER_FD         3 /* the helper's ready (slirp4netns) or pid file (pasta) fd */

enum helper_kind { HELPER_SLIRP, HELPER_PASTA };

/* RUN_DIR/NAME: the longest name is "netns.sock" */
typedef char runpath[sizeof(((struct jf_netns *)0)->path) + 16];

struct setup {
	struct jf_netns *n;
	const char *run_dir;
	enum helper_kind kind;
	char exe[4096];
	struct in_addr addr;
	int pick[JF_NETNS_MAX_PORTS]; /* the held sockets, -1 = none */
	runpath sock, log;
	bool made_file; /* RUN_DIR/netns created by us */
	bool mounted;
	bool made_log;
	char fwd[JF_NETNS_MAX_PORTS][96]; /* pasta's -t ADDR/HOST_PORT:PORT */
};

__attribute__((format(printf, 3, 4))) static void seterr(char *err, size_t errlen, const char *fmt,
							 ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* src into dst (n bytes), cut to fit: for text that may be cut */
static void copy_cut(char *dst, size_t n, const char *src)
{
	size_t len = strlen(src);
	if (n == 0)
		return;
	if (len >= n)
		len = n - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *kind_name(enum helper_kind k)
{
	return k == HELPER_PASTA ? "pasta" : "slirp4netns";
}

static pid_t wait_pid(pid_t pid, int *status)
{
	pid_t r;
	do
		r = waitpid(pid, status, 0);
	while (r < 0 && errno == EINTR);
	return r;
}

static void stop_pid(pid_t pid)
{
	if (pid <= 0)
		return;
	int status;
	kill(pid, SIGKILL);
	wait_pid(pid, &status);
}

/* ---- 1, 2: the arguments and the helper ---- */

static int check_args(struct setup *s, const char *bind_addr, const int *ports, size_t nports,
		      char *err, size_t errlen)
{
	struct jf_netns *n = s->n;
	if (!s->run_dir || !s->run_dir[0]) {
		seterr(err, errlen, "network namespace: no run directory");
		return -1;
	}
	if (nports > JF_NETNS_MAX_PORTS) {
		seterr(err, errlen, "ports: %zu listed, at most %d", nports, JF_NETNS_MAX_PORTS);
		return -1;
	}
	if (nports > 0 && !ports) {
		seterr(err, errlen, "ports: none given");
		return -1;
	}
	for (size_t i = 0; i < nports; i++) {
		if (ports[i] < 1 || ports[i] > 65535) {
			seterr(err, errlen, "ports: %d is not a TCP port (1-65535)", ports[i]);
			return -1;
		}
		for (size_t j = 0; j < i; j++)
			if (ports[j] == ports[i]) {
				seterr(err, errlen, "ports: %d listed twice", ports[i]);
				return -1;
			}
	}
	if (!bind_addr || !bind_addr[0])
		bind_addr = "127.0.0.1";
	if (inet_pton(AF_INET, bind_addr, &s->addr) != 1) {
		seterr(err, errlen, "expose address %.64s: not an IPv4 address", bind_addr);
		return -1;
	}
	inet_ntop(AF_INET, &s->addr, n->bind_addr, sizeof(n->bind_addr));
	int len = snprintf(n->path, sizeof(n->path), "%s/%s", s->run_dir, NETNS_NAME);
	if (len < 0 || (size_t)len >= sizeof(n->path)) {
		n->path[0] = '\0';
		seterr(err, errlen, "network namespace: run directory path too long");
		return -1;
	}
	snprintf(s->sock, sizeof(s->sock), "%s/%s", s->run_dir, SOCK_NAME);
	snprintf(s->log, sizeof(s->log), "%s/%s", s->run_dir, LOG_NAME);
	n->nports = nports;
	for (size_t i = 0; i < nports; i++)
		n->container_port[i] = ports[i];
	return 0;
}

static bool executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static int find_helper(struct setup *s, char *err, size_t errlen)
{
	const char *env = getenv("JOBFS_NETNS_HELPER");
	if (env && env[0]) {
		if (env[0] != '/' || strlen(env) >= sizeof(s->exe) || !executable(env)) {
			seterr(err, errlen,
			       "JOBFS_NETNS_HELPER %.200s: not an executable absolute path", env);
			return -1;
		}
		snprintf(s->exe, sizeof(s->exe), "%s", env);
		const char *base = strrchr(env, '/') + 1;
		s->kind = strncmp(base, "pasta", 5) == 0 ? HELPER_PASTA : HELPER_SLIRP;
		return 0;
	}
	static const char *const dirs[] = { "/usr/bin", "/bin", "/usr/local/bin" };
	static const char *const names[] = { "slirp4netns", "pasta" };
	for (int k = 0; k < 2; k++)
		for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
			snprintf(s->exe, sizeof(s->exe), "%s/%s", dirs[d], names[k]);
			if (executable(s->exe)) {
				s->kind = k == 0 ? HELPER_SLIRP : HELPER_PASTA;
				return 0;
			}
		}
	s->exe[0] = '\0';
	seterr(err, errlen, "ports need slirp4netns or pasta (Debian packages slirp4netns, passt)");
	return -1;
}

/* ---- 3: host ports ---- */

/* A socket bound to a free port of bind_addr, SO_REUSEADDR set after the
 * bind (so that the port was free of every other socket, and the helper,
 * which sets it too, can bind beside it); its port in *port. */
static int pick_port(const struct setup *s, int *port, char *err, size_t errlen)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		seterr(err, errlen, "ports: socket: %s", strerror(errno));
		return -1;
	}
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = s->addr };
	socklen_t len = sizeof(sa);
	int one = 1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0) {
		seterr(err, errlen, "ports: no free port on %s: %s", s->n->bind_addr,
		       strerror(errno));
		close(fd);
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

static void drop_picks(struct setup *s)
{
	for (size_t i = 0; i < JF_NETNS_MAX_PORTS; i++)
		if (s->pick[i] >= 0) {
			close(s->pick[i]);
			s->pick[i] = -1;
		}
}

static int pick_all(struct setup *s, char *err, size_t errlen)
{
	for (size_t i = 0; i < s->n->nports; i++) {
		if (s->pick[i] >= 0)
			close(s->pick[i]);
		s->pick[i] = pick_port(s, &s->n->host_port[i], err, errlen);
		if (s->pick[i] < 0)
			return -1;
	}
	return 0;
}

/* ---- 4: the namespace ---- */

/* RUN_DIR/netns: a new network namespace, bind-mounted by a child. */
static int make_netns(struct setup *s, char *err, size_t errlen)
{
	struct jf_netns *n = s->n;
	int fd = open(n->path, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0 && errno == EEXIST) {
		/* left by a shim that died: its mount (if any, and if still in
		 * this mount namespace) and the file */
		umount2(n->path, MNT_DETACH | UMOUNT_NOFOLLOW);
		if (unlink(n->path) == 0)
			fd = open(n->path, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				  0444);
		else
			errno = EEXIST;
	}
	if (fd < 0) {
		seterr(err, errlen, "%.300s: %s", n->path, strerror(errno));
		return -1;
	}
	s->made_file = true;
	char target[64];
	snprintf(target, sizeof(target), "/proc/self/fd/%d", fd);
	int ep[2];
	if (pipe2(ep, O_CLOEXEC) < 0) {
		seterr(err, errlen, "network namespace: pipe: %s", strerror(errno));
		close(fd);
		return -1;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		seterr(err, errlen, "network namespace: fork: %s", strerror(errno));
		close(fd);
		close(ep[0]);
		close(ep[1]);
		return -1;
	}
	if (pid == 0) {
		int rep[2] = { 0, 0 };
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		if (unshare(CLONE_NEWNET) < 0)
			rep[0] = 1, rep[1] = errno;
		else if (mount("/proc/self/ns/net", target, NULL, MS_BIND, NULL) < 0)
			rep[0] = 2, rep[1] = errno;
		if (rep[0] && write(ep[1], rep, sizeof(rep)) < 0)
			_exit(2);
		_exit(rep[0] ? 1 : 0);
	}
	n->holder = pid;
	close(ep[1]);
	close(fd);
	int status = 0;
	wait_pid(pid, &status);
	n->holder = 0;
	int rep[2] = { 0, 0 };
	ssize_t got = read(ep[0], rep, sizeof(rep));
	close(ep[0]);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && got <= 0) {
		s->mounted = true;
		return 0;
	}
	if (got == (ssize_t)sizeof(rep) && rep[0] == 1)
		seterr(err, errlen, "a network namespace is not allowed: unshare: %s",
		       strerror(rep[1]));
	else if (got == (ssize_t)sizeof(rep))
		seterr(err, errlen, "network namespace: bind mount on %.300s: %s", n->path,
		       strerror(rep[1]));
	else
		seterr(err, errlen, "network namespace: the child failed (status %d)", status);
	return -1;
}

/* ---- 5: the helper ---- */

/* The child's side: only system calls between fork and exec. */
static __attribute__((noreturn)) void helper_exec(const struct setup *s, pid_t parent,
						  char *const *argv, int ready, int log, int null)
{
	static char *const envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, sig == SIGTERM || sig == SIGINT || sig == SIGHUP ? SIG_IGN
										     : SIG_DFL);
	/* above anything the targets could hold, then onto them */
	int r = fcntl(ready, F_DUPFD_CLOEXEC, 10);
	int l = fcntl(log, F_DUPFD_CLOEXEC, 10);
	int z = fcntl(null, F_DUPFD_CLOEXEC, 10);
	if (r < 0 || l < 0 || z < 0 || dup2(z, 0) < 0 || dup2(l, 1) < 0 || dup2(l, 2) < 0 ||
	    dup2(r, HELPER_FD) < 0)
		_exit(127);
	if (syscall(SYS_close_range, HELPER_FD + 1, ~0U, 0) < 0) {
		long max = sysconf(_SC_OPEN_MAX);
		for (long fd = HELPER_FD + 1; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
			close((int)fd);
	}
	umask(077);
	if (chdir(s->run_dir) < 0) {
		static const char msg[] = "jobfs: cannot enter the run directory\n";
		if (write(2, msg, sizeof(msg) - 1) < 0)
			_exit(126);
		_exit(126);
	}
	execve(s->exe, argv, envp);
	static const char msg[] = "jobfs: cannot execute the network helper\n";
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(127);
	_exit(127);
}

/* The helper's log's last line, for a message. */
static void log_tail(const struct setup *s, char *buf, size_t n)
{
	buf[0] = '\0';
	int fd = open(s->log, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char text[1024];
	off_t end = lseek(fd, 0, SEEK_END);
	off_t from = end > (off_t)sizeof(text) - 1 ? end - (off_t)sizeof(text) + 1 : 0;
	ssize_t got = pread(fd, text, sizeof(text) - 1, from);
	close(fd);
	if (got <= 0)
		return;
	text[got] = '\0';
	while (got > 0 && (text[got - 1] == '\n' || text[got - 1] == '\r' || text[got - 1] == ' '))
		text[--got] = '\0';
	char *line = strrchr(text, '\n');
	line = line ? line + 1 : text;
	for (char *p = line; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
	copy_cut(buf, n, line);
}

/* Does the helper's log (its first 64 KiB) hold needle? */
static bool log_has(const struct setup *s, const char *needle)
{
	int fd = open(s->log, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char *text = malloc(65536);
	ssize_t got = text ? read(fd, text, 65535) : -1;
	close(fd);
	bool has = got > 0 && (text[got] = '\0', strstr(text, needle) != NULL);
	free(text);
	return has;
}

/* A line of ours in the helper's log. */
static void log_note(const struct setup *s, const char *line)
{
	int fd = open(s->log, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, line, strlen(line)) < 0 || write(fd, "\n", 1) < 0) {
		/* a note only */
	}
	close(fd);
}

/* Starts the helper with argv and waits until it is ready: slirp4netns
 * writes "1" to its ready fd, pasta its pid (and a newline) to its pid file
 * (fd 3 again).  Its output goes to RUN_DIR/netns.log, emptied first unless
 * append.  0, or -1 with the helper stopped. */
static int start_helper(struct setup *s, char *const *argv, bool append, char *err, size_t errlen)
{
	struct jf_netns *n = s->n;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		seterr(err, errlen, "%s: pipe: %s", kind_name(s->kind), strerror(errno));
		return -1;
	}
	int log = open(s->log,
		       O_WRONLY | O_CREAT | (append ? 0 : O_TRUNC) | O_APPEND | O_NOFOLLOW |
			       O_CLOEXEC,
		       0600);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (log < 0 || null < 0) {
		seterr(err, errlen, "%.300s: %s", log < 0 ? s->log : "/dev/null", strerror(errno));
		if (log >= 0)
			close(log);
		if (null >= 0)
			close(null);
		close(p[0]);
		close(p[1]);
		return -1;
	}
	s->made_log = true;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0)
		helper_exec(s, parent, argv, p[1], log, null);
	int fork_errno = errno;
	close(p[1]);
	close(log);
	close(null);
	if (pid < 0) {
		close(p[0]);
		seterr(err, errlen, "%s: fork: %s", kind_name(s->kind), strerror(fork_errno));
		return -1;
	}
	n->helper = pid;

	char buf[64];
	size_t have = 0;
	bool ready = false, ended = false;
	int64_t deadline = mono_ms() + JF_NETNS_READY_MS;
	while (!ready && !ended) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			break;
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		/* a slice: pasta may end before it opens its pid file */
		int rc = poll(&pfd, 1, left < 50 ? (int)left : 50);
		if (rc < 0 && errno != EINTR)
			break;
		if (rc > 0) {
			ssize_t got = read(p[0], buf + have, sizeof(buf) - 1 - have);
			if (got < 0 && errno != EINTR && errno != EAGAIN)
				ended = true;
			else if (got == 0)
				ended = true;
			else if (got > 0) {
				have += (size_t)got;
				buf[have] = '\0';
				ready = s->kind == HELPER_SLIRP ? strchr(buf, '1') != NULL
								: strchr(buf, '\n') != NULL;
				if (have == sizeof(buf) - 1)
					ready = true;
			}
		}
		int status;
		if (!ready && waitpid(pid, &status, WNOHANG) == pid) {
			n->helper = 0;
			ended = true;
		}
	}
	close(p[0]);
	if (ready)
		return 0;
	stop_pid(n->helper);
	n->helper = 0;
	char tail[200];
	log_tail(s, tail, sizeof(tail));
	if (ended)
		seterr(err, errlen, "%s ended before it was ready%s%s", kind_name(s->kind),
		       tail[0] ? ": " : "", tail);
	else
		seterr(err, errlen, "%s was not ready in %d ms%s%s", kind_name(s->kind),
		       JF_NETNS_READY_MS, tail[0] ? ": " : "", tail);
	return -1;
}

/* ---- 6: the forwards ---- */

/* One request to slirp4netns's API socket; its answer in resp. */
static int api_call(const struct setup *s, const char *req, char *resp, size_t n, char *err,
		    size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int dirfd = -1;
	if (strlen(s->sock) < sizeof(sa.sun_path)) {
		memcpy(sa.sun_path, s->sock, strlen(s->sock) + 1);
	} else {
		/* too long for sun_path: through a descriptor of the directory */
		dirfd = open(s->run_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0) {
			seterr(err, errlen, "%.300s: %s", s->run_dir, strerror(errno));
			return -1;
		}
		snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dirfd, SOCK_NAME);
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		seterr(err, errlen, "slirp4netns API: socket: %s", strerror(errno));
		if (dirfd >= 0)
			close(dirfd);
		return -1;
	}
	struct timeval tv = { .tv_sec = JF_NETNS_API_MS / 1000,
			      .tv_usec = (JF_NETNS_API_MS % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	int rc = -1;
	size_t have = 0, len = strlen(req);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		seterr(err, errlen, "slirp4netns API: connect: %s", strerror(errno));
		goto out;
	}
	for (size_t off = 0; off < len;) {
		ssize_t w = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			seterr(err, errlen, "slirp4netns API: send: %s", strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	shutdown(fd, SHUT_WR); /* the API reads until EOF */
	while (have < n - 1) {
		ssize_t r = read(fd, resp + have, n - 1 - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			seterr(err, errlen, "slirp4netns API: read: %s", strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		have += (size_t)r;
	}
	resp[have] = '\0';
	rc = 0;
out:
	close(fd);
	if (dirfd >= 0)
		close(dirfd);
	return rc;
}

/* 1 forwarded, 0 refused (desc in why), -1 the API failed (err set). */
static int add_hostfwd(const struct setup *s, int host_port, int guest_port, char *why,
		       size_t whylen, char *err, size_t errlen)
{
	char req[256], resp[1024];
	snprintf(req, sizeof(req),
		 "{\"execute\": \"add_hostfwd\", \"arguments\": {\"proto\": \"tcp\", "
		 "\"host_addr\": \"%s\", \"host_port\": %d, \"guest_port\": %d}}",
		 s->n->bind_addr, host_port, guest_port);
	if (api_call(s, req, resp, sizeof(resp), err, errlen) < 0)
		return -1;
	json_t *j = json_loads(resp, 0, NULL);
	int rc = 0;
	if (json_is_object(json_object_get(j, "return"))) {
		rc = 1;
	} else {
		const char *desc =
			json_string_value(json_object_get(json_object_get(j, "error"), "desc"));
		if (!j)
			seterr(err, errlen, "slirp4netns API: bad answer \"%.100s\"", resp);
		copy_cut(why, whylen, desc ? desc : resp);
		rc = j ? 0 : -1;
	}
	json_decref(j);
	return rc;
}

static int slirp_forwards(struct setup *s, char *err, size_t errlen)
{
	struct jf_netns *n = s->n;
	for (size_t i = 0; i < n->nports; i++) {
		char why[200] = "";
		int tries = 0, rc;
		while ((rc = add_hostfwd(s, n->host_port[i], n->container_port[i], why, sizeof(why),
					 err, errlen)) == 0) {
			/* taken since the pick (a listener with SO_REUSEADDR): another */
			if (++tries == JF_NETNS_TRIES) {
				seterr(err, errlen,
				       "port %d: no host port on %s could be forwarded: %s",
				       n->container_port[i], n->bind_addr, why);
				return -1;
			}
			close(s->pick[i]);
			s->pick[i] = pick_port(s, &n->host_port[i], err, errlen);
			if (s->pick[i] < 0)
				return -1;
		}
		if (rc < 0)
			return -1;
		/* slirp4netns listens there now: the hold is over */
		close(s->pick[i]);
		s->pick[i] = -1;
	}
	return 0;
}

/* Does a TCP socket listen on addr:port in this network namespace? */
static bool listening(struct in_addr addr, int port)
{
	FILE *f = fopen("/proc/net/tcp", "re");
	if (!f)
		return false;
	char line[512];
	bool found = false;
	unsigned int want_addr = addr.s_addr; /* /proc/net/tcp: the raw word, in hex */
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned int la, lp, st;
		if (sscanf(line, " %*d: %8X:%4X %*8X:%*4X %2X", &la, &lp, &st) == 3 && st == 0x0A &&
		    la == want_addr && (int)lp == port)
			found = true;
	}
	fclose(f);
	return found;
}

static int slirp_start(struct setup *s, char *err, size_t errlen)
{
	char *argv[] = { s->exe,
			 "--configure",
			 "--mtu=65520",
			 "--disable-host-loopback",
			 "--enable-sandbox",
			 "--enable-seccomp",
			 "--api-socket",
			 SOCK_NAME,
			 "--ready-fd=3",
			 "--netns-type=path",
			 s->n->path,
			 "tap0",
			 NULL };
	unlink(s->sock);
	if (start_helper(s, argv, false, err, errlen) < 0) {
		/* a host where its sandbox cannot be made (no /run, seccomp
		 * refused): without it, rather than no network */
		if (!log_has(s, "create_sandbox failed") && !log_has(s, "enable_seccomp failed"))
			return -1;
		log_note(s, "jobfs: the sandbox failed: slirp4netns started again without "
			    "--enable-sandbox --enable-seccomp");
		size_t len = sizeof(argv) / sizeof(argv[0]);
		for (size_t i = 4; i + 2 < len; i++) /* the NULL too */
			argv[i] = argv[i + 2];
		unlink(s->sock);
		if (start_helper(s, argv, true, err, errlen) < 0)
			return -1;
	}
	int rc = slirp_forwards(s, err, errlen);
	unlink(s->sock); /* no later requests: nobody adds forwards */
	return rc;
}

static int pasta_start(struct setup *s, char *err, size_t errlen)
{
	struct jf_netns *n = s->n;
	char *argv[16 + 2 * JF_NETNS_MAX_PORTS];
	for (int tries = 0;; tries++) {
		size_t a = 0;
		argv[a++] = s->exe;
		argv[a++] = "-f";
		argv[a++] = "-q";
		argv[a++] = "--runas";
		argv[a++] = "0";
		argv[a++] = "--config-net";
		argv[a++] = "--no-map-gw";
		argv[a++] = "-u";
		argv[a++] = "none";
		argv[a++] = "-T";
		argv[a++] = "none";
		argv[a++] = "-U";
		argv[a++] = "none";
		for (size_t i = 0; i < n->nports; i++) {
			snprintf(s->fwd[i], sizeof(s->fwd[i]), "%s/%d:%d", n->bind_addr,
				 n->host_port[i], n->container_port[i]);
			argv[a++] = "-t";
			argv[a++] = s->fwd[i];
		}
		if (n->nports == 0) {
			argv[a++] = "-t";
			argv[a++] = "none";
		}
		argv[a++] = "-P";
		argv[a++] = "/proc/self/fd/3";
		argv[a++] = "--netns";
		argv[a++] = n->path;
		argv[a] = NULL;
		if (start_helper(s, argv, false, err, errlen) < 0)
			return -1;
		drop_picks(s);
		size_t missing = n->nports;
		for (size_t i = 0; i < n->nports && missing == n->nports; i++)
			if (!listening(s->addr, n->host_port[i]))
				missing = i;
		if (missing == n->nports)
			return 0;
		stop_pid(n->helper);
		n->helper = 0;
		if (tries + 1 == JF_NETNS_TRIES) {
			seterr(err, errlen, "port %d: pasta did not forward host port %s:%d",
			       n->container_port[missing], n->bind_addr, n->host_port[missing]);
			return -1;
		}
		if (pick_all(s, err, errlen) < 0)
			return -1;
	}
}

/* ---- the interface ---- */

static void undo(struct setup *s)
{
	struct jf_netns *n = s->n;
	drop_picks(s);
	stop_pid(n->helper);
	stop_pid(n->holder);
	if (s->mounted || s->made_file)
		umount2(n->path, MNT_DETACH | UMOUNT_NOFOLLOW);
	if (s->made_file)
		unlink(n->path);
	if (s->made_log)
		unlink(s->log);
	unlink(s->sock);
	memset(n, 0, sizeof(*n));
}

int jf_netns_open(struct jf_netns *n, const char *run_dir, const char *bind_addr, const int *ports,
		  size_t nports, char *err, size_t errlen)
{
	memset(n, 0, sizeof(*n));
	seterr(err, errlen, "%s", "");
	struct setup *s = calloc(1, sizeof(*s));
	if (!s) {
		seterr(err, errlen, "network namespace: out of memory");
		return -1;
	}
	s->n = n;
	s->run_dir = run_dir;
	for (size_t i = 0; i < JF_NETNS_MAX_PORTS; i++)
		s->pick[i] = -1;
	int rc = -1;
	if (check_args(s, bind_addr, ports, nports, err, errlen) < 0) {
		memset(n, 0, sizeof(*n));
		goto out;
	}
	if (find_helper(s, err, errlen) < 0 || pick_all(s, err, errlen) < 0 ||
	    make_netns(s, err, errlen) < 0 ||
	    (s->kind == HELPER_SLIRP ? slirp_start(s, err, errlen) : pasta_start(s, err, errlen)) <
		    0) {
		undo(s);
		goto out;
	}
	drop_picks(s);
	rc = 0;
out:
	free(s);
	return rc;
}

int jf_netns_enter(const struct jf_netns *n)
{
	if (!n || !n->path[0]) {
		errno = EINVAL;
		return -1;
	}
	int fd = open(n->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = setns(fd, CLONE_NEWNET);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

void jf_netns_close(struct jf_netns *n)
{
	if (!n)
		return;
	stop_pid(n->helper);
	stop_pid(n->holder);
	n->helper = n->holder = 0;
	if (n->path[0]) {
		umount2(n->path, MNT_DETACH | UMOUNT_NOFOLLOW);
		unlink(n->path);
		n->path[0] = '\0';
	}
	n->nports = 0;
}
