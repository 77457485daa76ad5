/*
 * td_map.h - one hash map for the project's hot lookups: nonzero 64-bit keys to 32-bit values,
 * open addressing with linear probing and backward-shift deletion (no tombstones), kept at most
 * half full, its capacity a power of two. The simulator's match table (posts waiting for their
 * peer) and the cost model's DMA queues (found by stream and destination) use it.
 *
 * A zeroed tdMap is empty and valid. Key 0 marks a free slot, so callers set a bit of their own in
 * every key.
 */
#ifndef TD_MAP_H_
#define TD_MAP_H_

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint64_t key; /* 0: free */
  uint32_t val;
} tdMapSlot;

typedef struct {
  tdMapSlot *slots;
  size_t cap, used; /* cap: 0 or a power of two */
} tdMap;

/* Multiplicative (Fibonacci) hashing: the top log2(cap) bits of k times 2^64 / phi. */
static inline size_t tdMapHome(uint64_t k, size_t cap) {
  return (size_t)((k * 0x9E3779B97F4A7C15ull) >> (64 - __builtin_ctzll((unsigned long long)cap)));
}

/* The slot holding key, or NULL. */
static inline tdMapSlot *tdMapFind(const tdMap *m, uint64_t key) {
  if (!m->cap) return NULL;
  size_t mask = m->cap - 1, h = tdMapHome(key, m->cap);
  while (m->slots[h].key && m->slots[h].key != key) h = (h + 1) & mask;
  return m->slots[h].key ? &m->slots[h] : NULL;
}

/* Adds key (not in the map) with val, doubling the table (from 1024 slots) to stay at most half
 * full. Returns 0, or -1 without memory (the map unchanged). */
static inline int tdMapPut(tdMap *m, uint64_t key, uint32_t val) {
  if ((m->used + 1) * 2 > m->cap) {
    size_t nc = m->cap ? m->cap * 2 : 1024;
    tdMapSlot *ns = (tdMapSlot *)calloc(nc, sizeof(tdMapSlot));
    if (!ns) return -1;
    for (size_t i = 0; i < m->cap; i++)
      if (m->slots[i].key) {
        size_t h = tdMapHome(m->slots[i].key, nc);
        while (ns[h].key) h = (h + 1) & (nc - 1);
        ns[h] = m->slots[i];
      }
    free(m->slots);
    m->slots = ns;
    m->cap = nc;
  }
  size_t h = tdMapHome(key, m->cap);
  while (m->slots[h].key) h = (h + 1) & (m->cap - 1);
  m->slots[h] = (tdMapSlot){key, val};
  m->used++;
  return 0;
}

/* Removes key; its value in *val. Returns 1, or 0 if key was not there. The entries after it in
 * its run move back over the gap where their home allows, so later probes still find them. */
static inline int tdMapTake(tdMap *m, uint64_t key, uint32_t *val) {
  tdMapSlot *s = tdMapFind(m, key);
  if (!s) return 0;
  *val = s->val;
  size_t mask = m->cap - 1, i = (size_t)(s - m->slots), j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (!m->slots[j].key) break;
    size_t home = tdMapHome(m->slots[j].key, m->cap);
    if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
      m->slots[i] = m->slots[j];
      i = j;
    }
  }
  m->slots[i].key = 0;
  m->used--;
  return 1;
}

/* Empties the map, keeping its table. */
static inline void tdMapClear(tdMap *m) {
  if (m->cap) memset(m->slots, 0, m->cap * sizeof(tdMapSlot));
  m->used = 0;
}

static inline void tdMapFree(tdMap *m) {
  free(m->slots);
  memset(m, 0, sizeof(*m));
}

#endif /* TD_MAP_H_ */
