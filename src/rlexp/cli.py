"""The `rlexp` command: a Hydra app whose configs ship inside the package (pkg://rlexp.conf)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import InstantiationException
from hydra.types import RunMode
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from rlexp.errors import ConfigError
from rlexp.schema import register_configs

register_configs()


@hydra.main(version_base="1.3", config_path="pkg://rlexp.conf", config_name="config")
def main(cfg: DictConfig) -> float:
    """Train one agent as configured; bad input ends with a one-line error and exit code 1."""
    from rlexp.manager import run  # torch and SB3 load only when a run starts (fast --help, --cfg)

    hydra_cfg = HydraConfig.get()
    try:
        return run(cfg, Path(hydra_cfg.runtime.output_dir), dict(hydra_cfg.runtime.choices))
    except (ConfigError, InstantiationException, OmegaConfBaseException) as err:
        # a multirun job re-raises so the launcher records the failure and the sweep goes on
        if os.environ.get("HYDRA_FULL_ERROR") == "1" or hydra_cfg.mode == RunMode.MULTIRUN:
            raise
        message = " ".join(str(err).split())
        print(f"rlexp: error: {message}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
