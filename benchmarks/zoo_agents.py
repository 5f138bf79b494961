"""RL Zoo's published agents, opened and scored by rlexp: every agent folder of a checkout of DLR-RM/rl-trained-agents
(the zoo's agents, the files of the sb3 organisation's Hugging Face models; MIT licence) against the zoo's
``benchmark.md`` (rlexp.data/zoo_benchmark.csv).

For each ``<algo>/<EnvId>_<n>/`` it opens the agent as ``rlexp evaluate`` does (rlexp.zoo.saved_agents.open_agent: gym's
spaces read as gymnasium's, schedules rebuilt from config.yml, a moved env id played as the env that replaces
it), plays ``--episodes`` episodes from ``--seed`` as ``rlexp evaluate FOLDER --seed S --episodes N`` does, and
writes a row: the env played (id and kwargs), the mean with its 95% bootstrap CI, the zoo's published mean and
std, and "near" (within the published std of the published mean, or above it) or "far" with the reason measured
(REASONS). A folder whose zip is not in the checkout (large-file storage: the Atari agents) or that cannot be
opened is listed with the reason. With ``--zoo-python`` (a Python with rl_zoo3 2.9.2 and gym 0.26, e.g. a venv
of its own: ``python -m venv --system-site-packages V && V/bin/pip install gym==0.26.2``) it also plays the zoo's
own ``enjoy`` on the same seed, where the zoo can open the agent: the same returns, episode by episode.

    python benchmarks/zoo_agents.py /path/to/rl-trained-agents --jobs 2        # every folder
    python benchmarks/zoo_agents.py CHECKOUT --algo ppo --env CartPole-v1 --no-save
    nox -s zoo-agents -- /path/to/rl-trained-agents --zoo-python /path/to/venv/bin/python

The rows go to benchmarks/zoo_agents.json, which the docs' "RL Zoo's published agents" page
(docs/hooks/zoo_agents_page.py) and README's line are made from.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "zoo_agents.json"
LFS_POINTER = b"version https://git-lfs"
# why an agent plays far from its published score, as measured (folder -> reason): each agent also played on
# -v4 (mujoco's model of -v3 with today's bindings), 20 episodes, seed 0
_PHYSICS = (
    "today's MuJoCo (4.0) simulating, not the MuJoCo 2 of mujoco-py it trained in: it plays {} on -v4 too; a "
    "deterministic agent's published std is narrower than that change"
)
REASONS: dict[str, str] = {
    "ars/Hopper-v3_1": _PHYSICS.format("3,293.0"),
    "sac/HalfCheetah-v3_1": _PHYSICS.format("9,398.0"),
    "sac/Swimmer-v3_1": _PHYSICS.format("336.2"),
    "tqc/Hopper-v3_1": _PHYSICS.format("3,363.8"),
    "tqc/Swimmer-v3_1": _PHYSICS.format("334.1"),
    "trpo/Swimmer-v3_1": _PHYSICS.format("357.9"),
    "ars/Walker2d-v3_1": (
        "1,022.2 on Walker2d-v5 (another friction of the right foot), 1,479.5 on -v4, its model: the rest is "
        "today's MuJoCo (4.0) simulating, not mujoco-py's MuJoCo 2"
    ),
    "ppo/BipedalWalker-v3_1": (
        "the zoo's own enjoy plays it to the same returns: the env (gymnasium 1's BipedalWalker-v3 against the gym "
        "0.19 one it trained in), not how rlexp opens it"
    ),
}


def folders(checkout: Path, algo: str | None, env: str | None) -> list[Path]:
    """The agent folders of a checkout (``<algo>/<EnvId>_<n>``), in order."""
    found = sorted(p for p in checkout.glob("*/*_[0-9]*") if p.is_dir() and re.fullmatch(r".+_\d+", p.name))
    return [p for p in found if (algo in (None, p.parent.name)) and (env in (None, p.name.rsplit("_", 1)[0]))]


def _absent(folder: Path) -> str | None:
    """Why the folder's agent is not in this checkout (None when it is)."""
    zip_path = folder / f"{folder.name.rsplit('_', 1)[0]}.zip"
    if not zip_path.is_file():
        return "its zip is not in this checkout (large-file storage)"
    with open(zip_path, "rb") as f:
        if f.read(len(LFS_POINTER)) == LFS_POINTER:
            return "its zip is a large-file-storage pointer in this checkout"
    return None


