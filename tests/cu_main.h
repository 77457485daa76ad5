/*
 * cu_main.h - the shared CUnit main for test programs: one suite per program, CUnit's basic runner
 * (its summary lines end the output), exit status = number of failures.
 */
#ifndef TD_CU_MAIN_H_
#define TD_CU_MAIN_H_

#include <CUnit/Basic.h>

static inline int tdCUnitMain(const char *suite, CU_TestInfo *tests) {
  CU_SuiteInfo suites[] = {{suite, NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  if (CU_register_suites(suites) != CUE_SUCCESS) return 1;
  CU_basic_set_mode(CU_BRM_NORMAL);
  CU_basic_run_tests();
  unsigned failed = CU_get_number_of_tests_failed();
  unsigned asserts_failed = CU_get_number_of_failures();
  CU_cleanup_registry();
  return (failed || asserts_failed) ? 1 : 0;
}

#endif /* TD_CU_MAIN_H_ */
