/* The originals of bench/act.sh: N files of 4-64 KiB (uniform), seeded, each of its own
 * content (an 8×8 JPEG, then xorshift64* bytes after its end marker), named DIR/dNNN/IMG_NNNNNN.jpg, PER
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

/* An 8×8 grey baseline JPEG (ImageMagick, 159 bytes): every file starts with it, so that
 * `index` reads a valid image; the random bytes follow its end marker. */
static const unsigned char jpeg[] = {
      0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01,
      0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0xff, 0xdb, 0x00, 0x43,
      0x00, 0x10, 0x0b, 0x0c, 0x0e, 0x0c, 0x0a, 0x10, 0x0e, 0x0d, 0x0e, 0x12,
      0x11, 0x10, 0x13, 0x18, 0x28, 0x1a, 0x18, 0x16, 0x16, 0x18, 0x31, 0x23,
      0x25, 0x1d, 0x28, 0x3a, 0x33, 0x3d, 0x3c, 0x39, 0x33, 0x38, 0x37, 0x40,
      0x48, 0x5c, 0x4e, 0x40, 0x44, 0x57, 0x45, 0x37, 0x38, 0x50, 0x6d, 0x51,
      0x57, 0x5f, 0x62, 0x67, 0x68, 0x67, 0x3e, 0x4d, 0x71, 0x79, 0x70, 0x64,
      0x78, 0x5c, 0x65, 0x67, 0x63, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x08,
      0x00, 0x08, 0x01, 0x01, 0x11, 0x00, 0xff, 0xc4, 0x00, 0x14, 0x00, 0x01,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0xff, 0xc4, 0x00, 0x14, 0x10, 0x01, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3f, 0x00,
      0x3f, 0xff, 0xd9
};

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
        memcpy(buf, jpeg, sizeof jpeg);
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