def score(folder: Path, episodes: int, seed: int) -> dict[str, Any]:
    """One folder's row: the agent opened and played as ``rlexp evaluate FOLDER --seed S --episodes N``."""
    from rlexp.commands.evaluate import run_episodes
    from rlexp.errors import ConfigError
    from rlexp.references.zoo_benchmark import published
    from rlexp.stats.scores import summarize
    from rlexp.zoo.saved_agents import open_agent

    algo, zoo_env = folder.parent.name, folder.name.rsplit("_", 1)[0]
    row: dict[str, Any] = {"folder": f"{algo}/{folder.name}", "algo": algo, "zoo_env": zoo_env}
    bench = published(algo, zoo_env)
    if bench is not None:
        row["published"] = {"mean": bench.mean, "std": bench.std, "episodes": bench.eval_episodes}
    absent = _absent(folder)
    if absent:
        return {**row, "verdict": "not in checkout", "why": absent}
    said = io.StringIO()
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(said):
            agent = open_agent(str(folder))
            played = run_episodes(agent, episodes, seed, agent.deterministic(False), agent.eval_envs(episodes))
    except ConfigError as err:
        return {**row, "verdict": "not opened", "why": str(err).replace(str(folder.parent.parent) + "/", "")}
    env = agent.cfg.env
    kwargs = {k: v for k, v in dict(env.kwargs).items() if v is not None}
    row["played"] = env.id + "".join(f" {k}={v}" for k, v in kwargs.items())
    moved = [line.removeprefix("rlexp: ") for line in said.getvalue().splitlines() if "no longer builds" in line]
    if moved:
        row["moved"] = moved[0]
    stats = summarize(played.returns, played.successes or None, seed=seed)
    row.update(
        episodes=episodes,
        seed=seed,
        mean=stats["mean"],
        ci95=stats["ci95_mean"],
        returns=played.returns,
        lengths=played.lengths,
        seconds=round(time.perf_counter() - start, 1),
    )
    if bench is None:
        row["verdict"] = "no published score"
    else:
        row["verdict"] = "near" if stats["mean"] >= bench.mean - bench.std else "far"
    if row["folder"] in REASONS:
        row["why"] = REASONS[row["folder"]]
    return row


def enjoy(folder: Path, row: dict[str, Any], python: str) -> dict[str, Any]:
    """The zoo's own enjoy on the same agent, seed and steps: its returns, or why it cannot open the agent."""
    steps = sum(row["lengths"])
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp) / "logs" / row["algo"]
        logs.mkdir(parents=True)
        (logs / folder.name).symlink_to(folder.resolve())
        command = [python, "-m", "rl_zoo3.enjoy", "--algo", row["algo"], "--env", row["zoo_env"], "-f", "logs",
                   "--exp-id", folder.name.rsplit("_", 1)[1], "-n", str(steps), "--seed", str(row["seed"]),
                   "--no-render", "--num-threads", "1"]  # fmt: skip
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        done = subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=1800, env=env)
    returns = [float(v) for v in re.findall(r"^Episode Reward: (\S+)$", done.stdout, re.M)][: row["episodes"]]
    if done.returncode != 0 or not returns:
        last = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        return {"opened": False, "why": (last[-1] if last else f"exit {done.returncode}")[:200]}
    # (enjoy prints 2 decimals of a float32 sum: 0.01 over 2,000 steps of BipedalWalkerHardcore)
    same = len(returns) == len(row["returns"]) and all(
        abs(a - b) <= 0.01 + 1e-4 * abs(b) for a, b in zip(returns, row["returns"], strict=True)
    )
    mean = sum(returns) / len(returns)
    return {"opened": True, "mean": mean, "episodes": len(returns), "same_returns": same, "returns": returns}


