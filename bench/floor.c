/*
 * The planning floor: the least work per file that placing files in physical order
 * needs on Linux, to measure `seekless order` against (bench/order.sh). No seekless code.
 *
 *   floor [-j THREADS] [-x EXTENTS] list FILE   paths from FILE (NUL-separated, e.g.
 *                                               `find DIR -type f -print0`)
 *   floor [-j THREADS] [-x EXTENTS] walk DIR    the files under DIR, found by reading
 *                                               its directories (getdents64)
 *
 * Per file, on THREADS threads (default 64, seekless's walk threads):
 * open(O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_NOATIME) + statx(fd, "", AT_EMPTY_PATH) +
 * FS_IOC_FIEMAP (room for EXTENTS extents, default 32 as seekless asks) + close.
 * `list` opens each full path (path resolution from the root, as a list makes any tool
 * do); `walk` opens each name relative to its directory's descriptor (openat) and reads
 * the directories too, which `seekless order DIR` must do as well. Nothing is sorted,
 * stored or printed but the count of files and extents, on standard error.
 *
 * Build: cc -O2 -pthread -o floor bench/floor.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int extents = 32;
static atomic_long files_done, extents_seen, failures;

/* One file: statx and FIEMAP through its descriptor. */
static void locate(int dirfd, const char *path)
{
    int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_NOATIME);
    if (fd < 0 && errno == EPERM)
        fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        atomic_fetch_add(&failures, 1);
        return;
    }
    struct statx stx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) != 0 || !S_ISREG(stx.stx_mode)) {
        atomic_fetch_add(&failures, 1);
        close(fd);
        return;
    }
    char buf[sizeof(struct fiemap) + 64 * sizeof(struct fiemap_extent)];
    struct fiemap *fm = (struct fiemap *)buf;
    memset(fm, 0, sizeof *fm);
    fm->fm_length = ~0ULL;
    fm->fm_extent_count = extents;
    if (ioctl(fd, FS_IOC_FIEMAP, fm) == 0)
        atomic_fetch_add(&extents_seen, fm->fm_mapped_extents);
    else
        atomic_fetch_add(&failures, 1);
    close(fd);
    atomic_fetch_add(&files_done, 1);
}

/* list: paths in one buffer, handed out in batches of 32 through one counter. */
static char **paths;
static long npaths;
static atomic_long next_path;

static void *list_worker(void *arg)
{
    (void)arg;
    for (;;) {
        long i = atomic_fetch_add(&next_path, 32);
        if (i >= npaths)
            return NULL;
        long end = i + 32 < npaths ? i + 32 : npaths;
        for (; i < end; i++)
            locate(AT_FDCWD, paths[i]);
    }
}

/* walk: a stack of directories shared by the threads; a thread reads a directory, pushes
 * its subdirectories, and locates its regular files itself. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static char **stack;
static long depth, cap, busy;

static void push(char *dir)
{
    pthread_mutex_lock(&lock);
    if (depth == cap) {
        cap = cap ? cap * 2 : 1024;
        stack = realloc(stack, cap * sizeof *stack);
    }
    stack[depth++] = dir;
    pthread_mutex_unlock(&lock);
    pthread_cond_signal(&wake);
}

struct linux_dirent64 {
    ino64_t d_ino;
    off64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static void read_dir(char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOATIME);
    if (dfd < 0)
        dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd < 0) {
        atomic_fetch_add(&failures, 1);
        free(dir);
        return;
    }
    static __thread char buf[64 << 10];
    size_t len = strlen(dir);
    long n;
    while ((n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
            off += d->d_reclen;
            if (d->d_name[0] == '.' && (!d->d_name[1] || (d->d_name[1] == '.' && !d->d_name[2])))
                continue;
            if (d->d_type == DT_REG) {
                locate(dfd, d->d_name);
            } else if (d->d_type == DT_DIR) {
                size_t nl = strlen(d->d_name);
                char *sub = malloc(len + nl + 2);
                memcpy(sub, dir, len);
                sub[len] = '/';
                memcpy(sub + len + 1, d->d_name, nl + 1);
                push(sub);
            }
        }
    }
    close(dfd);
    free(dir);
}

static void *walk_worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (depth == 0 && busy > 0)
            pthread_cond_wait(&wake, &lock);
        if (depth == 0) {
            pthread_mutex_unlock(&lock);
            pthread_cond_broadcast(&wake);
            return NULL;
        }
        char *dir = stack[--depth];
        busy++;
        pthread_mutex_unlock(&lock);
        read_dir(dir);
        pthread_mutex_lock(&lock);
        busy--;
        int idle = busy == 0 && depth == 0;
        pthread_mutex_unlock(&lock);
        if (idle)
            pthread_cond_broadcast(&wake);
    }
}

static void read_list(const char *file)
{
    FILE *f = fopen(file, "r");
    if (!f) {
        perror(file);
        exit(2);
    }
    static char *data;
    size_t size = 0;
    long got;
    char chunk[1 << 16];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        data = realloc(data, size + got + 1);
        memcpy(data + size, chunk, got);
        size += got;
    }
    fclose(f);
    long capacity = 1024;
    paths = malloc(capacity * sizeof *paths);
    for (size_t at = 0; at < size;) {
        if (npaths == capacity)
            paths = realloc(paths, (capacity *= 2) * sizeof *paths);
        paths[npaths++] = data + at;
        at += strlen(data + at) + 1;
    }
}

int main(int argc, char **argv)
{
    int threads = 64, opt;
    while ((opt = getopt(argc, argv, "j:x:")) != -1) {
        if (opt == 'j')
            threads = atoi(optarg);
        else if (opt == 'x')
            extents = atoi(optarg);
        else
            return 2;
    }
    if (argc - optind != 2 || threads < 1 || extents < 0 || extents > 64) {
        fprintf(stderr, "usage: floor [-j THREADS] [-x EXTENTS<=64] list FILE | walk DIR\n");
        return 2;
    }
    const char *mode = argv[optind], *arg = argv[optind + 1];
    void *(*worker)(void *);
    if (!strcmp(mode, "list")) {
        read_list(arg);
        worker = list_worker;
    } else if (!strcmp(mode, "walk")) {
        push(strdup(arg));
        worker = walk_worker;
    } else {
        fprintf(stderr, "floor: unknown mode %s\n", mode);
        return 2;
    }
    pthread_t *t = calloc(threads, sizeof *t);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    fprintf(stderr, "floor: %ld files, %ld extents, %ld failures\n", (long)files_done,
            (long)extents_seen, (long)failures);
    return failures ? 1 : 0;
}
