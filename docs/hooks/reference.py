"""mkdocs hook: the config reference and the tuned-hyperparameter table, generated from conf/ and the typed
schema at every build, so that they cannot go stale.

``on_files`` adds two pages that exist in no file: ``reference/config.md`` (every config group under conf/
with its options and their keys, and the keys of the experiment config with their types and defaults from
the schema dataclasses) and ``reference/tuned.md`` (one row per conf/tuned/<algo>_<env>.yaml). Nothing is
written into docs/.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import html
import importlib
import inspect
import re
import sys
import typing
from pathlib import Path
from typing import Any

import yaml
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
GENERATED = {"reference/config.md": "config_page", "reference/tuned.md": "tuned_page"}
# groups whose options are listed on a page of their own
OWN_PAGE = {"tuned": "tuned.md"}
# the schema dataclass of each option's keys, by the config-store name its defaults list extends
_MISSING_TEXT = "set by the option chosen"


# ------------------------------------------------------------------------------------------------ mkdocs
def on_config(config: Any) -> Any:
    # `mkdocs serve` rebuilds when the configs or the schema change
    for path in (CONF, ROOT / "src"):
        if str(path) not in config["watch"]:
            config["watch"].append(str(path))
    return config


def on_files(files: Files, config: Any) -> Files:
    for uri, maker in GENERATED.items():
        files.append(File.generated(config, uri, content=globals()[maker]()))
    return files


# ------------------------------------------------------------------------------------------------ schema
def _schema_module() -> Any:
    """The typed schema of the checkout being documented (src/ first, not an installed rlexp)."""
    src = str(ROOT / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    try:
        return importlib.import_module("rlexp.config.schema")
    except ModuleNotFoundError as err:
        if err.name not in ("rlexp.config", "rlexp.config.schema"):
            raise
        return importlib.import_module("rlexp.schema")


def _algorithm_schemas() -> dict[str, type]:
    """algo option -> its schema, from the algorithm registry (rlexp.config.algorithms) of the checkout."""
    _schema_module()  # (src/ on the path)
    registry = importlib.import_module("rlexp.config.algorithms")
    return {a.name: a.schema for a in registry.ALGORITHMS}


def _schemas_by_store_name() -> dict[str, type]:
    """Config-store name (``algo_ppo_schema``) -> the dataclass it stores, as rlexp registers them."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    importlib.import_module("rlexp.config.store").register_configs()
    with contextlib.suppress(ImportError):  # (the sweeper's schema registers itself when its plugin is imported)
        importlib.import_module("hydra_plugins.rlexp_optuna_sweeper.config")
    found: dict[str, type] = {}
    for name in ConfigStore.instance().list(""):
        if not name.endswith("_schema.yaml"):
            continue
        node = ConfigStore.instance().load(name).node
        cls = OmegaConf.get_type(node)
        if dataclasses.is_dataclass(cls):
            found[name.removesuffix(".yaml")] = cls
    return found


def _field_comments(cls: type) -> dict[str, str]:
    """The comment lines above each field of a dataclass (and a comment at the end of its line)."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in source.splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("#").strip())
            continue
        match = re.match(r"(\w+)\s*:", stripped)
        if match and not stripped.startswith(("def ", "class ", '"""')):
            text = " ".join(pending)
            inline = stripped.split("  # ", 1)[1].strip() if "  # " in stripped else ""
            comments[match.group(1)] = " ".join(t for t in (text, inline) if t)
        pending = []
    return comments


def _type_name(tp: Any) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return "any"
    if tp is type(None):
        return "null"
    if origin is typing.Union:
        return " or ".join(_type_name(a) for a in args)
    if origin in (list, typing.List):
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin in (dict, typing.Dict):
        return "dict"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return " \\| ".join(f"`{m.value}`" for m in tp)
    if dataclasses.is_dataclass(tp):
        return "group of keys"
    return getattr(tp, "__name__", str(tp))


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING


