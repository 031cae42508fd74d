/*
 * tutil.c - helpers shared by the engine tests, and their main()
 * (declared in tutil.h).
 */
#include "tutil.h"

#include <signal.h>
#include <time.h>

char t_base[4096];

/* Make a fresh temp dir; returns an O_DIRECTORY fd or -1. */
int t_mktemp(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(t_base, sizeof(t_base), "%s/de-test-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(t_base))
		return -1;
	return open(t_base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Remove the temp dir (rm copes with any depth and any mode). */
void t_cleanup(void)
{
	char cmd[3 * sizeof(t_base) + 200];

	if (!t_base[0])
		return;
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s' 2>/dev/null; "
		 "chattr -R -i '%s' 2>/dev/null; rm -rf '%s'",
		 t_base, t_base, t_base);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", t_base);
	t_base[0] = 0;
}

/* Every test's main(): see test() in tutil.h. */
int main(void)
{
	int dfd = t_mktemp(), ret;

	if (dfd < 0)
		return T_FAIL;
	ret = test(dfd);
	close(dfd);
	t_cleanup();
	return ret;
}

/*
 * Run fn as nobody (uid and gid 65534, in a child, with the temp dir dfd
 * handed to nobody: fn opens it again, as nobody) when root, else as
 * ourselves, so that permission checks apply.  Returns fn's
 * T_PASS/T_FAIL, or T_SKIP when nobody cannot be had.
 */
int t_as_nobody(int dfd, int (*fn)(void))
{
	pid_t pid;
	int st;

	if (geteuid() != 0)
		return fn();
	if (fchown(dfd, 65534, 65534))
		return T_SKIP;
	pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(T_SKIP);
		_exit(fn());
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return T_FAIL;
	return WEXITSTATUS(st);
}

char t_mnt[sizeof(t_base) + 256];

/* An fd of what was just mounted on t_mnt, or -1 (then unmounted). */
static int mnt_fd(void)
{
	int fd = open(t_mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 && umount2(t_mnt, MNT_DETACH) == 0)
		t_mnt[0] = 0;
	return fd;
}

int t_loop_mount(const char *size, const char *mkfs)
{
	char cmd[4 * sizeof(t_base) + 300];

	if (geteuid() != 0 || !t_base[0])
		return -1;
	snprintf(t_mnt, sizeof(t_mnt), "%s/mnt", t_base);
	if (snprintf(cmd, sizeof(cmd), "truncate -s %s '%s/img' && "
		     "%s '%s/img' >/dev/null 2>&1 && mkdir '%s' && "
		     "mount -o loop '%s/img' '%s'", size, t_base, mkfs, t_base,
		     t_mnt, t_base, t_mnt) >= (int)sizeof(cmd) ||
	    system(cmd) != 0) {
		t_mnt[0] = 0;
		return -1;
	}
	return mnt_fd();
}

int t_remount(int fd)
{
	char cmd[2 * sizeof(t_mnt) + 64];

	if (fd >= 0)
		close(fd);
	if (!t_mnt[0] || umount(t_mnt) ||
	    snprintf(cmd, sizeof(cmd), "mount -o loop '%s/img' '%s'", t_base,
		     t_mnt) >= (int)sizeof(cmd) || system(cmd) != 0) {
		t_mnt[0] = 0;
		return -1;
	}
	return mnt_fd();
}

int t_tmpfs(const char *path)
{
	if (geteuid() != 0 || !t_base[0] ||
	    snprintf(t_mnt, sizeof(t_mnt), "%s/%s", t_base, path) >=
	    (int)sizeof(t_mnt) ||
	    mount("tmpfs", t_mnt, "tmpfs", 0, "size=1m")) {
		t_mnt[0] = 0;
		return -1;
	}
	return mnt_fd();
}

/* Close fd (if >= 0) and unmount what t_loop_mount() or t_tmpfs()
 * mounted, if anything. */
void t_umount(int fd)
{
	if (fd >= 0)
		close(fd);
	if (t_mnt[0] && umount2(t_mnt, MNT_DETACH))
		fprintf(stderr, "umount %s failed\n", t_mnt);
	t_mnt[0] = 0;
}

static char alarm_msg[128];
static size_t alarm_len;

static void on_alarm(int sig)
{
	(void)sig;
	/* Else the tmpfs stays mounted after we are gone. */
	if (t_mnt[0])
		umount2(t_mnt, MNT_DETACH);
	if (write(2, alarm_msg, alarm_len) < 0)
		_exit(T_FAIL);
	_exit(T_FAIL);
}

void t_fail_on_alarm(const char *name)
{
	snprintf(alarm_msg, sizeof(alarm_msg), "%s: de_remove() hangs\n",
		 name);
	alarm_len = strlen(alarm_msg);
	signal(SIGALRM, on_alarm);
}

/* rm -rf base/name (to reset between sub-cases). */
void t_cleanup_sub(int dfd, const char *name)
{
	char cmd[sizeof(t_base) + 300];

	(void)dfd;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/%s", t_base, name);
	if (system(cmd) != 0)
		fprintf(stderr, "rm %s failed\n", name);
}

int t_file(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			0644);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int t_paths(int dfd, ...)
{
	char p[4096], *s;
	const char *path;
	va_list ap;
	int rc = 0;

	va_start(ap, dfd);
	while (!rc && (path = va_arg(ap, const char *))) {
		if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p)) {
			rc = -1;
			break;
		}
		/* Each '/' ends a directory: cut the path there, make it. */
		for (s = p; !rc && (s = strchr(s, '/')); *s++ = '/') {
			*s = 0;
			if (mkdirat(dfd, p, 0755) && errno != EEXIST)
				rc = -1;
		}
		if (!rc && *p && p[strlen(p) - 1] != '/')
			rc = t_file(dfd, p);
	}
	va_end(ap);
	return rc;
}

