"""Sessions: lint (ruff, the import layers, the types), tests (fast set), slow (long trainings and end-to-end runs), docs,
benchmarks. `nox -s tests`."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True
# the CPU build of torch (a bare `torch` pulls a multi-GB CUDA build)
TORCH = "torch==2.13.0"


def _install(session: nox.Session) -> None:
    session.install(TORCH, "-e", ".[dev]")


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.6")
    session.run("ruff", "check", "src", "tests", "tools", "benchmarks", "noxfile.py", "docs")
    session.run("ruff", "format", "--check", "src", "tests", "tools", "benchmarks", "noxfile.py", "docs")
    # the layers of pyproject.toml's [tool.importlinter] (import-linter reads the installed package)
    _install(session)
    session.run("lint-imports")
    # the types of src/ ([tool.pyright]: standard mode, every `# type: ignore` needed)
    session.run("pyright")


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site into site/, every warning an error (a broken link, a missing page)."""
    _install(session)
    session.run("mkdocs", "build", "--strict", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    _install(session)
    session.run("pytest", "-n", "2", *session.posargs)


# Hydra 1.4's release candidates, with the OmegaConf and submitit launcher they go with: rlexp pins
# hydra-core<1.4 until 1.4 is released; this session is what says it works on 1.4 (docs/architecture.md)
HYDRA_14 = ["hydra-core==1.4.0rc3", "omegaconf==2.4.1rc1", "hydra-submitit-launcher==1.4.0rc3"]


@nox.session(name="tests-hydra14", venv_params=["--system-site-packages"])
def tests_hydra14(session: nox.Session) -> None:
    """The default tests (or the pytest arguments given) on Hydra 1.4: Hydra's three packages installed over
    the environment nox runs from (README's install: every other dependency), rlexp on top without its pins."""
    session.install(*HYDRA_14)
    session.install("--no-deps", "-e", ".")
    session.run(
        "python", "-c", "import hydra, omegaconf; print('hydra', hydra.__version__, 'omegaconf', omegaconf.__version__)"
    )
    session.run("python", "-m", "pytest", "-n", "2", *session.posargs)


# the CPU build of torch where it lies on disk (these machines), else from PyTorch's CPU index
_TORCH_WHEELS = "/opt/wheels"


@nox.session(name="tests-lowest", python="3.11", venv_backend="uv")
def tests_lowest(session: nox.Session) -> None:
    """The default tests (or the pytest arguments given) on the lowest version of each of rlexp's direct
    dependencies that pyproject.toml declares (uv's lowest-direct resolution of the dev extra, README's test
    install): what says the floors are tested. The versions it resolved are printed first."""
    import os

    where = (
        ["--find-links", _TORCH_WHEELS]
        if os.path.isdir(_TORCH_WHEELS)
        else ["--extra-index-url", "https://download.pytorch.org/whl/cpu", "--index-strategy", "unsafe-best-match"]
    )
    session.install("--resolution", "lowest-direct", *where, "-e", ".[dev]")
    session.run(
        "python",
        "-c",
        "import importlib.metadata as m; print(*(f'{p} {m.version(p)}' for p in ("
        "'stable-baselines3', 'sb3-contrib', 'gymnasium', 'torch', 'optuna', 'hydra-core', 'omegaconf', 'numpy', "
        "'scipy', 'matplotlib', 'mujoco')), sep=', ')",
    )
    session.run("python", "-m", "pytest", "-n", "2", *session.posargs)


@nox.session(name="search-space-parsers", venv_params=["--system-site-packages"])
def search_space_parsers(session: nox.Session) -> None:
    """rlexp's search-space parser against hydra-optuna-sweeper 1.4's on the shipped spaces (on Hydra 1.4)."""
    session.install(*HYDRA_14)
    session.install("--no-deps", "hydra-optuna-sweeper==1.4.0rc3", "-e", ".")
    session.run("python", "benchmarks/search_space_parsers.py")


@nox.session
def slow(session: nox.Session) -> None:
    _install(session)
    session.run("pytest", "-m", "slow", "-n", "2", *session.posargs)


@nox.session
def benchmark(session: nox.Session) -> None:
    _install(session)
    session.run("python", "benchmarks/throughput.py", *session.posargs)
    session.run("python", "benchmarks/diagnostics_cost.py")
    session.run("python", "benchmarks/report_speed.py")
    session.run("python", "benchmarks/export_latency.py")


@nox.session(name="benchmark-zoo")
def benchmark_zoo(session: nox.Session) -> None:
    """Whole runs against RL Zoo's train.py and a plain SB3 script (and backend=sbx)."""
    _install(session)
    session.install("rl_zoo3")
    session.run("python", "benchmarks/speed_vs_zoo.py", *session.posargs)


@nox.session(name="benchmark-solved")
def benchmark_solved(session: nox.Session) -> None:
    """Time to a solved agent (callbacks.stop=solved) against RL Zoo's train.py on the tuned budget."""
    _install(session)
    session.install("rl_zoo3")
    session.run("python", "benchmarks/time_to_solved.py", *session.posargs)


@nox.session(name="benchmark-search")
def benchmark_search(session: nox.Session) -> None:
    _install(session)
    session.install("rl_zoo3", "pandas")  # the zoo writes its report with pandas
    session.run("python", "benchmarks/search_vs_zoo.py", *session.posargs)


@nox.session(name="zoo_import")
def zoo_import(session: nox.Session) -> None:
    """Rewrites conf/env and conf/tuned from RL Zoo's YAML (the rl_zoo3 wheel the dev extra pins), the env families
    (rlexp.config.env_families) and tools/zoo_envs.yaml."""
    _install(session)  # (rlexp itself: the families, the zoo's format; the dev extra pins rl_zoo3)
    session.run("python", "tools/zoo_import.py")


@nox.session(name="zoo-benchmark")
def zoo_benchmark(session: nox.Session) -> None:
    """Rewrites src/rlexp/data/zoo_benchmark.csv from RL Zoo's benchmark.md, the path given: -- PATH [--commit HASH]
    (its checkout's HEAD by default)."""
    _install(session)  # (rlexp itself: the zoo's algo names, the csv's columns)
    session.run("python", "tools/zoo_benchmark.py", *session.posargs)


@nox.session(name="zoo-agents")
def zoo_agents(session: nox.Session) -> None:
    """RL Zoo's published agents opened and scored against its benchmark.md (benchmarks/zoo_agents.json, the docs'
    page): -- CHECKOUT [--zoo-python PY] [--jobs 2], CHECKOUT a checkout of DLR-RM/rl-trained-agents."""
    _install(session)  # (every env family but robotics: the dev extra)
    session.run("python", "benchmarks/zoo_agents.py", *session.posargs)


@nox.session(name="benchmark-families")
def benchmark_families(session: nox.Session) -> None:
    """One short run per env family with the zoo's values, against the random policy (learning evidence)."""
    _install(session)  # (the dev extra has every env family but robotics)
    session.run("python", "benchmarks/env_families.py", *session.posargs)


@nox.session
def reference(session: nox.Session) -> None:
    """Reference results of tuned pairs (src/rlexp/data/reference/): resumes; e.g. -- --pair ppo_cartpole."""
    _install(session)
    session.run("python", "benchmarks/reference.py", *session.posargs)


@nox.session
def regress(session: nox.Session) -> None:
    """New seeds of a pair against its reference; fails when they score below it (CI: PPO CartPole)."""
    _install(session)
    args = session.posargs or ["--pair", "ppo_cartpole", "--seeds", "100-102", "--jobs", "2"]
    session.run("python", "benchmarks/reference.py", "--regress", *args)


@nox.session(name="benchmark-scale")
def benchmark_scale(session: nox.Session) -> None:
    """rlexp report and plot over 1,000 to 10,000 run dirs: time and peak memory (docs: running at scale)."""
    _install(session)
    session.run("python", "benchmarks/scale_runs.py", *session.posargs)


@nox.session(name="benchmark-search-scale")
def benchmark_search_scale(session: nox.Session) -> None:
    """Trials per minute of one PostgreSQL study at 1-8 workers, rlexp's sweepers against Optuna's optimize."""
    _install(session)
    session.run("python", "benchmarks/search_scale.py", *session.posargs)


@nox.session(name="benchmark-search-steady")
def benchmark_search_steady(session: nox.Session) -> None:
    """A search that never idles: rlexp's batches and steady search against Optuna's optimize, 1-4 workers."""
    _install(session)
    session.run("python", "benchmarks/search_steady.py", *session.posargs)


@nox.session(name="zoo-parity")
def zoo_parity(session: nox.Session) -> None:
    """Same seed, same agent: every tuned pair trained by RL Zoo's own train.py and by rlexp, tensor by tensor
    (benchmarks/zoo_parity.json, the docs' parity page); e.g. -- --family classic, -- --eval, -- --full."""
    _install(session)  # (the dev extra pins rl_zoo3 2.9.2 and has every env family but robotics)
    session.run("python", "benchmarks/zoo_parity.py", *(session.posargs or ["--jobs", "2"]))
