/* order_targets: de_order_targets() puts the directories last, in their
 * given order, and the non-directories before them, by inode number when
 * the engine sorts by inode (and only then). */
#include "tutil.h"

#define NT 200

/* Targets with descending, partly equal inode numbers; every seventh a
 * directory.  Nothing is removed: the names need not exist. */
static void fill(struct de_target *t, char names[][8])
{
	size_t i;

	for (i = 0; i < NT; i++) {
		snprintf(names[i], 8, "e%zu", i);
		t[i].name = names[i];
		t[i].type = i % 7 == 3 ? DE_T_DIR : DE_T_FILE;
		t[i].ino = (NT - i) / 2 + 100;
	}
}

/* Directories last, in input order; the same non-directories first;
 * those in ascending inode order if sorted. */
static int check(const struct de_target *in, const struct de_target *out,
		 int sorted)
{
	size_t i, j = 0, ndirs = 0, seen = 0;

	for (i = 0; i < NT; i++)
		ndirs += in[i].type == DE_T_DIR;
	for (i = 0; i < NT; i++)
		if (in[i].type == DE_T_DIR &&
		    out[NT - ndirs + j++].name != in[i].name)
			return 0;
	for (i = 0; i < NT - ndirs; i++) {
		if (out[i].type == DE_T_DIR)
			return 0;
		if (sorted && i && out[i - 1].ino > out[i].ino)
			return 0;
		for (j = 0; j < NT; j++)
			if (in[j].name == out[i].name)
				seen++;
	}
	return seen == NT - ndirs;
}

int test(int dfd)
{
	static char names[NT][8];
	struct de_target in[NT], t[NT];
	struct de_config cfg = { 0 };
	de_ctx *ctx = NULL;
	int ret = T_FAIL;

	fill(in, names);

	/* DE_F_NO_P2_GATE: no serial (canonical) run, whatever TMPDIR is on. */
	cfg.flags = DE_F_INODE_SORT | DE_F_NO_P2_GATE;
	CHECK(de_ctx_new(&ctx, &cfg) == 0);
	memcpy(t, in, sizeof(t));
	CHECK(de_order_targets(ctx, dfd, t, NT) == 0);
	CHECK(check(in, t, 1));
	de_ctx_free(ctx);
	ctx = NULL;

	cfg.flags = DE_F_NO_INODE_SORT;
	CHECK(de_ctx_new(&ctx, &cfg) == 0);
	memcpy(t, in, sizeof(t));
	CHECK(de_order_targets(ctx, dfd, t, NT) == 0);
	CHECK(check(in, t, 0));
	/* The non-directories were not sorted: the first two keep their
	 * descending inode numbers. */
	CHECK(t[0].ino >= t[1].ino && t[0].name == in[0].name);

	CHECK(de_order_targets(ctx, dfd, t, 0) == 0);
	CHECK(de_order_targets(NULL, dfd, t, NT) == -EINVAL);
	CHECK(de_order_targets(ctx, -1, t, NT) == -EINVAL);
	CHECK(de_order_targets(ctx, dfd, NULL, 1) == -EINVAL);
	ret = T_PASS;
out:
	de_ctx_free(ctx);
	return ret;
}
