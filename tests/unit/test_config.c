/*
 * test_config.c - the configuration table: every row's default parses with its own parser, every
 * integer row refuses text that is not an integer and values outside its range (naming the
 * variable), and the level and subsystem parsers take what docs/env.md says.
 */
#include <string.h>

#include "../cu_main.h"
#include "rt_config.h"

static void testDefaultsParse(void) {
  char buf[64], err[TD_ERRLEN];
  for (const tdConfigVar *v = tdConfigTable; v->name; v++) {
    err[0] = 0;
    CU_ASSERT_EQUAL(v->parse(v, v->dflt, buf, err), 0);
    if (err[0]) fprintf(stderr, "%s: %s\n", v->name, err);
  }
}

static void testIntegersChecked(void) {
  char buf[64], err[TD_ERRLEN], text[64];
  int rows = 0;
  for (const tdConfigVar *v = tdConfigTable; v->name; v++) {
    if (v->min == 0 && v->max == 0) continue; /* string, level and subsystem rows */
    rows++;
    const char *bad[] = {"abc", "12ms", "1.5", " "};
    for (size_t i = 0; i < TD_ARRAY_SIZE(bad); i++) {
      err[0] = 0;
      CU_ASSERT_EQUAL(v->parse(v, bad[i], buf, err), -1);
      CU_ASSERT_PTR_NOT_NULL(strstr(err, v->name));
    }
    snprintf(text, sizeof(text), "%lld", v->max);
    CU_ASSERT_EQUAL(v->parse(v, text, buf, err), 0);
    if (v->max < (1LL << 62)) {
      snprintf(text, sizeof(text), "%lld", v->max + 1);
      CU_ASSERT_EQUAL(v->parse(v, text, buf, err), -1);
      CU_ASSERT_PTR_NOT_NULL(strstr(err, "out of range"));
    }
    snprintf(text, sizeof(text), "%lld", v->min - 1);
    CU_ASSERT_EQUAL(v->parse(v, text, buf, err), -1);
  }
  CU_ASSERT(rows >= 10);
}

static const tdConfigVar *row(const char *name) {
  for (const tdConfigVar *v = tdConfigTable; v->name; v++)
    if (!strcmp(v->name, name)) return v;
  return NULL;
}

static void testLevelAndSubsys(void) {
  char err[TD_ERRLEN];
  int level = -1;
  unsigned mask = 0;
  const tdConfigVar *lv = row("TPU_DIST_DEBUG"), *ss = row("TPU_DIST_DEBUG_SUBSYS");
  CU_ASSERT_PTR_NOT_NULL_FATAL(lv);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ss);
  CU_ASSERT(lv->parse(lv, "info", &level, err) == 0 && level == 2);
  CU_ASSERT(lv->parse(lv, "3", &level, err) == 0 && level == 3);
  CU_ASSERT_EQUAL(lv->parse(lv, "LOUD", &level, err), -1);
  CU_ASSERT(ss->parse(ss, "INIT, shm", &mask, err) == 0 && mask == (1u << 0 | 1u << 4));
  CU_ASSERT(ss->parse(ss, "", &mask, err) == 0 && mask == ~0u);
  CU_ASSERT_EQUAL(ss->parse(ss, "INIT,NET", &mask, err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "'NET'"));
}

/* TPU_DIST_MODE: the three names, any case, and nothing else; the name printed back. */
static void testMode(void) {
  char err[TD_ERRLEN];
  int mode = -1;
  const tdConfigVar *m = row("TPU_DIST_MODE");
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT(m->parse(m, "strict", &mode, err) == 0 && mode == TPUDIST_MODE_STRICT);
  CU_ASSERT(m->parse(m, "Debug", &mode, err) == 0 && mode == TPUDIST_MODE_DEBUG);
  CU_ASSERT(m->parse(m, "DEFER", &mode, err) == 0 && mode == TPUDIST_MODE_DEFER);
  CU_ASSERT_EQUAL(m->parse(m, "fuse", &mode, err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "not strict, debug or defer"));
  CU_ASSERT_STRING_EQUAL(configModeName(TPUDIST_MODE_DEFER), "defer");
  CU_ASSERT_STRING_EQUAL(configModeName(TPUDIST_MODE_DEBUG), "debug");
  CU_ASSERT_STRING_EQUAL(configModeName(TPUDIST_MODE_STRICT), "strict");
}

int main(void) {
  CU_TestInfo tests[] = {{"every default parses", testDefaultsParse},
                         {"integers checked and ranged", testIntegersChecked},
                         {"debug level and subsystems", testLevelAndSubsys},
                         {"execution modes", testMode},
                         CU_TEST_INFO_NULL};
  return tdCUnitMain("unit-config", tests);
}
