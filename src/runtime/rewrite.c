/* rewrite.c - the graph rewrite driver of rewrite.h: offers the pruned order's nodes to the rule
 * tables of the op families, keeps the books a rule matches against (who reads each value, which
 * values are fed or fetched, which nodes are control inputs, where each node stands), checks every
 * replacement against the guarantees rewrite.h lists, and hands plan building the new order, the
 * synthetic nodes and the map of removed edges.
 *
 * Books, while the rules run: every edge (graph outputs, then each synthetic node's) has a slot;
 * per slot the number of reads by nodes of the order and the sum of their ids (so that with one
 * read the sum is the reader: no reader lists to keep), fed and fetched flags, and where its value
 * went (itself until a rule removes it). When the rules are done only the removed edges are kept,
 * sorted, for sm__rewrite_edge; the books are dropped, so a cached plan holds little beyond its
 * order and its synthetic nodes. Helper nodes (sm__rewrite_replace_n) share the place of the node
 * they precede in the working order; a list of (place, id) puts them before it in the result. */
#include "runtime/rewrite.h"

#include <stdlib.h>
#include <string.h>

#include "graph/synth.h"

/* registry_families.c (generated): every sm_rewrites_<family> table, NULL-terminated. */
extern const sm_rewrite_rule *const sm__rewrite_families[];

typedef struct moved {
  sm_edge from, to;
} moved;

struct sm_rewrite {
  const sm_cgraph *g;
  int nn;         /* the graph's nodes; synthetic ids follow */
  sm_node **syn;  /* synthetic nodes, id nn + i */
  int nsyn, cap_syn;
  /* the working order: node ids, -1 where a node was fused away */
  int *ord, nord;
  /* per id (grown with the synthetic nodes) */
  int *obase;              /* slot of output 0 */
  int *pos;                /* place in ord; -1 when not in it */
  unsigned char *ctl_src;  /* a control input of a node of the order */
  int cap_ids;
  /* per edge slot */
  int *nread;
  int64_t *rsum;
  unsigned char *fed, *fetched;
  sm_edge *to;             /* where the value went: itself, another edge, or {-1, -1} */
  int nslots, cap_slots;
  /* helpers (sm__rewrite_replace_n): synthetic nodes placed just before the node at a place of
   * the order, in the order they were handed over */
  int *pre_at, *pre_id, npre, cap_pre;
  int nfwd; /* nodes dropped by sm__rewrite_forward */
  unsigned char *read0; /* per original node: some output was read before any rule ran */
  /* the result */
  int *final, nfinal;
  moved *mv; /* removed edges, sorted by from */
  int nmv;
};

static sm_status *oom(void) { return sm_status_new(SM_NO_MEMORY, "graph rewrite: out of memory"); }

static int is_edge(const sm_rewrite *rw, sm_edge e) {
  const sm_node *n = e.node >= 0 ? sm__rewrite_node(rw, e.node) : NULL;
  return n && e.index >= 0 && e.index < sm__node_num_outputs(n);
}

/* The slot of an edge (books kept), -1 when it is none. */
static int slot(const sm_rewrite *rw, sm_edge e) {
  return rw->obase && is_edge(rw, e) ? rw->obase[e.node] + e.index : -1;
}

const sm_node *sm__rewrite_node(const sm_rewrite *rw, int id) {
  if (!rw || id < 0) return NULL;
  if (id < rw->nn) return sm__cgraph_node(rw->g, id);
  return id - rw->nn < rw->nsyn ? rw->syn[id - rw->nn] : NULL;
}

int sm__rewrite_num_ids(const sm_rewrite *rw) { return rw ? rw->nn + rw->nsyn : 0; }
int sm__rewrite_num_synthetic(const sm_rewrite *rw) { return rw ? rw->nsyn : 0; }
const sm_cgraph *sm__rewrite_graph(const sm_rewrite *rw) { return rw->g; }

const int *sm__rewrite_order(const sm_rewrite *rw, int *n) {
  *n = rw ? rw->nfinal : 0;
  return rw ? rw->final : NULL;
}

