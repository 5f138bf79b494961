"""The exported policy as one torch module: a batch of raw env observations in, env actions out.

Everything SB3's ``predict`` does around the network is inside: VecNormalize's observation
normalization and clip (in float64, as VecNormalize computes it), channels-first images, image scaling
and the deterministic head (through the policy's own ``_predict``), then the action's reshape and its
unsquashing to the Box bounds or clipping to them. Frame stacking stays outside: the input is the
stacked observation. RecurrentPPO's LSTM state is an explicit input and output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.policies import BaseModel
from stable_baselines3.common.vec_env import VecEnv, VecFrameStack, VecNormalize, VecTransposeImage
from stable_baselines3.common.vec_env.base_vec_env import VecEnvWrapper

from rlexp.errors import ConfigError

FLAT_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)  # actions, observations
STATE_INPUTS = ("state_h", "state_c", "episode_start")
STATE_OUTPUTS = ("state_h_out", "state_c_out")


@dataclass
class Tensor:
    """An input or output of the graph: its shape has ``"batch"`` where the batch size goes."""

    name: str
    shape: list[int | str]
    dtype: str


@dataclass
class EnvLayers:
    """The VecEnv layers of the run's eval env that the graph takes over, found by walking its wrappers."""

    normalize: VecNormalize | None
    transpose: VecTransposeImage | None
    frame_stack: int
    space: spaces.Space  # what the graph takes: the env's (stacked) observation, as the env gives it

    @classmethod
    def of(cls, venv: VecEnv) -> EnvLayers:
        found: dict[type, Any] = {}
        layer: Any = venv
        while isinstance(layer, VecEnvWrapper):
            found[type(layer)] = layer
            layer = layer.venv
        transpose, stack = found.get(VecTransposeImage), found.get(VecFrameStack)
        space = (transpose.venv if transpose else venv).observation_space
        normalize = found.get(VecNormalize)
        if normalize is not None and not normalize.norm_obs:  # rewards only: nothing for the graph
            normalize = None
        if normalize is not None and stack is not None:
            raise ConfigError(
                "env.frame_stack with env.normalize cannot be exported: the stack pads with zeros of "
                "normalized observations, which no input of raw ones can give"
            )
        return cls(normalize, transpose, stack.stacked_obs.n_stack if stack else 0, space)

    @property
    def transposed_keys(self) -> list[str | None]:
        """The images VecTransposeImage makes channels-first: None for a Box, the keys of a Dict."""
        if self.transpose is None or self.transpose.skip:
            return []
        return list(self.transpose.image_space_keys) if isinstance(self.space, spaces.Dict) else [None]

    def raw(self, obs: Any) -> Any:
        """The graph's input for the observation ``obs`` the agent was just given by the env."""
        if self.normalize is not None:  # (never under a frame stack): the env's own observation
            return self.normalize.get_original_obs()
        keys = self.transposed_keys
        if not keys:
            return obs
        back = (0, 2, 3, 1)  # to the env's channels-last order: a permutation, exact
        if isinstance(obs, dict):
            return {k: np.transpose(v, back) if k in keys else v for k, v in obs.items()}
        return np.transpose(obs, back)


class PolicyGraph(torch.nn.Module):
    """Raw observations (one tensor per Dict key, in the space's key order) to env actions."""

    low: torch.Tensor  # a Box's bounds (buffers, registered when the actions are a Box)
    high: torch.Tensor

    def __init__(self, model: BaseAlgorithm, layers: EnvLayers) -> None:
        super().__init__()
        self.policy = model.policy
        self.policy.set_training_mode(False)
        self.keys: list[str] | None = list(layers.space.spaces) if isinstance(layers.space, spaces.Dict) else None
        self._normalization(layers.normalize)
        self.transposed = layers.transposed_keys
        action_space = self.policy.action_space
        self.action_shape = flat_shape(action_space)
        box = isinstance(action_space, spaces.Box)
        self.box, self.squash = box, bool(self.policy.squash_output)
        if box:
            self.register_buffer("low", torch.as_tensor(action_space.low, dtype=torch.float32))
            self.register_buffer("high", torch.as_tensor(action_space.high, dtype=torch.float32))

    def _normalization(self, normalize: VecNormalize | None) -> None:
        self.norm_keys: list[str | None] = []
        if normalize is None or not normalize.norm_obs:
            return
        self.clip_obs = float(normalize.clip_obs)
        stats = normalize.obs_rms  # a Dict's: one per key of norm_obs_keys, in its order
        for key, rms in stats.items() if isinstance(stats, dict) else [(None, stats)]:
            name = "obs" if key is None else key
            self.register_buffer(f"mean_{name}", torch.as_tensor(rms.mean, dtype=torch.float64))
            self.register_buffer(
                f"std_{name}", torch.as_tensor(np.sqrt(rms.var + normalize.epsilon), dtype=torch.float64)
            )
            self.norm_keys.append(key)

    def _prepare(self, key: str | None, x: torch.Tensor) -> torch.Tensor:
        if key in self.norm_keys:
            name = "obs" if key is None else key
            x = (x.double() - getattr(self, f"mean_{name}")) / getattr(self, f"std_{name}")
            x = x.clamp(-self.clip_obs, self.clip_obs).float()
        if key in self.transposed:
            x = x.permute(0, 3, 1, 2)
        return x

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        n_obs = 1 if self.keys is None else len(self.keys)
        obs_inputs, state = inputs[:n_obs], inputs[n_obs:]
        obs: Any = (
            self._prepare(None, obs_inputs[0])
            if self.keys is None
            else {k: self._prepare(k, x) for k, x in zip(self.keys, obs_inputs, strict=True)}
        )
        if isinstance(self.policy, RecurrentActorCriticPolicy):
            actions, h, c = _recurrent_step(self.policy, obs, *state)
            return self._to_env(actions), h, c
        return self._to_env(self.policy._predict(obs, deterministic=True))

    @property
    def recurrent(self) -> bool:
        """RecurrentPPO's policy: its LSTM state is an input and an output of the graph."""
        return isinstance(self.policy, RecurrentActorCriticPolicy)

    def _to_env(self, actions: torch.Tensor) -> torch.Tensor:
        actions = actions.reshape((-1, *self.action_shape))
        if not self.box:
            return actions.long()
        if self.squash:
            return self.low + 0.5 * (actions + 1.0) * (self.high - self.low)
        return torch.max(torch.min(actions, self.high), self.low)


