"""rlexp from Python (a notebook, a script): the command's configs, checks and code paths, with errors
raised as exceptions instead of exiting.

    import rlexp
    cfg = rlexp.compose(["algo=sac", "env=pendulum", "n_timesteps=5000"])
    run = rlexp.train(cfg)                     # or rlexp.train(["algo=sac", ...], run_dir="runs/sac")
    run.summary["final_eval"], run.evaluate(episodes=20)["iqm"]
    model = run.load_agent("best")             # SB3 (or sbx) model, its VecNormalize eval env attached
    tables = rlexp.report(["multirun/seeds"])  # report's tables as pandas DataFrames (rlexp[pandas])
"""

from rlexp.api.compose import compose
from rlexp.api.runs import Run, load_run, report
from rlexp.api.training import train
from rlexp.errors import ConfigError

__all__ = ["ConfigError", "Run", "compose", "load_run", "report", "train"]
