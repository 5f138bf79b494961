# Makes conf/ importable as rlexp.conf, so Hydra finds the configs with pkg://rlexp.conf.
