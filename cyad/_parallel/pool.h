/* A fork-join pool of POSIX threads, used without the GIL (see cyad/_parallel/threads.pyx).
 *
 * A job is `parts` calls task(context, part), claimed one at a time from an atomic
 * counter by the threads that run it: the pool's helpers and, for cyad_pool_run, the
 * caller. The pool runs one job at a time. A caller that finds it running another job,
 * or that is one of its own threads (a part that starts a job of its own), is told so
 * (cyad_pool_start returns 0) and runs the parts itself: a job never waits for threads
 * that another job holds, and what a part computes does not depend on which thread runs it.
 *
 * Helpers are made on demand and forgotten in a child process after fork
 * (pthread_atfork): the child has none of the parent's threads, and makes its own when it
 * needs them. Between jobs a helper first spins for CYAD_SPIN_SECONDS, then blocks on a
 * condition variable; a caller spins as long for the helpers' parts before it blocks.
 * Waking a blocked thread costs tens of microseconds on a virtual machine (measured: a
 * replay's splits at 70 000 elements took 1.5x the serial time without the spin), about
 * what a part of the smallest split work takes; a replay splits several instructions in a
 * row, which the spinning helpers take up at once.
 *
 * The floating-point status flags are per thread: those a helper's parts of a job raise
 * are raised in the caller too when cyad_pool_run returns, as if it had run every part
 * (NumPy's warnings and the tape's checks read them: cyad/_fp_flags.pxd).
 *
 * Without POSIX threads (Windows) every job runs in the caller.
 */
#ifndef CYAD_POOL_H
#define CYAD_POOL_H

#include <fenv.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*cyad_task)(void *context, Py_ssize_t part);

typedef struct cyad_job {
    cyad_task task;
    void *context;
    Py_ssize_t parts;
    Py_ssize_t next;        /* the next part to claim (atomic) */
    Py_ssize_t done;        /* parts finished (atomic) */
    int helpers;            /* helpers that may join */
    int joined;             /* helpers that joined (under the pool's lock) */
    int inside;             /* helpers still running parts (under the pool's lock) */
    int fp_flags;           /* the floating-point flags the helpers' parts raised (atomic) */
} cyad_job;

#define CYAD_FP_FLAGS (FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID)

#define CYAD_POOL_MAX_HELPERS 256

#if !defined(_WIN32)
#include <pthread.h>
#include <errno.h>
#include <time.h>

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;        /* a job was posted */
    pthread_cond_t finished;    /* a helper left a job, or a part finished */
    int helpers;                /* helpers alive */
    unsigned long posted;       /* jobs posted so far */
    cyad_job *job;              /* the job helpers may join, or NULL */
    int running;                /* a job holds the pool */
    int atfork;                 /* the fork handler is registered */
} cyad_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
               PTHREAD_COND_INITIALIZER, 0, 0, NULL, 0, 0};

static __thread int cyad_pool_thread = 0;   /* 1 in the pool's helpers */

#define CYAD_SPIN_SECONDS 2e-4

static inline void cyad_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static double cyad_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* Spin until *word differs from `seen` or CYAD_SPIN_SECONDS pass: whether it changed. */
static int cyad_spin_while_equal(const unsigned long *word, unsigned long seen) {
    double start = cyad_seconds();
    unsigned k = 0;
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == seen) {
        cyad_relax();
        if ((++k & 255) == 0 && cyad_seconds() - start > CYAD_SPIN_SECONDS)
            return 0;
    }
    return 1;
}

/* Spin until every part of `job` has run and no helper is inside it, or CYAD_SPIN_SECONDS
 * pass (the caller then waits under the lock). */
static void cyad_spin_for_parts(const cyad_job *job) {
    double start = cyad_seconds();
    unsigned k = 0;
    while (__atomic_load_n(&job->done, __ATOMIC_ACQUIRE) < job->parts
           || __atomic_load_n(&job->inside, __ATOMIC_ACQUIRE) > 0) {
        cyad_relax();
        if ((++k & 255) == 0 && cyad_seconds() - start > CYAD_SPIN_SECONDS)
            return;
    }
}

