"""RL Zoo's ``train.py`` flags, said back as the overrides rlexp takes: a zoo user who types
``rlexp --algo ppo --env CartPole-v1`` gets one line with ``rlexp algo=ppo env.id=CartPole-v1``."""

from __future__ import annotations

# zoo flag -> the override it becomes ({} : its value); None: a flag without a value
ZOO_FLAGS: dict[str, str | None] = {
    "--algo": "algo={}",
    "--env": "env.id={}",
    "-n": "n_timesteps={}",
    "--n-timesteps": "n_timesteps={}",
    "--seed": "seed={}",
    "--device": "device={}",
    "--vec-env": "env.vec_env={}",
    "--num-threads": "torch_threads={}",
    "--eval-freq": "callbacks.eval.freq={}",
    "--eval-episodes": "callbacks.eval.n_episodes={}",
    "--n-eval-envs": "callbacks.eval.n_envs={}",
    "--save-freq": "callbacks.checkpoint.freq={}",
    "--trained-agent": "trained_agent={}",
    "-f": "hydra.run.dir={}/<run>",
    "--log-folder": "hydra.run.dir={}/<run>",
    "--verbose": "logger.verbose={}",
    "--n-trials": "hydra.sweeper.n_trials={}",
    "--storage": "hydra.sweeper.storage={}",
    "--study-name": "hydra.sweeper.study_name={}",
    "-optimize": None,
    "--optimize": None,
    "--optimize-hyperparameters": None,
    "--track": None,
    "--save-replay-buffer": None,
    "-tb": "(TensorBoard logs are on by default, in RUN/logs)",
    "--tensorboard-log": "(TensorBoard logs are on by default, in RUN/logs)",
}
FLAG_ONLY = {
    "-optimize": "-m hparams=search hydra/sweeper=optuna",
    "--optimize": "-m hparams=search hydra/sweeper=optuna",
    "--optimize-hyperparameters": "-m hparams=search hydra/sweeper=optuna",
    "--track": "logger=wandb",
    "--save-replay-buffer": "callbacks.checkpoint.save_replay_buffer=true",
}
# key:value lists: each pair its own override
PAIRS = {"--hyperparams": "algo.{}={}", "-params": "algo.{}={}", "--env-kwargs": "+env.kwargs.{}={}"}


def zoo_overrides(args: list[str]) -> list[str] | None:
    """The overrides that RL Zoo's flags in ``args`` ask for (None: there are none); other arguments kept,
    notes (a flag rlexp needs no override for) in parentheses at the end."""
    if not any(a.split("=", 1)[0] in ZOO_FLAGS or a in PAIRS for a in args):
        return None
    out: list[str] = []
    notes: list[str] = []
    i = 0
    while i < len(args):
        flag, _, inline = args[i].partition("=") if args[i].startswith("--") else (args[i], "", "")
        if flag in FLAG_ONLY:
            out.append(FLAG_ONLY[flag])
        elif flag in ZOO_FLAGS or flag in PAIRS:
            values = [inline] if inline else []
            while not values or (flag in PAIRS and i + 1 < len(args) and ":" in args[i + 1]):
                if i + 1 >= len(args) or args[i + 1].startswith("-"):
                    break
                i += 1
                values.append(args[i])
            if flag in PAIRS:
                out += [PAIRS[flag].format(*v.split(":", 1)) for v in values if ":" in v]
            else:
                template = ZOO_FLAGS[flag] or ""
                value = values[0] if values else "<value>"
                if template.startswith("("):
                    notes.append(template)
                else:
                    out.append(template.format(value.lower() if flag == "--algo" else value))
        else:
            out.append(args[i])
        i += 1
    return out + list(dict.fromkeys(notes))


def zoo_line(args: list[str]) -> str | None:
    """The one line a zoo user gets (None: no zoo flag in ``args``)."""
    overrides = zoo_overrides(args)
    if overrides is None:
        return None
    return (
        f"rlexp: error: rlexp takes Hydra overrides, not RL Zoo's flags: rlexp {' '.join(overrides)} "
        "(rlexp --help lists the config groups and keys)"
    )
