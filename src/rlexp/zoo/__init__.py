"""RL Baselines3 Zoo, read: its hyperparameter format (``format``: the generator of conf/tuned and the reader
of its runs share it) and its log folders opened as runs by the commands that read runs (``runs``). No code
of rl_zoo3 is imported: a zoo user's files are read as data, under rlexp's allow-list."""
