/* frames.c - TF1 loop frames turned into loops when a graph is compiled (functionalization, as
 * TensorFlow's tf2xla/functionalize_while.cc does), so the rest of the runtime sees a DAG.
 *
 * A loop written by tf.compat.v1.while_loop (control flow v1) is a cycle of nodes sharing a frame:
 *   Enter(x, frame_name=F) -> Merge(Enter, NextIteration) -> cond ops -> LoopCond(pred)
 *   Switch(Merge, LoopCond): output 0 -> Exit (the loop's result), output 1 -> body -> NextIteration
 * plus Enter(v, is_constant=true) for every loop invariant. Every frame recognised here becomes one
 * node of op "_TF1Loop" (not in any GraphDef) whose inputs are the values entering the frame (loop
 * vars, then invariants) and whose outputs are the loop vars at exit; each Exit becomes an Identity
 * of that output, and control edges onto the frame's Enter / Merge / Switch / LoopCond /
 * NextIteration nodes are dropped (they only place a node in the frame). The node is named after
 * the frame (frame_name, made unique among the node names). The node's sm_frame names
 * the edges its kernel (src/ops/control_v1.c) feeds and fetches to compile cond and body into
 * sub-plans of the same graph: cond feeds the Merge outputs and invariant Enters and fetches the
 * LoopCond input; body feeds the Switch:1 outputs too and fetches the NextIteration inputs. Nested
 * frames need nothing more: an inner loop's node sits in the outer body.
 *
 * A frame that does not have this shape (a non-constant Enter not feeding a Merge, a Merge without
 * NextIteration or Switch, Switches on different LoopConds, a Switch:0 read by anything but Exit)
 * is left as it is, and its nodes carry the reason (sm__node_cf_error): a plan that reaches it
 * fails on the cycle with that reason and the node's name, never runs it wrongly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

static sm_status *oom(void) { return sm_status_new(SM_NO_MEMORY, "out of memory turning TF1 loops into loops"); }

static int op_is(const sm_node *n, const char *a, const char *b) { return !strcmp(n->op, a) || !strcmp(n->op, b); }
static int is_enter(const sm_node *n) { return op_is(n, "Enter", "RefEnter"); }

/* Data consumers of each node: cons[cstart[v] .. cstart[v+1]) as (node, input index). */
typedef struct consumers {
  int *cstart;
  sm_edge *cons;
} consumers;

static sm_status *consumers_build(const sm_cgraph *g, consumers *c) {
  c->cstart = calloc((size_t)g->n + 2, sizeof *c->cstart);
  size_t tot = 0;
  if (!c->cstart) return oom();
  for (int v = 0; v < g->n; v++)
    for (int i = 0; i < g->nodes[v].ninputs; i++) {
      c->cstart[g->nodes[v].inputs[i].node + 1]++;
      tot++;
    }
  for (int v = 0; v < g->n; v++) c->cstart[v + 1] += c->cstart[v];
  int *cur = malloc(((size_t)g->n + 1) * sizeof *cur);
  c->cons = malloc((tot + 1) * sizeof *c->cons);
  if (!cur || !c->cons) {
    free(cur);
    return oom();
  }
  memcpy(cur, c->cstart, (size_t)g->n * sizeof *cur);
  for (int v = 0; v < g->n; v++)
    for (int i = 0; i < g->nodes[v].ninputs; i++) c->cons[cur[g->nodes[v].inputs[i].node]++] = (sm_edge){v, i};
  free(cur);
  return NULL;
}

/* The one consumer of output `out` of node v that passes `want` (NULL: any); -1 when none, -2 when
 * more than one. *other counts the consumers of that output that do not pass. */
static int consumer_of(const sm_cgraph *g, const consumers *c, int v, int out, int (*want)(const sm_node *),
                       int *other) {
  int found = -1;
  *other = 0;
  for (int k = c->cstart[v]; k < c->cstart[v + 1]; k++) {
    const sm_node *x = &g->nodes[c->cons[k].node];
    if (x->inputs[c->cons[k].index].index != out) continue;
    if (want && !want(x)) {
      (*other)++;
      continue;
    }
    found = found == -1 ? c->cons[k].node : -2;
  }
  return found;
}

static int is_merge(const sm_node *n) { return op_is(n, "Merge", "RefMerge") && n->ninputs == 2; }
static int is_switch(const sm_node *n) { return op_is(n, "Switch", "RefSwitch") && n->ninputs == 2; }
static int is_exit(const sm_node *n) { return op_is(n, "Exit", "RefExit"); }

/* The one Switch of Merge m's output 0 on a LoopCond (a cond in the loop's cond may Switch on it
 * too); -1 when there is none or more than one. */
