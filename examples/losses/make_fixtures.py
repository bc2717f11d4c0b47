#!/usr/bin/env python3
"""examples/losses/make_fixtures.py - the loss zoo's reference numbers.

Each loss of examples/losses/losses.c is written here in PyTorch, float64, in
the form its papers and trainers use (verl, TRL, OpenRLHF). For every case
this writes, under examples/losses/fixtures/, the inputs, the loss value and
the gradient of every input that requires grad, as .npy files named
CASE.INPUT.npy, CASE.loss.npy and CASE.grad.INPUT.npy. The tests
(test_zoo.c) need only these files; run this script again only when a loss
or a case changes:

    /usr/bin/python3 examples/losses/make_fixtures.py   # needs torch and numpy

The inputs are drawn from a seeded torch.Generator; the files are small
(a few hundred bytes each) and committed.
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures')
DT = torch.float64
B, T, G = 4, 6, 2  # sequences, tokens, GRPO group size (B = 2 groups of 2)


def agg(loss, mask, mode):
    """The aggregation modes RL trainers argue about (verl's agg_loss)."""
    if mode == 'token-mean':
        return (loss * mask).sum() / mask.sum()
    if mode == 'seq-mean-token-sum':
        return (loss * mask).sum(-1).mean()
    if mode == 'seq-mean-token-mean':
        return ((loss * mask).sum(-1) / mask.sum(-1)).mean()
    raise ValueError(mode)


# ---- the losses ----------------------------------------------------------------------------

def ppo(logp, old_logp, adv, mask, entropy, values, old_values, returns, clip=0.2,
        dual_clip=3.0, ent_coef=0.01, vf_coef=0.5, vf_clip=0.2, mode='token-mean'):
    ratio = torch.exp(logp - old_logp)
    pg1 = -adv * ratio
    pg2 = -adv * torch.clamp(ratio, 1 - clip, 1 + clip)
    pg = torch.maximum(pg1, pg2)
    pg = torch.where(adv < 0, torch.minimum(-adv * dual_clip, pg), pg)  # dual-clip
    vclip = old_values + torch.clamp(values - old_values, -vf_clip, vf_clip)
    vf = 0.5 * torch.maximum((values - returns) ** 2, (vclip - returns) ** 2)
    return agg(pg, mask, mode) - ent_coef * agg(entropy, mask, mode) + vf_coef * agg(vf, mask, mode)


def grpo_advantages(rewards, group, eps=1e-4):
    r = rewards.view(-1, group)
    a = (r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + eps)
    return a.reshape(-1)


def grpo(logp, old_logp, ref_logp, rewards, mask, clip=0.2, beta=0.04, kl='k3',
         mode='token-mean'):
    adv = grpo_advantages(rewards, G)[:, None]
    ratio = torch.exp(logp - old_logp)
    pg = -torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip, 1 + clip) * adv)
    d = ref_logp - logp
    est = {'k1': -d, 'k2': 0.5 * d ** 2, 'k3': torch.exp(d) - d - 1}[kl]
    return agg(pg + beta * est, mask, mode)


def dpo(pi_c, pi_r, ref_c, ref_r, beta=0.1, label_smoothing=0.0, kind='sigmoid',
        len_c=None, len_r=None, gamma=0.5):
    if kind == 'simpo':
        logits = beta * (pi_c / len_c - pi_r / len_r) - gamma
        return (-F.logsigmoid(logits)).mean()
    h = (pi_c - ref_c) - (pi_r - ref_r)
    if kind == 'ipo':
        return ((h - 1 / (2 * beta)) ** 2).mean()
    logits = beta * h  # sigmoid; label_smoothing > 0 is cDPO
    return (-(1 - label_smoothing) * F.logsigmoid(logits)
            - label_smoothing * F.logsigmoid(-logits)).mean()


def kto(pi, ref, desirable, kl_pi, kl_ref, beta=0.1, lambda_d=1.0, lambda_u=1.33):
    kl = torch.clamp((kl_pi - kl_ref).mean(), min=0).detach()
    r = pi - ref
    loss_d = lambda_d * (1 - torch.sigmoid(beta * (r - kl)))
    loss_u = lambda_u * (1 - torch.sigmoid(beta * (kl - r)))
    return torch.where(desirable, loss_d, loss_u).mean()


