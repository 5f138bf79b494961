"""A saved agent of a run dir, for the commands that read runs (evaluate, video, and later export):
which model file, which normalization statistics, and the config the run was trained with.

The run dir contract they rely on: ``config.yaml`` (the resolved config), ``model.zip`` and
``vecnormalize.pkl`` of the final agent, ``best/`` and ``checkpoints/step_<N>/`` holding the same files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

from rlexp.errors import ConfigError
from rlexp.run.envs import EVAL_SEED_OFFSET
from rlexp.run.evaluation import eval_env_count
from rlexp.run.run_dir import CONFIG_FILE, read_config, read_summary
from rlexp.run.saving import MODEL_FILE, VECNORMALIZE_FILE

BEST = "best"
FINAL = "final"


@dataclass
class SavedAgent:
    """``name``: final, best, step_<N> or the zip's stem; ``out_dir``: where a command writes about it."""

    name: str
    model: Path
    stats: Path | None
    cfg: DictConfig
    out_dir: Path
    batched_final_eval: bool = True

    def episode_seed(self, seed: int | None) -> int:
        """The first episode's seed: by default the run's final evaluation's (its seed + 10000)."""
        return self.cfg.seed + EVAL_SEED_OFFSET if seed is None else seed

    def eval_envs(self, episodes: int) -> int:
        """Envs side by side for ``episodes`` episodes, as the run's evaluations counted them: so that the
        run's final episodes and seed give its ``final_eval``. A run of an rlexp that evaluated on one env
        (its final_eval records no ``n_envs``) gets one."""
        if not self.batched_final_eval:
            return 1
        return eval_env_count(self.cfg.callbacks.eval, episodes)

    def deterministic(self, stochastic: bool) -> bool:
        return bool(self.cfg.callbacks.eval.deterministic) and not stochastic


def _agents_of(run_dir: Path) -> list[str]:
    found = [FINAL] if (run_dir / MODEL_FILE).is_file() else []
    found += [BEST] if (run_dir / BEST / MODEL_FILE).is_file() else []
    steps = sorted(d.name for d in (run_dir / "checkpoints").glob("step_*") if (d / MODEL_FILE).is_file())
    return found + [f"step_{int(s.removeprefix('step_'))}" for s in steps]


def _agent_dir(run_dir: Path, agent: str) -> Path:
    if agent == FINAL:
        return run_dir
    if agent == BEST:
        return run_dir / BEST
    step = re.fullmatch(r"step_(\d+)", agent)
    if step is None:
        raise ConfigError(f"--agent {agent}: not final, best or step_<N>")
    return run_dir / "checkpoints" / f"step_{int(step.group(1)):012d}"


def _run_dir_of(path: Path) -> Path | None:
    """The run dir a model zip belongs to (it may sit in best/ or checkpoints/step_<N>/)."""
    for d in (path.parent, path.parent.parent, path.parent.parent.parent):
        if (d / CONFIG_FILE).is_file():
            return d
    return None


def open_agent(path: str, agent: str = FINAL) -> SavedAgent:
    """The agent ``agent`` of the run dir ``path``, or the model ``path`` (a .zip inside a run dir)."""
    p = Path(path).expanduser()
    if p.is_file():
        run_dir = _run_dir_of(p)
        if run_dir is None:
            raise ConfigError(f"{path}: no config.yaml next to it or above it (not inside an rlexp run dir)")
        name = FINAL if p.parent == run_dir else p.parent.name if p.stem == "model" else p.stem
        name = f"step_{int(name.removeprefix('step_'))}" if re.fullmatch(r"step_\d+", name) else name
        return _agent(name, p, run_dir)
    if not p.is_dir():
        raise ConfigError(f"{path}: no such run dir or model .zip")
    if not (p / CONFIG_FILE).is_file():
        seeds = sorted(d.name for d in p.glob("seed_*") if (d / CONFIG_FILE).is_file())
        if seeds:
            raise ConfigError(f"{path} is a trial of {len(seeds)} seeds: pass one of its runs ({', '.join(seeds)})")
        raise ConfigError(f"{path}: no config.yaml (not an rlexp run dir)")
    agent_dir = _agent_dir(p, agent)
    if not (agent_dir / MODEL_FILE).is_file():
        have = _agents_of(p)
        raise ConfigError(
            f"--agent {agent}: {agent_dir / MODEL_FILE} does not exist"
            + (f" (this run has: {', '.join(have)})" if have else " (this run saved no agent yet)")
        )
    return _agent(agent, agent_dir / MODEL_FILE, p)


def _agent(name: str, model: Path, run_dir: Path) -> SavedAgent:
    stats = model.parent / VECNORMALIZE_FILE
    cfg = read_config(run_dir, remedy="not a run dir of this rlexp?")
    if cfg.env.normalize and not stats.is_file():
        raise ConfigError(f"{model.parent}: no {VECNORMALIZE_FILE}, though the run used env.normalize=true")
    return SavedAgent(name, model, stats if stats.is_file() else None, cfg, run_dir, _batched_final_eval(run_dir))


def _batched_final_eval(run_dir: Path) -> bool:
    """Whether the run's final evaluation stepped its envs side by side (recorded as final_eval.n_envs);
    a run that has not finished yet will."""
    final = (read_summary(run_dir) or {}).get("final_eval")
    return not isinstance(final, dict) or "n_envs" in final
