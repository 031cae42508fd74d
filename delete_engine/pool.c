/*
 * pool.c - the worker pool: one queue, one mutex, one condition variable.
 *
 * Lock rules:
 *  - p->mu protects p->head (the queue), every work item's next/prev/queued
 *    field while it is queued, p->stop, p->limit and p->keep.  p->slots
 *    and p->nthreads belong to the thread that owns the pool (it starts
 *    and joins workers); a worker reads only its own slot.  p->qlen
 *    is written under p->mu and read without it, as a scheduling hint.
 *  - A work function runs with no pool lock held.  It may take the context's
 *    tree lock (ctx->mu) and may submit work; submitting takes p->mu, so the
 *    only allowed nesting is ctx->mu -> p->mu, never the other way round.
 *  - Workers never hold a lock while idle: between de_remove() calls they
 *    sleep in pthread_cond_wait() on p->cv, which releases p->mu, so a
 *    fork() in the caller never copies a held lock into the child (nor
 *    the allocator's: de_remove() returns only when no worker is busy,
 *    de__pool_quiesce()).
 */
#include "internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

/* Unlink queued work w from p's queue.  Called with p->mu held. */
static void dequeue(struct de__pool *p, struct de__work *w)
{
	w->prev->next = w->next;
	w->next->prev = w->prev;
	w->queued = 0;
	__atomic_store_n(&p->qlen, p->qlen - 1, __ATOMIC_RELAXED);
}

static void *worker(void *arg)
{
	struct de__slot *slot = arg;
	struct de__pool *p = slot->pool;
	unsigned me = (unsigned)(slot - p->slots);
	void *buf = slot->buf;
	struct de__work *w;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while ((p->head.next == &p->head || me >= p->limit) &&
		       !p->stop && me < p->keep)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop || me >= p->keep)
			break;
		w = p->head.next;
		dequeue(p, w);
		p->busy++;
		pthread_mutex_unlock(&p->mu);
		w->fn(w, buf);
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0)
			pthread_cond_broadcast(&p->idle_cv);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/*
 * Set up a pool for at most max workers and start none (de__pool_add()
 * starts them, so that the caller decides what to do when one cannot be
 * started).  Returns 0 or -ENOMEM.
 */
int de__pool_init(struct de__pool *p, unsigned max)
{
	p->head.next = p->head.prev = &p->head;
	p->nthreads = 0;
	p->max = max;
	p->stop = 0;
	p->limit = max;
	p->keep = max;
	p->qlen = 0;
	p->busy = 0;
	p->slots = calloc(max ? max : 1, sizeof(*p->slots));
	if (!p->slots)
		return -ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_cond_init(&p->idle_cv, NULL);
	return 0;
}

/*
 * Start one more worker, with its getdents buffer.  Only the thread that
 * owns the pool calls this, with no work queued.  Returns 0, or
 * -ENOMEM (no buffer) or pthread_create()'s error (-EAGAIN: no memory for
 * a stack, or a process limit), with nothing started.
 */
int de__pool_add(struct de__pool *p)
{
	struct de__slot *slot;
	sigset_t all, old;
	int e;

	if (p->nthreads >= p->max)
		return -EINVAL;
	slot = &p->slots[p->nthreads];
	slot->pool = p;
	slot->buf = malloc(DE__BUFSZ);
	if (!slot->buf)
		return -ENOMEM;
	/* A pool that grows again after a shrink (de__pool_shrink()) must
	 * not tell the new worker to exit. */
	pthread_mutex_lock(&p->mu);
	if (p->keep <= p->nthreads)
		p->keep = p->nthreads + 1;
	pthread_mutex_unlock(&p->mu);
	/* Workers must never take the caller's signals (rsync's handlers). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&slot->tid, NULL, worker, slot);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		free(slot->buf);
		slot->buf = NULL;
		return -e;
	}
	/* Under the lock: workers of a pool that grows between runs read
	 * it (de__pool_submit()). */
	pthread_mutex_lock(&p->mu);
	p->nthreads++;
	pthread_mutex_unlock(&p->mu);
	return 0;
}

/* Stop and join workers n.. (the newest first to go), freeing their
 * stacks and buffers.  The queue must be empty. */
void de__pool_shrink(struct de__pool *p, unsigned n)
{
	unsigned i;

	if (n >= p->nthreads)
		return;
	pthread_mutex_lock(&p->mu);
	p->keep = n;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (i = n; i < p->nthreads; i++) {
		pthread_join(p->slots[i].tid, NULL);
		free(p->slots[i].buf);
		p->slots[i].buf = NULL;
	}
	p->nthreads = n;
}

/* Stop and join all workers.  The queue must be empty. */
void de__pool_destroy(struct de__pool *p)
{
	unsigned i;

	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (i = 0; i < p->nthreads; i++) {
		pthread_join(p->slots[i].tid, NULL);
		free(p->slots[i].buf);
	}
	free(p->slots);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	pthread_cond_destroy(&p->idle_cv);
}

/*
 * Wait until no worker is running an item.  A run's last worker may still
 * be leaving its item (sched.c run_phase2 takes the tree lock once more)
 * when the run is over; the caller may fork() next, and a child must not
 * inherit a lock, or the allocator's, held by a thread it does not have.
 */
void de__pool_quiesce(struct de__pool *p)
{
	pthread_mutex_lock(&p->mu);
	while (p->busy)
		pthread_cond_wait(&p->idle_cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

/*
 * Queue w.  front != 0 puts it at the head (LIFO: depth-first, which keeps
 * the number of directories in progress, and of held fds, small).
 */
void de__pool_submit(struct de__pool *p, struct de__work *w, int front)
{
	pthread_mutex_lock(&p->mu);
	if (front) {
		w->next = p->head.next;
		w->prev = &p->head;
	} else {
		w->next = &p->head;
		w->prev = p->head.prev;
	}
	w->next->prev = w;
	w->prev->next = w;
	w->queued = 1;
	__atomic_store_n(&p->qlen, p->qlen + 1, __ATOMIC_RELAXED);
	/* A signal could wake an idled worker and be lost. */
	if (p->limit < p->nthreads)
		pthread_cond_broadcast(&p->cv);
	else
		pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* Take the work at the head of the queue off it, for a caller that runs
 * it itself (a pool without workers).  Returns it, or NULL when the queue
 * is empty. */
struct de__work *de__pool_take(struct de__pool *p)
{
	struct de__work *w = NULL;

	pthread_mutex_lock(&p->mu);
	if (p->head.next != &p->head) {
		w = p->head.next;
		dequeue(p, w);
	}
	pthread_mutex_unlock(&p->mu);
	return w;
}

/* Take w off the queue.  Returns 0, or -EBUSY if it was not queued. */
int de__pool_cancel(struct de__pool *p, struct de__work *w)
{
	int rc = -EBUSY;

	pthread_mutex_lock(&p->mu);
	if (w->queued) {
		dequeue(p, w);
		rc = 0;
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/*
 * Let only the first n workers take work (at least one).  Called once per
 * run: the workers are woken only when some are let in and work waits,
 * not for nothing on every call of a caller that makes many small ones.
 */
void de__pool_limit(struct de__pool *p, unsigned n)
{
	unsigned old;

	pthread_mutex_lock(&p->mu);
	old = p->limit;
	p->limit = n ? n : 1;
	if (p->limit > old && p->head.next != &p->head)
		pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}