def _schema_table(cls: type, prefix: str, group_choice: dict[str, str]) -> tuple[list[str], list[tuple[str, type]]]:
    """Rows of one dataclass's keys, and the nested dataclasses to document after it."""
    from omegaconf import MISSING

    hints = typing.get_type_hints(cls)
    comments = _field_comments(cls)
    rows = ["| key | type | default | what it does |", "|---|---|---|---|"]
    nested: list[tuple[str, type]] = []
    for f in dataclasses.fields(cls):
        key = prefix + f.name
        tp = hints.get(f.name, Any)
        default = _default(f)
        if dataclasses.is_dataclass(tp):
            nested.append((key, tp))
            shown = f"see [`{key}.*`](#{_anchor(key)})"
        elif default in (dataclasses.MISSING, MISSING):
            group = key.split(".")[0]
            shown = (
                f"the `{group}` group's option (default `{group_choice[group]}`)"
                if group in group_choice and "." not in key
                else _MISSING_TEXT
            )
        elif key in _placed_groups():  # (schedule@lr_schedule: tuned): the option the defaults list picks
            group, option = _placed_groups()[key]
            shown = f"the `{group}` group's option (default `{option}`)"
        elif isinstance(default, dict) and default.get("_target_") in _schedule_names():
            shown = f"the `{_schedule_names()[default['_target_']]}` schedule"
        else:
            shown = _code(default)
        text = ". ".join(t.rstrip(".") for t in (comments.get(f.name, ""), _range_text(cls, f.name)) if t)
        rows.append(f"| {_breakable(key)} | {_type_name(tp)} | {shown} | {_text(text)} |")
    return rows, nested


@functools.cache
def _placed_groups() -> dict[str, tuple[str, str]]:
    """Keys that config.yaml fills with a group's option placed there (``schedule@lr_schedule: tuned``): key ->
    (group, default option). The schema's default under such a key is what no option sets, never in effect."""
    entries = _defaults_entries(CONF / "config.yaml")
    return {
        name.split("@", 1)[1]: (name.split("@", 1)[0], option) for name, option, _ in entries if "@" in name and option
    }


def _range_text(cls: type, name: str) -> str:
    """``Must be > 0.`` for a key whose schema field declares a range (rlexp.config.validation checks it)."""
    must_be = _schema_module().field_range(cls, name)
    return f"Must be {must_be}" if must_be is not None else ""


def _schema_defaults(cls: type) -> dict[str, Any]:
    """A schema's keys with a default, and the default (enums as their values)."""
    from omegaconf import MISSING

    found = {}
    for f in dataclasses.fields(cls):
        default = _default(f)
        if default not in (dataclasses.MISSING, MISSING):
            found[f.name] = default.value if isinstance(default, enum.Enum) else default
    return found


def _schema_comments(cls: type) -> dict[str, str]:
    """The comment of each field of a dataclass, from the class that declares or last comments it."""
    comments: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if dataclasses.is_dataclass(base):
            comments.update({k: v for k, v in _field_comments(base).items() if v})
    return comments


def _rlexps_own(cls: type, name: str) -> bool:
    """Whether rlexp declares field ``name`` of a schema (not hydra-submitit-launcher, whose schemas rlexp's
    launcher presets extend)."""
    owner = next((c for c in cls.__mro__ if name in vars(c).get("__annotations__", {})), cls)
    return owner.__module__.startswith(("rlexp.", "hydra_plugins.rlexp_"))


def _documented() -> set[type]:
    """The dataclasses whose keys and defaults the experiment-config section lists."""
    found: set[type] = set()
    queue: list[type] = [_schema_module().ExperimentConfig]
    while queue:
        cls = queue.pop()
        found.add(cls)
        queue += [t for t in typing.get_type_hints(cls).values() if dataclasses.is_dataclass(t) and t not in found]
    return found


def _schedule_names() -> dict[str, str]:
    """A schedule's ``_target_`` -> its option in conf/schedule/ (``linear``)."""
    return {_load(p).get("_target_"): p.stem for p in (CONF / "schedule").glob("*.yaml") if _load(p).get("_target_")}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _anchor(key: str) -> str:
    return "keys-" + _slug(key)


