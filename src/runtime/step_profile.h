/* step_profile.h - per-step timings of a plan's runs (SM_STEP_PROFILE=FILE; step_profile.c says
 * what is measured and the file's format). plan.c makes one per plan, executor.c fills it. */
#ifndef SM_RUNTIME_STEP_PROFILE_H
#define SM_RUNTIME_STEP_PROFILE_H
#include <stdint.h>

struct sm_plan;
typedef struct sm_step_prof sm_step_prof;

/* A profile for a plan of nsteps steps, or NULL: SM_STEP_PROFILE unset or empty (or no memory). */
sm_step_prof *sm__step_prof_new(int nsteps);
/* The monotonic clock in ns. */
int64_t sm__step_prof_now(void);
/* One call of step `step`'s kernel took ns (p NULL: nothing). */
void sm__step_prof_step(sm_step_prof *p, int step, int64_t ns);
/* One run took total_ns, kernel_ns of it in kernels (p NULL: nothing). */
void sm__step_prof_run(sm_step_prof *p, int64_t total_ns, int64_t kernel_ns);
/* Appends the profile to its file (when the plan ran) naming plan's steps, and frees it (NULL-safe). */
void sm__step_prof_free(sm_step_prof *p, const struct sm_plan *plan);

#endif
