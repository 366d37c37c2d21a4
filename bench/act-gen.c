/* The originals of bench/act.sh: N files of 4-64 KiB (uniform), seeded, each of its own
 * content (a JPEG start marker, then xorshift64* bytes), named DIR/dNNN/IMG_NNNNNN.jpg, PER
 * files a folder. Same arguments, same bytes.
 *
 *   cc -O2 -o act-gen bench/act-gen.c && ./act-gen DIR N SEED [PER]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s DIR N SEED [PER]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    long n = atol(argv[2]), per = argc > 4 ? atol(argv[4]) : 100;
    uint64_t seed = strtoull(argv[3], 0, 10);
    static unsigned char buf[65536 + 8];
    char path[4096];
    if (mkdir(dir, 0755) && errno != EEXIST) {
        perror(dir);
        return 1;
    }
    for (long i = 0; i < n; i++) {
        /* One stream per file: its bytes do not depend on the files before it. */
        uint64_t s = (seed * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)(i + 1) * 0xD1B54A32D192ED03ULL);
        if (!s) s = 1;
        for (int k = 0; k < 4; k++) next(&s);
        size_t size = 4096 + next(&s) % (65536 - 4096 + 1);
        for (size_t o = 0; o < size; o += 8) {
            uint64_t v = next(&s);
            memcpy(buf + o, &v, 8);
        }
        memcpy(buf, "\xFF\xD8\xFF\xE0", 4);
        if (i % per == 0) {
            snprintf(path, sizeof path, "%s/d%03ld", dir, i / per);
            if (mkdir(path, 0755) && errno != EEXIST) {
                perror(path);
                return 1;
            }
        }
        snprintf(path, sizeof path, "%s/d%03ld/IMG_%06ld.jpg", dir, i / per, i);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(buf, 1, size, f) != size || fclose(f)) {
            perror(path);
            return 1;
        }
    }
    return 0;
}
