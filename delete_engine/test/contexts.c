/* contexts: two contexts coexist and run one after the other; a context
 * used in a fork()ed child returns -ECHILD, while a fresh context made in
 * the child works; defaults (NULL config) work. */
#include "tutil.h"

int test(int dfd)
{
	struct de_target t1 = { "t1", DE_T_DIR, 0 }, t2 = { "t2", DE_T_UNKNOWN, 0 };
	de_ctx *a = NULL, *b = NULL;
	int ret = T_FAIL, st;
	pid_t pid;

	CHECK(t_mixed(dfd, "t1", 2, 3) == 0 && t_mixed(dfd, "t2", 2, 3) == 0);
	CHECK(de_ctx_new(&a, NULL) == 0);
	CHECK(de_ctx_new(&b, NULL) == 0);
	CHECK(de_remove(a, dfd, &t1, 1, NULL, NULL, NULL) == 0);
	CHECK(de_remove(b, dfd, &t2, 1, NULL, NULL, NULL) == 0);
	CHECK(!t_exists(dfd, "t1") && !t_exists(dfd, "t2"));
	CHECK(t_mixed(dfd, "t1", 2, 3) == 0);
	pid = fork();
	if (pid == 0) {
		de_ctx *c = NULL;

		if (de_remove(a, dfd, &t1, 1, NULL, NULL, NULL) != -ECHILD)
			_exit(1);
		if (de_ctx_new(&c, NULL) || de_remove(c, dfd, &t1, 1, NULL, NULL,
						       NULL))
			_exit(1);
		de_ctx_free(c);
		de_ctx_free(a);	/* must not hang on absent threads */
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(!t_exists(dfd, "t1"));
	CHECK(strcmp(de_strerror(-ENOENT), "No such file or directory") == 0);
	ret = T_PASS;
out:
	de_ctx_free(a);
	de_ctx_free(b);
	return ret;
}
