/*
 * replay.c - runs a fuzz target (linked with it) over every file of the given corpus directories,
 * as libFuzzer would: the normal gcc build replays the committed corpora (suite fuzz-replay), so
 * every input that once mattered keeps being checked without clang.
 *   replay_TARGET DIR...
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int runFile(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (!buf) return -1;
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int files = 0;
  for (int i = 1; i < argc; i++) {
    DIR *d = opendir(argv[i]);
    if (!d) {
      fprintf(stderr, "replay: cannot open %s\n", argv[i]);
      return 1;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
      if (e->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
      if (runFile(path) != 0) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        closedir(d);
        return 1;
      }
      files++;
    }
    closedir(d);
  }
  printf("replay: %d inputs, no crash\n", files);
  return files ? 0 : 1;
}