/* mkdir name in dfd and return an fd for it, or -1. */
int t_dir(int dfd, const char *name)
{
	if (mkdirat(dfd, name, 0755) && errno != EEXIST)
		return -1;
	return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		      O_CLOEXEC);
}

/* Count entries below dfd/name (name included), without following links. */
long t_count(int dfd, const char *name)
{
	struct stat st;
	long n = 1;
	int fd;
	DIR *d;
	struct dirent *de;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return 0;
	if (!S_ISDIR(st.st_mode))
		return 1;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (fd < 0)
		return n;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return n;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n += t_count(dirfd(d), de->d_name);
	}
	closedir(d);
	return n;
}

int t_exists(int dfd, const char *path)
{
	struct stat st;

	return fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

void t_collect(void *arg, const struct de_report *r)
{
	struct t_reps *rs = arg;

	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 1024;
		rs->v = realloc(rs->v, rs->cap * sizeof(*rs->v));
		if (!rs->v)
			abort();
	}
	rs->v[rs->n].path = strdup(r->path);
	rs->v[rs->n].type = r->type;
	rs->v[rs->n].result = r->result;
	rs->v[rs->n].op = r->op;
	rs->v[rs->n].err = r->err;
	rs->n++;
}

void t_reps_free(struct t_reps *rs)
{
	size_t i;

	for (i = 0; i < rs->n; i++)
		free(rs->v[i].path);
	free(rs->v);
	memset(rs, 0, sizeof(*rs));
}

struct t_rep *t_find(struct t_reps *rs, const char *path)
{
	size_t i;

	for (i = 0; i < rs->n; i++)
		if (!strcmp(rs->v[i].path, path))
			return &rs->v[i];
	return NULL;
}

int t_result(struct t_reps *rs, const char *path)
{
	struct t_rep *r = t_find(rs, path);

	return r ? r->result : -1;
}

/* Run the engine on one target; returns de_remove's value. */
int t_remove(int dfd, const char *name, unsigned threads, unsigned flags,
	     long long maxdel, struct t_reps *rs, struct de_summary *sum)
{
	struct de_config cfg = { .threads = threads, .flags = flags,
				 .max_delete = maxdel };

	return t_remove_mode(dfd, name, T_M_UNORDERED, &cfg, NULL, NULL, rs,
			     sum);
}

const char *const t_mode_name[T_M_COUNT] = {
	"unordered", "ordered", "enter_dir", "max_delete", "dispose",
	"global", "auto"
};

/* T_M_HOOK's enter_dir: every directory is entered, and removed. */
static int enter_all(void *arg, const char *rel, struct de_dirent *e,
		     size_t n)
{
	(void)arg; (void)rel; (void)e; (void)n;
	return 0;
}