def reinforce(logp, rewards, mask):
    adv = (rewards - rewards.mean())[:, None]  # the batch-mean baseline
    return agg(-adv * logp, mask, 'token-mean')


def gae(rewards, values, mask, gamma, lam):
    """OpenRLHF's get_advantages_and_returns (the loop over t, right-padded rows),
    with the bootstrap column of values (B, T + 1) used where a row runs to its end."""
    B, T = rewards.shape
    boot = values[:, T] * mask[:, T - 1] if values.shape[1] == T + 1 else torch.zeros(B, dtype=DT)
    v = values[:, :T] * mask
    r = rewards * mask
    lastgaelam = 0
    adv = []
    for t in reversed(range(T)):
        nextvalues = v[:, t + 1] if t < T - 1 else boot
        delta = r[:, t] + gamma * nextvalues - v[:, t]
        lastgaelam = delta + gamma * lam * lastgaelam
        adv.append(lastgaelam)
    adv = torch.stack(adv[::-1], 1)
    return adv, adv + v


def masked_mean(x, mask):
    return (x * mask).sum() / mask.sum()


def ppo_gae(logp, old_logp, new_values, rewards, values, mask, gamma=0.99, lam=0.95, clip=0.2,
            vf_clip=0.2, vf_coef=0.5):
    """PPO on GAE advantages: OpenRLHF's PolicyLoss and ValueLoss (CleanRL's ppo.py has
    the same clipped value loss), token means over the mask."""
    with torch.no_grad():  # advantages and returns are constants, as in the trainers
        adv, ret = gae(rewards, values, mask, gamma, lam)
    ratio = torch.exp(logp - old_logp)
    pg = -torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip, 1 + clip) * adv)
    old_v = values[:, :rewards.shape[1]].detach()
    v_clip = old_v + torch.clamp(new_values - old_v, -vf_clip, vf_clip)
    vf = torch.maximum((new_values - ret) ** 2, (v_clip - ret) ** 2)
    return masked_mean(pg, mask) + vf_coef * 0.5 * masked_mean(vf, mask)


def zloss(logits, targets, mask, z_coef=1e-3):
    """Cross-entropy plus PaLM's z-loss on (B, T, V) logits, token means over the mask."""
    ce = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction='none')
    lse = torch.logsumexp(logits, -1)
    return masked_mean(ce.view(targets.shape), mask) + z_coef * masked_mean(lse ** 2, mask)


def pretrain(logits, targets, label_smoothing=0.1, z_coef=1e-4):
    ce = F.cross_entropy(logits, targets, ignore_index=-100, label_smoothing=label_smoothing)
    keep = targets != -100
    lse = torch.logsumexp(logits, -1)
    return ce + z_coef * (lse[keep] ** 2).mean()


# ---- inputs and writing ----------------------------------------------------------------------

gen = torch.Generator().manual_seed(20261126)


def randn(*shape, scale=1.0):
    return torch.randn(*shape, generator=gen, dtype=DT) * scale


def save(case, name, t):
    a = t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    np.save(os.path.join(OUT, '%s.%s.npy' % (case, name)), a)