def _schema_section(schema: Any, group_choice: dict[str, str]) -> list[str]:
    out = [
        "## The experiment config",
        "",
        "Every run composes one experiment config: the keys below, typed by the schema that every YAML",
        "option extends. A wrong type or an unknown key is refused when the config is composed, naming the",
        "key. Set any of them on the command line with `key=value`; the free-form dictionaries (`dict`) take",
        "new keys with Hydra's `+` (`+env.kwargs.size=5`).",
        "",
    ]
    queue: list[tuple[str, type]] = [("", schema.ExperimentConfig)]
    while queue:
        prefix, cls = queue.pop(0)
        title = "Top-level keys" if not prefix else f"`{prefix}.*`"
        anchor = "keys-top-level" if not prefix else _anchor(prefix)
        out += [f"### {title} {{#{anchor}}}", ""]
        rows, nested = _schema_table(cls, f"{prefix}." if prefix else "", group_choice)
        doc = inspect.getdoc(cls) or ""
        if doc and not doc.startswith(cls.__name__ + "("):
            out += [_text(doc.split("\n\n")[0].replace("\n", " ")), ""]
        out += [*rows, ""]
        queue = nested + queue
    out += [
        "### `algo.*`",
        "",
        "The keys of `algo` are the constructor arguments of the algorithm's class, one schema per algorithm",
        "(a key the chosen algorithm does not take is refused); their defaults, the library's, are listed under",
        "each [`algo` option](#group-algo) below, their types here:",
        "",
        "| algo | keys and types |",
        "|---|---|",
    ]
    for name, cls in _algorithm_schemas().items():
        hints = typing.get_type_hints(cls)
        keys = ", ".join(f"`{f.name}` ({_type_name(hints[f.name])})" for f in dataclasses.fields(cls))
        out.append(f"| `{name}` | {keys} |")
    return [*out, ""]


# ------------------------------------------------------------------------------------------------ conf/
def _yaml_comments(path: Path) -> tuple[str, str | None, dict[str, str]]:
    """A YAML file's leading comment (its description), its ``@package`` and the comment above each key
    (dotted by indentation). Block scalars (``key: |``) are skipped."""
    lines = path.read_text().splitlines()
    header: list[str] = []
    package = None
    i = 0
    while i < len(lines) and lines[i].lstrip().startswith("#"):
        text = lines[i].strip().lstrip("#").strip()
        if text.startswith("@package"):
            package = text.split(None, 1)[1]
        else:
            header.append(_command_as_code(text))
        i += 1
    comments: dict[str, str] = {}
    pending: list[str] = []
    stack: list[tuple[int, str]] = []
    skip_deeper: int | None = None
    for line in lines[i:]:
        if not line.strip():
            pending = []
            continue
        indent = len(line) - len(line.lstrip())
        if skip_deeper is not None:
            if indent > skip_deeper:
                continue
            skip_deeper = None
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("#").strip())
            continue
        match = re.match(r"([^\s#:-][^:]*?):(\s|$)", stripped)
        if not match:
            pending = []
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key = ".".join([k for _, k in stack] + [match.group(1)])
        stack.append((indent, match.group(1)))
        if pending:
            comments[key] = " ".join(pending)
        pending = []
        if stripped.rstrip().endswith(("|", ">", "|-", ">-")):
            skip_deeper = indent
    return " ".join(header), package, comments


def _command_as_code(line: str) -> str:
    """``... the cores shared out:  rlexp -m seed=0,1`` -> the command that ends a comment line as code."""
    match = re.search(r"(?<![\w`/])rlexp (\S.*)$", line)
    if not match or "`" in line:
        return line
    return f"{line[: match.start()].rstrip()} `{match.group(0).strip()}`"


