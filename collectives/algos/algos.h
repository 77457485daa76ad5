/*
 * algos.h - the algorithm table: every collective's rows (declared in its folder, <coll>/<coll>.h)
 * gathered in one table, and lookup and generation by entry or by name. Generators are called
 * only through here.
 */
#ifndef TD_ALGOS_H_
#define TD_ALGOS_H_

#include "generator.h"

/* All registered algorithms, terminated by an entry with name == NULL. */
extern const tdAlgo tdAlgoTable[];

/* The entry for (coll, name), or NULL. */
const tdAlgo *algoFind(tdColl coll, const char *name);
/* The entry whose generator is gen, or NULL (tests name generators by function). */
const tdAlgo *algoOfGen(tdGenFn gen);
/* Generates rank args->rank's schedule with the named algorithm into s (schedInit'ed here). */
tpudistResult_t algoGenerate(const tdCollArgs *args, const char *name, tdSched *s, char *err);
/* The same with an entry of the table: the shared prologue (the collective is the entry's, rank
 * and root in range, no in-place all-to-all(v), all-to-all-v counts given; one rank of a
 * collective with an in-place form is a copy) and then the entry's
 * generator, which may therefore assume valid arguments and at least two ranks where that applies.
 * Generators are called only through here. */
tpudistResult_t algoRun(const tdAlgo *a, const tdCollArgs *args, tdSched *s, char *err);

#endif /* TD_ALGOS_H_ */