static int loop_switch(const sm_cgraph *g, const consumers *c, int m) {
  int found = -1;
  for (int k = c->cstart[m]; k < c->cstart[m + 1]; k++) {
    const sm_node *x = &g->nodes[c->cons[k].node];
    if (!is_switch(x) || c->cons[k].index != 0 || x->inputs[0].index != 0) continue;
    if (strcmp(g->nodes[x->inputs[1].node].op, "LoopCond")) continue;
    if (found >= 0) return -1;
    found = c->cons[k].node;
  }
  return found;
}

/* The frame_name of an Enter node, as a new string. */
static char *frame_name(const sm_node *n) {
  const char *s;
  size_t len;
  sm_status *st = sm__node_attr_string(n, "frame_name", &s, &len);
  if (st) {
    sm_status_free(st);
    s = "";
    len = 0;
  }
  char *r = malloc(len + 1);
  if (r) {
    memcpy(r, s, len);
    r[len] = 0;
  }
  return r;
}

static int enter_is_constant(const sm_node *n) {
  int v = 0;
  sm_status *st = sm__node_attr_bool(n, "is_constant", &v);
  sm_status_free(st);
  return v;
}

void sm__frames_free(sm_cgraph *g) {
  for (int i = 0; i < g->nframes; i++) {
    sm_frame *f = g->frames[i];
    if (!f) continue;
    free((char *)f->name);
    free(f->enter_in);
    free(f->merge_out);
    free(f->body_in);
    free(f->next_in);
    free(f->inv_out);
    free(f->next_ctl);
    free(f->error);
    free(f);
  }
  free(g->frames);
  g->frames = NULL;
  g->nframes = 0;
}

/* Records why frame f cannot be a loop on every node of it we looked at. */
static void frame_refuse(sm_cgraph *g, sm_frame *f, const int *nodes, int n, const char *fmt, const char *a) {
  char buf[512];
  snprintf(buf, sizeof buf, fmt, a);
  size_t len = strlen(buf) + strlen(f->name) + 96;
  free(f->error);
  if (!(f->error = malloc(len))) return;
  snprintf(f->error, len, "TF1 loop frame '%s' is not a loop this runtime can run: %s", f->name, buf);
  for (int i = 0; i < n; i++)
    if (nodes[i] >= 0) g->nodes[nodes[i]].cf_error = f->error;
}

/* Analyses frame f (its Enter nodes: enters[0..nenter)) and, when it is a loop, fills f. Returns 1
 * for a loop, 0 for a frame refused (f->error set), -1 out of memory. */
