"""Settings that make torch cheaper for a run without changing any number it computes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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
