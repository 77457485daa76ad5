/*
 * file_store.h - a tpudistStore_t kept in files under a directory (what torch's FileStore does),
 * for tests: ctx is the directory; a key's file is the key with '/' as '_'. A set writes a
 * temporary file and renames it (readers never see half a value); a get polls every 5 ms until the
 * file exists or timeoutMs passed, and returns up to 4 KiB.
 */
#ifndef TD_TESTS_FILE_STORE_H
#define TD_TESTS_FILE_STORE_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void fileStorePath(void *ctx, const char *key, char *path, size_t len) {
  int n = snprintf(path, len, "%s/", (const char *)ctx);
  for (const char *k = key; *k && n + 1 < (int)len; k++) path[n++] = *k == '/' ? '_' : *k;
  path[n] = 0;
}

static int fileSet(void *ctx, const char *key, const void *value, size_t len) {
  char path[512], tmp[520];
  fileStorePath(ctx, key, path, sizeof(path));
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return 1;
  fwrite(value, 1, len, f);
  fclose(f);
  return rename(tmp, path);
}

static int fileGet(void *ctx, const char *key, void **value, size_t *len, int timeoutMs) {
  char path[512];
  fileStorePath(ctx, key, path, sizeof(path));
  for (int waited = 0; waited < timeoutMs; waited += 5) {
    FILE *f = fopen(path, "r");
    if (f) {
      *value = malloc(4096);
      *len = *value ? fread(*value, 1, 4096, f) : 0;
      fclose(f);
      return *value ? 0 : 1;
    }
    struct timespec ts = {0, 5 * 1000000L};
    nanosleep(&ts, NULL);
  }
  return 1;
}

#endif