# the packages whose versions make a score (the env's physics, the agent's library)
PACKAGES = ("gymnasium", "stable-baselines3", "sb3-contrib", "torch", "mujoco", "box2d", "pybullet", "panda-gym",
            "gymnasium-robotics")  # fmt: skip


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def _row(folder: Path, episodes: int, seed: int, zoo_python: str | None) -> dict[str, Any]:
    """A folder's row, in a worker process of one torch thread."""
    import torch

    torch.set_num_threads(1)
    row = score(folder, episodes, seed)
    row["versions"] = versions()
    if zoo_python and "returns" in row:
        row["enjoy"] = enjoy(folder, row, zoo_python)
    return row


def summary(rows: list[dict[str, Any]]) -> str:
    """README's line and the page's first sentence."""
    present = [r for r in rows if r["verdict"] != "not in checkout"]
    opened = [r for r in present if "mean" in r]
    near = sum(r["verdict"] == "near" for r in opened)
    scored = sum(r["verdict"] in ("near", "far") for r in opened)
    return (
        f"{len(opened)} of the {len(present)} agents whose files a checkout holds open in rlexp without gym; "
        f"{near} of the {scored} with a published score play near it"
    )


def _versions_text(found: dict[str, str]) -> str:
    return ", ".join(f"{name} {v}" for name, v in found.items())


def _score(row: dict[str, Any]) -> str:
    low_high = f" [{row['ci95'][0]:.1f}, {row['ci95'][1]:.1f}]" if row["ci95"] else ""
    return f"{row['mean']:.1f}{low_high}"


def _published(row: dict[str, Any]) -> str:
    pub = row.get("published")
    return f"{pub['mean']:.1f} +/- {pub['std']:.1f}" if pub else "-"


def _breakable(text: str) -> str:
    """A name a narrow column may wrap after an underscore or a slash (as HTML: Markdown would read ``_``)."""
    return _cell(text).replace("_", "&#95;<wbr>").replace("/", "/<wbr>")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def page(record: dict[str, Any]) -> str:
    """docs/reference/zoo-agents.md (made at every site build from benchmarks/zoo_agents.json)."""
    rows = record["rows"]
    out = [
        "# RL Zoo's published agents",
        "",
        f"**{summary(rows)}.** The agents are those of DLR-RM/rl-trained-agents (the files of the `sb3` "
        "organisation's Hugging Face models, which `rl_zoo3.load_from_hub` downloads), most of them saved by "
        "Stable-Baselines3 1.x with gym 0.19-0.21 under Python 3.7. rlexp reads gym's spaces as gymnasium's, "
        "never unpickles their schedules (it rebuilds them from the folder's `config.yml`) and plays an env id "
        "that no longer builds as the env that replaces it, saying so; see "
        "[Opening someone else's run](../guides/security.md).",
        "",
        f"Each agent plays {record['episodes']} episodes from seed {record['seed']}, as "
        f"`rlexp evaluate FOLDER --seed {record['seed']} --episodes {record['episodes']}` plays them; "
        "*near* means within the published std of the published mean, or above it. The published score is "
        "the zoo's `benchmark.md` (one agent, about 150,000 steps of evaluation). The zoo's own `enjoy` "
        "(rl_zoo3 2.9.2 with gym 0.26 installed beside gymnasium, in a venv of its own) plays the same seed "
        "where it can open the agent. Generated from `benchmarks/zoo_agents.json` "
        f"(checkout {record['checkout_commit']}; {_versions_text(record['versions'])}), written by "
        "`nox -s zoo-agents -- CHECKOUT` (`benchmarks/zoo_agents.py`).",
        "",
        "| agent | env played | rlexp [95% CI] | published | verdict | zoo's enjoy |",
        "|---|---|---|---|---|---|",
    ]
    played = [r for r in rows if "mean" in r]
    for r in played:
        zoo = r.get("enjoy")
        zoo_text = (
            "-"
            if zoo is None
            else "cannot open"
            if not zoo["opened"]
            else ("same returns" if zoo["same_returns"] else f"other returns, {zoo['mean']:.1f}")
        )
        verdict = r["verdict"] + (" (why: below)" if r.get("why") else "")
        other = {k: v for k, v in r.get("versions", {}).items() if record["versions"].get(k) != v}
        if other:
            verdict += f" (with {_versions_text(other)})"
        cells = [_breakable(r["folder"]), _breakable(r["played"]), _score(r), _published(r), verdict, zoo_text]
        out.append("| " + " | ".join(cells) + " |")
    far = [r for r in played if r.get("why")]
    if far:
        out += ["", "## Far from the published score, and why", "", "| agent | rlexp | published | why |",
                "|---|---|---|---|"]  # fmt: skip
        out += [f"| {r['folder']} | {r['mean']:.1f} | {_published(r)} | {_cell(r['why'])} |" for r in far]
    unopened = [r for r in rows if r["verdict"] == "not opened"]
    if unopened:
        out += ["", "## Not opened", ""] + [f"- {r['folder']}: {r['why']}" for r in unopened]
    absent = [r["folder"] for r in rows if r["verdict"] == "not in checkout"]
    if absent:
        out += ["", "## Not in a checkout", "", f"{len(absent)} agents (the Atari ones among them) are kept in Git's "
                "large-file storage, which a checkout holds as pointers only: " + ", ".join(absent) + "."]  # fmt: skip
    moves = sorted({r["moved"] for r in rows if r.get("moved")})
    if moves:
        out += ["", "## Env ids that moved", "", "What `rlexp evaluate` says, once per agent, where the agent's env "
                "id no longer builds:", ""] + [f"- {line}" for line in moves]  # fmt: skip
    cannot = sorted({r["enjoy"]["why"] for r in rows if r.get("enjoy") and not r["enjoy"]["opened"]})
    if cannot:
        out += ["", "## Where the zoo's own enjoy cannot open an agent", ""] + [f"- `{why}`" for why in cannot]
    return "\n".join([*out, ""])