def _flat(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(data, dict) and data:
        out: list[tuple[str, Any]] = []
        for key, value in data.items():
            out += _flat(value, f"{prefix}{key}.") if isinstance(value, dict) and value else [(f"{prefix}{key}", value)]
        return out
    return [(prefix.rstrip("."), data)] if prefix else []


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    return data if isinstance(data, dict) else {}


def _defaults_entries(path: Path) -> list[tuple[str, str | None, str]]:
    """The defaults list of a YAML file: (name, option or None, the comment above it); ``optional`` and
    ``override`` dropped from the name."""
    entries = []
    pending: list[str] = []
    inside = False
    for line in path.read_text().splitlines():
        if line.startswith("defaults:"):
            inside = True
            continue
        if not inside:
            continue
        stripped = line.strip()
        if line and not line.startswith((" ", "-")):
            break
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("#").strip())
        elif stripped.startswith("- "):
            item = stripped[2:]
            name, _, option = item.partition(":")
            name = re.sub(r"^(optional|override)\s+", "", name.strip())
            entries.append((name, option.strip() or None, " ".join(pending)))
            pending = []
    return entries


def _groups() -> dict[str, list[Path]]:
    """Config group (``algo``, ``hydra/launcher``...) -> its option files."""
    groups: dict[str, list[Path]] = {}
    for path in sorted(CONF.rglob("*.yaml")):
        if path.parent == CONF:
            continue
        groups.setdefault(path.parent.relative_to(CONF).as_posix(), []).append(path)
    return groups


def _group_defaults() -> dict[str, tuple[list[str], str, str]]:
    """Group -> (how it is chosen on the command line, its default option, the comment in config.yaml),
    from the primary config's defaults list and those of the option files (hydra/sweeper/sampler...)."""
    found: dict[str, tuple[list[str], str, str]] = {}

    def add(group: str, selector: str, option: str, comment: str) -> None:
        selectors, _, _ = found.get(group, ([], option, comment))
        found[group] = ([*selectors, selector], option, comment if group not in found else found[group][2])

    for name, option, comment in _defaults_entries(CONF / "config.yaml"):
        if option is not None:
            add(name.split("@", 1)[0], name, option, comment)
    for group, paths in _groups().items():
        for path in paths:
            for name, option, comment in _defaults_entries(path):
                if option is not None and not name.startswith("/"):  # a group of its own: hydra/sweeper/sampler
                    add(f"{group}/{name}", f"{group}/{name}", option, comment)
    return found


def _option_name(option: str | None) -> str:
    """How a default option reads: ``null`` none, ``${algo}_${env}`` as ``<algo>_<env>``."""
    if option in (None, "null"):
        return "none"
    return "`" + re.sub(r"\$\{(\w+)\}", r"<\1>", option) + "`"


def _elsewhere_options(group: str) -> list[str]:
    """Options of ``group`` that Hydra itself and hydra-submitit-launcher provide (not files in conf/)."""
    from hydra.core.config_store import ConfigStore

    for module in (
        "hydra._internal.core_plugins.basic_launcher",
        "hydra._internal.core_plugins.basic_sweeper",
        "hydra_plugins.hydra_submitit_launcher.config",
    ):
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    names: set[str] = set()
    with contextlib.suppress(OSError):  # (a group the config store does not have)
        names.update(n.removesuffix(".yaml") for n in ConfigStore.instance().list(group) if n.endswith(".yaml"))
    if group.startswith("hydra/"):
        from importlib.resources import files

        folder = files("hydra.conf") / group
        if folder.is_dir():
            names.update(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))
    return sorted(names)


def _schema_of(path: Path, schemas: dict[str, type]) -> type | None:
    for name, _, _ in _defaults_entries(path):
        store = name.lstrip("/").split("@", 1)[0]
        if store in schemas:
            return schemas[store]
    return None


