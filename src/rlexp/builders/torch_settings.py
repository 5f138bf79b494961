"""Settings that make torch cheaper for a run without changing any number it computes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from operator import attrgetter
from typing import Any

import torch


@contextmanager
def unchecked_distributions() -> Iterator[None]:
    """torch.distributions without their argument checks, restored afterwards.

    SB3 builds a distribution at every policy step and every minibatch, and each checks its parameters
    (a few percent of PPO's training time on small networks); rlexp's diagnostics already stop a run
    whose observations, losses or parameters turn NaN or inf. torch.export, for ``rlexp export``, cannot
    follow the checks' data-dependent branches at all.
    """
    before = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        torch.distributions.Distribution.set_default_validate_args(before)


# torch's optimizers whose foreach updates were checked equal, bit for bit, to their loop over tensors
FOREACH_CHECKED = (torch.optim.Adam, torch.optim.AdamW, torch.optim.RMSprop)


def foreach_optimizers(model: Any) -> None:
    """The agent's torch optimizers update all their tensors per call (``foreach``) where the choice was
    left to torch, whose default on the CPU is a Python loop over the tensors.

    The updates are equal bit for bit (checked for PPO, A2C, SAC, TD3 and DQN with SB3's Adam and RMSprop,
    and PPO with AdamW) and PPO's training runs about 2% faster. Other optimizers, a user's ``foreach``,
    ``fused`` or ``differentiable`` (which foreach does not support) stay as they are, and so do agents
    without torch optimizers (sbx)."""
    for name in model._get_torch_save_params()[0]:  # (sbx's agents list none)
        optimizer = attrgetter(name)(model)
        if type(optimizer) not in FOREACH_CHECKED:
            continue
        for group in optimizer.param_groups:
            if group.get("foreach", False) is None and not group.get("fused") and not group.get("differentiable"):
                group["foreach"] = True
