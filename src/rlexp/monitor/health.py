"""Training health: signs that a run goes wrong without failing, in what SB3 logs after each update, in
the critic's Q-values, in a final evaluation far below training or no better than the random policy.
Each kind is warned about once, when found, listed in summary.json's ``diagnostics`` and repeated under
the run's last line; the thresholds are diagnostics.* config values."""

from __future__ import annotations

import logging
import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback

from rlexp.config.plain import plain_dict
from rlexp.config.schema import DiagnosticsConfig

log = logging.getLogger(__name__)

ENTROPY = "policy entropy collapsed early"
ENT_COEF = "entropy bonus vanished early"
VALUE = "value function explains nothing"
KL = "PPO's updates too large"
Q_VALUES = "Q-values diverging"
GAP = "evaluation far below training"
Q_BATCH = 256  # replay-buffer transitions whose Q-values are estimated at each check
GAP_MIN_EPISODES = 10  # training episodes needed to compare them with the final evaluation
# how much the policy still explores, by SB3's logged key (the first found): the Gaussian's std for
# continuous actions (its entropy has no floor), else the entropy; SAC/TQC log neither, but their
# entropy coefficient, which falls while the policy's entropy stays above its target
EXPLORATION = {
    "train/std": (ENTROPY, "action std", "entropy_floor"),
    "train/entropy_loss": (ENTROPY, "entropy", "entropy_floor"),
    "train/ent_coef": (ENT_COEF, "entropy coefficient", "ent_coef_floor"),
}
ADVICE = {
    ENTROPY: "it stopped exploring before it learnt (a larger ent_coef, a smaller learning_rate?)",
    ENT_COEF: "the entropy bonus is gone and exploration rests on the policy's own noise (a fixed "
    "ent_coef, or a higher target_entropy?)",
}


def say(found: list[str], kind: str, text: str, now: bool = True) -> None:
    """Warn about ``kind`` once per run (a resumed run keeps what its earlier part found); ``now``: also
    when found (the run's last lines repeat them all)."""
    if any(line.startswith(kind) for line in found):
        return
    found.append(f"{kind}: {text}")
    if now:
        log.warning(found[-1])


