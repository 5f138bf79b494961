"""The docs' examples run as shown, and the reference pages agree with the code.

A code block of docs/**/*.md marked by an HTML comment on the line before its fence runs here:

    <!-- runnable -->         the block runs in the default test set
    <!-- runnable slow -->    the block runs under -m slow (long trainings, many runs)
    <!-- file PATH -->        the block is a file: written to PATH in the dir of every runnable block of
                              the same page before it runs (my_pkg/envs.py, run_policy.py)

A bash block's lines (``\\`` continues a line, ``#`` starts a comment) are `rlexp` or `python` commands,
run in order in one fresh dir per block. A line that trains gets FAST appended (the tests' small budget),
and a block's first training makes the run its later lines read (``outputs/<algo>-<env>/latest``). A Python block runs as a script, ``"n_timesteps=N"`` made small.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from conftest import FAST, SITE_GROUP, console_shape
from forked_rlexp import run_rlexp

from rlexp.commands import VERBS as COMMAND_VERBS

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
MARK = re.compile(r"<!--\s*runnable(?P<slow>\s+slow)?\s*-->")
FILE_MARK = re.compile(r"<!--\s*file\s+(?P<path>\S+)\s*-->")
# HTML comments the docs may hold outside code blocks: the marks above, and benchmarks.md's table anchor
# the build's own marks (docs/hooks): the speed table, the layers picture, a file shown as it is
OTHER_COMMENTS = ("<!-- speed table -->", "<!-- layers figure -->")
INCLUDE = re.compile(r"<!-- include \S+ -->")
# a text block that shows what a command prints: run in full under -m slow, and compared line by line
OUTPUT = re.compile(r"^<!-- output of: (?P<command>.+?) -->\n```text\n(?P<shown>.*?)\n```$", re.M | re.S)
VERBS = set(COMMAND_VERBS)  # (rlexp.commands: check, evaluate, ..., list)
NO_TRAINING = {"--cfg", "-c", "--help", "-h", "--info", "-i", "--hydra-help", "--version", "--shell-completion"}
GROUPS = {p.name for p in (ROOT / "conf").iterdir() if p.is_dir() and not p.name.startswith("_")}


@dataclass
class Block:
    page: str  # relative to docs/
    line: int  # of the fence
    lang: str
    code: str
    slow: bool = False
    file: str | None = None  # a file block's path

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass
class Parsed:
    runnable: list[Block] = field(default_factory=list)
    files: list[Block] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)  # marks inside a code block (an example of one), not marks
    problems: list[str] = field(default_factory=list)


def parse_docs() -> Parsed:
    parsed = Parsed()
    for path in sorted(DOCS.rglob("*.md")):
        page = path.relative_to(DOCS).as_posix()
        lines = path.read_text().splitlines()
        fence: str | None = None  # the fence of the code block we are in
        i = 0
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            if fence is not None:
                if stripped == fence:
                    fence = None
                elif MARK.fullmatch(stripped) or FILE_MARK.fullmatch(stripped):
                    parsed.shown.append(f"{page}:{i + 1}")
                i += 1
                continue
            opening = re.match(r"(`{3,})", stripped)
            if opening:
                fence = opening.group(1)
                i += 1
                continue
            mark, file_mark = MARK.fullmatch(stripped), FILE_MARK.fullmatch(stripped)
            if mark or file_mark:
                following = lines[i + 1] if i + 1 < len(lines) else ""
                start = re.fullmatch(r"```(\w+)", following)
                if not start:
                    parsed.problems.append(f"{page}:{i + 1}: {stripped} is not followed by a ```<language> fence")
                    i += 1
                    continue
                end = next((k for k in range(i + 2, len(lines)) if lines[k].strip() == "```"), None)
                if end is None:
                    parsed.problems.append(f"{page}:{i + 2}: the fence is never closed")
                    break
                block = Block(page, i + 2, start.group(1), "\n".join(lines[i + 2 : end]) + "\n")
                if mark:
                    block.slow = bool(mark.group("slow"))
                    if block.lang not in ("bash", "python"):
                        parsed.problems.append(f"{block.id}: a runnable block is bash or python, not {block.lang}")
                    parsed.runnable.append(block)
                else:
                    block.file = file_mark.group("path")
                    parsed.files.append(block)
                i = end + 1
                continue
            known = INCLUDE.fullmatch(stripped) or stripped.startswith("<!-- output of: ")
            if stripped.startswith("<!--") and stripped not in OTHER_COMMENTS and not known:
                parsed.problems.append(
                    f"{page}:{i + 1}: unknown mark {stripped!r} (runnable, runnable slow, file PATH)"
                )
            i += 1
    return parsed


PARSED = parse_docs()


def commands(block: Block) -> list[list[str]]:
    """A bash block's commands, continuation lines joined, comments dropped."""
    joined = block.code.replace("\\\n", " ")
    return [args for args in (shlex.split(line, comments=True) for line in joined.splitlines()) if args]