def _option_section(group: str, path: Path, schemas: dict[str, type]) -> list[str]:
    description, package, comments = _yaml_comments(path)
    data = _load(path)
    extends = [n for n, o, _ in _defaults_entries(path) if o is None and not n.startswith(("/", "_self_"))]
    subgroups = [(n.lstrip("/"), o) for n, o, _ in _defaults_entries(path) if o is not None]
    schema = _schema_of(path, schemas)
    hints = typing.get_type_hints(schema) if schema else {}
    out = [f"#### `{path.stem}` {{#option-{_slug(group + '-' + path.stem)}}}", ""]
    if description:
        out += [_text(description), ""]
    notes = []
    if extends:
        notes.append("extends " + ", ".join(f"`{e}`" for e in extends))
    if subgroups:
        notes.append("chooses " + ", ".join(f"`{n}={o}`" for n, o in subgroups))
    if package == "_global_":
        notes.append("its keys are set at the top of the config")
    elif package:
        notes.append(f"its keys go under `{package}`")
    if notes:
        out += ["(" + "; ".join(notes) + ")", ""]
    own = {k: v for k, v in data.items() if k != "defaults"}
    rows = [(k, v) for k, v in _flat(own)]
    if schema is not None and not extends and schema not in _documented():
        # (an algorithm's values, the sweeper's: the schema holds their defaults, and no section above lists them)
        defaults = {k: v for k, v in _schema_defaults(schema).items() if k not in own and _rlexps_own(schema, k)}
        rows += _flat(defaults)
        comments = {**_schema_comments(schema), **comments}
    if rows:
        typed = bool(hints)
        out += [
            "| key | value | type | what it does |" if typed else "| key | value | what it does |",
            "|---|---|---|---|" if typed else "|---|---|---|",
        ]
        for key, value in rows:
            comment = _text(comments.get(key, ""))
            if typed:
                tp = _type_name(hints[key.split(".")[0]]) if key.split(".")[0] in hints else ""
                out.append(f"| {_breakable(key)} | {_code(value)} | {tp} | {comment} |")
            else:
                out.append(f"| {_breakable(key)} | {_code(value)} | {comment} |")
        out.append("")
    elif not extends:
        out += ["(no keys: the schema's defaults)" if schema else "(empty)", ""]
    return out


def config_page() -> str:
    schema = _schema_module()
    schemas = _schemas_by_store_name()
    defaults = _group_defaults()
    groups = _groups()
    header, _, _ = _yaml_comments(CONF / "config.yaml")
    out = [
        "# Config reference",
        "",
        "Generated from `conf/` and the typed schema when this site was built: every config group with",
        "its options and the keys each one sets, then every key of the experiment config with its type and",
        "default. `rlexp --help` lists the options too; `rlexp --cfg job <overrides>` prints the config a",
        "run would train with.",
        "",
        *_schema_section(schema, {g: d for g, (_, d, _) in defaults.items()}),
        "## Config groups",
        "",
        "An option is a YAML file in `conf/<group>/`; choose one with `group=option`. Each sets the keys",
        "listed under it (over the schema's defaults), and the command line wins over all of them.",
        "",
        "| group | chosen with | default | options |",
        "|---|---|---|---|",
    ]
    for group, paths in groups.items():
        selectors, default, _ = defaults.get(group, ([group], None, ""))
        if default is None and "basic" in _elsewhere_options(group):
            default = "basic"
        chosen = ", ".join(_breakable(f"{s}=...") for s in selectors)
        link = OWN_PAGE.get(group)
        options = (
            f"[{len(paths)} files, one per algo and env]({link})"
            if link
            else ", ".join(f"[`{p.stem}`](#option-{_slug(group + '-' + p.stem)})" for p in paths)
        )
        out.append(f"| [{_breakable(group)}](#group-{_slug(group)}) | {chosen} | {_option_name(default)} | {options} |")
    out.append("")
    for group, paths in groups.items():
        selectors, default, comment = defaults.get(group, ([group], None, ""))
        out += [f"### `{group}` {{#group-{_slug(group)}}}", ""]
        if comment:
            out += [_text(comment), ""]
        others = [o for o in _elsewhere_options(group) if o not in {p.stem for p in paths}]
        line = "Chosen with " + " or ".join(f"`{s}=<option>`" for s in selectors)
        if default is None and "basic" in others:
            line += "; default Hydra's `basic`."
        else:
            line += f"; default {_option_name(default)}."
        if others:
            line += " Also available from Hydra and its installed plugins: " + ", ".join(f"`{o}`" for o in others) + "."
        out += [line, ""]
        if group in OWN_PAGE:
            out += [f"One file per algorithm and env preset: see [Tuned hyperparameters]({OWN_PAGE[group]}).", ""]
            continue
        for path in paths:
            out += _option_section(group, path, schemas)
    if header:
        out += ["## The primary config", "", f"`conf/config.yaml`: {_text(header)}", ""]
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------ tuned/
def _baseline(algo: str | None, env: str | None) -> dict[str, Any]:
    """What a run of this pair would have without a tuned file: the algorithm's defaults, the env
    preset's values over the env schema's defaults, constant schedules."""
    schema = _schema_module()
    values: dict[str, Any] = {}
    for f in dataclasses.fields(schema.EnvConfig):
        default = _default(f)
        if default is not dataclasses.MISSING:
            values[f"env.{f.name}"] = default.value if isinstance(default, enum.Enum) else default
    if algo in _algorithm_schemas():
        values.update(_flat(_schema_defaults(_algorithm_schemas()[algo]), "algo."))
    if env and (CONF / "env" / f"{env}.yaml").is_file():
        data = {k: v for k, v in _load(CONF / "env" / f"{env}.yaml").items() if k != "defaults"}
        values.update(_flat(data, "env."))
    return values


