"""The schedules' old home, kept for agents saved by earlier releases: their model.zip pickles a schedule by this
module's name (a cosine or exponential learning rate); loading them finds it here."""

from rlexp.build.schedules import CosineSchedule, ExponentialSchedule, constant, linear

__all__ = ["CosineSchedule", "ExponentialSchedule", "constant", "linear"]
