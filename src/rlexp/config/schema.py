"""Typed schemas for every config group, with every default and range of the experiment config.

Each YAML option in ``conf/`` extends one of these dataclasses through its defaults list, so Hydra
rejects a wrong type or an unknown key at composition time with a message naming the key. The
algorithm schemas mirror the constructor arguments of the SB3 / sb3-contrib classes: a key that the
chosen algorithm does not take is unknown to its schema.

Defaults live here and nowhere else: a YAML option sets only the values that its choice changes
(``diagnostics/none.yaml`` its nulls, ``algo/ppo.yaml`` nothing), so that a run of an older release,
read back over these defaults (rlexp.rundir.contract.read_config; its algo node over those of the schema
its ``_target_`` names, rlexp.config.algorithms.algo_defaults), gets the same value for a key added since as a new run
(tests/config/test_schema.py keeps the YAML free of them). A range that no type expresses is declared
with its key (``ranged(default, POSITIVE)``) and checked by rlexp.config.validation before a run starts;
a subclass that only gives the key its default keeps it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass, field
from enum import Enum
from importlib.resources import files
from typing import Any, Dict, List, Optional, cast

import yaml
from omegaconf import MISSING, DictConfig


# ----------------------------------------------------------------------------------- ranges
@dataclass(frozen=True)
class Range:
    """What a number must be beyond its type, said as the one line that refuses it says it (``> 0``)."""

    low: float
    # the largest value allowed (included); None: no upper bound
    high: Optional[float] = None
    # low itself excluded (> low) rather than allowed (>= low)
    strict: bool = False
    # what a boundary value means, said after the rule ("0: no checkpoints")
    note: str = ""

    def __str__(self) -> str:
        rule = (
            f"in [{self.low}, {self.high}]" if self.high is not None else f"{'>' if self.strict else '>='} {self.low}"
        )
        return f"{rule} ({self.note})" if self.note else rule

    def __contains__(self, value: float) -> bool:
        above = value > self.low if self.strict else value >= self.low
        return math.isfinite(value) and above and (self.high is None or value <= self.high)


UNIT = Range(0, 1)
POSITIVE = Range(0, strict=True)
NOT_NEGATIVE = Range(0)


def ranged(default: Any, must_be: Range) -> Any:
    """A schema field with its default and the range its value must lie in (rlexp.config.validation)."""
    return field(default=default, metadata={"range": must_be})


def field_range(schema: type, name: str) -> Range | None:
    """The range of key ``name`` of a schema: declared with the key, kept by a subclass that only gives the
    key its default (``gamma`` of PPOConfig is OnPolicyConfig's)."""
    for cls in schema.__mro__:
        declared = getattr(cls, "__dataclass_fields__", {}).get(name)
        if declared is not None and "range" in declared.metadata:
            return declared.metadata["range"]
    return None


# ----------------------------------------------------------------------------------- algorithms
# A family's schema declares the keys its algorithms share, their types and ranges, and the defaults that
# all of them have; each algorithm's schema gives the rest of its class's constructor defaults.
@dataclass
class AlgoConfig:
    """Arguments shared by every SB3 algorithm constructor."""

    # the algorithm's class
    _target_: str = MISSING
    policy: str = "MlpPolicy"
    learning_rate: float = ranged(MISSING, POSITIVE)
    # e.g. {net_arch: [64, 64], activation_fn: {_target_: hydra.utils.get_class, path: torch.nn.ReLU}}
    policy_kwargs: Dict[str, Any] = field(default_factory=dict)


@dataclass
class OnPolicyConfig(AlgoConfig):
    n_steps: int = ranged(MISSING, POSITIVE)
    gamma: float = ranged(0.99, UNIT)
    gae_lambda: float = ranged(0.95, UNIT)
    use_sde: bool = False
    sde_sample_freq: int = -1
    normalize_advantage: bool = True


@dataclass
class PPOConfig(OnPolicyConfig):
    _target_: str = "stable_baselines3.PPO"
    learning_rate: float = 0.0003
    n_steps: int = 2048
    batch_size: int = ranged(64, POSITIVE)
    n_epochs: int = ranged(10, POSITIVE)
    clip_range: float = ranged(0.2, POSITIVE)
    clip_range_vf: Optional[float] = None
    ent_coef: float = ranged(0.0, NOT_NEGATIVE)
    vf_coef: float = ranged(0.5, NOT_NEGATIVE)
    max_grad_norm: float = ranged(0.5, POSITIVE)
    target_kl: Optional[float] = None


@dataclass
class RecurrentPPOConfig(PPOConfig):
    _target_: str = "sb3_contrib.RecurrentPPO"
    policy: str = "MlpLstmPolicy"
    n_steps: int = 128
    batch_size: Optional[int] = 128  # type: ignore[assignment]  # (the base class's int, here also null)


@dataclass
class A2CConfig(OnPolicyConfig):
    _target_: str = "stable_baselines3.A2C"
    learning_rate: float = 0.0007
    n_steps: int = 5
    gae_lambda: float = 1.0
    normalize_advantage: bool = False
    ent_coef: float = ranged(0.0, NOT_NEGATIVE)
    vf_coef: float = ranged(0.5, NOT_NEGATIVE)
    max_grad_norm: float = ranged(0.5, POSITIVE)
    rms_prop_eps: float = 1e-05
    use_rms_prop: bool = True


@dataclass
class TRPOConfig(OnPolicyConfig):
    _target_: str = "sb3_contrib.TRPO"
    learning_rate: float = 0.001
    n_steps: int = 2048
    batch_size: int = ranged(128, POSITIVE)
    cg_max_steps: int = 15
    cg_damping: float = 0.1
    line_search_shrinking_factor: float = 0.8
    line_search_max_iter: int = 10
    n_critic_updates: int = 10
    target_kl: float = 0.01
    sub_sampling_factor: int = 1


@dataclass
class ARSConfig(AlgoConfig):
    _target_: str = "sb3_contrib.ARS"
    learning_rate: float = 0.02
    n_delta: int = ranged(8, POSITIVE)
    n_top: Optional[int] = None
    delta_std: float = 0.05
    zero_policy: bool = True
    alive_bonus_offset: float = 0.0
    n_eval_episodes: int = 1


@dataclass
class OffPolicyConfig(AlgoConfig):
    buffer_size: int = ranged(1_000_000, POSITIVE)
    learning_starts: int = ranged(100, NOT_NEGATIVE)
    batch_size: int = ranged(256, POSITIVE)
    gamma: float = ranged(0.99, UNIT)
    # an int (steps) or a pair like [1, episode]
    train_freq: Any = 1
    gradient_steps: int = 1
    # e.g. {_target_: hydra.utils.get_class, path: stable_baselines3.HerReplayBuffer} for goal envs
    replay_buffer_class: Any = None
    replay_buffer_kwargs: Dict[str, Any] = field(default_factory=dict)
    optimize_memory_usage: bool = False
    n_steps: int = ranged(1, POSITIVE)


@dataclass
class DQNConfig(OffPolicyConfig):
    _target_: str = "stable_baselines3.DQN"
    learning_rate: float = 0.0001
    batch_size: int = 32
    train_freq: Any = 4
    tau: float = ranged(1.0, UNIT)
    target_update_interval: int = ranged(10_000, POSITIVE)
    exploration_fraction: float = ranged(0.1, UNIT)
    exploration_initial_eps: float = ranged(1.0, UNIT)
    exploration_final_eps: float = ranged(0.05, UNIT)
    max_grad_norm: float = ranged(10.0, POSITIVE)


@dataclass
class QRDQNConfig(DQNConfig):
    _target_: str = "sb3_contrib.QRDQN"
    learning_rate: float = 5e-05
    exploration_fraction: float = 0.005
    exploration_final_eps: float = 0.01
    max_grad_norm: Optional[float] = None  # type: ignore[assignment]  # (the base class's float, here also null)


@dataclass
class TD3Config(OffPolicyConfig):
    _target_: str = "stable_baselines3.TD3"
    learning_rate: float = 0.001
    tau: float = ranged(0.005, UNIT)
    policy_delay: int = ranged(2, POSITIVE)
    target_policy_noise: float = 0.2
    target_noise_clip: float = 0.5


@dataclass
class DDPGConfig(OffPolicyConfig):
    _target_: str = "stable_baselines3.DDPG"
    learning_rate: float = 0.001
    tau: float = ranged(0.005, UNIT)


@dataclass
class SACConfig(OffPolicyConfig):
    _target_: str = "stable_baselines3.SAC"
    learning_rate: float = 0.0003
    tau: float = ranged(0.005, UNIT)
    # "auto", "auto_0.1" or a float
    ent_coef: Any = ranged("auto", NOT_NEGATIVE)
    target_update_interval: int = ranged(1, POSITIVE)
    target_entropy: Any = "auto"
    use_sde: bool = False
    sde_sample_freq: int = -1
    use_sde_at_warmup: bool = False


@dataclass
class TQCConfig(SACConfig):
    _target_: str = "sb3_contrib.TQC"
    top_quantiles_to_drop_per_net: int = 2


@dataclass
class CrossQConfig(OffPolicyConfig):
    _target_: str = "sb3_contrib.CrossQ"
    learning_rate: float = 0.001
    # "auto", "auto_0.1" or a float
    ent_coef: Any = ranged("auto", NOT_NEGATIVE)
    target_entropy: Any = "auto"
    policy_delay: int = ranged(3, POSITIVE)
    use_sde: bool = False
    sde_sample_freq: int = -1
    use_sde_at_warmup: bool = False


# ----------------------------------------------------------------------------------- envs
class VecEnvKind(str, Enum):
    auto = "auto"  # numpy for 8+ envs where it gives the same results as dummy, otherwise lean (rlexp.vecenvs.choice)
    dummy = "dummy"  # SB3's DummyVecEnv: all envs in this process
    lean = "lean"  # DummyVecEnv without its per-step copies: the same results, faster
    subproc = "subproc"  # SB3's SubprocVecEnv, one process per env: for expensive envs (physics, emulators)
    numpy = "numpy"  # gymnasium's NumPy-vectorized CartPole: all envs in one array operation
    envpool = "envpool"  # EnvPool's C++ envs (classic control, Box2D, MuJoCo, Atari): pip install 'rlexp[envpool]'


@dataclass
class EnvConfig:
    # Gymnasium id ("CartPole-v1", "ale_py:PongNoFrameskip-v4") or entry point "module:Class"
    id: str = MISSING
    # the env's family (classic, box2d, mujoco, atari, minigrid, robotics, panda, highway, bullet): which extra
    # installs it, and which preprocessing an id of it gets (rlexp.config.env_families)
    family: Optional[str] = None
    # ids RL Zoo tunes this env under that train as given with this preset's tuned values (Hopper-v4)
    aliases: List[str] = field(default_factory=list)
    # ids no longer built (mujoco-py's v2/v3, renamed ids): env.id=<one> trains this preset's id, and says so
    replaces: List[str] = field(default_factory=list)
    n_envs: int = ranged(1, POSITIVE)
    vec_env: VecEnvKind = VecEnvKind.auto
    normalize: bool = False
    # VecNormalize arguments, e.g. {norm_reward: false}
    normalize_kwargs: Dict[str, Any] = field(default_factory=dict)
    frame_stack: Optional[int] = ranged(None, NOT_NEGATIVE)
    # name -> {_target_: wrapper class, ...args}; applied in order after Monitor
    wrappers: Dict[str, Any] = field(default_factory=dict)
    kwargs: Dict[str, Any] = field(default_factory=dict)
    # extra kwargs for the evaluation env only (merged over `kwargs`)
    eval_kwargs: Dict[str, Any] = field(default_factory=dict)
    max_episode_steps: Optional[int] = ranged(None, POSITIVE)
    # run Gymnasium's env checker on one env before training
    check: bool = False
    # the return that counts as solved (callbacks.stop=solved); null: the Gymnasium spec's reward_threshold
    reward_threshold: Optional[float] = None


# ----------------------------------------------------------------------------------- the rest
class Backend(str, Enum):
    sb3 = "sb3"  # Stable-Baselines3 on PyTorch
    sbx = "sbx"  # sbx: SB3's API on JAX (a faster learner for SAC, TQC, TD3, DDPG, CrossQ)


class NoiseKind(str, Enum):
    none = "none"
    normal = "normal"
    ornstein_uhlenbeck = "ornstein_uhlenbeck"


@dataclass
class ActionNoiseConfig:
    """Exploration noise for off-policy continuous-control algorithms (TD3, DDPG, SAC...)."""

    kind: NoiseKind = NoiseKind.none
    std: float = ranged(0.1, NOT_NEGATIVE)


@dataclass
class EvalConfig:
    # evaluate every `freq` environment steps (summed over envs); 0 turns periodic evaluation off
    freq: int = ranged(10_000, Range(0, note="0: no periodic evaluation"))
    n_episodes: int = ranged(5, POSITIVE)
    # if set, evaluate this many times over the run instead (freq = n_timesteps // n_evaluations)
    n_evaluations: Optional[int] = ranged(None, POSITIVE)
    # episodes of the evaluation after training (the run's final score)
    final_episodes: int = ranged(10, POSITIVE)
    deterministic: bool = True
    # eval envs stepped side by side, one batched forward pass a step; null: as many as an evaluation's
    # episodes, at most 16 (then env i plays episode i of each evaluation, its reset seeded seed + 10000 + i)
    n_envs: Optional[int] = ranged(None, Range(0, strict=True, note="null: one per episode, at most 16"))


@dataclass
class CheckpointConfig:
    # save every `freq` environment steps; 0 turns checkpoints off
    freq: int = ranged(0, Range(0, note="0: no checkpoints"))
    save_replay_buffer: bool = False
    # keep only the newest N checkpoints (null keeps all)
    keep_last: Optional[int] = ranged(None, POSITIVE)


@dataclass
class CallbacksConfig:
    eval: EvalConfig = field(default_factory=EvalConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    progress_bar: bool = False
    # name -> {_target_: a BaseCallback subclass, ...args}
    extra: Dict[str, Any] = field(default_factory=dict)
    # end training once a periodic evaluation's mean reaches a reward, then save and evaluate as usual:
    # callbacks.stop=solved (the env spec's reward_threshold, CartPole-v1: 475), callbacks.stop=<reward> or
    # callbacks.stop.reward_threshold=<reward>; null (the default): train the whole budget
    stop: Any = field(default_factory=lambda: {"reward_threshold": None})


@dataclass
class DiagnosticsConfig:
    # stop at once when observations, rewards, actions, logged losses or the policy's parameters become
    # NaN or inf (a run that diverged trains on garbage; its last checkpoint is still good)
    finite: bool = True
    # warn when the final eval is no better than the random-policy baseline (random_baseline)
    beat_random: bool = True
    # Training-health warnings (rlexp.monitor.health); null turns one off. Entropy collapsing early: within
    # the first `early` share of the steps, the policy's entropy (discrete actions) or action std
    # (continuous) below entropy_floor x its value at the first update; SAC/TQC: the entropy coefficient
    # below ent_coef_floor x its first value
    early: float = ranged(0.25, UNIT)
    entropy_floor: Optional[float] = ranged(0.1, UNIT)
    ent_coef_floor: Optional[float] = ranged(0.001, UNIT)
    # on-policy: explained variance <= 0 in each of the first this many updates (the value function
    # learns nothing; checked until it first exceeds 0: a mastered env's returns hardly vary)
    explained_variance_updates: Optional[int] = ranged(10, POSITIVE)
    # PPO: approx_kl or clip_fraction above these (steps too large for its trust region) in kl_updates updates
    # in a row (one spike is noise: RL Zoo's tuned PPO CartPole has one of 0.11 among its 390 updates)
    max_approx_kl: Optional[float] = ranged(0.1, NOT_NEGATIVE)
    max_clip_fraction: Optional[float] = ranged(0.5, UNIT)
    kl_updates: int = ranged(3, POSITIVE)
    # off-policy: every q_every steps, the critic's mean |Q| on a replay batch above q_factor x the
    # largest discounted return possible, max |reward| in the buffer / (1 - gamma)
    q_factor: Optional[float] = ranged(2.0, NOT_NEGATIVE)
    q_every: int = ranged(1000, POSITIVE)
    # the final eval below the mean of the last training episodes by more than this share of training's
    # gain over the random policy (or of its return, without a baseline)
    train_eval_gap: Optional[float] = ranged(0.5, NOT_NEGATIVE)


@dataclass
class RandomBaselineConfig:
    # random-policy episodes on the eval env before training (summary.json's random_baseline); 0: none
    episodes: int = ranged(10, Range(0, note="0: no baseline"))


class WandbMode(str, Enum):
    online = "online"
    offline = "offline"  # written under RUN/wandb/, for `wandb sync`
    disabled = "disabled"


@dataclass
class WandbConfig:
    """A Weights & Biases run per rlexp run (logger=wandb; pip install 'rlexp[wandb]')."""

    # logger=wandb turns it on; so does logger.wandb.enabled=true beside any other logger option
    enabled: bool = False
    # null: WANDB_PROJECT, else rlexp
    project: Optional[str] = None
    entity: Optional[str] = None
    group: Optional[str] = None
    # the W&B run's name (null: the run dir's); its id comes from the run dir, so a resumed run continues it
    name: Optional[str] = None
    tags: List[str] = field(default_factory=list)
    # null: online when an API key is configured (wandb login, WANDB_API_KEY), else offline
    mode: Optional[WandbMode] = None


@dataclass
class MlflowConfig:
    """An MLflow run per rlexp run (logger=mlflow; pip install 'rlexp[mlflow]')."""

    # logger=mlflow turns it on; so does logger.mlflow.enabled=true beside any other logger option
    enabled: bool = False
    # null: a SQLite store in the working directory, sqlite:///<cwd>/mlruns.db
    tracking_uri: Optional[str] = None
    experiment: str = "rlexp"
    # the MLflow run's name (null: the run dir's)
    run_name: Optional[str] = None


@dataclass
class LoggerConfig:
    # any of SB3's logger formats: stdout, csv, tensorboard, log, json
    formats: List[str] = field(default_factory=lambda: ["csv", "tensorboard"])
    # 0: rlexp's own lines only; 1: progress (a bar on a terminal, else a line per periodic evaluation);
    # 2: also SB3's messages and its table of training scalars at each log dump (stdout format)
    verbose: int = 1
    # experiment trackers the run also reports to (config, scalars, final agent): logger=wandb, logger=mlflow
    wandb: WandbConfig = field(default_factory=WandbConfig)
    mlflow: MlflowConfig = field(default_factory=MlflowConfig)


@dataclass
class ExperimentConfig:
    algo: Any = MISSING
    env: EnvConfig = MISSING
    # schedules turn algo.learning_rate / algo.clip_range into functions of training progress
    lr_schedule: Any = field(default_factory=lambda: {"_target_": "rlexp.builders.schedules.constant"})
    clip_range_schedule: Any = field(default_factory=lambda: {"_target_": "rlexp.builders.schedules.constant"})
    action_noise: ActionNoiseConfig = field(default_factory=ActionNoiseConfig)
    callbacks: CallbacksConfig = MISSING
    logger: LoggerConfig = MISSING
    random_baseline: RandomBaselineConfig = field(default_factory=RandomBaselineConfig)
    diagnostics: DiagnosticsConfig = field(default_factory=DiagnosticsConfig)
    # set by tuned/*.yaml when one applies: its name and the env id it was tuned for
    tuned_file: Optional[str] = None
    tuned_env_id: Optional[str] = None
    # where the tuned values come from ("rl-zoo3 2.9.2 sac.yml Hopper-v4") and the keys where rlexp departs
    # from that source (the reason and its measurement are in the tuned file's comment)
    tuned_source: Optional[str] = None
    tuned_departures: List[str] = field(default_factory=list)
    # total environment steps (summed over envs); tuned files set their own, the command line wins
    n_timesteps: int = ranged(100_000, POSITIVE)
    # the run's seed (numpy and Gymnasium take non-negative integers)
    seed: int = ranged(0, NOT_NEGATIVE)
    # auto: the GPU if there is one, except for MLP policies of on-policy algorithms (faster on CPU)
    device: str = "auto"
    # intra-op threads of torch in this job; null: the CPUs the job was given (SLURM's cpus_per_task,
    # its share of the cores under hydra/launcher=local_parallel), else 1 (fastest for small MLPs here)
    torch_threads: Optional[int] = ranged(None, Range(1))
    # which library trains: sb3 (PyTorch) or sbx (JAX, SB3's API: sac, tqc, td3, ddpg, crossq, ppo, dqn;
    # pip install 'rlexp[sbx]')
    backend: Backend = Backend.sb3
    # continue training a saved agent: trained_agent=outputs/ppo-cartpole/<run> (a run dir, or a .zip)
    trained_agent: Optional[str] = None
    # draw RUN/curves.png (training and evaluation returns against steps) at the end of the run (rlexp plot
    # draws several runs)
    curves: bool = True
    # parameter -> Hydra sweep expression, read by hydra/sweeper=optuna (search_space/<algo>.yaml)
    search_space: Dict[str, str] = field(default_factory=dict)


@functools.cache
def _preset_env_id(preset: str) -> str | None:
    """The env id that a shipped env preset sets (None for a preset rlexp does not ship)."""
    path = files("rlexp.conf") / "env" / f"{preset}.yaml"
    if not path.is_file():
        return None
    return yaml.safe_load(path.read_text()).get("id")


def env_name(preset: str | None, env_id: str) -> str:
    """How run dirs and studies name the env: the preset, unless env.id was changed from the preset's own
    (then the id itself, made safe for a path: ``my_pkg.envs:MyEnv`` -> ``my_pkg.envs_MyEnv``)."""
    if preset is not None and _preset_env_id(preset) in (None, env_id):
        return preset
    return re.sub(r"[^\w.-]+", "_", env_id)


def schema_fields(name: str) -> list[str]:
    """The keys of the schema class called ``name`` (as OmegaConf names it in "Key 'x' not in 'EvalConfig'")."""
    schema = globals().get(name)
    if isinstance(schema, type) and dataclasses.is_dataclass(schema) and schema.__module__ == __name__:
        return [f.name for f in dataclasses.fields(schema)]
    return []


def as_experiment(config: DictConfig) -> ExperimentConfig:
    """The composed experiment config read through its schema: it is a DictConfig made from ExperimentConfig
    (an OmegaConf structured config), whose attributes then carry the schema's types while OmegaConf still
    checks every value set. The one cast, where a config enters rlexp (the Hydra task, the front door's
    callbacks, ``rlexp check``, the API's compose)."""
    return cast(ExperimentConfig, config)


def as_node(cfg: Any) -> DictConfig:
    """A typed config (or a piece of it) as OmegaConf's node again, for what walks, selects or copies keys
    by name."""
    return cast(DictConfig, cfg)