def run(case, fn, inputs, grads, **kw):
    """Saves inputs, loss and the gradients of the inputs named in grads."""
    leaves = {}
    for k, v in inputs.items():
        if k in grads:
            v = v.clone().requires_grad_(True)
        leaves[k] = v
        save(case, k, v)
    loss = fn(**leaves, **kw)
    loss.backward()
    save(case, 'loss', loss)
    for k in grads:
        save(case, 'grad.' + k, leaves[k].grad)
    return float(loss)


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.endswith('.npy'):
            os.remove(os.path.join(OUT, f))
    mask = torch.ones(B, T, dtype=DT)
    mask[0, 4:] = 0  # padded tails
    mask[2, 2:] = 0
    logp = -torch.rand(B, T, generator=gen, dtype=DT) * 3
    old = logp + randn(B, T, scale=0.3)  # ratios around 1, some clipped
    ref = logp + randn(B, T, scale=0.2)
    rl = {'logp': logp, 'old_logp': old, 'mask': mask}

    adv = randn(B, T)
    old_ppo = old.clone()
    old_ppo[1, :3] = logp[1, :3] - 1.5  # ratio e^1.5 > dual_clip 3 ...
    adv[1, :3] = -adv[1, :3].abs() - 0.1  # ... with negative advantages: dual-clip acts
    ppo_in = dict(rl, old_logp=old_ppo, adv=adv,
                  entropy=torch.rand(B, T, generator=gen, dtype=DT) * 2,
                  values=randn(B, T), old_values=randn(B, T), returns=randn(B, T))
    for mode in ('token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean'):
        run('ppo_' + mode.replace('-', '_'), ppo, ppo_in, ['logp', 'entropy', 'values'], mode=mode)

    rewards = torch.tensor([1.0, 0.0, 0.5, 2.0], dtype=DT)
    grpo_in = dict(rl, ref_logp=ref, rewards=rewards)
    for kl in ('k1', 'k2', 'k3'):
        for mode in ('token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean'):
            run('grpo_%s_%s' % (kl, mode.replace('-', '_')), grpo, grpo_in, ['logp'], kl=kl,
                mode=mode)

    pref = {'pi_c': -torch.rand(B, generator=gen, dtype=DT) * 40,
            'pi_r': -torch.rand(B, generator=gen, dtype=DT) * 40,
            'ref_c': -torch.rand(B, generator=gen, dtype=DT) * 40,
            'ref_r': -torch.rand(B, generator=gen, dtype=DT) * 40}
    run('dpo', dpo, pref, ['pi_c', 'pi_r'])
    run('cdpo', dpo, pref, ['pi_c', 'pi_r'], label_smoothing=0.1)
    run('ipo', dpo, pref, ['pi_c', 'pi_r'], kind='ipo')
    simpo_in = dict(pref, len_c=torch.tensor([12.0, 30.0, 7.0, 21.0], dtype=DT),
                    len_r=torch.tensor([25.0, 9.0, 14.0, 40.0], dtype=DT))
    run('simpo', dpo, simpo_in, ['pi_c', 'pi_r'], kind='simpo', beta=2.0)

    kto_in = {'pi': pref['pi_c'], 'ref': pref['ref_c'],
              'desirable': torch.tensor([True, False, True, False]),
              'kl_pi': -torch.rand(B, generator=gen, dtype=DT) * 30,
              'kl_ref': -torch.rand(B, generator=gen, dtype=DT) * 30}
    run('kto', kto, kto_in, ['pi'])

    run('reinforce', reinforce, {'logp': logp, 'rewards': rewards, 'mask': mask}, ['logp'])

    targets = torch.tensor([3, -100, 0, 7, 7, -100], dtype=torch.int64)
    run('pretrain', pretrain, {'logits': randn(6, 9, scale=2.0), 'targets': targets}, ['logits'])

    # PPO on GAE: rows 0 and 2 end early (terminal), rows 1 and 3 run to T (bootstrapped
    # from the last column of values, or not when values is (B, T)); ratios around 1
    gae_in = {'logp': logp, 'old_logp': old, 'new_values': randn(B, T),
              'rewards': randn(B, T), 'values': randn(B, T + 1), 'mask': mask}
    for case, vals in (('ppo_gae_bootstrap', gae_in['values']),
                       ('ppo_gae_terminal', gae_in['values'][:, :T])):
        run(case, ppo_gae, dict(gae_in, values=vals), ['logp', 'new_values'])
        adv, ret = gae(gae_in['rewards'], vals, mask, 0.99, 0.95)
        save(case, 'adv', adv)
        save(case, 'returns', ret)

    # z-loss on (B, T, V) logits (the fused op's lse with two leading dims)
    run('zloss', zloss, {'logits': randn(2, 3, 5, scale=2.0),
                         'targets': torch.tensor([[1, 4, 0], [2, 2, 3]], dtype=torch.int64),
                         'mask': torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]], dtype=DT)},
        ['logits'])


if __name__ == '__main__':
    main()