int t_remove_mode(int dfd, const char *name, enum t_mode mode,
		  const struct de_config *cfg, de_fault_fn fault,
		  void *fault_arg, struct t_reps *rs, struct de_summary *sum)
{
	struct de_config c = *cfg;
	struct de_hooks h = { .arg = rs, .report = rs ? t_collect : NULL };
	struct de_target t = { name, DE_T_UNKNOWN, 0 };
	de_ctx *ctx;
	int rc;

	switch (mode) {
	case T_M_ORDERED:
		c.flags |= DE_F_ORDERED;
		break;
	case T_M_HOOK:
		h.enter_dir = enter_all;
		break;
	case T_M_LIMIT:
		c.max_delete = 1000;
		break;
	case T_M_DISPOSE:
		h.dispose = t_dispose_delete;
		break;
	case T_M_GLOBAL:
		c.schedule = DE_SCHED_GLOBAL;
		break;
	case T_M_AUTO:
		c.schedule = DE_SCHED_AUTO;
		break;
	default:
		break;
	}
	rc = de_test_ctx_new(&ctx, &c, fault, fault_arg);
	if (rc)
		return rc;
	rc = de_remove(ctx, dfd, &t, 1, &h, NULL, sum);
	de_ctx_free(ctx);
	return rc;
}

atomic_int t_stop;

int t_remove_racing(void *(*racer)(void *), int dfd, const char *name,
		    unsigned flags, struct t_reps *rs)
{
	pthread_t th;
	int rc;

	atomic_store(&t_stop, 0);
	rc = pthread_create(&th, NULL, racer, NULL);
	if (rc) {
		fprintf(stderr, "pthread_create: %s\n", strerror(rc));
		return -rc;
	}
	rc = t_remove(dfd, name, 2, flags, -1, rs, NULL);
	atomic_store(&t_stop, 1);
	pthread_join(th, NULL);
	return rc;
}

double t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int t_remove_timed(de_ctx *ctx, int dfd, const struct de_target *t,
		   const struct de_hooks *h, struct de_summary *sum,
		   double *took)
{
	double t0 = t_now();
	int rc = de_remove(ctx, dfd, t, 1, h, NULL, sum);

	*took = t_now() - t0;
	return rc;
}

void t_nest_report(void *arg, const struct de_report *r)
{
	t_collect(&((struct t_nest *)arg)->rs, r);
}

int t_nest_enter(void *arg, const char *rel, struct de_dirent *e, size_t n)
{
	(void)rel; (void)e; (void)n;
	((struct t_nest *)arg)->depth++;
	return 0;
}

void t_nest_leave(void *arg, const char *rel)
{
	struct t_nest *nest = arg;

	(void)rel;
	if (--nest->depth < 0)
		nest->bad = 1;
}

void t_names_add(struct t_names *ns, const char *s)
{
	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? ns->cap * 2 : 1024;
		ns->v = realloc(ns->v, ns->cap * sizeof(*ns->v));
		if (!ns->v)
			abort();
	}
	ns->v[ns->n++] = strdup(s);
}

void t_names_free(struct t_names *ns)
{
	size_t i;

	for (i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	memset(ns, 0, sizeof(*ns));
}

int t_cmp_desc(const void *a, const void *b)
{
	const struct t_de *x = a, *y = b;

	if (x->isdir != y->isdir)
		return y->isdir - x->isdir;
	return strcmp(y->name, x->name);
}

void t_canon(int dfd, const char *name, const char *path, struct t_names *out)
{
	struct stat st;
	struct t_de *v = NULL;
	size_t n = 0, cap = 0, i;
	int fd;
	DIR *d;
	struct dirent *de;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return;
	if (S_ISDIR(st.st_mode)) {
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		d = fd >= 0 ? fdopendir(fd) : NULL;
		while (d && (de = readdir(d))) {
			struct stat cs;

			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, ".."))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				v = realloc(v, cap * sizeof(*v));
			}
			snprintf(v[n].name, sizeof(v[n].name), "%s",
				 de->d_name);
			v[n].isdir = fstatat(dirfd(d), de->d_name, &cs,
					     AT_SYMLINK_NOFOLLOW) == 0 &&
				S_ISDIR(cs.st_mode);
			n++;
		}
		if (n)
			qsort(v, n, sizeof(*v), t_cmp_desc);
		for (i = 0; i < n; i++) {
			char *p;

			if (asprintf(&p, "%s/%s", path, v[i].name) < 0)
				abort();
			t_canon(dirfd(d), v[i].name, p, out);
			free(p);
		}
		if (d)
			closedir(d);
		free(v);
	}
	t_names_add(out, path);
}

