"""Expected values for spec/state_dict_semantics_spec.lua: PyTorch's learning rates of
schedulers composed on one optimizer (chainable form) and of schedules resumed with
last_epoch. Run with Debian's python3 and torch:  /usr/bin/python3 tools/gen_sched_chain.py
and paste its output into the spec (lrs[1] is the lr after construction, or after the load,
lrs[k + 1] after the k-th step of every scheduler)."""
import torch

S = torch.optim.lr_scheduler


def opt(lr=0.1):
    return torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=lr, momentum=0.9)


def lrs_of(o, scheds, steps):
    """o's lr now and after each of steps rounds of o.step() and every scheduler's step()."""
    lrs = [o.param_groups[0]["lr"]]
    for _ in range(steps):
        o.step()
        for s in scheds:
            s.step()
        lrs.append(o.param_groups[0]["lr"])
    return lrs


def chained(make, steps):
    o = opt()
    return lrs_of(o, make(o), steps)


def resumed(make, k, steps):
    """k steps of make(o), then a new optimizer loads o's state and make(o2, last_epoch=k)."""
    o = opt()
    s = make(o, -1)
    for _ in range(k):
        o.step()
        s.step()
    o2 = opt()
    o2.load_state_dict(o.state_dict())
    return lrs_of(o2, [make(o2, k)], steps)


def reloaded(make, k, steps):
    """k steps of make(o); a fresh optimizer and schedule load their state dicts, then step."""
    o = opt()
    s = make(o)
    for _ in range(k):
        o.step()
        s.step()
    o2 = opt()
    s2 = make(o2)
    o2.load_state_dict(o.state_dict())
    s2.load_state_dict(s.state_dict())
    return lrs_of(o2, [s2], steps)


def seq(o):
    return S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=3), S.ExponentialLR(o, gamma=0.9)],
                          milestones=[3])


cases = {
    "reload_seq": reloaded(seq, 2, 5),
    "reload_cos": reloaded(lambda o: S.CosineAnnealingLR(o, T_max=5), 3, 5),
    "step_exp": chained(lambda o: [S.StepLR(o, step_size=3, gamma=0.5), S.ExponentialLR(o, gamma=0.9)], 10),
    "cos_linear": chained(lambda o: [S.CosineAnnealingLR(o, T_max=6, eta_min=0.001),
                                     S.LinearLR(o, start_factor=0.5, total_iters=4)], 14),
    "multistep_exp": chained(lambda o: [S.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.5),
                                        S.ExponentialLR(o, gamma=0.8)], 7),
    "resume_step": resumed(lambda o, e: S.StepLR(o, step_size=3, gamma=0.5, last_epoch=e), 4, 6),
    "resume_cos": resumed(lambda o, e: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001, last_epoch=e), 4, 6),
    "resume_onecycle": resumed(lambda o, e: S.OneCycleLR(o, max_lr=1, total_steps=10, last_epoch=e), 3, 3),
    "resume_warm": resumed(lambda o, e: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01,
                                                                     last_epoch=e), 4, 4),
    "resume_exp": resumed(lambda o, e: S.ExponentialLR(o, gamma=0.9, last_epoch=e), 3, 4),
}
for name in sorted(cases):
    print("  %s = { %s }," % (name, ", ".join(repr(v) for v in cases[name])))
