/*
 * s6_fdholder_client.c -- s6-fdholderd's store and retrieve round trips, driven in-process
 * through libs6, as `voipd-bench register` drives voipd's registerSocket and retrieveSocket.
 *
 * Build:  gcc -O2 -Wall -o s6_fdholder_client s6_fdholder_client.c -ls6 -lskarnet -lm
 * Usage:  ./s6_fdholder_client -p SOCKET -m ROUND_TRIPS [-b BATCH]
 *   -p PATH  s6-fdholderd's socket (s6-fdholder-daemon PATH)
 *   -m M     timed round trips of each kind (default 10000), after min(M/10, 200) warm-up
 *   -b B     identifiers stored before they are retrieved and deleted (default 64, as
 *            voipd's default socketQuota)
 * Each batch stores one connected AF_UNIX stream socket under B identifiers (one round trip
 * each, timed), retrieves each (timed; the received copy is closed), then deletes each
 * (not timed). Output: "name value unit" lines, percentiles by the rank rule ceil(p/100 n),
 * as ../shared/bench does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <skalibs/tai.h>
#include <s6/fdholder.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int compare(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, uint64_t *v, size_t n)
{
    static const double ps[] = { 50, 90, 99, 99.9 };
    static const char *pn[] = { "p50", "p90", "p99", "p999" };
    qsort(v, n, sizeof *v, compare);
    printf("%s_count %zu samples\n", name, n);
    for (int k = 0; k < 4; k++) {
        size_t r = (size_t)ceil(ps[k] / 100.0 * (double)n);
        if (r < 1) r = 1;
        printf("%s_%s %.3f us\n", name, pn[k], (double)v[r - 1] / 1000.0);
    }
}

static void die(const char *what)
{
    fprintf(stderr, "s6_fdholder_client: %s: %s\n", what, strerror(errno));
    exit(1);
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    long m = 10000, b = 64;
    int opt;
    while ((opt = getopt(argc, argv, "p:m:b:h")) != -1) {
        switch (opt) {
        case 'p': path = optarg; break;
        case 'm': m = atol(optarg); break;
        case 'b': b = atol(optarg); break;
        default:
            fprintf(stderr, "usage: %s -p SOCKET [-m ROUND_TRIPS] [-b BATCH]\n", argv[0]);
            return 2;
        }
    }
    if (!path || m < 1 || m > 1000000 || b < 1 || b > S6_FDHOLDER_MAX) {
        fprintf(stderr, "usage: %s -p SOCKET [-m ROUND_TRIPS 1..1000000] [-b BATCH 1..%d]\n", argv[0], S6_FDHOLDER_MAX);
        return 2;
    }
    alarm(120);

    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) die("socketpair");

    s6_fdholder_t holder = S6_FDHOLDER_ZERO;
    tain deadline;
    tain_now_set_stopwatch_g();
    tain_addsec_g(&deadline, 10);
    if (!s6_fdholder_start_g(&holder, path, &deadline)) die("s6_fdholder_start");

    long warm = m / 10 < 200 ? m / 10 : 200;
    uint64_t *stores = calloc((size_t)m, sizeof *stores), *retrieves = calloc((size_t)m, sizeof *retrieves);
    if (!stores || !retrieves) die("calloc");
    long storeCount = 0, retrieveCount = 0, done = -warm;
    char id[32];
    while (done < m) {
        long batch = b;
        for (long i = 0; i < batch; i++) {
            snprintf(id, sizeof id, "s%ld", i);
            tain_now_g();
            tain_addsec_g(&deadline, 10);
            uint64_t t0 = now_ns();
            if (!s6_fdholder_store_g(&holder, pair[0], id, &tain_infinite, &deadline)) die("s6_fdholder_store");
            uint64_t t1 = now_ns();
            if (done + i >= 0 && storeCount < m) stores[storeCount++] = t1 - t0;
        }
        for (long i = 0; i < batch; i++) {
            snprintf(id, sizeof id, "s%ld", i);
            tain_now_g();
            tain_addsec_g(&deadline, 10);
            uint64_t t0 = now_ns();
            int fd = s6_fdholder_retrieve_g(&holder, id, &deadline);
            uint64_t t1 = now_ns();
            if (fd < 0) die("s6_fdholder_retrieve");
            close(fd);
            if (done + i >= 0 && retrieveCount < m) retrieves[retrieveCount++] = t1 - t0;
        }
        for (long i = 0; i < batch; i++) {
            snprintf(id, sizeof id, "s%ld", i);
            tain_now_g();
            tain_addsec_g(&deadline, 10);
            if (!s6_fdholder_delete_g(&holder, id, &deadline)) die("s6_fdholder_delete");
        }
        done += batch;
    }
    s6_fdholder_end(&holder);
    report("s6_store", stores, (size_t)storeCount);
    report("s6_retrieve", retrieves, (size_t)retrieveCount);
    return 0;
}