static void cyad_run_parts(cyad_job *job) {
    Py_ssize_t part;
    while ((part = __atomic_fetch_add(&job->next, 1, __ATOMIC_ACQ_REL)) < job->parts) {
        job->task(job->context, part);
        __atomic_fetch_add(&job->done, 1, __ATOMIC_ACQ_REL);
    }
}

static void *cyad_helper(void *generation) {
    /* the jobs posted before this helper was made: it joins those posted after, the one
       being posted as it is made among them */
    unsigned long seen = (unsigned long)(uintptr_t)generation;
    cyad_job *job;
    cyad_pool_thread = 1;
    pthread_mutex_lock(&cyad_pool.lock);
    for (;;) {
        if (cyad_pool.posted == seen) {
            pthread_mutex_unlock(&cyad_pool.lock);
            cyad_spin_while_equal(&cyad_pool.posted, seen);
            pthread_mutex_lock(&cyad_pool.lock);
        }
        while (cyad_pool.posted == seen)
            pthread_cond_wait(&cyad_pool.wake, &cyad_pool.lock);
        seen = cyad_pool.posted;
        job = cyad_pool.job;
        if (job == NULL || job->joined >= job->helpers)
            continue;
        job->joined++;
        __atomic_add_fetch(&job->inside, 1, __ATOMIC_ACQ_REL);
        pthread_mutex_unlock(&cyad_pool.lock);
        feclearexcept(CYAD_FP_FLAGS);
        cyad_run_parts(job);
        __atomic_fetch_or(&job->fp_flags, fetestexcept(CYAD_FP_FLAGS), __ATOMIC_ACQ_REL);
        pthread_mutex_lock(&cyad_pool.lock);
        __atomic_sub_fetch(&job->inside, 1, __ATOMIC_ACQ_REL);
        pthread_cond_broadcast(&cyad_pool.finished);
    }
    return NULL;
}

static void cyad_pool_forget(void) {
    /* in a child after fork: the parent's helpers do not exist here */
    pthread_mutex_init(&cyad_pool.lock, NULL);
    pthread_cond_init(&cyad_pool.wake, NULL);
    pthread_cond_init(&cyad_pool.finished, NULL);
    cyad_pool.helpers = 0;
    cyad_pool.job = NULL;
    cyad_pool.running = 0;
}

/* Post a job for up to `helpers` helpers (made where fewer are alive); the caller holds
 * the lock. Returns the helpers that may join (0: none could be made). */
static int cyad_post(cyad_job *job, int helpers) {
    pthread_t thread;
    pthread_attr_t attr;
    if (helpers > CYAD_POOL_MAX_HELPERS)
        helpers = CYAD_POOL_MAX_HELPERS;
    if (!cyad_pool.atfork) {
        pthread_atfork(NULL, NULL, cyad_pool_forget);
        cyad_pool.atfork = 1;
    }
    if (cyad_pool.helpers < helpers) {
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        while (cyad_pool.helpers < helpers
               && pthread_create(&thread, &attr, cyad_helper,
                                 (void *)(uintptr_t)cyad_pool.posted) == 0)
            cyad_pool.helpers++;
        pthread_attr_destroy(&attr);
    }
    if (helpers > cyad_pool.helpers)
        helpers = cyad_pool.helpers;
    job->helpers = helpers;
    job->joined = 0;
    job->inside = 0;
    cyad_pool.job = job;
    __atomic_add_fetch(&cyad_pool.posted, 1, __ATOMIC_ACQ_REL);
    pthread_cond_broadcast(&cyad_pool.wake);
    return helpers;
}

/* Start `job` on up to `helpers` helpers, the caller taking no part: 1 when it is
 * posted (finish it with cyad_pool_wait), 0 when the caller must run every part itself
 * (the pool runs another job, the caller is a helper, or no helper could be made). */