static int frame_analyse(sm_cgraph *g, const consumers *c, sm_frame *f, const int *enters, int nenter, int *roles) {
  int nv = 0, ni = 0, lc = -1, bad = 0;
  for (int i = 0; i < nenter; i++) {
    if (enter_is_constant(&g->nodes[enters[i]]))
      ni++;
    else
      nv++;
  }
  f->enter_in = malloc(((size_t)nenter + 1) * sizeof *f->enter_in);
  f->merge_out = malloc(((size_t)nv + 1) * sizeof *f->merge_out);
  f->body_in = malloc(((size_t)nv + 1) * sizeof *f->body_in);
  f->next_in = malloc(((size_t)nv + 1) * sizeof *f->next_in);
  f->inv_out = malloc(((size_t)ni + 1) * sizeof *f->inv_out);
  int *seen = malloc((4 * (size_t)nv + (size_t)nenter + 2) * sizeof *seen); /* nodes for the refusal */
  if (!f->enter_in || !f->merge_out || !f->body_in || !f->next_in || !f->inv_out || !seen) {
    free(seen);
    return -1;
  }
  int nseen = 0;
  for (int i = 0; i < nenter; i++) seen[nseen++] = enters[i];
  for (int i = 0; i < nenter && !bad; i++) {
    const sm_node *e = &g->nodes[enters[i]];
    if (e->ninputs != 1) {
      frame_refuse(g, f, seen, nseen, "Enter '%s' does not have one input", e->name);
      bad = 1;
      break;
    }
    if (enter_is_constant(e)) {
      f->inv_out[f->ninv] = (sm_edge){enters[i], 0};
      f->enter_in[nv + f->ninv++] = e->inputs[0];
      continue;
    }
    int other, m = consumer_of(g, c, enters[i], 0, is_merge, &other);
    if (m < 0 || other) {
      frame_refuse(g, f, seen, nseen, "Enter '%s' (not is_constant) does not feed exactly one Merge", e->name);
      bad = 1;
      break;
    }
    const sm_node *mn = &g->nodes[m];
    int back = mn->inputs[0].node == enters[i] ? mn->inputs[1].node : mn->inputs[0].node;
    seen[nseen++] = m;
    if (!op_is(&g->nodes[back], "NextIteration", "RefNextIteration") || g->nodes[back].ninputs != 1) {
      frame_refuse(g, f, seen, nseen, "Merge '%s' does not merge an Enter with a NextIteration", mn->name);
      bad = 1;
      break;
    }
    seen[nseen++] = back;
    int sw = loop_switch(g, c, m);
    if (sw < 0 || (lc >= 0 && g->nodes[sw].inputs[1].node != lc)) {
      frame_refuse(g, f, seen, nseen, "Merge '%s' does not feed one Switch on the frame's LoopCond", mn->name);
      bad = 1;
      break;
    }
    seen[nseen++] = sw;
    lc = g->nodes[sw].inputs[1].node;
    seen[nseen++] = lc;
    if (consumer_of(g, c, sw, 0, is_exit, &other), other) {
      frame_refuse(g, f, seen, nseen, "the false output of Switch '%s' is read by a node that is not an Exit",
                   g->nodes[sw].name);
      bad = 1;
      break;
    }
    int k = f->nvars++;
    f->enter_in[k] = e->inputs[0];
    f->merge_out[k] = (sm_edge){m, 0};
    f->body_in[k] = (sm_edge){sw, 1};
    f->next_in[k] = g->nodes[back].inputs[0];
  }
  if (!bad && (f->nvars == 0 || lc < 0 || g->nodes[lc].ninputs != 1)) {
    frame_refuse(g, f, seen, nseen, "%s", "it has no loop variable (no Enter feeding a Merge) or no LoopCond");
    bad = 1;
  }
  if (bad) {
    free(seen);
    return f->error ? 0 : -1;
  }
  f->pred = g->nodes[lc].inputs[0];
  /* the frame's structure nodes: control edges onto them are dropped, the NextIterations' own
   * control inputs run as the body's targets */
  for (int i = 0; i < nseen; i++) roles[seen[i]] = 1;
  int nctl = 0;
  for (int k = 0; k < f->nvars; k++) {
    const sm_node *mn = &g->nodes[f->merge_out[k].node];
    for (int j = 0; j < 2; j++) {
      const sm_node *x = &g->nodes[mn->inputs[j].node];
      if (op_is(x, "NextIteration", "RefNextIteration")) nctl += x->ncontrol;
    }
  }
  if (!(f->next_ctl = malloc(((size_t)nctl + 1) * sizeof *f->next_ctl))) {
    free(seen);
    return -1;
  }
  for (int k = 0; k < f->nvars; k++) {
    const sm_node *mn = &g->nodes[f->merge_out[k].node];
    for (int j = 0; j < 2; j++) {
      const sm_node *x = &g->nodes[mn->inputs[j].node];
      if (op_is(x, "NextIteration", "RefNextIteration"))
        for (int q = 0; q < x->ncontrol; q++) f->next_ctl[f->nnext_ctl++] = x->control[q];
    }
  }
  free(seen);
  return 1;
}

