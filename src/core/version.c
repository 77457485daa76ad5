/* version.c - tpudistGetVersion. */
#include "tpu_dist.h"

TPUDIST_API int tpudistGetVersion(int *version) {
  if (!version) return tpudistInvalidArgument;
  *version = TPUDIST_VERSION_CODE;
  return tpudistSuccess;
}
