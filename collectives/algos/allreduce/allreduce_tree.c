/*
 * allreduce_tree.c - double binary tree all-reduce (genAllreduceTree), as NCCL's TREE algorithm.
 *
 * Algorithm: two complementary binary trees over the p ranks (NCCL's trees.cc). Tree 0 is the
 * "btree" rooted at rank 0 whose internal nodes have a run of trailing zero bits (leaves are the
 * odd ranks); tree 1 is tree 0 mirrored (rank r -> p-1-r) when p is even, or shifted by one rank
 * (r -> r+1 mod p) when p is odd, so that most ranks are a leaf in one tree and an internal node in
 * the other. Tree t carries half t of the buffer; each half is split into TREE_CHUNKS chunks.
 * For every chunk: reduce up the tree (each node combines its own contribution with its children's
 * partial sums and sends the result to its parent), then broadcast the root's complete value down.
 * Up and down run on different streams with a dependency per chunk, so chunk j goes down while
 * chunk j+1 still goes up; the executor pipelines within each step.
 *
 * Streams: tree t uses 3t, 3t+1 (up) and 3t+2 (down). A child in slot c (0 or 1) of its parent
 * sends up on stream 3t+c and the parent receives it there, so both children are received at the
 * same time. A node forwards its partial sum on the up stream of its own slot (the root: of its
 * first child): the child in that slot is received with RECV_REDUCE, followed by the SEND to the
 * parent (fusable); when there are two children, the child in the other slot is received on the
 * other stream into SCRATCH and the node's own contribution is reduced into it first (REDUCE), and
 * the RECV_REDUCE waits for that. Down: RECV from the parent into OUTPUT (after the up phase of the
 * chunk is done with OUTPUT), then a SEND to each child.
 *
 * Determinism: every element of half t is reduced once, on its way up tree t, in a fixed order at
 * each node ((other-slot child (+) own) (+) same-slot child, or own (+) child), and the root's
 * value is copied down to every rank, so all ranks hold the same bits.
 *
 * Cost (d = depth ~ lg p, k = TREE_CHUNKS, n bytes): latency about 2 d alpha to first result plus
 * k-1 chunk times of pipeline; bandwidth: a rank internal in one tree and a leaf in the other
 * sends and receives about 2n in all (n/2 up and n per two children down, and the reverse), so
 * ~2n beta on full-duplex links with both trees busy at once; (1/2)n..n gamma per internal rank.
 * Preconditions: any p >= 1, any count (chunks may be empty), in place or out of place. SCRATCH:
 * one block (n elements) on ranks with two children in some tree. p = 1: a COPY or nothing.
 */
#include "allreduce.h"

#define TREE_CHUNKS TD_ALGO_DTREE_CHUNKS

typedef struct {
  int up;      /* parent, -1 at the root */
  int down[2]; /* children, -1 when absent */
} treeNode;

/* Node of rank r in tree 0 or 1 (generator.h). */
static treeNode treeGet(int p, int tree, int r) {
  treeNode t;
  algoDoubleTree(p, tree, r, &t.up, t.down);
  return t;
}

typedef struct {
  tdSched *s;
  int tree;
  tdBufKind own; /* INPUT out of place, OUTPUT in place */
  treeNode node;
  int slot;  /* this rank's slot in its parent (the root: the slot of its first child) */
  int other; /* the child in the other slot (received on the other stream), or -1 */
} treeCtx;

static tdBufRef treeChunk(tdBufKind b, const treeCtx *c, int j) {
  return schedRef(b, (uint32_t)(c->tree * TREE_CHUNKS + j), 1);
}

/* Adds a dependency on (stream, step) unless stream is TD_NO_DEP. */
static tdStep treeDep(tdStep st, uint32_t stream, uint32_t step) {
  if (stream == TD_NO_DEP) return st;
  st.deps[0].stream = (uint16_t)stream;
  st.deps[0].step = step;
  return st;
}

/* Up phase of chunk j; (*lstream, *lstep) is its last step, after which the up phase no longer
 * touches OUTPUT (nor the INPUT it sends). */
