/*
 * pool.h - pool.c's thread pool, libuv-shaped: work items on one queue,
 * workers that take them.  Private to the engine (internal.h includes
 * it); knows nothing of the tree.
 */
#ifndef DE_POOL_H
#define DE_POOL_H

#include <pthread.h>

struct de__work;
typedef void (*de__work_fn)(struct de__work *w, void *buf);

struct de__work {
	struct de__work *next, *prev;	/* pool queue links (pool lock) */
	de__work_fn fn;
	int queued;			/* on the queue (pool lock) */
};

struct de__pool;

struct de__slot {			/* one worker */
	struct de__pool *pool;
	pthread_t tid;
	void *buf;			/* its getdents buffer, DE__BUFSZ */
};

struct de__pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct de__work head;		/* circular list sentinel */
	unsigned nthreads;		/* workers started */
	unsigned max;			/* slots */
	unsigned limit;			/* workers with index >= limit idle */
	unsigned keep;			/* workers with index >= keep exit */
	unsigned qlen;			/* items queued (written under mu,
					 * read racily as a hint) */
	unsigned busy;			/* workers running an item */
	pthread_cond_t idle_cv;		/* busy fell to 0 */
	int stop;
	struct de__slot *slots;
};

int de__pool_init(struct de__pool *p, unsigned max);
int de__pool_add(struct de__pool *p);
void de__pool_shrink(struct de__pool *p, unsigned n);
struct de__work *de__pool_take(struct de__pool *p);
void de__pool_destroy(struct de__pool *p);
void de__pool_quiesce(struct de__pool *p);
void de__pool_submit(struct de__pool *p, struct de__work *w, int front);
int de__pool_cancel(struct de__pool *p, struct de__work *w);
void de__pool_limit(struct de__pool *p, unsigned n);

#endif /* DE_POOL_H */