def trains(args: list[str]) -> bool:
    if args[0] != "rlexp" or (len(args) > 1 and args[1] in VERBS):
        return False
    return not NO_TRAINING & set(args[1:])


def with_budget(args: list[str]) -> list[str]:
    """FAST after the line's own overrides (the last value wins), but not a group the line chooses itself
    (Hydra refuses a group chosen twice: logger=wandb with FAST's logger=csv)."""
    chosen = {a.split("=", 1)[0] for a in args if "=" in a}
    return [*args, *(o for o in FAST if not (o.split("=", 1)[0] in GROUPS and o.split("=", 1)[0] in chosen))]


def _runs(cwd: Path, name: str) -> list[Path]:
    """The run dirs of outputs/<name>, oldest first (not the ``latest`` link)."""
    return sorted(p for p in (cwd / "outputs" / name).iterdir() if not p.is_symlink())


def newest_run(cwd: Path, name: str) -> str:
    latest = cwd / "outputs" / name / "latest"
    assert latest.is_dir(), f"no {latest} (a training line before it makes one)"
    return str(latest.relative_to(cwd))


@dataclass
class Ran:
    args: list[str]
    result: subprocess.CompletedProcess


def run_block(block: Block, cwd: Path) -> list[Ran]:
    for file_block in PARSED.files:
        if file_block.page == block.page:
            target = cwd / file_block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(file_block.code)
    env = {**os.environ}
    env.pop("HYDRA_FULL_ERROR", None)
    if "wandb" in block.code:  # no W&B key: offline, under the block's dir
        env["HOME"] = str(cwd)
        env.pop("WANDB_API_KEY", None)
    if block.lang == "python":
        script = re.sub(r'"n_timesteps=\d+"', '"n_timesteps=512", "callbacks.eval.freq=256"', block.code)
        result = subprocess.run(
            [sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
        )
        assert result.returncode == 0, (block.id, result.stderr[-3000:])
        return [Ran(["python"], result)]
    ran = []
    for args in commands(block):
        full = with_budget(args) if trains(args) else args
        if full[0] == "rlexp":  # the console script's entry point, forked from the tests' server
            result = run_rlexp(full[1:], cwd, env, 600)
        else:
            argv = [sys.executable, *full[1:]]
            result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, (block.id, shlex.join(full), result.stderr[-3000:])
        if trains(args) and "-m" not in args and "--multirun" not in args:
            assert result.stdout.strip().splitlines()[-1].startswith("rlexp: run saved to "), (block.id, args)
        ran.append(Ran(args, result))
    return ran


# ----------------------------------------------------------------------------------- the marks
def test_every_mark_was_found():
    assert PARSED.problems == []
    raw = sum(len(re.findall(r"^\s*<!--\s*(?:runnable|file)\b", p.read_text(), re.M)) for p in DOCS.rglob("*.md"))
    assert len(PARSED.runnable) + len(PARSED.files) + len(PARSED.shown) == raw
    # (contributing.md shows the convention inside a ````markdown block: an example, not a mark)
    assert all(where.startswith("contributing.md:") for where in PARSED.shown)
    assert len(PARSED.runnable) >= 20 and sum(not b.slow for b in PARSED.runnable) >= 10


def test_each_guide_has_a_runnable_block():
    guides = sorted(p.relative_to(DOCS).as_posix() for p in (DOCS / "guides").glob("*.md"))
    assert len(guides) >= 9
    with_blocks = {b.page for b in PARSED.runnable}
    assert [g for g in guides if g not in with_blocks] == []


def test_runnable_bash_blocks_hold_only_commands_that_run():
    for block in PARSED.runnable:
        if block.lang == "bash":
            found = commands(block)
            assert found, block.id
            assert all(args[0] in ("rlexp", "python") for args in found), (block.id, found)
            assert any(args[0] == "rlexp" for args in found), block.id


def test_the_budget_is_appended_to_trainings_only():
    assert trains(["rlexp"]) and trains(["rlexp", "-m", "seed=0,1"]) and trains(["rlexp", "algo=sac"])
    assert not trains(["rlexp", "--cfg", "job", "algo=td3"]) and not trains(["rlexp", "evaluate", "RUN"])
    assert not trains(["python", "run_policy.py"])
    budget = with_budget(["rlexp", "logger=wandb", "n_timesteps=20000"])
    assert "logger=csv" not in budget and budget[-1] == FAST[-1]
    assert budget.index("n_timesteps=256") > budget.index("n_timesteps=20000")  # (the last value wins)


# ----------------------------------------------------------------------------------- what blocks promise
def _one_run(cwd: Path, name: str) -> Path:
    return cwd / newest_run(cwd, name)


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def _getting_started(cwd: Path, ran: list[Ran]) -> None:
    run = _one_run(cwd, "ppo-cartpole")
    for name in (
        "model.zip",
        "best/model.zip",
        "config.yaml",
        "command.txt",
        "evaluations.npz",
        "logs",
        "monitor/train",
    ):
        assert (run / name).exists(), name
    assert _summary(run)["status"] == "completed"
    assert (run / "eval" / "final_seed10000_n100_envs16.json").is_file()


def _evaluate(cwd: Path, ran: list[Ran]) -> None:
    run = _one_run(cwd, "ppo-cartpole")
    assert sorted(p.name for p in (run / "eval").iterdir()) == [
        "best_seed10000_n20_envs4.csv",
        "best_seed10000_n20_envs4.json",
        "final_seed10000_n100_envs16.csv",
        "final_seed10000_n100_envs16.json",
    ]
    assert (cwd / "outputs" / "ppo-cartpole" / "curves.pdf").read_bytes()[:5] == b"%PDF-"


def _exported(cwd: Path, ran: list[Ran]) -> None:
    run = _one_run(cwd, "ppo-cartpole")
    for name in ("policy.onnx", "policy.pt", "policy.int8.onnx", "policy.json", "parity.json"):
        assert (run / "export" / name).is_file(), name
    final = _summary(run)["final_eval"]  # the script plays the final evaluation again, and gets its result
    assert ran[-1].result.stdout.strip() == f"mean return {final['mean']:.2f} over {final['episodes']} episodes"


def _exported_sac(cwd: Path, ran: list[Ran]) -> None:
    run = _one_run(cwd, "sac-pendulum")
    assert (run / "export" / "policy.onnx").is_file() and (run / "export_best" / "policy.int8.onnx").is_file()
    assert ran[-1].result.stdout.startswith("mean return ")


def _python_api(cwd: Path, ran: list[Ran]) -> None:
    run = cwd / "runs" / "ppo"
    assert "seed=1" in (run / "command.txt").read_text()
    assert (run / "export" / "policy.onnx").is_file() and (cwd / "runs" / "report" / "report.md").is_file()
    lines = ran[0].result.stdout.splitlines()
    assert "iqm" in lines[-2] and "CartPole-v1" in lines[-1]


def _custom(cwd: Path, ran: list[Ran]) -> None:
    assert (cwd / "outputs" / "ppo-my_pkg.envs_MyEnv").is_dir()
    assert "ok   gymnasium" in ran[1].result.stdout


def _custom_parts(cwd: Path, ran: list[Ran]) -> None:
    assert "my callback: step" in ran[0].result.stdout
    assert "my_pkg.wrappers.ScaleReward" in (_one_run(cwd, "ppo-cartpole") / "config.yaml").read_text()


def _custom_algo(cwd: Path, ran: list[Ran]) -> None:
    assert _summary(_one_run(cwd, "my_ppo-cartpole"))["algo_class"] == "my_pkg.algos.MyPPO"


def _continued(cwd: Path, ran: list[Ran]) -> None:
    _first, second = _runs(cwd, "ppo-cartpole")
    summary = _summary(second)
    assert summary["trained_agent"] and summary["start_step"] > 0 and summary["steps_done"] > summary["start_step"]


def _stop(cwd: Path, ran: list[Ran]) -> None:
    assert _summary(_one_run(cwd, "ppo-cartpole"))["stop_reward_threshold"] == 475


def _env_ids(cwd: Path, ran: list[Ran]) -> None:
    assert (cwd / "outputs" / "ppo-Taxi-v4").is_dir()


def _overrides(cwd: Path, ran: list[Ran]) -> None:
    assert "_target_: stable_baselines3.TD3" in ran[-1].result.stdout


def _search(cwd: Path, ran: list[Ran]) -> None:
    sweep = cwd / "multirun" / "search" / "ppo-cartpole"
    assert (sweep / "tuned" / "ppo_cartpole_search.yaml").is_file() and (sweep / "trials.csv").is_file()


def _seeds(cwd: Path, ran: list[Ran]) -> None:
    assert (cwd / "multirun" / "seeds" / "curves.png").is_file()
    assert (cwd / "multirun" / "seeds" / "report" / "report.md").is_file()


def _video(cwd: Path, ran: list[Ran]) -> None:
    assert len(list((_one_run(cwd, "ppo-cartpole") / "videos").glob("final_seed10000_return*.gif"))) == 1


def _report(cwd: Path, ran: list[Ran]) -> None:
    report = (cwd / "multirun" / "ppo_vs_a2c" / "report" / "report.md").read_text()
    assert "| algo=ppo | 5 |" in report
    assert "normalized IQM" in report  # the second command's --target
    # the tables the guide shows are report.md's, but for their numbers
    page = (
        (DOCS / "guides" / "evaluate-and-report.md").read_text().split("`report.md` shows", 1)[1].split("Read:", 1)[0]
    )
    made = {console_shape(line) for line in report.splitlines()}
    assert [line for line in page.splitlines() if line.startswith("|") and console_shape(line) not in made] == []


def _trackers(cwd: Path, ran: list[Ran]) -> None:
    runs = _runs(cwd, "ppo-cartpole")
    assert len(runs) == 3 and (cwd / "mlruns.db").is_file()
    assert (runs[0] / "wandb").is_dir() and _summary(runs[2])["trackers"]


def _local_parallel(cwd: Path, ran: list[Ran]) -> None:
    jobs = [p for p in cwd.glob("multirun/*/*") if (p / "summary.json").is_file() and not p.parent.is_symlink()]
    assert len(jobs) == 4 and all(_summary(j)["status"] == "completed" for j in jobs)


def _trusted(cwd: Path, ran: list[Ran]) -> None:
    """The run of the user's own wrapper opened with --trust; without it, one line and nothing written."""
    run = cwd / newest_run(cwd, "ppo-cartpole")
    assert len(list((run / "eval").glob("*.json"))) == 1
    exe = shutil.which("rlexp") or str(Path(sys.executable).parent / "rlexp")
    refused = subprocess.run([exe, "evaluate", str(run), "--episodes", "1"], cwd=cwd, capture_output=True, text=True)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert "names my_wrappers.Identity" in refused.stderr and "--trust my_wrappers" in refused.stderr
    assert len(list((run / "eval").glob("*.json"))) == 1


# page -> (a piece of the block's code, the check of (block dir, what ran))
def _zoo_run(cwd: Path, ran: list[Ran]) -> None:
    """An RL Zoo log folder evaluated, exported and reported: what each writes, in the zoo's folder."""
    run = cwd / "logs" / "ppo" / "CartPole-v1_1"
    assert json.loads((run / "eval" / "final_seed7_n5.json").read_text())["episodes"] == 5
    assert (run / "export" / "policy.onnx").is_file()
    assert "1 runs used of 1 found" in (cwd / "logs" / "ppo" / "report" / "report.md").read_text()


PROMISES: dict[str, list[tuple[str, Callable[[Path, list[Ran]], None]]]] = {
    "getting-started.md": [("rlexp evaluate", _getting_started)],
    "guides/train.md": [
        ("callbacks.stop=solved", _stop),
        ("env.id=Taxi-v4", _env_ids),
        ("--cfg job algo=td3", _overrides),
    ],
    "guides/evaluate-and-report.md": [
        ("--n-envs 4", _evaluate),
        ("multirun/seeds", _seeds),
        ("rlexp video", _video),
        ("rlexp report multirun/ppo_vs_a2c", _report),
        ("rlexp evaluate logs/ppo/CartPole-v1_1", _zoo_run),
    ],
    "guides/export.md": [("env=pendulum", _exported_sac), ("ppo-cartpole/latest --quantize", _exported)],
    "guides/python-api.md": [("rlexp.train", _python_api)],
    "guides/custom-env-and-algo.md": [
        ("rlexp check env.id=my_pkg", _custom),
        ("callbacks.extra.printer", _custom_parts),
        ("algo=my_ppo", _custom_algo),
    ],
    "guides/continue-and-resume.md": [("trained_agent=", _continued)],
    "guides/tune.md": [("tuned=ppo_cartpole_search", _search)],
    "guides/trackers.md": [("logger=mlflow", _trackers)],
    "guides/cluster.md": [("local_parallel seed=0,1,2,3", _local_parallel)],
    "guides/security.md": [("--trust my_wrappers", _trusted)],
}


def test_each_promise_has_its_block():
    for page, promises in PROMISES.items():
        for piece, _ in promises:
            assert any(b.page == page and piece in b.code for b in PARSED.runnable), (page, piece)


@pytest.mark.parametrize(
    "block",
    [pytest.param(b, id=b.id, marks=[pytest.mark.slow] if b.slow else []) for b in PARSED.runnable],
)
def test_runnable_block_runs_as_shown(block, tmp_path):
    ran = run_block(block, tmp_path)
    for piece, check in PROMISES.get(block.page, []):
        if piece in block.code:
            check(tmp_path, ran)


# ----------------------------------------------------------------------------------- reference pages
def _section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_the_cli_reference_lists_each_verbs_flags(verb):
    exe = shutil.which("rlexp") or str(Path(sys.executable).parent / "rlexp")
    result = subprocess.run([exe, verb, "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    usage = result.stdout.split("\n\n", 1)[0]
    flags = set(re.findall(r"\[(--[a-z][a-z-]*)", usage)) - {"--help"}
    page = (DOCS / "reference" / "cli.md").read_text()
    section = _section(page, f"`rlexp {verb}")
    shown = {m for line in section.splitlines() if line.startswith("| `--") for m in re.findall(r"`(--[a-z-]+)", line)}
    assert shown == flags


def _error_pairs(text: str) -> list[tuple[str, str]]:
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith(("$ rlexp", "rlexp: error:"))]
    return [(cmd, out) for cmd, out in zip(lines[::2], lines[1::2], strict=True)]


def test_the_cli_references_errors_are_the_readmes():
    """The errors shown in reference/cli.md are among README's, each of which test_readme.py runs."""
    docs = _error_pairs(_section((DOCS / "reference" / "cli.md").read_text(), "## Errors"))
    readme = _error_pairs((ROOT / "README.md").read_text().split("## Errors\n", 1)[1].split("\n## ", 1)[0])
    assert docs and set(docs) <= set(readme)


def test_the_run_dir_reference_names_every_file_and_key():
    page = (DOCS / "reference" / "run-dir.md").read_text()
    contract = pytest.importorskip("rlexp.rundir.contract")
    names = {
        value
        for name, value in vars(contract).items()
        if name.isupper() and isinstance(value, str) and name.endswith(("_FILE", "_DIR", "_PREFIX"))
    }
    assert len(names) > 15
    assert [n for n in sorted(names) if n not in page] == []
    import dataclasses

    record = pytest.importorskip("rlexp.rundir.record")
    keys = [f.name for f in dataclasses.fields(record.RunRecord) if f.name != "extra"]
    summary = page.split("## `summary.json`", 1)[1].split("\n## ", 1)[0]
    assert [k for k in keys if f"`{k}`" not in summary] == []


@SITE_GROUP
def test_the_site_builds_without_a_warning(site):
    config = (site / "reference" / "config" / "index.html").read_text()
    assert "callbacks.eval.freq" in config and "slurm_cpu" in config
    assert "dqn_cartpole" in (site / "reference" / "tuned" / "index.html").read_text()


def test_readmes_speed_table_is_the_benchmarks_page_s():
    def table(text: str) -> list[str]:
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("| case |"))
        end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
        return lines[start:end]

    readme = (ROOT / "README.md").read_text().split("\n## Speed\n", 1)[1].split("\n## ", 1)[0]
    page = (DOCS / "benchmarks.md").read_text().split("<!-- speed table -->", 1)[1]
    assert table(readme) == table(page) and len(table(page)) > 3


def _shown_outputs() -> list[tuple[str, str, str]]:
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        for match in OUTPUT.finditer(page.read_text()):
            found.append((str(page.relative_to(DOCS)), match["command"], match["shown"]))
    return found


def test_each_shown_output_is_marked_with_its_command():
    assert [page for page, _, _ in _shown_outputs()] == [
        "getting-started.md",
        "guides/custom-env-and-algo.md",
        "guides/diagnostics.md",
        "guides/evaluate-and-report.md",
        "guides/evaluate-and-report.md",
        "guides/evaluate-and-report.md",
        "guides/export.md",
        "guides/train.md",
        "guides/tune.md",
        "index.md",
    ]


@functools.cache
def _printed(commands: str, page: str) -> tuple[str, ...]:
    """What the last of ``commands`` (``a && b``: in turn, in one dir) prints on stdout and stderr, run once
    per test worker in a dir of its own, which holds the page's files (``<!-- file PATH -->``)."""
    cwd = Path(tempfile.mkdtemp(prefix="rlexp-shown-"))
    for file_block in PARSED.files:
        if file_block.page == page:
            (cwd / file_block.file).parent.mkdir(parents=True, exist_ok=True)
            (cwd / file_block.file).write_text(file_block.code)
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    exe = shutil.which("rlexp") or str(Path(sys.executable).parent / "rlexp")
    for command in commands.split(" && "):
        result = subprocess.run(  # (stderr into stdout: the lines in the order a terminal shows them)
            [exe, *shlex.split(command)[1:]],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=1800,
        )
        assert result.returncode == 0, (command, result.stdout[-2000:])
    return tuple(line for line in result.stdout.splitlines() if line.strip())


def _fits(shown: list[str], printed: list[str]) -> bool:
    """``shown`` is ``printed`` line for line, where a ``...`` line stands for any lines (none included)."""

    @functools.cache
    def match(i: int, j: int) -> bool:
        if i == len(shown):
            return j == len(printed)
        if shown[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(printed) + 1))
        return j < len(printed) and shown[i] == printed[j] and match(i + 1, j + 1)

    return match(0, 0)


@pytest.mark.slow
@pytest.mark.parametrize(("page", "command", "shown"), _shown_outputs())
def test_a_shown_output_is_what_the_command_prints(page, command, shown):
    """Each line as shown, but for its numbers, paths and verdict; ``...`` stands for lines left out."""
    printed = _printed(command, page)
    assert _fits([console_shape(line) for line in shown.splitlines()], [console_shape(line) for line in printed]), (
        page,
        printed,
    )