class TrainingHealth(BaseCallback):
    """Reads SB3's training scalars once per update (at the next rollout start, before its logger dumps
    them, and at the end of training) and, every ``q_every`` steps of an off-policy agent, the critic's
    Q-values on a replay batch.

    ``diagnostics``: the thresholds (diagnostics.*); ``target``: the step count learn() stops at; ``found``: summary.json's diagnostics list; ``fresh``:
    the run trains a new agent from its first step (the entropy and explained-variance checks compare
    with a run's first updates: not those of a resumed run or of a trained agent continued)."""

    def __init__(self, diagnostics: DiagnosticsConfig, target: int, found: list[str], fresh: bool = True) -> None:
        super().__init__()
        # plain attributes: an OmegaConf lookup costs microseconds, and SAC has a rollout per step
        self.cfg = SimpleNamespace(**plain_dict(diagnostics, resolve=False))
        self.target, self.found, self.fresh = target, found, fresh
        self.updates: Any = None  # train/n_updates when last read: a value is read once
        self.first: dict[str, float] = {}  # entropy measure at the first update
        self.streak, self.explained = 0, not fresh  # updates until explained variance first exceeds 0
        self.check_q = diagnostics.q_factor is not None
        self.above: dict[str, int] = {}  # updates in a row whose approx_kl / clip_fraction is above its limit

    def _on_training_start(self) -> None:
        self.start = self.num_timesteps
        self.next_q = self.start + (self.cfg.q_every or 0)

    def _on_rollout_start(self) -> None:
        values = self.logger.name_to_value
        updates = values.get("train/n_updates")
        if updates is None or updates == self.updates:
            return
        self.updates = updates
        if self.fresh:
            self._entropy(values)
        if self.cfg.explained_variance_updates:
            self._explained_variance(values.get("train/explained_variance"))
        self._kl(values)
        if self.check_q and self.num_timesteps >= self.next_q:
            self.next_q = self.num_timesteps + self.cfg.q_every
            self._q_values()

    def _on_training_end(self) -> None:
        self._on_rollout_start()  # the last update, which no rollout follows

    def _on_step(self) -> bool:
        return True

    def _entropy(self, values: dict[str, Any]) -> None:
        key = next((key for key in EXPLORATION if key in values), None)
        if key is None:
            return
        kind, name, option = EXPLORATION[key]
        floor = getattr(self.cfg, option)
        value = float(values[key]) * (-1 if key == "train/entropy_loss" else 1)
        if floor is None or not math.isfinite(value):
            return
        first = self.first.setdefault(key, value)
        done = (self.num_timesteps - self.start) / max(self.target - self.start, 1)
        if first > 0 and done <= self.cfg.early and value < floor * first:
            say(
                self.found,
                kind,
                f"at step {self.num_timesteps} ({done:.0%} of the run) the policy's {name} is {value:.3g}, "
                f"{value / first:.1%} of its first {first:.3g} (diagnostics.{option}={floor}): {ADVICE[kind]}",
            )

    def _explained_variance(self, value: Any) -> None:
        # only until the critic first explains something: once the agent masters an env its returns can
        # hardly vary (CartPole at 500), and their explained variance is noise around or below 0
        if self.explained or value is None or not math.isfinite(float(value)):  # NaN: constant returns
            return
        self.explained = float(value) > 0
        self.streak += 1
        if not self.explained and self.streak == self.cfg.explained_variance_updates:
            say(
                self.found,
                VALUE,
                f"explained variance <= 0 in each of the first {self.streak} updates, to step "
                f"{self.num_timesteps} (diagnostics.explained_variance_updates): the value function predicts "
                "the returns no better than their mean (normalize rewards, another gamma, vf_coef or "
                "learning_rate?)",
            )

    def _kl(self, values: dict[str, Any]) -> None:
        for key, limit, option in (
            ("train/approx_kl", self.cfg.max_approx_kl, "max_approx_kl"),
            ("train/clip_fraction", self.cfg.max_clip_fraction, "max_clip_fraction"),
        ):
            value = values.get(key)
            if key == "train/clip_fraction" and float(values.get("train/clip_range", 1.0)) <= 0:
                continue  # a linear clip range past its end (the zoo's arithmetic on the overshooting rollout)
            if limit is None or value is None:
                continue
            above = self.above[key] = self.above.get(key, 0) + 1 if float(value) > limit else 0
            if above == self.cfg.kl_updates:
                say(
                    self.found,
                    KL,
                    f"{key.removeprefix('train/')} above {limit} in {above} updates in a row, {float(value):.3g} at "
                    f"step {self.num_timesteps} (diagnostics.{option}, .kl_updates): each update moves the policy "
                    "far from the one that collected the data (a smaller learning_rate, fewer n_epochs, or target_kl?)",
                )

    def _q_values(self) -> None:
        try:
            q = estimated_q(self.model)
        except Exception as err:  # an unforeseen critic: a diagnostic never fails the run
            log.warning("the Q-value check is off for this run: %s: %s", type(err).__name__, err)
            self.check_q = False
            return
        if q is None:
            return
        mean_q, reward_max, gamma = q
        bound = reward_max / (1 - gamma)
        if bound > 0 and mean_q > self.cfg.q_factor * bound:
            say(
                self.found,
                Q_VALUES,
                f"at step {self.num_timesteps} the critic's mean |Q| is {mean_q:.4g}, over "
                f"{self.cfg.q_factor}x the largest discounted return possible, max |reward| / (1 - gamma) = "
                f"{bound:.4g} (diagnostics.q_factor): the critic overestimates without bound (a smaller "
                "learning_rate, a slower target update, rewards normalized or clipped?)",
            )