/* A tree mixing files, dirs, links and byte-order traps, fanout^depth. */
int t_mixed(int dfd, const char *name, int depth, int fanout)
{
	static const char *files[] = { "1", "a", "b~", "Z", "\xff", "-x",
				       "\x80y", "a.b" };
	int fd = t_dir(dfd, name), i, rc = 0;
	char sub[32];

	if (fd < 0)
		return -1;
	for (i = 0; i < 8 && !rc; i++)
		rc = t_file(fd, files[i]);
	if (!rc)
		rc = symlinkat("a", fd, "lnk");
	for (i = 0; i < fanout && depth > 0 && !rc; i++) {
		snprintf(sub, sizeof(sub), i % 2 ? "d%d" : "D\xc3%d", i);
		rc = t_mixed(fd, sub, depth - 1, fanout);
	}
	close(fd);
	return rc;
}

int t_keepme_tree(int dfd)
{
	if (mkdirat(dfd, "tree", 0755) || t_mixed(dfd, "tree/m", 3, 3) ||
	    t_paths(dfd, "tree/sub/keepme", "tree/sub/x", NULL))
		return -1;
	return 0;
}

int t_files(int fd, const char *fmt, int n)
{
	char name[256];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), fmt, i);
		if (t_file(fd, name))
			return -1;
	}
	return 0;
}

int t_chain(int dfd, const char *name, const char *sub, int levels,
	    const char *fmt, int files,
	    int (*each)(int fd, int level, void *arg), void *arg)
{
	int fd = t_dir(dfd, name), dirs = 1, level, n;

	for (level = 0; fd >= 0 && level < levels; level++) {
		n = t_files(fd, fmt, files) ? -1 :
		    each ? each(fd, level, arg) : 0;
		if (n < 0) {
			close(fd);
			return -1;
		}
		dirs += n + 1;
		n = t_dir(fd, sub);
		close(fd);
		fd = n;
	}
	if (fd < 0)
		return -1;
	close(fd);
	return dirs;
}

void t_shuffle(int *order, int n, unsigned seed)
{
	int i, j, t;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		seed = seed * 1103515245u + 12345u;
		j = (int)((seed >> 8) % (unsigned)(i + 1));
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
}

int t_remove_as(int dfd, const struct t_window *w, de_fault_fn fn, void *arg,
		struct de_summary *sum)
{
	struct de_config cfg = { .threads = 2, .max_delete = -1,
				 .schedule = w->schedule, .flags = w->flags };
	struct de_target t = { .name = "tree" };
	de_ctx *ctx;
	int rc;

	memset(sum, 0, sizeof(*sum));
	rc = de_test_ctx_new(&ctx, &cfg, fn, arg);
	if (rc == 0) {
		de_test_global_window(ctx, w->ents, w->blocks);
		de_test_global_fill(ctx, w->fill);
		rc = de_remove(ctx, dfd, &t, 1, NULL, NULL, sum);
		de_ctx_free(ctx);
	}
	return rc;
}

int t_remove_windowed(int dfd, unsigned schedule, unsigned flags, int fill,
		      de_fault_fn fn, void *arg)
{
	struct t_window w = { schedule, flags, 1u << 20, 1, fill };
	struct de_summary sum;
	int rc = t_remove_as(dfd, &w, fn, arg, &sum);

	if (rc || sum.failed) {
		fprintf(stderr, "fill %d: rc %d, %lu failed\n", fill, rc,
			(unsigned long)sum.failed);
		return -1;
	}
	return 0;
}

int t_shuffled_tree(int dfd, int ndirs, int nf, unsigned seed, uint64_t *inos)
{
	int *order = malloc((size_t)ndirs * (size_t)nf * sizeof(*order));
	int i, rc = -1;
	char path[64];
	struct stat st;

	if (!order || mkdirat(dfd, "tree", 0755))
		goto out;
	for (i = 0; i < ndirs; i++) {
		snprintf(path, sizeof(path), "tree/d%d", i);
		if (mkdirat(dfd, path, 0755))
			goto out;
	}
	t_shuffle(order, ndirs * nf, seed);
	for (i = 0; i < ndirs * nf; i++) {
		snprintf(path, sizeof(path), "tree/d%d/f%d", order[i] / nf,
			 order[i]);
		if (t_file(dfd, path) ||
		    fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW))
			goto out;
		inos[order[i]] = st.st_ino;
	}
	rc = 0;
out:
	free(order);
	return rc;
}

enum de_action t_dispose_delete(void *arg, int dirfd, const char *name,
				const char *relpath, enum de_type type)
{
	(void)arg;
	(void)dirfd;
	(void)name;
	(void)relpath;
	(void)type;
	return DE_A_DELETE;
}