def tuned_rows() -> list[dict[str, Any]]:
    """One dict per conf/tuned/<algo>_<env>.yaml: algo, env, env id, budget, n_envs, the keys whose values
    differ from the pair's own, and the notes of the file's leading comment."""
    algos = sorted(_algorithm_schemas(), key=len, reverse=True)
    envs = {p.stem for p in (CONF / "env").glob("*.yaml")}
    schedules = _schedule_names()
    rows = []
    for path in sorted((CONF / "tuned").glob("*.yaml")):
        algo = next((a for a in algos if path.stem.startswith(a + "_") and path.stem[len(a) + 1 :] in envs), None)
        env = path.stem[len(algo) + 1 :] if algo else None
        data = _load(path)
        lead = []
        for line in path.read_text().splitlines():
            if not line.startswith("#"):
                break
            lead.append(line.lstrip("#").strip())
        # @package, the generator's line, the title, the source: what follows says where rlexp departs
        body = [h for h in lead if not h.startswith(("@package", "generated by"))]
        notes = [h for h in body[1:] if not h.startswith("Source:")]
        baseline = _baseline(algo, env)
        changes = []
        for key, value in _flat(data):
            if (
                key in ("tuned_file", "tuned_env_id", "tuned_source", "tuned_departures", "n_timesteps", "env.n_envs")
                or baseline.get(key, object()) == value
            ):
                continue
            if key.endswith("_schedule._target_") and value in schedules:
                if schedules[value] != "constant":
                    changes.append(f"{key.split('.')[0]}: {schedules[value]}")
            else:
                changes.append(f"{key}={_plain(value)}")
        rows.append(
            {
                "file": path.stem,
                "algo": algo,
                "env": env,
                "env_id": data.get("tuned_env_id"),
                "source": data.get("tuned_source") or "",
                "n_timesteps": data.get("n_timesteps"),
                "n_envs": (data.get("env") or {}).get("n_envs", 1),
                "changes": changes,
                "notes": " ".join(notes),
            }
        )
    return rows


