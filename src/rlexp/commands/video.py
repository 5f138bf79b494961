"""Record a saved agent's episodes, rendered headless, to mp4 (ffmpeg from the imageio-ffmpeg wheel) or gif.

One frame per step: the state each action was taken in. Files go to ``<out>/videos/``, each named with
its episode's seed and return. Needs the ``video`` extra: pip install 'rlexp[video]'.
"""

from __future__ import annotations

import argparse
import ctypes.util
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rlexp.commands.arguments import add_agent_arguments
from rlexp.config.env_families import FAMILIES
from rlexp.errors import ConfigError

if TYPE_CHECKING:  # the run modules import SB3: loaded once the arguments are good
    from rlexp.rundir.agents import SavedAgent

FORMATS = ("mp4", "gif")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_agent_arguments(parser, episodes=3, verb="record")
    parser.add_argument("--format", choices=FORMATS, default="mp4", help="mp4 (default) or gif")


def _headless() -> None:
    """Rendering without a display: pygame (classic control, Box2D) on SDL's dummy driver; a family that
    renders with OpenGL (MuJoCo: its ``headless_gl``) through EGL, else OSMesa (chosen before its package is
    imported)."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    for variable in (f.headless_gl for f in FAMILIES if f.headless_gl and f.headless_gl not in os.environ):
        for backend, library in (("egl", "EGL"), ("osmesa", "OSMesa")):
            if ctypes.util.find_library(library):
                os.environ[variable] = backend
                os.environ.setdefault("PYOPENGL_PLATFORM", backend)
                break


def _writer(fmt: str) -> Any:
    try:
        import imageio.v2 as imageio

        if fmt == "mp4":
            import imageio_ffmpeg  # noqa: F401  (the ffmpeg binary ships in this wheel)
    except ImportError as err:
        missing = f"rlexp video needs the video extra ({err.name} is missing): pip install 'rlexp[video]'"
        raise ConfigError(missing) from None
    return imageio


def record_episode(model: Any, env: Any, deterministic: bool) -> tuple[list[np.ndarray], float, int]:
    """Frames, return and length of one episode on a one-env VecEnv (its Monitor gives the raw return)."""
    obs = env.reset()
    frames, state, start = [env.get_images()[0]], None, np.ones((1,), dtype=bool)
    if frames[0] is None:
        raise ConfigError(f"{env.get_attr('spec')[0].id} renders no rgb_array frames: it cannot be recorded")
    while True:
        action, state = model.predict(obs, state=state, episode_start=start, deterministic=deterministic)
        obs, _, dones, infos = env.step(action)
        start = dones
        if "episode" in infos[0]:  # the env was reset: its frame now is the next episode's
            return frames, float(infos[0]["episode"]["r"]), int(infos[0]["episode"]["l"])
        frames.append(env.get_images()[0])


def _write(imageio: Any, frames: list[np.ndarray], options: dict[str, Any], path: Path) -> None:
    imageio.mimwrite(path, frames, **options)


def main(args: argparse.Namespace) -> int:
    imageio = _writer(args.format)
    from rlexp.zoo.saved_agents import open_agent  # (rlexp run dirs and RL Zoo log folders)

    agent = open_agent(args.run, args.agent, args.trust)
    _headless()
    from rlexp.files.atomic import atomic_write, remove_stale_temporaries
    from rlexp.rundir.contract import VIDEOS_DIR

    remove_stale_temporaries(agent.out_dir / VIDEOS_DIR)  # (of a video command killed while writing)
    seed, deterministic = agent.episode_seed(args.seed), agent.deterministic(args.stochastic)
    for i, (frames, ret, length, fps) in enumerate(_episodes(agent, args.episodes, seed, deterministic)):
        dest = agent.out_dir / VIDEOS_DIR / f"{agent.name}_seed{seed + i}_return{ret:.1f}.{args.format}"
        # mp4: even sizes for yuv420p, without resizing frames of the usual sizes; gif: duration in ms
        options = {"fps": fps, "macro_block_size": 2} if args.format == "mp4" else {"duration": 1000 / fps, "loop": 0}
        atomic_write(dest, functools.partial(_write, imageio, frames, options))
        print(f"rlexp: episode {i + 1}/{args.episodes} (seed {seed + i}): return {ret:.2f}, {length} steps -> {dest}")
    return 0


def _episodes(agent: SavedAgent, episodes: int, seed: int, deterministic: bool) -> Any:
    from rlexp.builders.envs import build_vec_env, closed_at_end
    from rlexp.loading.agent import load_saved_agent

    env_cfg = agent.cfg.env
    with closed_at_end(
        build_vec_env(
            env_cfg,
            agent.cfg.seed,
            None,
            agent.stats,
            for_eval=True,
            n_envs=1,
            render_mode="rgb_array",
            trust=agent.trust,
        )
    ) as env:
        model = load_saved_agent(agent, plays=env)
        model.set_random_seed(seed)  # --stochastic: the same actions sampled again
        fps = int(env.get_attr("metadata")[0].get("render_fps") or 30)
        for i in range(episodes):
            env.seed(seed + i)
            frames, ret, length = record_episode(model, env, deterministic)
            yield frames, ret, length, fps
