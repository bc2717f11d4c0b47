/* cli/linstep.h - one measured training step of the output layer's log-prob
 * and entropy from hidden states, shared by `tapegrad bench linear-logprob`,
 * `tapegrad demo linear` and the tour's fifth section.
 *
 * Contract:
 *  - cli_lin_inputs() makes seeded inputs on `device`: hidden "hidden"
 *    (seq, d) normal(0, 1) and weight "weight" (vocab, d) normal(0,
 *    2 / sqrt(d)) (logits of std about 2, as cli_lp_inputs's), both
 *    requiring grad, in dtype f32, f64 or bf16 (drawn in f32 and rounded);
 *    targets "targets" (seq) uniform in
 *    [0, vocab) with 1% of the rows -100 (ignored). The same numbers for the
 *    same (seed, seq, d, vocab). On TG_CUDA they are made on the host and
 *    copied.
 *  - cli_lin_ppo_inputs() makes the per-token constants of the PPO loss of
 *    the two loss modes, (seq) each, in the compute dtype (f32 for bf16
 *    inputs) on the inputs' device: the old log-probs (the current ones,
 *    from tg_linear_logprob_entropy under no-grad, plus normal(0, 0.2):
 *    about a third of the ratios are clipped), the advantages normal(0, 1)
 *    and the token-mean weights (1 / kept rows on kept rows, 0 on ignored
 *    ones); clip 0.2, entropy coefficient 0.01. cli_lin_ppo_release()
 *    releases them. cli_lin_ppo_loss() is that loss as a tg_linear_loss_fn
 *    (user: the cli_lin_ppo) on one chunk of rows:
 *      sum(w * (-min(r adv, clamp(r, 1 - clip, 1 + clip) adv) - ent_coef H)),
 *      r = exp(logprob - old);
 *    it counts the chunks it sees and the largest one in the cli_lin_ppo.
 *  - cli_lin_step() runs one step:
 *      forward   CLI_LIN_MATERIALIZED: logits = hidden @ weight^T (tg_matmul),
 *                then tg_logprob_entropy on them (the fused logits op);
 *                CLI_LIN_FUSED: tg_linear_logprob_entropy with the
 *                configuration's chunk rows and workspace budget;
 *                CLI_LIN_LOSS: tg_linear_loss with cli_lin_ppo_loss (the
 *                loss and its gradient, in forward), the same chunk rows and
 *                budget; CLI_LIN_FUSED_LOSS: CLI_LIN_FUSED's call;
 *      loss      -mean(logprob) - 0.01 * mean(entropy) when entropy_grad,
 *                else -mean(logprob) (the entropy made, not differentiated);
 *                CLI_LIN_FUSED_LOSS: cli_lin_ppo_loss on the whole batch as
 *                one chunk (the loss CLI_LIN_LOSS computes chunk by chunk);
 *                CLI_LIN_LOSS: none (the entry made it);
 *      hook      called with the loss just before backward, if given;
 *      backward  tg_backward(loss);
 *    then releases everything it made and both inputs' gradients. Measured
 *    with the library's exact accounting on the inputs' device: fwd_ms (the
 *    forward ops), bwd_ms (loss + backward), peak_bytes (peak_total during
 *    the step minus the bytes live before it), saved_bytes (saved right after
 *    the forward), grad_bytes (the two gradients' bytes; for bf16 inputs
 *    also their f32 accumulators, which exist with them at the end). On TG_CUDA the
 *    clock is read after tg_cuda_synchronize().
 *  - Failures: one line "tapegrad: <who>: <what> failed: STATUS: message"
 *    on stderr and CLI_EXIT_FAIL; with TG_CUDA a TG_ERR_NOMEM prints nothing
 *    and returns CLI_LIN_NOMEM. A step that leaves library bytes live fails.
 */
#ifndef TAPEGRAD_CLI_LINSTEP_H
#define TAPEGRAD_CLI_LINSTEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tapegrad.h>

#include "lpstep.h"

#define CLI_LIN_NOMEM CLI_LP_NOMEM

typedef enum cli_lin_mode {
    CLI_LIN_MATERIALIZED = 0,
    CLI_LIN_FUSED = 1,
    CLI_LIN_LOSS = 2,      /* tg_linear_loss with the PPO loss */
    CLI_LIN_FUSED_LOSS = 3 /* tg_linear_logprob_entropy, then the same loss */
} cli_lin_mode;

/* The PPO loss of the loss modes: its constants (seq) and what the callback
 * saw. */
typedef struct cli_lin_ppo {
    tg_tensor *old_logprob, *advantages, *weights;
    double clip, ent_coef;
    int64_t chunks, max_chunk_rows; /* counted by cli_lin_ppo_loss */
} cli_lin_ppo;

typedef struct cli_lin_config {
    cli_lin_mode mode;
    bool entropy_grad;       /* the loss modes: ppo->ent_coef != 0 */
    int64_t chunk_rows;      /* fused, loss: rows per chunk, 0 = from the budget */
    size_t workspace_bytes;  /* fused, loss: the budget */
    tg_device device;
    cli_lin_ppo *ppo;        /* the loss modes: the loss's constants */
} cli_lin_config;

typedef struct cli_lin_measure {
    double fwd_ms, bwd_ms;
    size_t peak_bytes, saved_bytes, grad_bytes;
    double loss;
} cli_lin_measure;

typedef cli_lp_hook cli_lin_hook;

int cli_lin_inputs(const char *who, int64_t seq, int64_t d, int64_t vocab, tg_dtype dt,
                   tg_device device, uint64_t seed, tg_tensor **hidden, tg_tensor **weight,
                   tg_tensor **targets);
int cli_lin_ppo_inputs(const char *who, tg_tensor *hidden, tg_tensor *weight, tg_tensor *targets,
                       uint64_t seed, cli_lin_ppo *ppo);
void cli_lin_ppo_release(cli_lin_ppo *ppo);
tg_status cli_lin_ppo_loss(const tg_linear_loss_chunk *chunk, void *user, tg_tensor **loss);
int cli_lin_step(const char *who, tg_tensor *hidden, tg_tensor *weight, tg_tensor *targets,
                 const cli_lin_config *c, cli_lin_measure *m, cli_lin_hook hook, void *user);
/* The name of a mode: "materialized", "fused" (with entropy_grad false:
 * "fused-no-entropy-grad"), "loss", "fused+loss". */
const char *cli_lin_mode_name(const cli_lin_config *c);

#endif
