/*
 * test_map.c - base/td_map.h, the hash map the simulator's match table and the cost model's DMA
 * queues use. Random puts and takes against a plain array (every key's presence and value checked
 * after each step), at fill levels that make the table grow and runs wrap past its end; keys
 * chosen to share one home slot so backward-shift deletion must move entries across the wrap;
 * clear and free leave a usable empty map.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../cu_main.h"
#include "../xorshift.h"
#include "td_map.h"

#define NKEYS 4096

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  return tdXorshift(&rng);
}

/* Every key of keys[0..n) is in m with vals[i] exactly when present[i]. */
static int agrees(const tdMap *m, const uint64_t *keys, const uint32_t *vals, const int *present,
                  int n) {
  size_t count = 0;
  for (int i = 0; i < n; i++) {
    const tdMapSlot *s = tdMapFind(m, keys[i]);
    if (present[i] != (s != NULL) || (s && s->val != vals[i])) return 0;
    count += present[i];
  }
  return count == m->used;
}

static void testRandomAgainstArray(void) {
  static uint64_t keys[NKEYS];
  static uint32_t vals[NKEYS];
  static int present[NKEYS];
  for (int i = 0; i < NKEYS; i++) keys[i] = next() | 1ull << 63, present[i] = 0;
  tdMap m;
  memset(&m, 0, sizeof(m));
  CU_ASSERT_PTR_NULL(tdMapFind(&m, keys[0]));
  int bad = 0;
  for (int step = 0; step < 60000; step++) {
    int i = (int)(next() % NKEYS);
    if (present[i]) {
      uint32_t v = 0;
      bad += tdMapTake(&m, keys[i], &v) != 1 || v != vals[i];
      present[i] = 0;
    } else {
      vals[i] = (uint32_t)next();
      bad += tdMapPut(&m, keys[i], vals[i]) != 0;
      present[i] = 1;
    }
    if (step % 997 == 0) bad += !agrees(&m, keys, vals, present, NKEYS);
  }
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT(agrees(&m, keys, vals, present, NKEYS));
  CU_ASSERT(m.cap >= 2 * m.used);
  uint32_t v;
  CU_ASSERT_EQUAL(tdMapTake(&m, 12345, &v), 0); /* never put */
  tdMapClear(&m);
  CU_ASSERT_EQUAL(m.used, 0);
  for (int i = 0; i < NKEYS; i++) present[i] = 0;
  CU_ASSERT(agrees(&m, keys, vals, present, NKEYS));
  CU_ASSERT_EQUAL(tdMapPut(&m, keys[7], 7), 0);
  CU_ASSERT_PTR_NOT_NULL(tdMapFind(&m, keys[7]));
  tdMapFree(&m);
  CU_ASSERT_EQUAL(m.cap, 0);
  CU_ASSERT_PTR_NULL(tdMapFind(&m, keys[7]));
}

/* Keys whose home is one of the table's last slots: their run wraps to slot 0, and taking one
 * from the middle must pull the wrapped ones back so every other key is still found. */
static void testWrappedRun(void) {
  tdMap m;
  memset(&m, 0, sizeof(m));
  CU_ASSERT_EQUAL_FATAL(tdMapPut(&m, 1ull << 63, 0), 0); /* the first table: 1024 slots */
  size_t cap = m.cap;
  uint64_t keys[8];
  int n = 0;
  for (uint64_t k = 1; n < 8; k++) { /* homes at the last two slots */
    uint64_t key = k | 1ull << 62;
    if (tdMapHome(key, cap) >= cap - 2) keys[n++] = key;
  }
  for (int i = 0; i < n; i++) CU_ASSERT_EQUAL(tdMapPut(&m, keys[i], (uint32_t)i + 1), 0);
  CU_ASSERT_EQUAL(m.cap, cap);
  int wrapped = 0;
  for (int i = 0; i < n; i++) wrapped += tdMapFind(&m, keys[i]) - m.slots < (ptrdiff_t)(cap - 2);
  CU_ASSERT(wrapped >= n - 2); /* at most two fit before the end */
  for (int t = 0; t < n; t++) {
    uint32_t v = 0;
    CU_ASSERT_EQUAL(tdMapTake(&m, keys[t], &v), 1);
    CU_ASSERT_EQUAL(v, (uint32_t)t + 1);
    for (int i = t + 1; i < n; i++) {
      const tdMapSlot *s = tdMapFind(&m, keys[i]);
      CU_ASSERT(s && s->val == (uint32_t)i + 1);
    }
  }
  CU_ASSERT_EQUAL(m.used, 1);
  tdMapFree(&m);
}

int main(void) {
  CU_TestInfo tests[] = {{"random puts and takes against an array", testRandomAgainstArray},
                         {"a run wrapped past the end", testWrappedRun},
                         CU_TEST_INFO_NULL};
  return tdCUnitMain("map", tests);
}