static int cmp_moved(const void *a, const void *b) {
  const sm_edge *x = &((const moved *)a)->from, *y = &((const moved *)b)->from;
  if (x->node != y->node) return x->node < y->node ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* One step of resolution: where e's value went, e itself when it stayed. */
static sm_edge went(const sm_rewrite *rw, sm_edge e) {
  if (rw->to) {
    int s = slot(rw, e);
    return s < 0 ? e : rw->to[s];
  }
  moved key = {e, e};
  const moved *m = rw->nmv ? bsearch(&key, rw->mv, (size_t)rw->nmv, sizeof *rw->mv, cmp_moved) : NULL;
  return m ? m->to : e;
}

sm_edge sm__rewrite_edge(const sm_rewrite *rw, sm_edge e) {
  if (!rw) return e;
  /* each step lands on a newer synthetic node or on the input of a dropped node (never back: the
   * order is topological), so this ends within nsyn + nfwd + 1 steps */
  for (int i = 0; i <= rw->nsyn + rw->nfwd; i++) {
    sm_edge n = went(rw, e);
    if (n.node < 0 || (n.node == e.node && n.index == e.index)) return n;
    e = n;
  }
  return (sm_edge){-1, -1};
}

sm_edge sm__rewrite_input(const sm_rewrite *rw, int id, int i) {
  const sm_node *n = sm__rewrite_node(rw, id);
  if (!n || i < 0 || i >= sm__node_num_inputs(n)) return (sm_edge){-1, -1};
  return sm__rewrite_edge(rw, sm__node_input(n, i));
}

static int is_fed(const sm_rewrite *rw, sm_edge e) {
  int s = slot(rw, e);
  return s >= 0 && rw->fed[s];
}

int sm__rewrite_is_fed(const sm_rewrite *rw, sm_edge e) { return rw && is_fed(rw, sm__rewrite_edge(rw, e)); }

sm_status *sm__rewrite_const_value(const sm_rewrite *rw, sm_edge e, sm_tensor **value) {
  *value = NULL;
  const sm_node *n = e.node >= 0 ? sm__rewrite_node(rw, e.node) : NULL;
  if (!n || strcmp(sm__node_op(n), "Const") || sm__rewrite_is_fed(rw, e)) return NULL;
  return sm__node_attr_tensor(n, "value", value);
}

int sm__rewrite_is_used(const sm_rewrite *rw, sm_edge e) {
  int s = slot(rw, sm__rewrite_edge(rw, e));
  return s >= 0 && (rw->nread[s] || rw->fetched[s]);
}

int sm__rewrite_only_reader(const sm_rewrite *rw, sm_edge e) {
  int s = slot(rw, e);
  if (s < 0 || rw->fed[s] || rw->fetched[s] || rw->nread[s] != 1) return -1;
  return (int)rw->rsum[s];
}

int sm__rewrite_reads_ref(const sm_rewrite *rw, int id, int i) {
  const sm_node *n = sm__rewrite_node(rw, id);
  sm_edge e = sm__rewrite_input(rw, id, i);
  if (!n || !is_edge(rw, e) || is_fed(rw, e)) return 0;
  return sm__node_output_dtype(sm__rewrite_node(rw, e.node), e.index) >= SM_DTYPE_REF_OFFSET &&
         sm__node_input_dtype(n, i) < SM_DTYPE_REF_OFFSET;
}

/* A node that may change a variable: stateful per its OpDef, or taking a ref input (TF1's Assign,
 * AssignAdd, ScatterUpdate, Apply* are not marked stateful: their ref input is how they write). */
static int may_write(const sm_node *n) {
  if (sm__node_is_stateful(n)) return 1;
  for (int i = 0; i < sm__node_num_inputs(n); i++)
    if (sm__node_input_dtype(n, i) >= SM_DTYPE_REF_OFFSET) return 1;
  return 0;
}

/* A resource variable read that does nothing but read: state.c's _SmReadVariable (no inputs), with
 * no control inputs (so it is never dead and waits on nothing). A rule whose new node reads the
 * variable itself may take it into its chain even where it is a control input (TF2 functions'
 * automatic control dependencies make every read one of the function's final NoOp): the read then
 * happens at the new node's place, and sm__rewrite_can_fuse checks that no node between could
 * assign a variable. */
static int pure_read(const sm_node *n) {
  return !strcmp(sm__node_op(n), "_SmReadVariable") && sm__node_num_inputs(n) == 0 &&
         sm__node_num_control_inputs(n) == 0;
}

/* Whether a node at a place in (from, to) of the order may assign a variable; pure reads do not,
 * nor nn_fold.c's helper that reads its variables itself (stateful for that alone). */
static int write_between(const sm_rewrite *rw, int from, int to) {
  for (int p = from + 1; p < to; p++) {
    const sm_node *n = rw->ord[p] >= 0 ? sm__rewrite_node(rw, rw->ord[p]) : NULL;
    if (n && may_write(n) && !pure_read(n) && strcmp(sm__node_op(n), "_SmFoldBNVars")) return 1;
  }
  return 0;
}

/* How many times the chain's nodes read edge e (resolved). */
static int chain_reads(const sm_rewrite *rw, const int *chain, int n, sm_edge e) {
  int k = 0;
  for (int c = 0; c < n; c++) {
    const sm_node *nd = sm__rewrite_node(rw, chain[c]);
    for (int i = 0; i < sm__node_num_inputs(nd); i++) {
      sm_edge x = sm__rewrite_input(rw, chain[c], i);
      k += x.node == e.node && x.index == e.index;
    }
  }
  return k;
}

int sm__rewrite_can_fuse(const sm_rewrite *rw, const int *chain, int n) {
  if (!rw || !rw->pos || !chain || n < 1) return 0;
  for (int c = 0; c < n; c++) {
    if (!sm__rewrite_node(rw, chain[c]) || rw->pos[chain[c]] < 0) return 0;
    for (int d = 0; d < c; d++)
      if (chain[d] == chain[c]) return 0;
  }
  int last = chain[n - 1], at = rw->pos[last];
  for (int c = 0; c < n; c++) {
    int id = chain[c];
    const sm_node *nd = sm__rewrite_node(rw, id);
    int moved_read = id != last && pure_read(nd);
    /* the last's role as a control input passes on; a pure read's goes (it orders nothing but
     * reads, and no write may come between: below) */
    if (rw->pos[id] > at || (rw->ctl_src[id] && id != last && !moved_read)) return 0;
    if (moved_read && write_between(rw, rw->pos[id], at)) return 0;
    for (int k = 0; k < sm__node_num_outputs(nd); k++) {
      int s = rw->obase[id] + k;
      if (rw->fed[s]) return 0;
      if (id != last && (rw->fetched[s] || rw->nread[s] != chain_reads(rw, chain, n, (sm_edge){id, k}))) return 0;
    }
    /* a ref read moves from this node's place to the last one's: no assignment may come between */
    for (int i = 0; i < sm__node_num_inputs(nd) && id != last; i++)
      if (sm__rewrite_reads_ref(rw, id, i) && write_between(rw, rw->pos[id], at)) return 0;
  }
  return 1;
}

/* Room for one more synthetic node and its nout outputs in the books. */
static sm_status *grow_books(sm_rewrite *rw, int nout) {
  if (rw->nsyn == rw->cap_syn) {
    int nc = rw->cap_syn ? rw->cap_syn * 2 : 8;
    sm_node **ns = realloc(rw->syn, (size_t)nc * sizeof *ns);
    if (!ns) return oom();
    rw->syn = ns;
    rw->cap_syn = nc;
  }
  if (rw->nn + rw->nsyn + 1 > rw->cap_ids) {
    int nc = rw->cap_ids * 2 + 8;
    int *ob = realloc(rw->obase, (size_t)nc * sizeof *ob);
    if (ob) rw->obase = ob;
    int *ps = ob ? realloc(rw->pos, (size_t)nc * sizeof *ps) : NULL;
    if (ps) rw->pos = ps;
    unsigned char *cs = ps ? realloc(rw->ctl_src, (size_t)nc) : NULL;
    if (!cs) return oom();
    rw->ctl_src = cs;
    rw->cap_ids = nc;
  }
  if (rw->nslots + nout > rw->cap_slots) {
    int nc = rw->cap_slots * 2 + nout + 8;
    int *nr = realloc(rw->nread, (size_t)nc * sizeof *nr);
    if (nr) rw->nread = nr;
    int64_t *rs = nr ? realloc(rw->rsum, (size_t)nc * sizeof *rs) : NULL;
    if (rs) rw->rsum = rs;
    unsigned char *fd = rs ? realloc(rw->fed, (size_t)nc) : NULL;
    if (fd) rw->fed = fd;
    unsigned char *ft = fd ? realloc(rw->fetched, (size_t)nc) : NULL;
    if (ft) rw->fetched = ft;
    sm_edge *to = ft ? realloc(rw->to, (size_t)nc * sizeof *to) : NULL;
    if (!to) return oom();
    rw->to = to;
    rw->cap_slots = nc;
  }
  return NULL;
}

/* Counts (d = +1) or uncounts (d = -1) node id's reads. */
static void count_reads(sm_rewrite *rw, int id, int d) {
  const sm_node *nd = sm__rewrite_node(rw, id);
  for (int i = 0; i < sm__node_num_inputs(nd); i++) {
    int s = slot(rw, sm__rewrite_input(rw, id, i));
    if (s < 0 || rw->fed[s]) continue;
    rw->nread[s] += d;
    rw->rsum[s] += d * (int64_t)id;
  }
}

int sm__rewrite_next_id(const sm_rewrite *rw) { return rw ? rw->nn + rw->nsyn : -1; }

/* Room for k more helpers. */
static sm_status *grow_pre(sm_rewrite *rw, int k) {
  if (rw->npre + k <= rw->cap_pre) return NULL;
  int nc = rw->cap_pre * 2 + k + 8;
  int *a = realloc(rw->pre_at, (size_t)nc * sizeof *a);
  if (a) rw->pre_at = a;
  int *b = a ? realloc(rw->pre_id, (size_t)nc * sizeof *b) : NULL;
  if (!b) return oom();
  rw->pre_id = b;
  rw->cap_pre = nc;
  return NULL;
}

/* Checks new node j of k (ids from first up) against the chain it replaces; NULL when it fits. */
static sm_status *check_new(const sm_rewrite *rw, const char *rule, const int *chain, int n, sm_node *const *nodes,
                            int j, int k, int first, int at) {
  const sm_node *nd = nodes[j];
  if (j == k - 1) {
    const sm_node *ln = sm__rewrite_node(rw, chain[n - 1]);
    int nout = sm__node_num_outputs(nd), extra_used = 0;
    /* fewer outputs only when nothing reads or fetches the ones left out (FusedBatchNorm's statistics) */
    for (int o = nout; o < sm__node_num_outputs(ln); o++) {
      int s = rw->obase[chain[n - 1]] + o;
      extra_used |= rw->nread[s] || rw->fetched[s];
    }
    if (nout < 1 || nout > sm__node_num_outputs(ln) || extra_used)
      return sm_status_new(SM_INTERNAL, "graph rewrite '%s': node '%s' (%s) has %d outputs where '%s' had %d", rule,
                           sm__node_name(nd), sm__node_op(nd), nout, sm__node_name(ln), sm__node_num_outputs(ln));
    for (int o = 0; o < nout; o++)
      if (sm__node_output_dtype(nd, o) != sm__node_output_dtype(ln, o))
        return sm_status_new(SM_INTERNAL,
                             "graph rewrite '%s': node '%s' (%s) output %d is not of '%s' output's dtype", rule,
                             sm__node_name(nd), sm__node_op(nd), o, sm__node_name(ln));
  }
  for (int i = 0; i < sm__node_num_inputs(nd); i++) {
    sm_edge e = sm__node_input(nd, i);
    /* an earlier node of this replacement, or a value computed before the chain's last place */
    int ok = e.node >= first && e.node < first + j && e.index >= 0 && e.index < sm__node_num_outputs(nodes[e.node - first]);
    if (!ok) {
      e = sm__rewrite_edge(rw, e);
      ok = is_edge(rw, e) && (is_fed(rw, e) || (rw->pos[e.node] >= 0 && rw->pos[e.node] < at));
      for (int c = 0; c < n && ok; c++) ok = e.node != chain[c];
    }
    if (!ok)
      return sm_status_new(SM_INTERNAL, "graph rewrite '%s': input %d of node '%s' (%s) is not computed before it",
                           rule, i, sm__node_name(nd), sm__node_op(nd));
  }
  return NULL;
}

sm_status *sm__rewrite_replace(sm_rewrite *rw, const char *rule, const int *chain, int n, sm_node *fused) {
  return sm__rewrite_replace_n(rw, rule, chain, n, &fused, 1);
}

sm_status *sm__rewrite_replace_n(sm_rewrite *rw, const char *rule, const int *chain, int n, sm_node **nodes, int k) {
  if (!rule) rule = "?";
  sm_status *st = NULL;
  int j;
  if (!nodes || k < 1) return sm_status_new(SM_INTERNAL, "graph rewrite '%s': no node to put in", rule);
  for (j = 0; j < k && !st; j++)
    if (!nodes[j]) st = sm_status_new(SM_INTERNAL, "graph rewrite '%s': no node to put in", rule);
  if (st) goto fail;
  if (!sm__rewrite_can_fuse(rw, chain, n)) {
    st = sm_status_new(SM_INTERNAL, "graph rewrite '%s': the chain at node '%s' may not be fused", rule,
                       sm__node_name(nodes[k - 1]));
    goto fail;
  }
  int last = chain[n - 1], at = rw->pos[last], first = rw->nn + rw->nsyn;
  for (j = 0; j < k && !st; j++) st = check_new(rw, rule, chain, n, nodes, j, k, first, at);
  for (j = 0; j < k && !st; j++)
    for (int c = 0; c < n && !st; c++) {
      const sm_node *cn = sm__rewrite_node(rw, chain[c]);
      for (int i = 0; i < sm__node_num_control_inputs(cn) && !st; i++)
        st = sm__synth_add_control(nodes[j], sm__node_control_input(cn, i));
    }
  for (j = 0; j < k && !st; j++) {
    st = grow_books(rw, sm__node_num_outputs(nodes[j]));
    /* book the node now (nothing fails after the last one): its outputs are new slots */
    if (!st) {
      int id = rw->nn + rw->nsyn;
      rw->syn[rw->nsyn++] = nodes[j];
      nodes[j] = NULL;
      rw->obase[id] = rw->nslots;
      rw->pos[id] = at;
      rw->ctl_src[id] = j == k - 1 && rw->ctl_src[last]; /* waited on as the last node was */
      for (int o = 0; o < sm__node_num_outputs(sm__rewrite_node(rw, id)); o++) {
        int t = rw->nslots + o;
        rw->nread[t] = 0, rw->rsum[t] = 0, rw->fetched[t] = 0, rw->fed[t] = 0;
        rw->to[t] = (sm_edge){id, o};
      }
      rw->nslots += sm__node_num_outputs(sm__rewrite_node(rw, id));
    }
  }
  if (!st && k > 1) st = grow_pre(rw, k - 1);
  if (st) {
    /* undo the bookings: the nodes booked go back to the caller's array to be freed */
    while (rw->nsyn > first - rw->nn) {
      int id = rw->nn + --rw->nsyn;
      rw->nslots -= sm__node_num_outputs(rw->syn[rw->nsyn]);
      nodes[id - first] = rw->syn[rw->nsyn];
    }
    goto fail;
  }
  /* from here nothing fails */
  int id = first + k - 1;
  for (j = 0; j < k - 1; j++) {
    rw->pre_at[rw->npre] = at;
    rw->pre_id[rw->npre++] = first + j;
  }
  for (int c = 0; c < n; c++) count_reads(rw, chain[c], -1);
  for (j = 0; j < k; j++) count_reads(rw, first + j, +1);
  for (int c = 0; c < n; c++) {
    int cid = chain[c];
    const sm_node *cn = sm__rewrite_node(rw, cid);
    for (int o = 0; o < sm__node_num_outputs(cn); o++) {
      int s = rw->obase[cid] + o;
      if (cid == last && o < sm__node_num_outputs(sm__rewrite_node(rw, id))) {
        int t = rw->obase[id] + o;
        rw->nread[t] = rw->nread[s];
        rw->rsum[t] = rw->rsum[s];
        rw->fetched[t] = rw->fetched[s];
        rw->to[s] = (sm_edge){id, o};
      } else {
        rw->to[s] = (sm_edge){-1, -1};
      }
      rw->nread[s] = 0;
      rw->rsum[s] = 0;
    }
    rw->ord[rw->pos[cid]] = -1;
    rw->pos[cid] = -1;
  }
  rw->ord[at] = id;
  return NULL;
fail:
  for (j = 0; j < k; j++) sm__synth_free(nodes[j]);
  return st;
}

int sm__rewrite_can_forward(const sm_rewrite *rw, int id, int in) {
  const sm_node *n = sm__rewrite_node(rw, id);
  if (!n || !rw->pos || rw->pos[id] < 0 || rw->ctl_src[id] || sm__node_num_outputs(n) != 1 ||
      sm__node_num_control_inputs(n) || in < 0 || in >= sm__node_num_inputs(n) || sm__rewrite_reads_ref(rw, id, in))
    return 0;
  int s = rw->obase[id];
  sm_edge e = sm__rewrite_input(rw, id, in);
  if (rw->fed[s] || rw->fetched[s] || !is_edge(rw, e)) return 0;
  int dt = sm__node_output_dtype(n, 0), et = sm__node_output_dtype(sm__rewrite_node(rw, e.node), e.index);
  return dt < SM_DTYPE_REF_OFFSET && et == dt;
}

sm_status *sm__rewrite_forward(sm_rewrite *rw, const char *rule, int id, int in) {
  if (!sm__rewrite_can_forward(rw, id, in))
    return sm_status_new(SM_INTERNAL, "graph rewrite '%s': node '%s' may not be dropped", rule ? rule : "?",
                         sm__node_name(sm__rewrite_node(rw, id)));
  sm_edge e = sm__rewrite_input(rw, id, in);
  int s = rw->obase[id], t = slot(rw, e);
  count_reads(rw, id, -1);
  if (!rw->fed[t]) {
    rw->nread[t] += rw->nread[s];
    rw->rsum[t] += rw->rsum[s];
  }
  rw->nread[s] = 0;
  rw->rsum[s] = 0;
  rw->to[s] = e;
  rw->ord[rw->pos[id]] = -1;
  rw->pos[id] = -1;
  rw->nfwd++;
  return NULL;
}

void sm__rewrite_free(sm_rewrite *rw) {
  if (!rw) return;
  for (int i = 0; i < rw->nsyn; i++) sm__synth_free(rw->syn[i]);
  free(rw->syn);
  free(rw->ord);
  free(rw->obase);
  free(rw->pos);
  free(rw->ctl_src);
  free(rw->nread);
  free(rw->rsum);
  free(rw->fed);
  free(rw->fetched);
  free(rw->to);
  free(rw->read0);
  free(rw->final);
  free(rw->mv);
  free(rw->pre_at);
  free(rw->pre_id);
  free(rw);
}

/* Drops the original nodes a rule left unread: a stateless node (no ref input) whose outputs
 * were read before the rules ran and are now read by nothing, fetched by nothing, and that is no
 * control input. Those computed an operand a rule now takes from further up (nn_fold.c reads a
 * BatchNorm's variables where the graph computed its scale and shift from them); their own inputs
 * may die with them, so the order is walked backwards. Nothing a run could observe goes: such a
 * node had no effect but its values. */
static void drop_unread(sm_rewrite *rw) {
  for (int p = rw->nord - 1; p >= 0; p--) {
    int id = rw->ord[p];
    if (id < 0 || id >= rw->nn || !rw->read0[id] || rw->ctl_src[id]) continue;
    const sm_node *nd = sm__rewrite_node(rw, id);
    int used = may_write(nd);
    for (int k = 0; k < sm__node_num_outputs(nd) && !used; k++)
      used = rw->nread[rw->obase[id] + k] || rw->fetched[rw->obase[id] + k];
    if (used) continue;
    count_reads(rw, id, -1);
    rw->ord[p] = -1;
    rw->pos[id] = -1;
  }
}

/* Drops the books, keeping the order and the removed edges. */
static sm_status *finish(sm_rewrite *rw) {
  drop_unread(rw);
  int nf = rw->npre, nm = 0;
  for (int p = 0; p < rw->nord; p++) nf += rw->ord[p] >= 0;
  rw->final = malloc(((size_t)nf + 1) * sizeof *rw->final);
  if (!rw->final) return oom();
  /* helpers before the node of their place (one pass: pre_at is not sorted, so count per place) */
  int *first = calloc((size_t)rw->nord + 1, sizeof *first), *seq = NULL;
  if (!first || (rw->npre && !(seq = malloc((size_t)rw->npre * sizeof *seq)))) {
    free(first);
    return oom();
  }
  for (int h = 0; h < rw->npre; h++) first[rw->pre_at[h] + 1]++;
  for (int p = 0; p < rw->nord; p++) first[p + 1] += first[p];
  for (int h = 0; h < rw->npre; h++) seq[first[rw->pre_at[h]]++] = rw->pre_id[h];
  /* now first[p] is where place p's run ends (the run of p is [first[p-1], first[p])) */
  for (int p = 0, h = 0; p < rw->nord; p++) {
    for (; h < first[p]; h++) rw->final[rw->nfinal++] = seq[h];
    if (rw->ord[p] >= 0) rw->final[rw->nfinal++] = rw->ord[p];
  }
  free(first);
  free(seq);
  /* every edge whose value went elsewhere */
  int nids = rw->nn + rw->nsyn;
  for (int id = 0; id < nids; id++) {
    const sm_node *nd = sm__rewrite_node(rw, id);
    for (int k = 0; k < sm__node_num_outputs(nd); k++) {
      sm_edge t = rw->to[rw->obase[id] + k];
      nm += t.node != id || t.index != k;
    }
  }
  if (nm && !(rw->mv = malloc((size_t)nm * sizeof *rw->mv))) return oom();
  for (int id = 0; id < nids; id++) {
    const sm_node *nd = sm__rewrite_node(rw, id);
    for (int k = 0; k < sm__node_num_outputs(nd); k++) {
      sm_edge t = rw->to[rw->obase[id] + k];
      if (t.node != id || t.index != k) rw->mv[rw->nmv++] = (moved){{id, k}, t};
    }
  }
  /* ids ascend and outputs within one: already sorted */
  free(rw->ord);
  free(rw->obase);
  free(rw->pos);
  free(rw->ctl_src);
  free(rw->nread);
  free(rw->rsum);
  free(rw->fed);
  free(rw->fetched);
  free(rw->to);
  free(rw->read0);
  rw->read0 = NULL;
  rw->ord = rw->obase = rw->pos = rw->nread = NULL;
  rw->ctl_src = rw->fed = rw->fetched = NULL;
  rw->rsum = NULL;
  rw->to = NULL;
  rw->nslots = rw->cap_slots = rw->cap_ids = 0;
  return NULL;
}

/* The books for the graph and the order, before any rule runs. */
static sm_status *start(sm_rewrite *rw, const int *order, int norder, const sm_edge *feeds, int nfeeds,
                        const sm_edge *fetches, int nfetches) {
  int nn = rw->nn;
  rw->cap_ids = nn + 8;
  rw->obase = malloc((size_t)rw->cap_ids * sizeof *rw->obase);
  rw->pos = malloc((size_t)rw->cap_ids * sizeof *rw->pos);
  rw->ctl_src = calloc((size_t)rw->cap_ids, 1);
  rw->ord = malloc(((size_t)norder + 1) * sizeof *rw->ord);
  if (!rw->obase || !rw->pos || !rw->ctl_src || !rw->ord) return oom();
  int64_t ns = 0;
  for (int i = 0; i < nn; i++) {
    rw->obase[i] = (int)ns;
    rw->pos[i] = -1;
    ns += sm__node_num_outputs(sm__cgraph_node(rw->g, i));
  }
  if (ns > (1 << 30)) return sm_status_new(SM_OUT_OF_RANGE, "graph rewrite: the graph has %lld outputs", (long long)ns);
  rw->nslots = (int)ns;
  rw->cap_slots = rw->nslots + 8;
  rw->nread = calloc((size_t)rw->cap_slots, sizeof *rw->nread);
  rw->rsum = calloc((size_t)rw->cap_slots, sizeof *rw->rsum);
  rw->fed = calloc((size_t)rw->cap_slots, 1);
  rw->fetched = calloc((size_t)rw->cap_slots, 1);
  rw->to = malloc((size_t)rw->cap_slots * sizeof *rw->to);
  if (!rw->nread || !rw->rsum || !rw->fed || !rw->fetched || !rw->to) return oom();
  for (int i = 0; i < nn; i++)
    for (int k = 0; k < sm__node_num_outputs(sm__cgraph_node(rw->g, i)); k++) rw->to[rw->obase[i] + k] = (sm_edge){i, k};
  for (int i = 0; i < nfeeds; i++) {
    int s = slot(rw, feeds[i]);
    if (s >= 0) rw->fed[s] = 1;
  }
  for (int i = 0; i < nfetches; i++) {
    int s = slot(rw, fetches[i]);
    if (s >= 0) rw->fetched[s] = 1;
  }
  for (int p = 0; p < norder; p++) {
    int id = order[p];
    if (id < 0 || id >= nn || rw->pos[id] >= 0)
      return sm_status_new(SM_INTERNAL, "graph rewrite: order entry %d (%d) is not a node or repeats one", p, id);
    rw->ord[p] = id;
    rw->pos[id] = p;
  }
  rw->nord = norder;
  for (int p = 0; p < norder; p++) {
    const sm_node *nd = sm__cgraph_node(rw->g, order[p]);
    for (int i = 0; i < sm__node_num_control_inputs(nd); i++) {
      int c = sm__node_control_input(nd, i);
      if (c >= 0 && c < nn) rw->ctl_src[c] = 1;
    }
    count_reads(rw, order[p], +1);
  }
  if (!(rw->read0 = calloc((size_t)nn + 1, 1))) return oom();
  for (int i = 0; i < nn; i++)
    for (int k = 0; k < sm__node_num_outputs(sm__cgraph_node(rw->g, i)) && !rw->read0[i]; k++)
      rw->read0[i] = rw->nread[rw->obase[i] + k] > 0;
  return NULL;
}

sm_status *sm__rewrite_run_rules(const sm_cgraph *g, const int *order, int norder, const sm_edge *feeds, int nfeeds,
                                const sm_edge *fetches, int nfetches, const sm_rewrite_rule *const *tables,
                                sm_rewrite **out) {
  *out = NULL;
  if (!g || norder < 0 || (norder && !order) || nfeeds < 0 || nfetches < 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "graph rewrite: no graph or a bad order");
  sm_rewrite *rw = calloc(1, sizeof *rw);
  if (!rw) return oom();
  rw->g = g;
  rw->nn = sm__cgraph_num_nodes(g);
  sm_status *st = start(rw, order, norder, feeds, nfeeds, fetches, nfetches);
  for (int p = 0; p < rw->nord && !st; p++) {
    int id = rw->ord[p];
    if (id < 0) continue;
    const char *op = sm__node_op(sm__rewrite_node(rw, id));
    for (int t = 0; tables && tables[t] && !st && rw->ord[p] == id; t++)
      for (const sm_rewrite_rule *r = tables[t]; r->op && !st && rw->ord[p] == id; r++)
        if (!strcmp(r->op, op)) st = r->apply(rw, id);
  }
  if (!st) st = finish(rw);
  if (st) {
    sm__rewrite_free(rw);
    return st;
  }
  *out = rw;
  return NULL;
}

sm_status *sm__rewrite_run(const sm_cgraph *g, const int *order, int norder, const sm_edge *feeds, int nfeeds,
                          const sm_edge *fetches, int nfetches, sm_rewrite **out) {
  return sm__rewrite_run_rules(g, order, norder, feeds, nfeeds, fetches, nfetches, sm__rewrite_families, out);
}