def _commit(checkout: Path, given: str | None) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else (given or "(not a git checkout)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a checkout of DLR-RM/rl-trained-agents")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--algo", help="only this algorithm's folders")
    parser.add_argument("--env", help="only this env id's folders (the zoo's id)")
    parser.add_argument("--zoo-python", help="a Python with rl_zoo3 2.9.2 and gym 0.26: also play the zoo's enjoy")
    parser.add_argument("--commit", help="the repository's commit, where the checkout is not a git work tree")
    parser.add_argument("--no-save", action="store_true", help=f"print the rows, leave {RESULTS.name} as it is")
    parser.add_argument("--jobs", type=int, default=1, help="folders played side by side (one torch thread each)")
    args = parser.parse_args()
    todo = folders(args.checkout, args.algo, args.env)
    rows = []
    with ProcessPoolExecutor(args.jobs) as pool:
        n = len(todo)
        for row in pool.map(_row, todo, [args.episodes] * n, [args.seed] * n, [args.zoo_python] * n):
            rows.append(row)
            shown = {k: v for k, v in row.items() if k not in ("returns", "lengths")}
            print(json.dumps(shown), flush=True)
    record = {"checkout_commit": _commit(args.checkout, args.commit), "episodes": args.episodes, "seed": args.seed,
              "versions": versions()}  # fmt: skip
    if args.no_save:
        return
    if RESULTS.is_file() and (args.algo or args.env):  # a part: the other rows and the whole run's record stay
        old = json.loads(RESULTS.read_text())
        done = {r["folder"] for r in rows}
        rows = sorted([*(r for r in old["rows"] if r["folder"] not in done), *rows], key=lambda r: r["folder"])
        record = {k: v for k, v in old.items() if k != "rows"}
    RESULTS.write_text(json.dumps({**record, "rows": rows}, indent=1) + "\n")
    print(summary(rows))


if __name__ == "__main__":
    sys.exit(main())