def estimated_q(model: Any) -> tuple[float, float, float] | None:
    """Mean |Q| of a replay batch, the largest |reward| in the replay buffer (as the critic sees rewards:
    normalized when VecNormalize normalizes them) and gamma; None for agents without a critic we know."""
    buffer = getattr(model, "replay_buffer", None)
    if buffer is None or buffer.size() == 0:
        return None
    reward_max = np.abs(buffer.rewards[: buffer.size()]).max(initial=0.0)
    normalizer = model.get_vec_normalize_env()
    if normalizer is not None and normalizer.norm_reward:
        reward_max = float(np.abs(normalizer.normalize_reward(np.array([reward_max]))).max())
    q_net = getattr(model, "q_net", None)  # DQN: Q of every action; SAC, TD3, TQC...: Q of (obs, action)
    critic = getattr(model, "critic", None) or q_net
    if critic is None:
        return None
    state = np.random.get_state()  # the buffer samples with numpy's global generator, as training does:
    try:  # this batch must not change the run's own batches (nor DQN's exploration)
        batch = buffer.sample(Q_BATCH, env=normalizer)
    finally:
        np.random.set_state(state)
    training = critic.training
    critic.set_training_mode(False)  # batch norm (CrossQ) must not learn from this batch
    try:
        with torch.no_grad():
            q = critic(batch.observations) if critic is q_net else critic(batch.observations, batch.actions)
    finally:
        critic.set_training_mode(training)
    q = torch.stack(q) if isinstance(q, (tuple, list)) else q
    return float(q.abs().mean()), float(reward_max), float(model.gamma)


def train_eval_gap(
    found: list[str], diagnostics: DiagnosticsConfig, episodes: Any, final: float, random: float | None
) -> None:
    """Warn when the final evaluation falls far below the last training episodes (the agent scores worse
    where it is measured than where it learnt: normalization, deterministic actions, another env?).
    ``episodes``: SB3's ep_info_buffer; the gap is a share of what training gained over the random policy."""
    returns = [float(info["r"]) for info in episodes]
    if diagnostics.train_eval_gap is None or len(returns) < GAP_MIN_EPISODES:
        return
    trained = float(np.mean(returns))
    scale = trained - random if random is not None else abs(trained)  # (no gain over random: no gap)
    if scale > 0 and trained - final > diagnostics.train_eval_gap * scale:
        base = "training's gain over the random policy" if random is not None else "the training return"
        say(
            found,
            GAP,
            f"final eval {final:.2f} against {trained:.2f} over the last {len(returns)} training episodes, a gap "
            f"over {diagnostics.train_eval_gap:.0%} of {base} (diagnostics.train_eval_gap): the agent is measured "
            "on something other than what it learnt on (normalization statistics, deterministic actions, "
            "an eval env built differently?), or its last updates made it worse",
            now=False,  # found at the end: said under the run's last line
        )


def no_better_than_random(final_eval: dict[str, Any], baseline: dict[str, Any] | None) -> str | None:
    """The final agent scores within the random policy's 95% confidence interval, or below it."""
    if not baseline or "mean" not in baseline:  # none, or no random episode ended
        return None
    ci = baseline.get("ci95_mean") or [baseline["mean"], baseline["mean"]]
    if final_eval["mean"] > ci[1]:
        return None
    return (
        f"final eval {final_eval['mean']:.2f} is no better than the random policy ({baseline['mean']:.2f}, 95% CI "
        f"[{ci[0]:.2f}, {ci[1]:.2f}]): the agent learnt nothing measurable (more n_timesteps, other "
        "hyperparameters, or a reward that does not depend on the actions?)"
    )


def judge_final(
    found: list[str], diagnostics: DiagnosticsConfig, episodes: Any, final_eval: dict[str, Any], baseline: Any
) -> None:
    """The signs only the final evaluation shows (``diagnostics``: the run's diagnostics settings; ``baseline``: its
    random baseline, a dict or nothing): a gap to training's returns, no better than random."""
    baseline = baseline if isinstance(baseline, dict) else None
    train_eval_gap(found, diagnostics, episodes, final_eval["mean"], (baseline or {}).get("mean"))
    unlearnt = diagnostics.beat_random and no_better_than_random(final_eval, baseline)
    if unlearnt:  # (said under the run's last line; found only now, so not logged twice)
        found.append(unlearnt)