static tpudistResult_t treeUp(treeCtx *c, int j, uint32_t *lstream, uint32_t *lstep) {
  uint32_t ms = (uint32_t)(3 * c->tree + c->slot), os = (uint32_t)(3 * c->tree + 1 - c->slot);
  int mainChild = c->node.down[c->slot];
  tdBufRef own = treeChunk(c->own, c, j), out = treeChunk(TD_BUF_OUTPUT, c, j);
  tdBufRef acc = own; /* the partial sum so far */
  uint32_t dstream = TD_NO_DEP, idx = 0;
  tdStep st;
  if (c->other >= 0) {
    if (mainChild >= 0) { /* two children: other (+) own into SCRATCH, then (+) main below */
      tdBufRef scr = treeChunk(TD_BUF_SCRATCH, c, j);
      st = schedRecv(c->other, scr);
      TD_CHECK(schedAppend(c->s, os, &st, NULL));
      st = schedReduce(own, scr);
      acc = scr;
    } else { /* only the other-slot child */
      st = schedRecvReduce(c->other, own, out);
      acc = out;
    }
    TD_CHECK(schedAppend(c->s, os, &st, &idx));
    dstream = os;
  }
  if (mainChild >= 0) {
    st = treeDep(schedRecvReduce(mainChild, acc, out), dstream, idx);
    TD_CHECK(schedAppend(c->s, ms, &st, &idx));
    acc = out;
    dstream = TD_NO_DEP;
  }
  if (c->node.up >= 0) {
    st = treeDep(schedSend(c->node.up, acc), dstream, idx);
    TD_CHECK(schedAppend(c->s, ms, &st, &idx));
    dstream = TD_NO_DEP;
  }
  *lstream = dstream == TD_NO_DEP ? ms : dstream;
  *lstep = idx;
  return tpudistSuccess;
}

/* Down phase of chunk j, after (lstream, lstep) of the up phase. */
static tpudistResult_t treeDown(treeCtx *c, int j, uint32_t lstream, uint32_t lstep) {
  uint32_t ds = (uint32_t)(3 * c->tree + 2);
  tdBufRef out = treeChunk(TD_BUF_OUTPUT, c, j);
  int first = 1;
  tdStep st;
  if (c->node.up >= 0) {
    st = treeDep(schedRecv(c->node.up, out), lstream, lstep);
    TD_CHECK(schedAppend(c->s, ds, &st, NULL));
    first = 0;
  }
  for (int k = 0; k < 2; k++) {
    if (c->node.down[k] < 0) continue;
    st = schedSend(c->node.down[k], out);
    if (first) st = treeDep(st, lstream, lstep);
    first = 0;
    TD_CHECK(schedAppend(c->s, ds, &st, NULL));
  }
  return tpudistSuccess;
}

static int treeSlotIn(int p, int tree, int parent, int r) {
  return treeGet(p, tree, parent).down[0] == r ? 0 : 1;
}

static tpudistResult_t treeBuild(tdSched *s, int p, int r, int tree) {
  treeCtx c = {s, tree, s->inplace ? TD_BUF_OUTPUT : TD_BUF_INPUT, treeGet(p, tree, r), 0, -1};
  if (c.node.up >= 0)
    c.slot = treeSlotIn(p, tree, c.node.up, r);
  else
    c.slot = c.node.down[0] >= 0 ? 0 : 1;
  c.other = c.node.down[1 - c.slot];
  if (c.other >= 0 && c.node.down[c.slot] >= 0)
    schedSetLayout(s, TD_BUF_SCRATCH, 1, 2 * TREE_CHUNKS);
  for (int j = 0; j < TREE_CHUNKS; j++) {
    uint32_t ls, lst;
    TD_CHECK(treeUp(&c, j, &ls, &lst));
    /* A leaf sending INPUT out of place may receive the result at once. */
    if (c.node.down[0] < 0 && c.node.down[1] < 0 && c.own == TD_BUF_INPUT) ls = TD_NO_DEP;
    TD_CHECK(treeDown(&c, j, ls, lst));
  }
  return tpudistSuccess;
}

tpudistResult_t genAllreduceTree(const tdCollArgs *a, tdSched *s, char *err) {
  (void)err;
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 0);
  schedSetLayout(s, TD_BUF_INPUT, 1, 2 * TREE_CHUNKS);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 2 * TREE_CHUNKS);
  TD_CHECK(treeBuild(s, a->nranks, a->rank, 0));
  return treeBuild(s, a->nranks, a->rank, 1);
}