static int cyad_pool_start(cyad_job *job, int helpers) {
    job->next = 0;
    job->done = 0;
    job->fp_flags = 0;
    if (cyad_pool_thread || helpers < 1)
        return 0;
    pthread_mutex_lock(&cyad_pool.lock);
    if (cyad_pool.running) {
        pthread_mutex_unlock(&cyad_pool.lock);
        return 0;
    }
    cyad_pool.running = 1;
    if (cyad_post(job, helpers) == 0) {
        cyad_pool.job = NULL;
        cyad_pool.running = 0;
        pthread_mutex_unlock(&cyad_pool.lock);
        return 0;
    }
    pthread_mutex_unlock(&cyad_pool.lock);
    return 1;
}

/* Wait up to `milliseconds` (negative: for ever) for a started job: 1 when every part has
 * run and the pool is free again, 0 on time-out (call it again). */
static int cyad_pool_wait(cyad_job *job, long milliseconds) {
    struct timespec until;
    int finished = 1;
    pthread_mutex_lock(&cyad_pool.lock);
    if (milliseconds >= 0) {
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += milliseconds / 1000;
        until.tv_nsec += (milliseconds % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec += 1;
            until.tv_nsec -= 1000000000L;
        }
    }
    while (__atomic_load_n(&job->done, __ATOMIC_ACQUIRE) < job->parts || job->inside > 0) {
        if (milliseconds < 0) {
            pthread_cond_wait(&cyad_pool.finished, &cyad_pool.lock);
        } else if (pthread_cond_timedwait(&cyad_pool.finished, &cyad_pool.lock, &until)
                   == ETIMEDOUT) {
            finished = __atomic_load_n(&job->done, __ATOMIC_ACQUIRE) >= job->parts
                       && job->inside == 0;
            break;
        }
    }
    if (finished) {
        cyad_pool.job = NULL;
        cyad_pool.running = 0;
    }
    pthread_mutex_unlock(&cyad_pool.lock);
    return finished;
}

/* Run every part of `job` on the caller and up to `helpers` helpers, and return when all
 * have run. */
static void cyad_pool_run(cyad_job *job, int helpers) {
    int posted = 0;
    job->next = 0;
    job->done = 0;
    job->fp_flags = 0;
    if (!cyad_pool_thread && helpers > 0) {
        pthread_mutex_lock(&cyad_pool.lock);
        if (!cyad_pool.running) {
            cyad_pool.running = 1;
            posted = cyad_post(job, helpers) > 0;
            if (!posted) {
                cyad_pool.job = NULL;
                cyad_pool.running = 0;
            }
        }
        pthread_mutex_unlock(&cyad_pool.lock);
    }
    cyad_run_parts(job);
    if (!posted)
        return;
    cyad_spin_for_parts(job);
    pthread_mutex_lock(&cyad_pool.lock);
    cyad_pool.job = NULL;     /* no helper joins now: those inside finish their parts */
    while (__atomic_load_n(&job->done, __ATOMIC_ACQUIRE) < job->parts || job->inside > 0)
        pthread_cond_wait(&cyad_pool.finished, &cyad_pool.lock);
    cyad_pool.running = 0;
    pthread_mutex_unlock(&cyad_pool.lock);
    if (job->fp_flags)
        feraiseexcept(job->fp_flags);
}

#else   /* no POSIX threads: the caller runs every part */

static const int cyad_pool_thread = 0;   /* no helpers */

static int cyad_pool_start(cyad_job *job, int helpers) {
    (void)helpers;
    job->next = 0;
    job->done = 0;
    return 0;
}

static int cyad_pool_wait(cyad_job *job, long milliseconds) {
    (void)job;
    (void)milliseconds;
    return 1;
}

static void cyad_pool_run(cyad_job *job, int helpers) {
    Py_ssize_t part;
    (void)helpers;
    for (part = 0; part < job->parts; part++)
        job->task(job->context, part);
}

#endif
#endif