/* Appends frame f's "_TF1Loop" node and turns its Exits into Identities of its outputs. */
static sm_status *frame_apply(sm_cgraph *g, const consumers *c, sm_frame *f, const int *enters, int nenter) {
  if (g->n >= sm__graph_max_nodes)
    return sm_status_new(SM_OUT_OF_RANGE, "graph has more than %d nodes (at loop '%s')", sm__graph_max_nodes, f->name);
  if (g->n == g->cap) {
    int nc = g->cap ? g->cap * 2 : 64;
    sm_node *nn = realloc(g->nodes, (size_t)nc * sizeof *nn);
    if (!nn) return oom();
    g->nodes = nn;
    g->cap = nc;
  }
  int id = g->n;
  sm_node *L = &g->nodes[id];
  memset(L, 0, sizeof *L);
  int nin = f->nvars + f->ninv, nctl = 0;
  for (int i = 0; i < nenter; i++) nctl += g->nodes[enters[i]].ncontrol;
  size_t len = strlen(f->name) + 24;
  L->name = malloc(len);
  L->inputs = malloc(((size_t)nin + 1) * sizeof *L->inputs);
  L->in_dtypes = malloc(((size_t)nin + 1) * sizeof *L->in_dtypes);
  L->out_dtypes = malloc(((size_t)f->nvars + 1) * sizeof *L->out_dtypes);
  L->control = malloc(((size_t)nctl + 1) * sizeof *L->control);
  g->n++; /* freed with the graph from here on */
  if (!L->name || !L->inputs || !L->in_dtypes || !L->out_dtypes || !L->control) return oom();
  /* named after the frame (made unique), and found by that name like any node */
  snprintf(L->name, len, "%s", f->name);
  for (int k = 1; sm__smap_get(&g->names, L->name) >= 0; k++) snprintf(L->name, len, "%s_%d", f->name, k);
  if (!sm__smap_put(&g->names, L->name, id)) return oom();
  L->op = "_TF1Loop";
  L->device = "";
  L->frame = f;
  L->ninputs = nin;
  L->noutputs = f->nvars;
  memcpy(L->inputs, f->enter_in, (size_t)nin * sizeof *L->inputs);
  for (int i = 0; i < nin; i++) {
    const sm_node *src = &g->nodes[L->inputs[i].node];
    int dt = src->out_dtypes[L->inputs[i].index];
    /* a RefEnter passes a ref variable itself (its handle), so the loop reads and assigns it live;
     * any other input enters as a value */
    int ref = i >= f->nvars && op_is(&g->nodes[f->inv_out[i - f->nvars].node], "RefEnter", "RefEnter");
    L->in_dtypes[i] = ref ? dt : sm_dtype_base(dt);
  }
  for (int k = 0; k < f->nvars; k++) L->out_dtypes[k] = sm_dtype_base(g->nodes[f->merge_out[k].node].out_dtypes[0]);
  for (int i = 0; i < nenter; i++) {
    const sm_node *e = &g->nodes[enters[i]];
    for (int q = 0; q < e->ncontrol; q++) L->control[L->ncontrol++] = e->control[q];
  }
  for (int k = 0; k < f->nvars; k++) {
    int sw = f->body_in[k].node;
    for (int q = c->cstart[sw]; q < c->cstart[sw + 1]; q++) {
      sm_node *x = &g->nodes[c->cons[q].node];
      if (!is_exit(x) || x->inputs[c->cons[q].index].index != 0) continue;
      x->op = "Identity";
      x->def = sm__cgraph_op_def(g, "Identity");
      x->inputs[0] = (sm_edge){id, k};
      x->ncontrol = 0;
    }
  }
  g->nedges += nin + nctl;
  return NULL;
}

static sm_status *add_frame(sm_cgraph *g, sm_frame **out) {
  *out = NULL;
  sm_frame **nf = realloc(g->frames, ((size_t)g->nframes + 1) * sizeof *nf);
  if (!nf) return oom();
  g->frames = nf;
  if (!(g->frames[g->nframes] = calloc(1, sizeof **nf))) return oom();
  *out = g->frames[g->nframes++];
  return NULL;
}

sm_status *sm__cgraph_functionalize(sm_cgraph *g) {
  int nenter = 0, n0 = g->n;
  for (int v = 0; v < n0; v++) nenter += is_enter(&g->nodes[v]);
  if (!nenter) return NULL;
  consumers c = {0};
  int *enters = malloc(((size_t)nenter + 1) * sizeof *enters), *roles = calloc((size_t)n0 + 1, sizeof *roles);
  char **names = calloc((size_t)n0 + 1, sizeof *names); /* frame name per Enter node */
  unsigned char *done = calloc((size_t)n0 + 1, 1);
  sm_status *s = !enters || !roles || !names || !done ? oom() : consumers_build(g, &c);
  for (int v = 0; v < n0 && !s; v++)
    if (is_enter(&g->nodes[v]) && !(names[v] = frame_name(&g->nodes[v]))) s = oom();
  /* one frame at a time: its Enter nodes, in node order */
  for (int v = 0; v < n0 && !s; v++) {
    if (!names[v] || done[v]) continue;
    int ne = 0;
    for (int u = v; u < n0; u++)
      if (names[u] && !done[u] && !strcmp(names[u], names[v])) {
        enters[ne++] = u;
        done[u] = 1;
      }
    sm_frame *f;
    if ((s = add_frame(g, &f))) break;
    f->name = names[v];
    names[v] = NULL;
    int r = frame_analyse(g, &c, f, enters, ne, roles);
    if (r < 0)
      s = oom();
    else if (r > 0)
      s = frame_apply(g, &c, f, enters, ne);
  }
  /* control edges onto a loop's structure nodes only placed a node in its frame */
  for (int v = 0; v < g->n && !s; v++) {
    sm_node *x = &g->nodes[v];
    int k = 0;
    for (int q = 0; q < x->ncontrol; q++)
      if (x->control[q] >= n0 || !roles[x->control[q]]) x->control[k++] = x->control[q];
    x->ncontrol = k;
  }
  for (int v = 0; v < n0 && names; v++) free(names[v]);
  free(names);
  free(enters);
  free(roles);
  free(done);
  free(c.cstart);
  free(c.cons);
  return s;
}

const sm_frame *sm__node_frame(const sm_node *n) { return n ? n->frame : NULL; }
const char *sm__node_cf_error(const sm_node *n) { return n ? n->cf_error : NULL; }