def tuned_page() -> str:
    rows = tuned_rows()
    algos = sorted({r["algo"] for r in rows})
    out = [
        "---",
        "hide: [toc]  # the tables take the width (the algorithms are linked below the title)",
        "---",
        "# Tuned hyperparameters",
        "",
        " · ".join(f"[{algo}](#{algo})" for algo in algos)
        + " · [notes](#notes-in-the-files) · [env families](#env-families)",
        "",
        f"Generated from `conf/tuned/` when this site was built: {len(rows)} files, one section per algorithm. A",
        "run picks `tuned/<algo>_<env>.yaml` by itself when the pair has one (it says so when it starts) and",
        "records it in `summary.json` (`tuned_file`); `~tuned` trains with the algorithm's plain defaults",
        "instead, and anything on the command line wins over the file. The values are RL Baselines3 Zoo's",
        "(where the zoo's entry has another id, the env id column gives it), generated from its YAML by",
        "`tools/zoo_import.py`; the notes at the end say where rlexp departs from them. `env.id=<the zoo's id>`",
        "picks the same file (`rlexp list` prints these tables in a terminal).",
        "",
        "The last column lists the keys whose values differ from the algorithm's and the env preset's own",
        "(`algo.*` from the algorithm's schema, `env.*` from `conf/env/` and the schema), and the schedules.",
    ]
    for algo in algos:
        pairs = [r for r in rows if r["algo"] == algo]
        sources = {r["source"].split(" ")[2] for r in pairs if r["source"].startswith("rl-zoo3 ")}
        where = f" (rl-zoo3 {_zoo_version(pairs)} {', '.join(sorted(sources))})" if sources else ""
        out += [
            "",
            f"## {algo}",
            "",
            f"{len(pairs)} pairs{where}: `tuned/{algo}_<env>.yaml`.",
            "",
            "| env | env id | n_timesteps | n_envs | also changes |",
            "|---|---|---|---|---|",
        ]
        for r in pairs:
            changes = ", ".join(_breakable(c) for c in r["changes"]) or "-"
            steps = f"{r['n_timesteps']:,}" if isinstance(r["n_timesteps"], int) else _text(str(r["n_timesteps"]))
            entry = r["source"].split(" ", 3)[3] if r["source"].startswith("rl-zoo3 ") else r["source"]
            env_id = r["env_id"] if entry == r["env_id"] else f"{r['env_id']} (zoo: {_text(entry)})"
            out.append(f"| `{r['env']}` | {env_id} | {steps} | {r['n_envs']} | {changes} |")
    noted = [r for r in rows if r["notes"]]
    if noted:
        out += ["", "## Notes in the files", ""]
        out += [f"- `{r['file']}`: {_text(r['notes'])}" for r in noted]
    out += _families_section(rows)
    return "\n".join([*out, ""])


def _families_section(rows: list[dict[str, Any]]) -> list[str]:
    """The env families as rlexp.config.env_families declares them (one entry each), with their tuned files:
    rendered by tools/families_table.py, which renders README's table of them too."""
    _schema_module()  # (src/ first on sys.path)
    tools = str(ROOT / "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    families_table = importlib.import_module("families_table")
    of_preset = {p.stem: _load(p).get("family") for p in (CONF / "env").glob("*.yaml")}
    tuned: dict[str, list[str]] = {}
    for r in rows:
        tuned.setdefault(of_preset.get(r["env"]) or "", []).append(r["env"])
    columns = ("family", "extra", "ids registered by", "any id gets", "presets add", "tuned pairs")
    return [
        "",
        "## Env families",
        "",
        "From `FAMILIES` in `src/rlexp/config/env_families.py`, where each family is one entry: the extra that",
        "installs it, the package whose import registers its ids, the preset any id of it gets when no preset",
        "of its own answers to it, and what every preset of the family adds to its envs.",
        "",
        *families_table.table(columns, tuned),
    ]


def _zoo_version(rows: list[dict[str, Any]]) -> str:
    return next(r["source"].split(" ")[1] for r in rows if r["source"].startswith("rl-zoo3 "))


# ------------------------------------------------------------------------------------------------ markdown
def _plain(value: Any) -> str:
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    if isinstance(value, str) and "\n" in value:
        return f"(text, {value.count(chr(10))} lines)"
    return str(value)


def _code(value: Any) -> str:
    text = _plain(value)
    return _breakable(text) if text else '`""`'


def _breakable(text: str) -> str:
    """Code that a narrow column may wrap after a dot, an equals sign, a slash, a comma, a colon, a hyphen, an
    at sign or a brace, never inside a name."""
    escaped = html.escape(text)
    for char in "|_*[]`\\":  # Markdown's own characters, which it would read inside inline HTML
        escaped = escaped.replace(char, f"&#{ord(char)};")
    return '<code class="wrap">' + re.sub(r"([=/,:}@-]|\.(?=[A-Za-z&$]))", r"\1<wbr>", escaped) + "</code>"


def _text(text: str) -> str:
    """Comment text for a Markdown table cell: code spans kept, Markdown and HTML characters escaped (a brace
    too: ``{...}`` closing a cell would be read as the cell's attributes, attr_list's, and vanish)."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # outside code spans
        parts[i] = re.sub(r"([\\*_\[\]{}])", r"\\\1", parts[i]).replace("<", "&lt;")
    return "`".join(parts).replace("|", "\\|")