def _recurrent_step(
    policy: RecurrentActorCriticPolicy, obs: Any, h: torch.Tensor, c: torch.Tensor, episode_start: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One step of RecurrentPPO's actor for a batch of one-step sequences: the state is zeroed where an
    episode starts, as in sb3_contrib's ``_process_sequence``, without its data-dependent branch."""
    features = BaseModel.extract_features(policy, obs, policy.pi_features_extractor)  # (as sb3_contrib does)
    keep = (1.0 - episode_start).view(1, -1, 1)
    out, (h, c) = policy.lstm_actor(features.unsqueeze(0), (h * keep, c * keep))
    latent = policy.mlp_extractor.forward_actor(out.squeeze(0))
    return policy._get_action_dist_from_latent(latent).get_actions(deterministic=True), h, c


@dataclass
class Graph:
    module: PolicyGraph
    inputs: list[Tensor]
    outputs: list[Tensor]
    layers: EnvLayers
    lstm: dict[str, int] = field(default_factory=dict)  # RecurrentPPO: num_layers, hidden_size

    def example(self, batch: int = 2) -> tuple[torch.Tensor, ...]:
        """Inputs of ``batch`` rows from the spaces, to trace with (2: a batch of 1 would be baked in)."""
        rows = [self.layers.space.sample() for _ in range(batch)]
        names = self.module.keys or [None]
        obs = [torch.as_tensor(np.stack([r if k is None else r[k] for r in rows])) for k in names]
        if not self.lstm:
            return tuple(obs)
        state = torch.zeros(self.lstm["num_layers"], batch, self.lstm["hidden_size"])
        return (*obs, state, state.clone(), torch.zeros(batch))


def flat_shape(space: spaces.Space) -> tuple[int, ...]:
    """The shape of a space of FLAT_SPACES (a Discrete's is ()); a space without one cannot be exported."""
    shape = space.shape
    if shape is None:
        raise ConfigError(f"the space {type(space).__name__} cannot be exported: it has no shape")
    return shape


def _dtype(space: spaces.Space) -> str:
    return "int64" if isinstance(space, spaces.Discrete) else str(np.dtype(space.dtype))


def _space_tensor(name: str, space: spaces.Space) -> Tensor:
    return Tensor(name, ["batch", *flat_shape(space)], _dtype(space))


def _refuse(model: BaseAlgorithm, layers: EnvLayers) -> None:
    algo = type(model).__name__
    action_space, obs_space = model.action_space, layers.space
    if not isinstance(action_space, FLAT_SPACES):
        raise ConfigError(f"{algo} with the action space {type(action_space).__name__} cannot be exported")
    parts = obs_space.spaces.values() if isinstance(obs_space, spaces.Dict) else [obs_space]  # (a flat Dict only)
    for part in parts:
        if not isinstance(part, FLAT_SPACES):
            raise ConfigError(f"the observation space {type(part).__name__} cannot be exported")
    if hasattr(model.policy, "lstm_actor") and isinstance(obs_space, spaces.Dict):
        raise ConfigError(f"{algo} with a Dict observation space cannot be exported")


def build_graph(model: BaseAlgorithm, venv: VecEnv) -> Graph:
    """The graph of ``model`` acting on ``venv``, the run's eval env (whose layers it takes over)."""
    layers = EnvLayers.of(venv)
    _refuse(model, layers)
    module = PolicyGraph(model, layers).eval()
    space = layers.space
    inputs = (
        [_space_tensor(k, s) for k, s in space.spaces.items()]
        if isinstance(space, spaces.Dict)
        else [_space_tensor("obs", space)]
    )
    box = isinstance(model.action_space, spaces.Box)
    outputs = [Tensor("action", ["batch", *flat_shape(model.action_space)], "float32" if box else "int64")]
    lstm: dict[str, int] = {}
    if isinstance(model.policy, RecurrentActorCriticPolicy):
        net = model.policy.lstm_actor
        lstm = {"num_layers": net.num_layers, "hidden_size": net.hidden_size}
        state = [net.num_layers, "batch", net.hidden_size]
        inputs += [Tensor("state_h", state, "float32"), Tensor("state_c", state, "float32")]
        inputs.append(Tensor("episode_start", ["batch"], "float32"))
        outputs += [Tensor(name, state, "float32") for name in STATE_OUTPUTS]
    return Graph(module, inputs, outputs, layers, lstm)
