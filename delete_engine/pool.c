/*
 * pool.c - the worker pool: one queue, one mutex, one condition variable.
 *
 * Lock rules:
 *  - p->mu protects p->head (the queue), every work item's next/prev/queued
 *    field while it is queued, p->stop, p->started and p->limit.  p->qlen
 *    is written under p->mu and read without it, as a scheduling hint.
 *  - A work function runs with no pool lock held.  It may take the context's
 *    tree lock (ctx->mu) and may submit work; submitting takes p->mu, so the
 *    only allowed nesting is ctx->mu -> p->mu, never the other way round.
 *  - Workers never hold a lock while idle: between de_remove() calls they
 *    sleep in pthread_cond_wait() on p->cv, which releases p->mu, so a
 *    fork() in the caller never copies a held lock into the child.
 */
#include "internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

static void *worker(void *arg)
{
	struct de__pool *p = arg;
	unsigned me;
	void *buf;
	struct de__work *w;

	pthread_mutex_lock(&p->mu);
	me = p->started++;
	buf = p->bufs[me];
	for (;;) {
		while ((p->head.next == &p->head || me >= p->limit) &&
		       !p->stop)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop)
			break;
		w = p->head.next;
		w->prev->next = w->next;
		w->next->prev = w->prev;
		w->queued = 0;
		__atomic_store_n(&p->qlen, p->qlen - 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&p->mu);
		w->fn(w, buf);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Start nthreads workers.  Returns 0 or a negative errno. */
int de__pool_init(struct de__pool *p, unsigned nthreads)
{
	sigset_t all, old;
	unsigned i;
	int rc = 0;

	p->head.next = p->head.prev = &p->head;
	p->nthreads = 0;
	p->started = 0;
	p->stop = 0;
	p->limit = nthreads;
	p->qlen = 0;
	p->tids = calloc(nthreads, sizeof(*p->tids));
	p->bufs = calloc(nthreads, sizeof(*p->bufs));
	if (!p->tids || !p->bufs) {
		free(p->tids);
		free(p->bufs);
		return -ENOMEM;
	}
	for (i = 0; i < nthreads; i++) {
		p->bufs[i] = malloc(DE__BUFSZ);
		if (!p->bufs[i]) {
			rc = -ENOMEM;
			goto fail_bufs;
		}
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	/* Workers must never take the caller's signals (rsync's handlers). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; i < nthreads; i++) {
		int e = pthread_create(&p->tids[i], NULL, worker, p);

		if (e) {
			rc = -e;
			break;
		}
		p->nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc && p->nthreads == 0) {
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		goto fail_bufs;
	}
	return 0;

fail_bufs:
	for (i = 0; i < nthreads; i++)
		free(p->bufs[i]);
	free(p->bufs);
	free(p->tids);
	return rc;
}

/* Stop and join all workers.  The queue must be empty. */
void de__pool_destroy(struct de__pool *p)
{
	unsigned i;

	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (i = 0; i < p->nthreads; i++)
		pthread_join(p->tids[i], NULL);
	for (i = 0; i < p->nthreads; i++)
		free(p->bufs[i]);
	free(p->bufs);
	free(p->tids);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
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

/* Take w off the queue.  Returns 0, or -EBUSY if it was not queued. */
int de__pool_cancel(struct de__pool *p, struct de__work *w)
{
	int rc = -EBUSY;

	pthread_mutex_lock(&p->mu);
	if (w->queued) {
		w->prev->next = w->next;
		w->next->prev = w->prev;
		w->queued = 0;
		__atomic_store_n(&p->qlen, p->qlen - 1, __ATOMIC_RELAXED);
		rc = 0;
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/* Let only the first n workers take work (at least one). */
void de__pool_limit(struct de__pool *p, unsigned n)
{
	pthread_mutex_lock(&p->mu);
	p->limit = n ? n : 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}
