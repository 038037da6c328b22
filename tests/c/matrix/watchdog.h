/* Watchdog for the MPI test programs of tests/c: a hung case is a failure that says where every rank
 * is, never a silent ctest timeout.
 *
 * The program marks each MPI call it makes with wd_enter("MPI_Bcast", "case text") and wd_leave().
 * A thread per rank (it never calls MPI) wakes every second; when the same call has been running for
 * the limit (PGMPI_TEST_HANG_SECONDS, default 60), it prints
 *   HANG rank <r>/<p>: <call> [<case>] running for <s> s
 * then makes the main thread print its backtrace (SIGUSR1: the frames show the PMPI call inside the
 * mock-up), and aborts the process, which ends the mpirun. Every hung rank does the same at about
 * the same time, so the output lists which ranks are in which call. */
#ifndef PGMPI_TEST_WATCHDOG_H
#define PGMPI_TEST_WATCHDOG_H

#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char wd_text[512];
static atomic_long wd_seq;          /* odd while inside a marked call */
static int wd_rank, wd_size;
static pthread_t wd_main;

static void wd_enter(const char *call, const char *what)
{
    snprintf(wd_text, sizeof wd_text, "%s [%s]", call, what);
    atomic_fetch_add(&wd_seq, 1);
}
static void wd_leave(void) { atomic_fetch_add(&wd_seq, 1); }

static void wd_backtrace(int sig)
{
    (void)sig;
    void *frames[64];
    int n = backtrace(frames, 64);
    char head[96];
    int len = snprintf(head, sizeof head, "HANG rank %d backtrace:\n", wd_rank);
    if (write(2, head, (size_t)len) < 0) return;
    backtrace_symbols_fd(frames, n, 2);
}

static void *wd_thread(void *arg)
{
    (void)arg;
    const char *v = getenv("PGMPI_TEST_HANG_SECONDS");
    long limit = v && atol(v) > 0 ? atol(v) : 60, still = 0, last = -1;
    for (;;) {
        sleep(1);
        long s = atomic_load(&wd_seq);
        if (s != last || !(s & 1)) { last = s; still = 0; continue; }
        if (++still < limit) continue;
        fprintf(stderr, "HANG rank %d/%d: %s running for %ld s\n", wd_rank, wd_size, wd_text, still);
        fflush(stderr);
        pthread_kill(wd_main, SIGUSR1);
        sleep(3);                   /* let the other hung ranks report too */
        abort();
    }
    return NULL;
}

static void wd_start(int rank, int size)
{
    wd_rank = rank;
    wd_size = size;
    wd_main = pthread_self();
    signal(SIGUSR1, wd_backtrace);
    pthread_t t;
    if (pthread_create(&t, NULL, wd_thread, NULL) == 0) pthread_detach(t);
}

#endif
