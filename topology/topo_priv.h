/*
 * topo_priv.h - helpers shared by the files of the torus model (torus.c, topo_parse.c,
 * topo_tpuenv.c, topo_sub.c). Not part of the model's API: other layers use torus.h only.
 */
#ifndef TD_TOPO_PRIV_H_
#define TD_TOPO_PRIV_H_

#include "torus.h"

/* Largest value one number in a topology string may have. */
#define TD_TOPO_MAX_DIM (1 << 20)

/* Axis names in messages: x, y, z, w. */
static inline char topoAxisName(int axis) {
  return "xyzw"[axis & 3];
}

/* The twist roles of a shape: returns 1 if the first three of dims are n,n,2n or n,2n,2n in any
 * order with n >= 2, and then sets isShort[0..2] (1 for an axis of length n) and *n. */
int topoTwistRoles(const int *dims, int ndims, int *isShort, int *n);

/* The wrap topoInit gives axis when no wrap is spelled out. */
int topoDefaultWrap(const int *dims, int axis, int twisted);

/* Parses an unsigned decimal number (1 to 7 digits, no sign) at *p and advances *p past it.
 * Returns the value, or -1 if no digit is at *p or the value is above TD_TOPO_MAX_DIM. */
int topoParseNum(const char **p);

/* Parses "AxBxC..." at *p (x or X between numbers) into dims; advances *p past it. Checks
 * count (1 to maxdims) and that every value is >= 1. what names the string in messages. */
tpudistResult_t topoParseDims(const char **p, int maxdims, int *dims, int *ndims, const char *what,
                              char *err);

/* Prefixes the message in err (if any) with prefix: "prefix: message". */
void topoErrPrefix(char *err, const char *prefix);

/* "AxBxC" of a shape that need not be a valid torus (for messages). */
void topoFormatDims(int ndims, const int *dims, char *buf, size_t len);

#endif /* TD_TOPO_PRIV_H_ */
